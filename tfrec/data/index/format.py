"""Where each record of a TFRecord file sits: index files and single-frame reads (data layer).

An index file is text, one line per record: ``offset length``, both decimal,
``length`` counting the whole frame (12 header + data + 4 footer bytes). This
is what NVIDIA DALI's ``tfrecord2idx`` and the ``tfrecord`` package write, so
their index files and ours are interchangeable, byte for byte.

Example:
    >>> build_index("train-00000-of-00004.tfrecord")
    'train-00000-of-00004.tfrecord.idx'
    >>> offsets, lengths = read_index("train-00000-of-00004.tfrecord.idx")
"""

from __future__ import annotations

import os
import re
import secrets
import threading
import warnings
from collections.abc import Iterable, Sequence
from typing import IO

import numpy as np

from ...errors import InvalidArgumentError, MissingFileError, RecordError
from ...record import frame, resolve_compression
from ...record.crc import crc_function, mask, mask_array

__all__ = [
    "INDEX_SUFFIX",
    "FileIndex",
    "IndexLines",
    "build_index",
    "check_index_covers",
    "parse_index",
    "read_frame",
    "read_frames",
    "read_index",
    "scan_index",
    "write_index",
]

INDEX_SUFFIX = ".idx"  # an index sits beside its file: train-00000-of-00004.tfrecord.idx
FRAMING = frame.HEADER + frame.FOOTER  # the bytes of a frame around its data
_SCAN_WINDOW = 1 << 16  # bytes of headers (and small payloads between them) read at once by the scan
_GZIP_MAGIC = b"\x1f\x8b"

FileIndex = tuple[np.ndarray, np.ndarray]  # (offsets, frame lengths), int64


# -- one frame ------------------------------------------------------------------------------------------


def read_frame(fd: int, offset: int, frame_length: int, *, path: str, index: int) -> bytes:
    """Read the frame of ``frame_length`` bytes at ``offset`` of an open file and verify both CRCs.

    One positioned read (``os.pread``: no shared file position, so threads may
    share ``fd``). ``frame_length`` comes from an index; a header that disagrees
    with it means the index does not belong to this file.

    Raises:
        ChecksumError: a CRC does not match (``part`` says which).
        TruncatedRecordError: the file ends inside the frame.
        RecordError: the header's length disagrees with the index.
    """
    data = _pread(fd, frame_length, offset)
    if len(data) != frame_length:  # at the end of the file, or a read beyond 2 GiB
        data = _read_fully(fd, frame_length, offset)
    if len(data) < frame.HEADER:
        raise frame.truncation_error(None, len(data), path=path, index=index, offset=offset)
    length, stored = frame.unpack_header(data)
    if frame.length_crc(length) != stored:
        raise frame.length_error(
            length, stored, "the length field is damaged", path=path, index=index, offset=offset
        )
    if length + FRAMING != frame_length:
        if len(data) < frame_length:  # the file ends before the frame the index promised
            raise frame.truncation_error(
                length, len(data) - frame.HEADER, path=path, index=index, offset=offset
            )
        raise RecordError(
            f"the index gives a frame of {frame_length} bytes but the record header says "
            f"{length + FRAMING} ({length} bytes of data): the index does not match the file; rebuild it",
            path=path,
            index=index,
            offset=offset,
        )
    if len(data) < frame_length:
        raise frame.truncation_error(length, len(data) - frame.HEADER, path=path, index=index, offset=offset)
    stored = frame.unpack_crc(data, frame.HEADER + length)[0]
    data = data[frame.HEADER : -frame.FOOTER]
    computed = mask(crc_function()(data))
    if computed != stored:
        raise frame.data_error(length, stored, computed, path=path, index=index, offset=offset)
    return data


