"""Gzip indexes: where each record of a gzip stream written as a series of members lies (data layer).

A gzip stream can only be inflated from the start of a member. tfrec writes
indexed gzip shards as a series of members that end on record boundaries
(:class:`~tfrec.record.compression.GzipMembersWriter`), so a record is read
by inflating its member alone. Its index extends DALI's ``offset length``
format: a header line, then one line per record of three decimal integers::

    tfrec-gzip-index 1
    member_offset offset_in_member frame_length

``member_offset`` is the byte offset of the record's member in the
compressed file; ``offset_in_member`` the offset of its frame in the member's
inflated bytes; ``frame_length`` counts the whole frame, as DALI's does. The
header line is not two integers, so a reader of DALI's format (the
``tfrecord`` package's ``np.loadtxt``, say) fails on it instead of taking
member offsets for record offsets; it is no ``#`` comment, which
``np.loadtxt`` would skip.

Building a gzip index (:func:`scan_gzip_index`) inflates the stream once,
member by member, with bounded memory.

Example:
    >>> index = scan_gzip_index("train-00000-of-00004.tfrecord.gz")
    >>> write_gzip_index("train-00000-of-00004.tfrecord.gz.idx", index)
    >>> read_gzip_index("train-00000-of-00004.tfrecord.gz.idx").count
    4096
"""

from __future__ import annotations

import os
import re
import warnings
import zlib
from dataclasses import dataclass

import numpy as np

from ...errors import InvalidArgumentError, RecordError, TruncatedRecordError
from ...record import frame
from ...record.compression import GZIP_MAGIC, member_marked
from ...record.files import open_regular
from ...record.frame import FRAMING, HEADER
from ...record.positioned import read_fully
from .format import read_index_text, write_index_text

__all__ = [
    "GZIP_INDEX_HEADER",
    "MAX_INFLATE_RATIO",
    "UNMARKED_MEMBER_BYTES",
    "GzipIndex",
    "is_gzip_index",
    "parse_gzip_index",
    "read_gzip_index",
    "scan_gzip_index",
    "write_gzip_index",
]

GZIP_INDEX_HEADER = b"tfrec-gzip-index 1\n"
# Deflate's best ratio is about 1032:1: a gzip file inflates to at most this many times its size. An
# index saying more is refused before anything is inflated.
MAX_INFLATE_RATIO = 1100
# A member not written by tfrec (no mark in its header) inflating to more than this is refused early:
# a TensorFlow-written shard is one member of the whole file, found out without inflating all of it.
UNMARKED_MEMBER_BYTES = 64 << 20
_CHUNK = 1 << 18  # compressed bytes read at once by the scan; also the most inflated at once


def is_gzip_index(text: bytes) -> bool:
    """Whether an index file's text is a gzip index (starts with :data:`GZIP_INDEX_HEADER`)."""
    return text.startswith(GZIP_INDEX_HEADER.rstrip(b"\n"))


