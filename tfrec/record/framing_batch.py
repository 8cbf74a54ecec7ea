"""Framing a batch of records at once: their TFRecord frames back to back in one buffer (record layer).

Every frame's header (length and its masked CRC) is computed for the whole batch in numpy; the
data CRC is one call of the CRC backend per record. A writer then writes the batch's frames as
one buffer (:meth:`~tfrec.record.RecordWriter.write_frames`).

Example:
    >>> frames = frame_records([b"ab", b"cde"])
    >>> frames.data == frame.header(2) + b"ab" + pack_crc(masked_crc(b"ab")) + frame.header(3) + b"cde" + ...
    True
    >>> len(frames), frames[1]
    (2, b'cde')
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import overload

import numpy as np

from .crc import crc_function, mask_array
from .frame import FOOTER, FRAMING, HEADER, length_crcs

__all__ = ["Frames", "frame_heads", "frame_records"]


class Frames(Sequence[bytes]):
    """Records framed together: ``data`` holds their TFRecord frames back to back.

    Indexing gives a record's bytes (its frame's data); a slice gives the frames of those
    records. ``lengths`` (int64) are the records' lengths; each frame takes ``FRAMING`` more bytes.

    Example:
        >>> frames = frame_records([b"a", b"bc", b"d"])
        >>> frames[1], len(frames[::2]), frames.lengths.tolist()
        (b'bc', 2, [1, 2, 1])
    """

    __slots__ = ("_starts", "data", "lengths")

    def __init__(self, data: bytes, lengths: np.ndarray) -> None:
        self.data = data
        self.lengths = lengths
        self._starts: np.ndarray | None = None

    @property
    def starts(self) -> np.ndarray:
        """Where each frame starts in ``data``, and (last) the end of the last one."""
        if self._starts is None:
            self._starts = np.zeros(len(self.lengths) + 1, np.int64)
            np.cumsum(self.lengths + FRAMING, out=self._starts[1:])
        return self._starts

    def __len__(self) -> int:
        return len(self.lengths)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> Frames: ...
    def __getitem__(self, index: int | slice) -> bytes | Frames:
        starts = self.starts
        if isinstance(index, slice):
            first, stop, step = index.indices(len(self))
            if step == 1:
                if stop <= first:
                    return Frames(b"", self.lengths[:0])
                return Frames(self.data[starts[first] : starts[stop]], self.lengths[first:stop])
            chosen = range(first, stop, step)
            data = self.data
            return Frames(
                b"".join([data[starts[i] : starts[i + 1]] for i in chosen]), self.lengths[first:stop:step]
            )
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"record {index} of a batch of {len(self)}")
        start = int(starts[index]) + HEADER
        return self.data[start : start + int(self.lengths[index])]

    def __iter__(self) -> Iterator[bytes]:
        data, starts = self.data, (self.starts[:-1] + HEADER).tolist()
        for start, length in zip(starts, self.lengths.tolist(), strict=True):
            yield data[start : start + length]


def frame_heads(lengths: np.ndarray) -> np.ndarray:
    """The 12-byte header of a frame of each of ``lengths`` bytes, as rows of a uint8 array."""
    heads = np.empty((len(lengths), HEADER), np.uint8)
    heads[:, :8] = lengths.astype("<u8").view(np.uint8).reshape(-1, 8)
    heads[:, 8:] = mask_array(length_crcs(lengths)).astype("<u4").view(np.uint8).reshape(-1, 4)
    return heads


def frame_records(records: Sequence[bytes], lengths: np.ndarray | None = None) -> Frames:
    """The frames of ``records`` (``bytes`` each; their int64 ``lengths`` when known).

    Example:
        >>> frame_records([b"ab"]).data == frame.header(2) + b"ab" + pack_crc(masked_crc(b"ab"))
        True
    """
    count = len(records)
    if lengths is None:
        lengths = np.fromiter(map(len, records), np.int64, count)
    if not count:
        return Frames(b"", lengths)
    crcs = mask_array(np.fromiter(map(crc_function(), records), np.uint32, count))
    # What comes between records: the footer of one and the header of the next, 16 bytes.
    glue = np.empty((count + 1, FRAMING), np.uint8)
    glue[1:, :FOOTER] = crcs.astype("<u4").view(np.uint8).reshape(-1, FOOTER)
    glue[:-1, FOOTER:] = frame_heads(lengths)
    flat = glue.tobytes()
    between = _glue_format(count - 1).unpack_from(flat, FRAMING)
    pieces = itertools.chain.from_iterable(zip(records, (*between, flat[-FRAMING:-HEADER]), strict=True))
    return Frames(b"".join(itertools.chain((flat[FOOTER:FRAMING],), pieces)), lengths)


@lru_cache(maxsize=64)
def _glue_format(count: int) -> struct.Struct:
    return struct.Struct(f"{FRAMING}s" * count)
