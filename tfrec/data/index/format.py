"""Index files: DALI's ``tfrecord2idx`` text format, where each record of a TFRecord file sits (data layer).

An index file is text, one line per record: ``offset length``, both decimal,
``length`` counting the whole frame (12 header + data + 4 footer bytes). This
is what NVIDIA DALI's ``tfrecord2idx`` and the ``tfrecord`` package write, so
their index files and ours are interchangeable, byte for byte. Building one
from a TFRecord file is :mod:`~tfrec.data.index.scan`'s part.

Example:
    >>> write_index("a.tfrecord.idx", [0, 19], [19, 20])
    >>> offsets, lengths = read_index("a.tfrecord.idx")
    >>> offsets.tolist(), lengths.tolist()
    ([0, 19], [19, 20])
"""

from __future__ import annotations

import os
import re
import secrets
import warnings
from collections.abc import Iterable, Sequence

import numpy as np

from ...errors import InvalidArgumentError, MissingFileError
from ...record.files import open_regular
from ...record.frame import FRAMING
from ..paths import local_path
from .chain import chain_mismatch, check_offsets_on_chain

__all__ = [
    "INDEX_LINE_BYTES",
    "INDEX_SUFFIX",
    "FileIndex",
    "IndexLines",
    "check_index_covers",
    "check_index_span",
    "frames_end",
    "max_index_size",
    "parse_index",
    "parse_lines",
    "read_index",
    "read_index_text",
    "write_index",
    "write_index_text",
]

INDEX_SUFFIX = ".idx"  # an index sits beside its file: train-00000-of-00004.tfrecord.idx

FileIndex = tuple[np.ndarray, np.ndarray]  # (offsets, frame lengths), int64


def write_index(index_path: str | os.PathLike[str], offsets: Iterable[int], lengths: Iterable[int]) -> None:
    """Write an index file (``offset length`` lines), atomically: a temp file renamed into place."""
    text = "".join(f"{offset} {length}\n" for offset, length in zip(offsets, lengths, strict=True))
    write_index_text(index_path, text)


def write_index_text(index_path: str | os.PathLike[str], text: str) -> None:
    """Write an index file's text atomically: a temp file renamed into place."""
    index_path = os.fspath(index_path)
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


def read_index(index_path: str | os.PathLike[str], *, data_size: int | None = None) -> FileIndex:
    """Read an index file written by :func:`build_index`, DALI's ``tfrecord2idx`` or the ``tfrecord`` package.

    Args:
        index_path: the index file; it must be a regular file (a FIFO or a
            device is refused without being read).
        data_size: the size of the TFRecord file it indexes, when known: an
            index larger than any index of such a file could be
            (:func:`max_index_size`) is refused without being read.

    Returns:
        ``(offsets, frame_lengths)`` as int64 arrays (empty for an empty file).

    Raises:
        MissingFileError: no such file.
        InvalidArgumentError: the file is not an index (the message names the line), is
            too large for its data file, or is not a regular file.

    Example:
        >>> offsets, lengths = tfrec.read_index("train.tfrecord.idx")
    """
    index_path = os.fspath(index_path)
    return parse_index(read_index_text(index_path, data_size), index_path)


def read_index_text(index_path: str, data_size: int | None = None) -> bytes:
    """The bytes of an index file, refused unless it is a regular file no larger than ``data_size``
    allows (see :func:`read_index`)."""
    try:
        fd = open_regular(index_path, purpose="an index file")
    except MissingFileError:
        raise MissingFileError(f"{index_path}: no such index file", path=index_path) from None
    with os.fdopen(fd, "rb") as file:
        if data_size is None:
            return file.read()
        limit = max_index_size(data_size)
        text = file.read(limit + 1)  # never more, even if the file grows while it is read
    if len(text) > limit:
        raise InvalidArgumentError(
            f"{index_path}: the index has more than {limit} bytes, more than an index of a "
            f"{data_size}-byte file can have ({INDEX_LINE_BYTES} bytes a line, a line per "
            f"{FRAMING} bytes at most); is this the index of that file?"
        )
    return text


# The longest index line accepted when an index is bounded by its file: 2 x 18 digits and spaces.
INDEX_LINE_BYTES = 64


def max_index_size(data_size: int) -> int:
    """The most bytes an index of a ``data_size``-byte file may have: one line per 16-byte frame at most.

    Example:
        >>> max_index_size(160)
        704
    """
    return INDEX_LINE_BYTES * (data_size // FRAMING + 1)


def parse_index(text: bytes, where: str) -> FileIndex:
    """The ``(offsets, frame_lengths)`` of an index file's text; ``where`` names it in errors.

    Raises:
        InvalidArgumentError: the text is not an index (the message names the line).
    """
    offsets, lengths = parse_lines(text, where)
    _check_index(where, offsets, lengths)
    return offsets, lengths


def parse_lines(text: bytes, where: str) -> FileIndex:
    """The numbers on the lines of an index's text, checked as text only (not as frames)."""
    if not _INDEX_TEXT.fullmatch(text):
        raise InvalidArgumentError(_index_syntax_error(where, text))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the text was checked: anything unexpected is a bug, not data
        values = np.fromstring(text.decode("ascii"), dtype=np.int64, sep=" ") if text.strip() else _NONE
    return np.ascontiguousarray(values[0::2]), np.ascontiguousarray(values[1::2])


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
    if text.startswith(b"tfrec-gzip-index"):
        return (
            f"{index_path}, line 1: a gzip index (tfrec's extension of the format, for gzip shards written "
            "as a series of members), not 'offset length' lines; it goes with a .gz file"
        )
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


def check_index_span(index_path: str, path: str, start: int, end: int, size: int) -> None:
    """Raise InvalidArgumentError unless the index's frames run from byte 0 (``start``) to ``size``.

    An index that stops short of the file or reaches past it belongs to
    another file or is out of date.
    """
    if end != size or start != 0:
        raise InvalidArgumentError(
            f"{index_path}: the index covers bytes {start} to {end} but {path} has {size}: the index "
            f"does not belong to this file (or is out of date); rebuild it with tfrec.build_index({path!r})"
        )


def check_index_covers(index_path: str, path: str, start: int, end: int, size: int) -> None:
    """Raise InvalidArgumentError unless the index spans the file and no offset of it lies inside a frame.

    For readers that start at an index's offsets and follow the frames from
    there (record ranges): :func:`check_index_span`, then, for local files,
    every offset whose header is intact must start a frame of the file's chain
    (:func:`~tfrec.data.index.chain.check_offsets_on_chain`): an offset inside
    a record's data, where an embedded frame passes every CRC, is refused with
    its line. Offsets at damaged bytes are left to the reader, which reports
    them. URLs are not read here: their index is trusted as far as its span.

    Example:
        >>> check_index_covers("a.tfrecord.idx", "a.tfrecord", 0, 230, os.path.getsize("a.tfrecord"))
    """
    check_index_span(index_path, path, start, end, size)
    local_index, local_data = local_path(index_path), local_path(path)
    if local_index is None or local_data is None:
        return
    offsets, lengths = parse_lines(read_index_text(local_index, size), index_path)
    fd = open_regular(local_data, purpose="an index check")
    try:
        back_to_back = not np.any(offsets[1:] != offsets[:-1] + lengths[:-1])
        if back_to_back and chain_mismatch(fd, offsets, lengths) is None:
            return  # the index is the chain (damaged headers aside): every offset starts a frame
        check_offsets_on_chain(fd, offsets, index_path=index_path, path=path)
    finally:
        os.close(fd)


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