@dataclass(frozen=True, eq=False)
class GzipIndex:
    """Each record's member offset, offset in its member and frame length (int64 arrays).

    Example:
        >>> index = GzipIndex.from_members([(0, 0), (90, 2)], [20, 21, 20])
        >>> index.member_offsets.tolist(), index.offsets.tolist()
        ([0, 0, 90], [0, 20, 0])
    """

    member_offsets: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray

    @classmethod
    def from_members(cls, members: list[tuple[int, int]], lengths: np.ndarray | list[int]) -> GzipIndex:
        """The index from ``(compressed offset, first record)`` of each member and the frame lengths."""
        lengths = np.asarray(lengths, np.int64)
        starts = np.array([first for _, first in members], np.int64)
        member_of = np.searchsorted(starts, np.arange(len(lengths)), side="right") - 1
        stream = np.cumsum(lengths) - lengths  # offsets in the inflated stream
        first_stream = np.append(stream, int(lengths.sum()))[starts] if len(starts) else starts
        offsets = stream - first_stream[member_of] if len(lengths) else stream
        member_offsets = np.array([offset for offset, _ in members], np.int64)[member_of]
        return cls(member_offsets, offsets.astype(np.int64), lengths)

    @property
    def count(self) -> int:
        return len(self.lengths)

    def stream_offsets(self) -> np.ndarray:
        """Where each record starts in the inflated stream, then where the stream ends (count + 1)."""
        return np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64)

    def members(self) -> tuple[np.ndarray, np.ndarray]:
        """``(first record, compressed offset)`` of each member, in order."""
        if not self.count:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        first = np.flatnonzero(np.diff(self.member_offsets, prepend=-1))
        return first, self.member_offsets[first]

    def text(self) -> str:
        lines = zip(self.member_offsets.tolist(), self.offsets.tolist(), self.lengths.tolist(), strict=True)
        return GZIP_INDEX_HEADER.decode() + "".join(f"{m} {o} {n}\n" for m, o, n in lines)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GzipIndex) and all(
            np.array_equal(a, b)
            for a, b in zip(
                (self.member_offsets, self.offsets, self.lengths),
                (other.member_offsets, other.offsets, other.lengths),
                strict=True,
            )
        )

    __hash__ = None  # type: ignore[assignment]


def write_gzip_index(index_path: str | os.PathLike[str], index: GzipIndex) -> None:
    """Write a gzip index file, atomically (a temp file renamed into place)."""
    write_index_text(index_path, index.text())


def read_gzip_index(index_path: str | os.PathLike[str], *, data_size: int | None = None) -> GzipIndex:
    """Read a gzip index file, checked line by line and against the size of its file when given.

    Raises:
        InvalidArgumentError: not a gzip index, or not one of a ``data_size``-byte file (the
            message names the line, the record and the offset).

    Example:
        >>> tfrec.data.index.members.read_gzip_index("train.tfrecord.gz.idx").count
        4096
    """
    index_path = os.fspath(index_path)
    # Bounded by the most frames the file can inflate to (a line of 3 numbers fits the bound's 64 bytes).
    text = read_index_text(index_path, None if data_size is None else data_size * MAX_INFLATE_RATIO)
    return parse_gzip_index(text, index_path, data_size=data_size)


_LINES = re.compile(rb"(?:[0-9]{1,18} [0-9]{1,18} [0-9]{1,18}\r?\n)*")