def read_frames(
    fds: Sequence[int] | np.ndarray,
    offsets: Sequence[int] | np.ndarray,
    frame_lengths: Sequence[int] | np.ndarray,
) -> list[bytes] | None:
    """Read many frames and verify them together; the records in the order asked.

    The checks of :func:`read_frame`, vectorised. Adjacent frames of one file
    are read with one positioned read, so consecutive records (a loader that
    does not shuffle) cost one system call; a frame asked for twice is read
    once. Returns ``None`` when any frame fails a check: the caller then reads
    them one by one with :func:`read_frame`, which raises the error that names
    the first damaged record.
    """
    count = len(offsets)
    if not count:
        return []
    # The distinct frames, sorted by (file, offset); `chosen` maps each request to its frame.
    files, starts = np.asarray(fds, np.int64), np.asarray(offsets, np.int64)
    one_file = files[0] == files[-1] and (files == files[0]).all()
    order = np.argsort(starts, kind="stable") if one_file else np.lexsort((starts, files))
    files, starts, lengths = files[order], starts[order], np.asarray(frame_lengths, np.int64)[order]
    distinct = np.ones(count, bool)
    distinct[1:] = (files[1:] != files[:-1]) | (starts[1:] != starts[:-1])
    chosen = np.empty(count, np.int64)
    chosen[order] = np.cumsum(distinct) - 1
    files, starts, lengths = files[distinct], starts[distinct], lengths[distinct]
    ends = starts + lengths
    # Runs of adjacent frames, one read each, joined into one buffer: the frames lie back to back in it.
    first = np.ones(len(starts), bool)
    first[1:] = (files[1:] != files[:-1]) | (starts[1:] != ends[:-1])
    heads = np.flatnonzero(first)
    tails = np.append(heads[1:], len(starts)) - 1
    run_starts, run_sizes = starts[heads], ends[tails] - starts[heads]
    pieces = list(map(_pread, files[heads].tolist(), run_sizes.tolist(), run_starts.tolist()))
    if list(map(len, pieces)) != run_sizes.tolist():
        return None  # the end of a file: read_frame tells the truncation
    buf = b"".join(pieces)
    positions = np.cumsum(lengths) - lengths
    u8 = np.frombuffer(buf, np.uint8)
    headers = u8[positions[:, None] + _HEADER_BYTES]
    data_lengths = headers[:, :8].copy().view("<i8").ravel()  # signed: int64 arithmetic stays exact
    if not np.array_equal(data_lengths, lengths - FRAMING):
        return None
    unique = np.unique(data_lengths)
    expected = dict(zip(unique.tolist(), map(frame.length_crc, unique.tolist()), strict=True))
    stored = headers[:, 8:].copy().view("<u4").ravel()
    if len(unique) == 1:
        length_ok = bool((stored == expected[int(unique[0])]).all())
    else:
        length_ok = stored.tolist() == list(map(expected.__getitem__, data_lengths.tolist()))
    if not length_ok:
        return None
    records = frame.slice_records(buf, 0, np.cumsum(lengths))  # one struct call cuts them all out
    computed = mask_array(np.fromiter(map(crc_function(), records), np.uint32, len(records)))
    footers = u8[(positions + lengths - frame.FOOTER)[:, None] + _FOOTER_BYTES].copy().view("<u4").ravel()
    if not np.array_equal(computed, footers):
        return None
    return list(map(records.__getitem__, chosen.tolist()))


_HEADER_BYTES = np.arange(frame.HEADER)
_FOOTER_BYTES = np.arange(frame.FOOTER)


if hasattr(os, "pread"):
    _pread = os.pread
else:  # Windows: no pread; one lock keeps seek and read together
    _seek_lock = threading.Lock()

    def _pread(fd: int, size: int, offset: int) -> bytes:
        with _seek_lock:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size)


