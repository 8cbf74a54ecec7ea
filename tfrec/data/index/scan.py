"""Building an index by scanning a TFRecord file's headers (data layer).

The file must be uncompressed, or gzip written as a series of members that end
on record boundaries (:mod:`.members` builds its index): any other gzip or
zlib stream can only be read from its start, so no record of it can be
reached by its offset.

Example:
    >>> build_index("train-00000-of-00004.tfrecord")
    'train-00000-of-00004.tfrecord.idx'
    >>> offsets, lengths = scan_index("train-00000-of-00004.tfrecord")
"""

from __future__ import annotations

import os

import numpy as np

from ...errors import InvalidArgumentError
from ...record import frame, resolve_compression
from ...record.compression import GZIP_MAGIC
from ...record.files import open_regular
from ...record.positioned import read_fully
from .format import INDEX_SUFFIX, FileIndex, write_index
from .members import scan_gzip_index, write_gzip_index

__all__ = ["build_index", "check_uncompressed", "scan_index"]

_SCAN_WINDOW = 1 << 16  # bytes of headers (and small payloads between them) read at once by the scan


def check_uncompressed(path: str, compression: str | None = "auto", *, purpose: str) -> None:
    """Raise InvalidArgumentError when ``path`` is (or is declared) gzip/zlib-compressed."""
    codec = resolve_compression(compression, path)
    if codec is not None:
        raise InvalidArgumentError(
            f"{path}: {purpose} needs an uncompressed TFRecord file, and this one is {codec}-compressed: "
            f"a {codec} stream can only be read from its start, so no record can be reached by its "
            "offset; rewrite it uncompressed first, e.g. "
            "tfrec.write_records(plain_path, tfrec.read_records(path), compression=None)"
        )


def scan_index(path: str | os.PathLike[str], *, compression: str | None = "auto") -> FileIndex:
    """Find every frame of an uncompressed TFRecord file from its headers alone.

    Payloads are never checked (their CRCs are verified when records are read);
    every length CRC is. Headers are read through a 64 KiB window, so small
    records cost no system call each and large payloads are skipped unread.

    Returns:
        ``(offsets, frame_lengths)`` as int64 arrays.

    Raises:
        InvalidArgumentError: the file is compressed, or is not a regular file (a FIFO or a
            device is refused without waiting on it).
        ChecksumError: a length CRC does not match (a damaged header).
        TruncatedRecordError: the file ends inside a frame.

    Example:
        >>> offsets, lengths = scan_index("train.tfrecord")
    """
    path = os.fspath(path)
    check_uncompressed(path, compression, purpose="an index")
    offsets: list[int] = []
    lengths: list[int] = []
    with os.fdopen(open_regular(path, purpose="an index"), "rb") as file:
        fd = file.fileno()
        size = os.fstat(fd).st_size
        window = b""
        base = 0  # file offset of window[0]
        pos = 0  # file offset of the next header
        add_offset, add_length = offsets.append, lengths.append
        length_crc = frame.length_crc
        while pos < size:
            at = pos - base
            if at < 0 or at + frame.HEADER > len(window):
                base, window, at = pos, read_fully(fd, _SCAN_WINDOW, pos), 0
                if len(window) < frame.HEADER:
                    raise frame.truncation_error(None, len(window), path=path, index=len(offsets), offset=pos)
            length, stored = frame.unpack_header(window, at)
            if length_crc(length) != stored:
                hint = "the length field is damaged"
                if pos == 0 and window.startswith(GZIP_MAGIC):
                    hint = "the file looks gzip-compressed, and random access needs an uncompressed file"
                raise frame.length_error(length, stored, hint, path=path, index=len(offsets), offset=pos)
            end = pos + length + frame.FRAMING
            if end > size:
                raise frame.truncation_error(
                    length, size - pos - frame.HEADER, path=path, index=len(offsets), offset=pos
                )
            add_offset(pos)
            add_length(length + frame.FRAMING)
            pos = end
    return np.array(offsets, np.int64), np.array(lengths, np.int64)


def build_index(
    path: str | os.PathLike[str],
    index_path: str | os.PathLike[str] | None = None,
    *,
    compression: str | None = "auto",
) -> str:
    """Write the index file of a TFRecord file: DALI's ``tfrecord2idx`` format for an uncompressed one.

    Reads record headers and skips over payloads; every length CRC is checked.
    A gzip file written as a series of members that end on record boundaries
    (``tfrec.ShardedWriter(..., compression="gzip", index=True)``) gets a gzip
    index (:mod:`tfrec.data.index.members`), found by inflating it once; a gzip
    stream of one member (as TensorFlow writes) or a zlib stream cannot be
    indexed (InvalidArgumentError says why).

    Args:
        path: the TFRecord file.
        index_path: where to write; by default ``path + ".idx"``.
        compression: ``"auto"`` (from the suffix), ``None`` or ``"gzip"`` (for a
            file whose name ends in ``.gz``: readers tell gzip from the suffix).

    Returns:
        The path of the index file.

    Example:
        >>> tfrec.build_index("train-00000-of-00004.tfrecord")
        'train-00000-of-00004.tfrecord.idx'
    """
    path = os.fspath(path)
    target = os.fspath(index_path) if index_path is not None else path + INDEX_SUFFIX
    # Only a file named .gz: readers of the index tell gzip from the suffix, as they tell the index's format.
    if resolve_compression(compression, path) == "gzip" and resolve_compression("auto", path) == "gzip":
        write_gzip_index(target, scan_gzip_index(path))
        return target
    offsets, lengths = scan_index(path, compression=compression)
    write_index(target, offsets.tolist(), lengths.tolist())
    return target
