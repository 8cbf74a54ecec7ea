"""Helpers the record tests share: what an iteration hands out, a written file's frames, the
background threads of a name (tfrec-write, tfrec-fill) still running, and spans mapped or read."""

from __future__ import annotations

import contextlib
import gzip
import os
import threading
import zlib
from collections.abc import Iterator
from unittest import mock

import tfrec
from tfrec.record import mapped_spans
from tfrec.record.mapped import MAP_FILES_ENV


def outcome(run: object) -> tuple[list[bytes], tuple[object, ...] | None]:
    """The records an iteration (of records or of batches) hands out before it ends, and the error
    it ends with (type, message, record index, byte offset), so two ways of reading compare whole."""
    got: list[bytes] = []
    try:
        for item in run:  # type: ignore[attr-defined]
            got.extend(item if isinstance(item, tfrec.RecordBatch) else [item])
    except tfrec.RecordError as exc:
        return got, (type(exc), str(exc), exc.index, exc.offset)
    return got, None


def decompress(data: bytes, compression: str | None) -> bytes:
    """A written file's bytes as its frames (``compression``: None, "gzip" or "zlib")."""
    if compression == "gzip":
        return gzip.decompress(data)
    if compression == "zlib":
        return zlib.decompress(data)
    return data


def threads_named(name: str) -> list[threading.Thread]:
    """The running threads called ``name``."""
    return [t for t in threading.enumerate() if t.name == name]


def none_left(name: str) -> bool:
    """Whether every thread called ``name`` ends (each given 10 s)."""
    for thread in threads_named(name):
        thread.join(timeout=10)
    return not threads_named(name)


@contextlib.contextmanager
def spans_mapped(mapped: bool) -> Iterator[None]:
    """Batches of large records read as spans of the file mapped (spans of 400 KiB, summed in
    pieces of 96 KiB, so that a file of a few MiB is several spans), or read into buffers."""
    with (
        mock.patch.dict(os.environ, {MAP_FILES_ENV: "1" if mapped else "0"}),
        mock.patch.object(mapped_spans, "MAP_SPAN_BYTES", 400 * 1024),
        mock.patch.object(mapped_spans, "SUM_PIECE", 96 * 1024),
    ):
        yield
