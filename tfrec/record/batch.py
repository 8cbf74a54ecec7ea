"""A batch of records as spans of one buffer, for decoders that work on whole batches (record
layer).

The reader hands out a batch as a view of the block it read: the buffer is that block, and the
records are spans of it between their frames' headers and footers, so no record is copied.
Records are still available one by one, as ``bytes``. Batched decoders read every record
straight from the buffer; they need a few bytes after the last record to stay in bounds, and
copy the batch themselves when a buffer does not have them.

Example:
    >>> batch = RecordBatch.from_records([b"ab", b"", b"cde"])
    >>> len(batch), batch[2], batch.starts.tolist(), batch.ends.tolist()
    (3, b'cde', [0, 2, 2], [2, 2, 5])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from ..errors import OutOfRangeError

__all__ = ["PAD", "RecordBatch"]

PAD = 1024  # zero bytes after the last record of a joined batch (decoders read fixed-width windows)


class RecordBatch(Sequence[bytes]):
    """Consecutive records of one file, as spans of one buffer.

    Attributes:
        buffer: the bytes the records are spans of (the block they were read in, or their join;
            for records of 64 KiB or more read from a plain file, a read-only map of the file).
        starts: int64 ``[n]``: record ``i`` is ``buffer[starts[i]:ends[i]]``.
        ends: int64 ``[n]``, increasing: spans never overlap and come in record order.
        path: the file they were read from (``None`` for a stream or records in memory).
        start_index: the number of the first record in that file.
        end_offset: the byte offset (in the decompressed stream) just past the last record,
            where reading resumes (``RecordReader(path, start_offset=..., start_index=...)``).

    ``tfrec.parse_example``, ``FeaturesDict.deserialize_batch`` and the other batched decoders take
    a RecordBatch as it is, without copying its records.

    Example:
        >>> for batch in tfrec.read_batches("train.tfrecord", 1024):
        ...     columns = tfrec.parse_example(batch, spec)
    """

    __slots__ = ("buffer", "end_offset", "ends", "path", "start_index", "starts")

    def __init__(
        self,
        buffer: bytes,
        starts: np.ndarray,
        ends: np.ndarray,
        *,
        path: str | None = None,
        index: int = 0,
        end_offset: int = 0,
    ) -> None:
        self.buffer = buffer
        self.starts = starts
        self.ends = ends
        self.path = path
        self.start_index = index
        self.end_offset = end_offset

    @classmethod
    def from_records(
        cls, records: Sequence[bytes], *, path: str | None = None, index: int = 0, end_offset: int = 0
    ) -> RecordBatch:
        """A batch of ``records``, joined into one buffer followed by :data:`PAD` zero bytes."""
        offsets = np.zeros(len(records) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, records), np.int64, len(records)), out=offsets[1:])
        buffer = b"".join([*records, bytes(PAD)])
        return cls(buffer, offsets[:-1], offsets[1:], path=path, index=index, end_offset=end_offset)

    @classmethod
    def from_pieces(
        cls,
        pieces: Sequence[tuple[bytes, np.ndarray, np.ndarray]],
        *,
        path: str | None = None,
        index: int = 0,
        end_offset: int = 0,
    ) -> RecordBatch:
        """A batch of consecutive records given as ``(buffer, starts, ends)`` pieces (spans of read
        blocks): a view of the buffer when there is one piece, else the pieces' spans joined once,
        followed by :data:`PAD` zero bytes."""
        if len(pieces) == 1:
            buffer, starts, ends = pieces[0]
            return cls(buffer, starts, ends, path=path, index=index, end_offset=end_offset)
        spans: list[bytes | memoryview] = []
        all_starts, all_ends = [], []
        at = 0  # where the next piece's first span lands in the join
        for buffer, starts, ends in pieces:
            first, last = int(starts[0]), int(ends[-1])
            spans.append(memoryview(buffer)[first:last])
            all_starts.append(starts - (first - at))
            all_ends.append(ends - (first - at))
            at += last - first
        spans.append(bytes(PAD))
        joined = b"".join(spans)
        starts, ends = np.concatenate(all_starts), np.concatenate(all_ends)
        return cls(joined, starts, ends, path=path, index=index, end_offset=end_offset)

    @property
    def lengths(self) -> np.ndarray:
        """The records' lengths (int64)."""
        lengths: np.ndarray = self.ends - self.starts
        return lengths

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, item: int) -> bytes: ...

    @overload
    def __getitem__(self, item: slice) -> list[bytes]: ...

    def __getitem__(self, item: int | slice) -> bytes | list[bytes]:
        if isinstance(item, slice):
            return [self[i] for i in range(*item.indices(len(self)))]
        count = len(self)
        if item < 0:
            item += count
        if not 0 <= item < count:
            raise OutOfRangeError(f"record {item} of a batch of {count}")
        return self.buffer[self.starts[item] : self.ends[item]]

    def __iter__(self) -> Iterator[bytes]:
        return map(self.buffer.__getitem__, map(slice, self.starts.tolist(), self.ends.tolist()))

    def __repr__(self) -> str:
        where = f"{self.path or '<stream>'} records {self.start_index}..{self.start_index + len(self) - 1}"
        return f"<RecordBatch {len(self)} records, {int(self.lengths.sum())} bytes: {where}>"

    def __reduce__(self) -> tuple[object, ...]:
        # Pickles (to worker processes and back) as the records joined: never the whole block.
        joined = RecordBatch.from_records(self)
        return (
            _rebuild,
            (joined.buffer, joined.starts, joined.ends, self.path, self.start_index, self.end_offset),
        )


def _rebuild(
    buffer: bytes, starts: np.ndarray, ends: np.ndarray, path: str | None, index: int, end_offset: int
) -> RecordBatch:
    return RecordBatch(buffer, starts, ends, path=path, index=index, end_offset=end_offset)
