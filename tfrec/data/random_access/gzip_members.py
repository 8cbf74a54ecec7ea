"""Random access to the records of gzip files written as a series of members (data layer).

A record of such a file is read by reading its member's compressed bytes with
one positioned read and inflating them (:mod:`tfrec.data.index.members`
describes the files and their index). Inflated members are kept in a small
LRU (:class:`MemberCache`), so neighbouring records (a loader reading in
order, or a shuffle's batch that lands in one member twice) inflate it once.

Inflation is bounded by the index: a member is inflated to at most one byte
more than its records take, so a member that inflates to more (a tampered or
stale index, or a hostile file) is refused without holding more than that.
Errors name the file, the record and its offset in the inflated stream (as
:class:`~tfrec.RecordReader` numbers them), and the member's byte offset.

Example:
    >>> shard = GzipShard.load("train-00000-of-00004.tfrecord.gz", "train-00000-of-00004.tfrecord.gz.idx")
    >>> fd = os.open(shard.path, os.O_RDONLY)
    >>> shard.read(fd, 17, MemberCache(), key=(0, 0))
    b'...'
"""

from __future__ import annotations

import os
import threading
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError, RecordError, TruncatedRecordError
from ...forking import renew_in_child
from ...record import frame
from ...record.crc import crc_function, mask
from ...record.positioned import read_fully
from ..index.members import MAX_INFLATE_RATIO, GzipIndex, read_gzip_index, scan_gzip_index

__all__ = ["GzipShard", "MemberCache"]


class MemberCache:
    """The last few inflated members, least recently used first out; thread-safe.

    Example:
        >>> cache = MemberCache(4)
        >>> cache.put(("a", 0), b"...")
        >>> cache.get(("a", 0))
        b'...'
    """

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._members: OrderedDict[Any, bytes] = OrderedDict()
        self._lock = threading.Lock()
        renew_in_child(self, "_lock")

    def get(self, key: Any) -> bytes | None:
        with self._lock:
            found = self._members.get(key)
            if found is not None:
                self._members.move_to_end(key)
            return found

    def put(self, key: Any, members: bytes) -> None:
        with self._lock:
            self._members[key] = members
            self._members.move_to_end(key)
            while len(self._members) > self.capacity:
                self._members.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._members.clear()


