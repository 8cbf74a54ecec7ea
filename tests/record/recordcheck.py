"""Helpers the record tests share: what an iteration hands out, a written file's frames, and the
background threads of a name (tfrec-write, tfrec-fill) still running."""

from __future__ import annotations

import gzip
import threading
import zlib

import tfrec


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