def _read_fully(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` (fewer only at the end of the file): pread may return short."""
    data = _pread(fd, size, offset)
    if len(data) == size or not data:
        return data
    pieces = [data]
    have = len(data)
    while have < size:
        more = _pread(fd, size - have, offset + have)
        if not more:
            break
        pieces.append(more)
        have += len(more)
    return b"".join(pieces)


# -- scanning headers -----------------------------------------------------------------------------------


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
        InvalidArgumentError: the file is compressed.
        ChecksumError: a length CRC does not match (a damaged header).
        TruncatedRecordError: the file ends inside a frame.

    Example:
        >>> offsets, lengths = scan_index("train.tfrecord")
    """
    path = os.fspath(path)
    check_uncompressed(path, compression, purpose="an index")
    offsets: list[int] = []
    lengths: list[int] = []
    with _open(path) as file:
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
                base, window, at = pos, _read_fully(fd, _SCAN_WINDOW, pos), 0
                if len(window) < frame.HEADER:
                    raise frame.truncation_error(None, len(window), path=path, index=len(offsets), offset=pos)
            length, stored = frame.unpack_header(window, at)
            if length_crc(length) != stored:
                hint = "the length field is damaged"
                if pos == 0 and window.startswith(_GZIP_MAGIC):
                    hint = "the file looks gzip-compressed, and random access needs an uncompressed file"
                raise frame.length_error(length, stored, hint, path=path, index=len(offsets), offset=pos)
            end = pos + length + FRAMING
            if end > size:
                raise frame.truncation_error(
                    length, size - pos - frame.HEADER, path=path, index=len(offsets), offset=pos
                )
            add_offset(pos)
            add_length(length + FRAMING)
            pos = end
    return np.array(offsets, np.int64), np.array(lengths, np.int64)


def _open(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise MissingFileError(f"{path}: no such file") from None


# -- index files ----------------------------------------------------------------------------------------


def write_index(index_path: str | os.PathLike[str], offsets: Iterable[int], lengths: Iterable[int]) -> None:
    """Write an index file (``offset length`` lines), atomically: a temp file renamed into place."""
    index_path = os.fspath(index_path)
    text = "".join(f"{offset} {length}\n" for offset, length in zip(offsets, lengths, strict=True))
    directory, name = os.path.split(os.path.abspath(index_path))
    temp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temp, "w", encoding="ascii", newline="\n") as file:
            file.write(text)
        os.replace(temp, index_path)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise


def build_index(
    path: str | os.PathLike[str],
    index_path: str | os.PathLike[str] | None = None,
    *,
    compression: str | None = "auto",
) -> str:
    """Write the index file of an uncompressed TFRecord file, as DALI's ``tfrecord2idx`` does.

    Reads record headers and skips over payloads; every length CRC is checked.

    Args:
        path: the TFRecord file.
        index_path: where to write; by default ``path + ".idx"``.
        compression: ``"auto"`` (from the suffix) or ``None``; a compressed file
            cannot be indexed (InvalidArgumentError says why).

    Returns:
        The path of the index file.

    Example:
        >>> tfrec.build_index("train-00000-of-00004.tfrecord")
        'train-00000-of-00004.tfrecord.idx'
    """
    path = os.fspath(path)
    target = os.fspath(index_path) if index_path is not None else path + INDEX_SUFFIX
    offsets, lengths = scan_index(path, compression=compression)
    write_index(target, offsets.tolist(), lengths.tolist())
    return target


def read_index(index_path: str | os.PathLike[str]) -> FileIndex:
    """Read an index file written by :func:`build_index`, DALI's ``tfrecord2idx`` or the ``tfrecord`` package.

    Returns:
        ``(offsets, frame_lengths)`` as int64 arrays (empty for an empty file).

    Raises:
        MissingFileError: no such file.
        InvalidArgumentError: the file is not an index (the message names the line).

    Example:
        >>> offsets, lengths = tfrec.read_index("train.tfrecord.idx")
    """
    index_path = os.fspath(index_path)
    try:
        with open(index_path, "rb") as file:
            text = file.read()
    except FileNotFoundError:
        raise MissingFileError(f"{index_path}: no such index file") from None
    return parse_index(text, index_path)


def parse_index(text: bytes, where: str) -> FileIndex:
    """The ``(offsets, frame_lengths)`` of an index file's text; ``where`` names it in errors.

    Raises:
        InvalidArgumentError: the text is not an index (the message names the line).
    """
    if not _INDEX_TEXT.fullmatch(text):
        raise InvalidArgumentError(_index_syntax_error(where, text))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the text was checked: anything unexpected is a bug, not data
        values = np.fromstring(text.decode("ascii"), dtype=np.int64, sep=" ") if text.strip() else _NONE
    offsets, lengths = np.ascontiguousarray(values[0::2]), np.ascontiguousarray(values[1::2])
    _check_index(where, offsets, lengths)
    return offsets, lengths


_NONE = np.empty(0, np.int64)
# Lines of two decimal integers; spaces or tabs between and after them; \n or \r\n; the last newline optional.
_INDEX_TEXT = re.compile(
    rb"(?:[ \t]*[0-9]{1,18}[ \t]+[0-9]{1,18}[ \t]*\r?\n)*(?:[ \t]*[0-9]{1,18}[ \t]+[0-9]{1,18}[ \t]*\r?\n?)?"
)
_INDEX_LINE = re.compile(rb"[ \t]*[0-9]{1,18}[ \t]+[0-9]{1,18}[ \t]*\r?")


def _index_syntax_error(index_path: str, text: bytes) -> str:
    """The message naming the first line of ``text`` that is not ``offset length``."""
    lines = text.split(b"\n")
    if text.endswith(b"\n"):
        lines.pop()  # the newline ending the last line
    for number, line in enumerate(lines, 1):
        if not _INDEX_LINE.fullmatch(line):
            return (
                f"{index_path}, line {number}: expected 'offset length' (two decimal integers), "
                f"found {line[:80]!r}; is this an index file?"
            )
    return f"{index_path}: not an index file"  # pragma: no cover (the pattern and the loop agree)


def _check_index(index_path: str, offsets: np.ndarray, lengths: np.ndarray) -> None:
    short = np.flatnonzero(lengths < FRAMING)
    if short.size:
        line = int(short[0]) + 1
        raise InvalidArgumentError(
            f"{index_path}, line {line}: a frame length of {int(lengths[short[0]])} bytes is shorter "
            f"than the {FRAMING} bytes of framing; is this an index file?"
        )
    overlap = np.flatnonzero(offsets[1:] < offsets[:-1] + lengths[:-1])
    if overlap.size:
        line = int(overlap[0]) + 2
        raise InvalidArgumentError(
            f"{index_path}, line {line}: offset {int(offsets[overlap[0] + 1])} lies inside the frame "
            "of the line before; the index is damaged"
        )


def frames_end(offsets: Sequence[int] | np.ndarray, lengths: Sequence[int] | np.ndarray) -> int:
    """The byte just past the last frame of an index (0 when empty)."""
    return int(offsets[-1]) + int(lengths[-1]) if len(offsets) else 0


def check_index_covers(index_path: str, path: str, start: int, end: int, size: int) -> None:
    """Raise InvalidArgumentError unless the index's frames run from byte 0 (``start``) to ``size``.

    An index that stops short of the file or reaches past it belongs to
    another file or is out of date.
    """
    if end != size or start != 0:
        raise InvalidArgumentError(
            f"{index_path}: the index covers bytes {start} to {end} but {path} has {size}: the index "
            f"does not belong to this file (or is out of date); rebuild it with tfrec.build_index({path!r})"
        )


class IndexLines:
    """The text of an index file, parsed only at the lines asked for.

    Splitting records among readers needs each file's record count and a few
    offsets, not every line: finding the lines costs a small part of parsing
    and checking them all (:func:`parse_index`). A line that is read is
    checked; the others are checked in effect by the record reader, which
    verifies the length CRC of every frame it reads.

    Example:
        >>> lines = IndexLines(b"0 19\n19 20\n", "a.tfrecord.idx")
        >>> lines.count, lines.offset(1), lines.offset(2)
        (2, 19, 39)
    """

    def __init__(self, text: bytes, where: str) -> None:
        self.text, self.where = text, where
        ends = np.flatnonzero(np.frombuffer(text, np.uint8) == ord("\n"))
        if text and not text.endswith(b"\n"):  # the last newline is optional
            ends = np.append(ends, len(text))
        self._ends = ends  # where each line ends (its newline)
        self.count = len(ends)

    def frame(self, line: int) -> tuple[int, int]:
        """``(offset, frame length)`` on line ``line`` (counting from 0)."""
        start = int(self._ends[line - 1]) + 1 if line else 0
        raw = self.text[start : int(self._ends[line])]
        if not _INDEX_LINE.fullmatch(raw):
            raise InvalidArgumentError(
                f"{self.where}, line {line + 1}: expected 'offset length' (two decimal integers), "
                f"found {raw[:80]!r}; is this an index file?"
            )
        offset, length = map(int, raw.split())
        if length < FRAMING:
            raise InvalidArgumentError(
                f"{self.where}, line {line + 1}: a frame length of {length} bytes is shorter than the "
                f"{FRAMING} bytes of framing; is this an index file?"
            )
        return offset, length

    def offset(self, record: int) -> int:
        """The byte offset of frame ``record``; for ``record == count``, the byte just past the last frame."""
        if record < self.count:
            return self.frame(record)[0]
        if not self.count:
            return 0
        offset, length = self.frame(self.count - 1)
        return offset + length
