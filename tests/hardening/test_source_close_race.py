"""RecordFileSource.close() while other threads read never lets a read land in another file (Hardening 2,
item 1).

close() frees descriptor numbers, and the next file opened anywhere in the process may be given one of
them: a read still holding the old number then read *another shard's* records, every CRC passing (the
shards have the same layout), or raised a bare ``OSError: [Errno 9]``. Reads that overlap close() now
read their record again from the reopened file; reads after close() reopen it (as documented).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import tfrec

COUNT = 200


def _shard(tmp_path: Path, name: str, letter: bytes) -> str:
    path = str(tmp_path / f"{name}.tfrecord")
    tfrec.write_records(path, [letter + b"%07d" % i for i in range(COUNT)])  # same layout in every shard
    return path


@pytest.mark.parametrize("batched", [False, True])
def test_close_while_threads_read_never_returns_another_files_records(tmp_path: Path, batched: bool) -> None:
    source = tfrec.RecordFileSource(_shard(tmp_path, "a", b"A"))
    other = tfrec.RecordFileSource(_shard(tmp_path, "b", b"B"))  # opened and closed to take freed numbers
    expected = [b"A%07d" % i for i in range(COUNT)]
    stop = threading.Event()
    wrong: list[bytes] = []
    errors: list[str] = []

    def read() -> None:
        i = 0
        while not stop.is_set():
            keys = [(i + k * 37) % COUNT for k in range(8)]
            try:
                got = source.__getitems__(keys) if batched else [source[key] for key in keys]
            except Exception as exc:  # the test fails on any: bare OSError before the fix
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            wrong.extend(g for g, key in zip(got, keys, strict=True) if g != expected[key])
            i += 1

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and not wrong:
            source.close()
            other.close()
            other[0]  # reopens b.tfrecord, likely on the number just freed
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not wrong, f"{len(wrong)} records of another file, e.g. {wrong[:3]}"
    assert not errors, errors[:3]
    assert source[5] == expected[5]  # and the source still reads after close()


def test_reads_after_close_reopen_the_file(tmp_path: Path) -> None:
    source = tfrec.RecordFileSource(_shard(tmp_path, "a", b"A"))
    assert source[0] == b"A0000000"
    source.close()
    source.close()  # idempotent
    assert source.__getitems__([2, 1]) == [b"A0000002", b"A0000001"]
    assert source[-1] == b"A%07d" % (COUNT - 1)
