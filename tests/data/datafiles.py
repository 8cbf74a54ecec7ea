"""Small TFRecord files whose records name themselves, for the data-layer tests."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import tfrec


def record(file: int, index: int) -> bytes:
    return f"{file}:{index}".encode()


def write_files(
    directory: Path, sizes: Sequence[int], *, gzip_every: int = 0, prefix: str = "part"
) -> list[str]:
    """One file per size, ``{prefix}-{n:05d}.tfrecord`` (``.gz`` for every ``gzip_every``-th one)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, size in enumerate(sizes):
        suffix = ".tfrecord.gz" if gzip_every and n % gzip_every == gzip_every - 1 else ".tfrecord"
        path = directory / f"{prefix}-{n:05d}{suffix}"
        tfrec.write_records(path, [record(n, i) for i in range(size)])
        paths.append(str(path))
    return paths


def every_record(sizes: Sequence[int]) -> list[bytes]:
    return sorted(record(n, i) for n, size in enumerate(sizes) for i in range(size))


def write_examples(directory: Path, files: int, per_file: int) -> list[str]:
    """Examples with an int64 "id", a float "score" and a variable-length int64 "tags"."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(files):
        path = directory / f"ex-{n:05d}.tfrecord"
        records = []
        for i in range(per_file):
            ident = n * 1000 + i
            tags = np.arange(ident % 4, dtype=np.int64)
            records.append(tfrec.encode_example({"id": ident, "score": float(i) / 2, "tags": tags}))
        tfrec.write_records(path, records)
        paths.append(str(path))
    return paths


def stop_and_resume(ds: Any, cut: int) -> tuple[list[Any], dict[str, Any]]:
    """What ``ds`` yields when stopped after ``cut`` items, its state pickled and resumed; and the state."""
    it = iter(ds)
    head = [next(it) for _ in range(cut)]
    state = pickle.loads(pickle.dumps(it.state()))
    it.close()
    return head + list(ds.resume(state)), state