class GzipShard:
    """One gzip file's members and records, as its index gives them.

    Args:
        path: the file.
        index: its :class:`~tfrec.data.index.members.GzipIndex`.
        size: the file's size in bytes (the last member ends there).
        where: what the index came from, for messages.
    """

    def __init__(self, path: str, index: GzipIndex, size: int, where: str) -> None:
        self.path, self.size = path, size
        first, starts = index.members()
        count = index.count
        self.offsets, self.lengths = index.offsets, index.lengths
        self.stream = index.stream_offsets()  # offsets in the inflated stream, for errors
        self.record_member = np.searchsorted(first, np.arange(count), side="right") - 1
        self.member_first = first
        self.member_bounds = np.append(starts, size).astype(np.int64)  # member m: bounds[m] to bounds[m + 1]
        last = np.append(first[1:], count) - 1
        self.member_sizes = (self.offsets[last] + self.lengths[last]) if count else np.zeros(0, np.int64)
        compressed = np.diff(self.member_bounds)
        too_large = np.flatnonzero(self.member_sizes > compressed * MAX_INFLATE_RATIO)
        if too_large.size:
            m = int(too_large[0])
            raise InvalidArgumentError(
                f"{where}, line {int(first[m]) + 2} (record {int(first[m])}): gzip member {m} (bytes "
                f"{int(self.member_bounds[m])} to {int(self.member_bounds[m + 1])} of {path}) is said to "
                f"inflate to {int(self.member_sizes[m])} bytes, more than {MAX_INFLATE_RATIO} times its "
                "size, which deflate cannot; the gzip index is damaged or belongs to another file"
            )

    @classmethod
    def load(cls, path: str, index_path: str | None) -> GzipShard:
        """The shard from its gzip index file, or by scanning the file when ``index_path`` is None."""
        size = os.path.getsize(path)
        if index_path is None:
            return cls(path, scan_gzip_index(path), size, path)
        return cls(path, read_gzip_index(index_path, data_size=size), size, index_path)

    def bounds(self) -> np.ndarray:
        """Each record's offset in the inflated stream, then the stream's end (for numbering)."""
        return self.stream

    def check_file(self, fd: int) -> None:
        """Raise unless the open file has the size its index was made for."""
        size = os.fstat(fd).st_size
        if size != self.size:
            raise RecordError(
                f"the file has {size} bytes but its gzip index covers {self.size}: "
                "it changed since the index was made",
                path=self.path,
            )

    def read(self, fd: int, record: int, cache: MemberCache, key: Any) -> bytes:
        """Record ``record`` of the file (both CRCs checked), inflating its member unless cached."""
        member = self.record_member.item(record)
        inflated = cache.get((key, member))
        if inflated is None:
            inflated = self._inflate(fd, member, record)
            cache.put((key, member), inflated)
        return self._frame(inflated, record)

    def _inflate(self, fd: int, member: int, record: int) -> bytes:
        start, end = int(self.member_bounds[member]), int(self.member_bounds[member + 1])
        expected = int(self.member_sizes[member])

        def error(kind: type[RecordError], problem: str) -> RecordError:
            return kind(problem, path=self.path, index=record, offset=self.stream.item(record))

        place = f"gzip member {member} (bytes {start} to {end} of the file)"
        raw = read_fully(fd, end - start, start)
        if len(raw) < end - start:
            raise error(TruncatedRecordError, f"the file ends inside {place}: it is truncated")
        inflate = zlib.decompressobj(zlib.MAX_WBITS + 16)
        try:
            # Never more than one byte beyond what the index says: a larger member is refused, not held.
            out = inflate.decompress(raw, expected + 1)
            if len(out) == expected and not inflate.eof:
                out += inflate.decompress(inflate.unconsumed_tail, 1)
        except zlib.error as exc:
            raise error(RecordError, f"{place} does not inflate ({exc})") from None
        if len(out) > expected:
            raise error(
                RecordError,
                f"{place} inflates to more than the {expected} bytes its index gives: "
                "the index does not match the file; rebuild it with tfrec.build_index",
            )
        if not inflate.eof:
            raise error(TruncatedRecordError, f"{place} ends before its end-of-member marker")
        if len(out) < expected:
            raise error(
                RecordError,
                f"{place} inflates to {len(out)} bytes, fewer than the {expected} its index gives: "
                "the index does not match the file; rebuild it with tfrec.build_index",
            )
        if inflate.unused_data:
            raise error(
                RecordError,
                f"{place} ends {len(inflate.unused_data)} bytes before the next member its index gives: "
                "the index does not match the file; rebuild it with tfrec.build_index",
            )
        return out

    def _frame(self, inflated: bytes, record: int) -> bytes:
        """The data of the frame of ``record`` in its inflated member, both CRCs checked."""
        at, length = self.offsets.item(record), self.lengths.item(record)
        size, stored = frame.unpack_header(inflated, at)
        if frame.length_crc(size) != stored:
            hint = "the length field is damaged, or the index does not match the file"
            offset = self.stream.item(record)
            raise frame.length_error(size, stored, hint, path=self.path, index=record, offset=offset)
        offset = self.stream.item(record)
        if size + frame.FRAMING != length:
            raise RecordError(
                f"the gzip index gives a frame of {length} bytes but the record header says "
                f"{size + frame.FRAMING} ({size} bytes of data): the index does not match the file; "
                "rebuild it",
                path=self.path,
                index=record,
                offset=offset,
            )
        data = inflated[at + frame.HEADER : at + frame.HEADER + size]
        stored = frame.unpack_crc(inflated, at + frame.HEADER + size)[0]
        computed = mask(crc_function()(data))
        if computed != stored:
            raise frame.data_error(size, stored, computed, path=self.path, index=record, offset=offset)
        return data