def parse_gzip_index(text: bytes, where: str, *, data_size: int | None = None) -> GzipIndex:
    """The :class:`GzipIndex` in an index file's text; ``where`` names it in errors."""
    if not is_gzip_index(text):
        found = text.split(b"\n", 1)[0][:40]
        raise InvalidArgumentError(
            f"{where}, line 1: expected {GZIP_INDEX_HEADER.rstrip().decode()!r}, found {found!r}: not a gzip "
            "index, which a gzip file's index must be; rebuild it with tfrec.build_index on the .gz file"
        )
    body = text[len(GZIP_INDEX_HEADER) :] if text.startswith(GZIP_INDEX_HEADER) else None
    if body is None or not _LINES.fullmatch(body):
        line = _first_bad_line(text)
        raise InvalidArgumentError(
            f"{where}, line {line}: expected 'member_offset offset_in_member frame_length' "
            "(three decimal integers) after the header line; the gzip index is damaged"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = (
            np.fromstring(body.decode("ascii"), np.int64, sep=" ") if body.strip() else np.zeros(0, np.int64)
        )
    index = GzipIndex(*(np.ascontiguousarray(values[k::3]) for k in range(3)))
    _check(index, where, data_size)
    return index


def _first_bad_line(text: bytes) -> int:
    lines = text.split(b"\n")
    if lines[0].rstrip(b"\r") + b"\n" != GZIP_INDEX_HEADER:
        return 1
    for number, line in enumerate(lines[1:], 2):
        if not re.fullmatch(rb"[0-9]{1,18} [0-9]{1,18} [0-9]{1,18}\r?", line):
            return number
    return len(lines)  # pragma: no cover (the pattern and the loop agree)


def _check(index: GzipIndex, where: str, data_size: int | None) -> None:
    """Members in order, frames back to back from 0 in each member, offsets within the file."""

    def fail(record: int, problem: str) -> None:
        member = int(index.member_offsets[record])
        raise InvalidArgumentError(
            f"{where}, line {record + 2} (record {record}, member at byte {member}, "
            f"offset {int(index.offsets[record])} in it): {problem}; the gzip index is damaged or belongs "
            "to another file"
        )

    if not index.count:
        return
    if index.member_offsets[0] != 0:
        fail(0, "the first member must start at byte 0")
    short = np.flatnonzero(index.lengths < FRAMING)
    if short.size:
        fail(
            int(short[0]), f"a frame length of {int(index.lengths[short[0]])} is shorter than {FRAMING} bytes"
        )
    new_member = np.diff(index.member_offsets, prepend=-1) != 0
    back = np.flatnonzero(np.diff(index.member_offsets) < 0)
    if back.size:
        fail(int(back[0]) + 1, "its member offset is before the member of the record before")
    expected = np.where(new_member, 0, np.concatenate([[0], index.offsets[:-1] + index.lengths[:-1]]))
    wrong = np.flatnonzero(index.offsets != expected)
    if wrong.size:
        fail(
            int(wrong[0]),
            f"expected offset {int(expected[wrong[0]])} in the member (frames lie back to back)",
        )
    if data_size is not None:
        beyond = np.flatnonzero(index.member_offsets >= data_size)
        if beyond.size:
            fail(int(beyond[0]), f"the member offset lies beyond the end of the file ({data_size} bytes)")


# -- building a gzip index by inflating the stream ----------------------------------------------------


def scan_gzip_index(path: str | os.PathLike[str]) -> GzipIndex:
    """Find the members of a gzip TFRecord file and the frames in each, inflating it once.

    The stream must be a series of members that end on record boundaries, as
    tfrec writes indexed gzip shards; a stream of one member is indexed only
    when its header carries tfrec's mark (it ends on a record boundary by
    construction): any other single member (TensorFlow's writer makes one) can
    only be read from its start, and so can a member without the mark that
    inflates to more than 64 MiB (found out when 64 MiB of it are inflated).
    Every length CRC is checked; payloads are not.

    Raises:
        InvalidArgumentError: one unmarked member, or a record that spans two members (the file
            can be read sequentially only).
        ChecksumError: a damaged record header. TruncatedRecordError: the stream ends early.

    Example:
        >>> scan_gzip_index("train-00000-of-00004.tfrecord.gz").count
        4096
    """
    path = os.fspath(path)
    fd = open_regular(path, purpose="an index")
    try:
        return _Scan(fd, path).run()
    finally:
        os.close(fd)


def sequential_only(path: str, why: str) -> InvalidArgumentError:
    """The error for a gzip file whose records cannot be reached by an offset."""
    return InvalidArgumentError(
        f"{path}: an index needs an uncompressed TFRecord file, and this one is gzip-compressed: "
        f"a gzip stream can only be read from its start ({why}), so no record can be reached by its "
        "offset; rewrite it as indexed gzip members (tfrec.ShardedWriter(..., compression='gzip', "
        "index=True)) or uncompressed, e.g. "
        "tfrec.write_records(plain_path, tfrec.read_records(path), compression=None)"
    )


class _Scan:
    """One pass over a gzip file: members from ``unused_data`` at each member's end, frames from headers."""

    def __init__(self, fd: int, path: str) -> None:
        self.fd, self.path = fd, path
        self.size = os.fstat(fd).st_size
        self.members: list[tuple[int, int]] = []
        self.lengths: list[int] = []
        self.stream_base = 0  # inflated offset of the member's start in the whole stream
        self.marked = False

    def run(self) -> GzipIndex:
        at = 0  # compressed offset of the next byte to feed
        pending = b""  # compressed bytes read, not yet fed
        while at < self.size or pending:
            if not pending:
                pending = read_fully(self.fd, _CHUNK, at)
            if len(pending) < 16 and at + len(pending) < self.size:
                pending += read_fully(self.fd, 16, at + len(pending))
            if not pending.startswith(GZIP_MAGIC):
                if not self.members:
                    raise InvalidArgumentError(
                        f"{self.path}: an index needs an uncompressed TFRecord file or a gzip one, and this "
                        "one is read as gzip but does not start as a gzip stream does"
                    )
                raise RecordError(
                    f"unexpected data after the end of gzip member {len(self.members)}, not another member",
                    path=self.path,
                    index=len(self.lengths),
                    offset=self.stream_base,
                )
            self.marked = member_marked(pending)
            at, pending = self._member(at, pending)
        if len(self.members) == 1 and not member_marked(read_fully(self.fd, 16, 0)):
            raise sequential_only(self.path, "it is one gzip member, not a series of them")
        return GzipIndex.from_members(self.members, self.lengths)

    def _member(self, at: int, pending: bytes) -> tuple[int, bytes]:
        """Inflate the member starting at ``at``; the next member's offset and its first bytes."""
        self.members.append((at, len(self.lengths)))
        inflate = zlib.decompressobj(zlib.MAX_WBITS + 16)
        frames = _Frames(self)
        while True:
            if not pending:
                pending = read_fully(self.fd, _CHUNK, at)
            try:
                # With no input left, this gives what the inflater still holds (a limit cut a call short).
                out = inflate.decompress(pending, _CHUNK)
            except zlib.error as exc:
                raise RecordError(
                    f"gzip member at byte {self.members[-1][0]} does not inflate ({exc})",
                    path=self.path,
                    index=len(self.lengths),
                    offset=self.stream_base + frames.inflated,
                ) from None
            if not pending and not out and not inflate.eof:
                raise TruncatedRecordError(
                    "the gzip stream ends inside a member (the file is cut short)",
                    path=self.path,
                    index=len(self.lengths),
                    offset=self.stream_base + frames.inflated,
                )
            rest = inflate.unused_data if inflate.eof else inflate.unconsumed_tail
            at += len(pending) - len(rest)
            pending = rest
            frames.feed(out)
            if inflate.eof:
                frames.end()
                self.stream_base += frames.inflated
                return at, pending


class _Frames:
    """The frames of one member's inflated bytes, found from their headers as the bytes arrive."""

    def __init__(self, scan: _Scan) -> None:
        self.scan = scan
        self.inflated = 0  # member bytes seen so far
        self.next = 0  # member offset of the next frame
        self.tail = b""  # the start of a header cut by the end of the last piece

    def feed(self, out: bytes) -> None:
        base = self.inflated - len(self.tail)
        buf = self.tail + out if self.tail else out
        self.inflated += len(out)
        scan = self.scan
        if self.inflated > UNMARKED_MEMBER_BYTES and not scan.marked:
            raise sequential_only(
                scan.path,
                f"gzip member {len(scan.members) - 1} inflates to more than "
                f"{UNMARKED_MEMBER_BYTES >> 20} MiB, and reading one record of it at random would "
                "inflate all that",
            )
        while self.next + HEADER <= self.inflated:
            length, stored = frame.unpack_header(buf, self.next - base)
            if frame.length_crc(length) != stored:
                raise frame.length_error(
                    length,
                    stored,
                    "the length field is damaged",
                    path=scan.path,
                    index=len(scan.lengths),
                    offset=scan.stream_base + self.next,
                )
            scan.lengths.append(length + FRAMING)
            self.next += length + FRAMING
        self.tail = buf[self.next - base :] if self.next < self.inflated else b""

    def end(self) -> None:
        if self.next != self.inflated:
            scan = self.scan
            raise sequential_only(
                scan.path,
                f"record {len(scan.lengths) - (self.next > self.inflated)} spans the end of gzip member "
                f"{len(scan.members) - 1} (at byte {scan.members[-1][0]}): the members do not end on record "
                "boundaries",
            )
