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
from .crc_columns import RowCrcs
from .frame import FOOTER, FRAMING, HEADER, length_crcs

__all__ = [
    "FRAMED_BYTES",
    "Frames",
    "RecordPart",
    "frame_heads",
    "frame_parts",
    "frame_records",
    "seal_frames",
]

# One part of every record of a batch, in the order of the records' bytes: a constant (``bytes``, the
# same in every record), a block (a uint8 array of one row per record, all rows of one width), or
# pieces (one ``bytes`` per record, or all of them back to back in one uint8 array; and their
# lengths as int64).
RecordPart = bytes | np.ndarray | tuple[Sequence[bytes] | np.ndarray, np.ndarray]

# Records up to this long are framed by frame_parts. A byte column costs its CRC a table lookup
# over the batch (~5 ns a record), a record one CRC call, a join and a copy (~0.8 µs): measured on
# rows of an int, a float and n floats, frame_parts was ~40% faster for 63-byte records, ~10% for
# 111-byte ones, and ~50% slower for 180-byte ones.
FRAMED_BYTES = 128  # at most crc_columns.MAX_ROW_CRC


class Frames(Sequence[bytes]):
    """Records framed together: ``data`` holds their TFRecord frames back to back.

    Indexing gives a record's bytes (its frame's data); a slice gives the frames of those
    records. ``lengths`` (int64) are the records' lengths; each frame takes ``FRAMING`` more bytes.
    ``data`` is ``bytes``, or a ``bytearray`` when the frames were sealed in place
    (:func:`seal_frames`): it is not changed afterwards.

    Example:
        >>> frames = frame_records([b"a", b"bc", b"d"])
        >>> frames[1], len(frames[::2]), frames.lengths.tolist()
        (b'bc', 2, [1, 2, 1])
    """

    __slots__ = ("_starts", "data", "lengths")

    def __init__(self, data: bytes | bytearray, lengths: np.ndarray) -> None:
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
                if first == 0 and stop == len(self):
                    return self  # all of them: no copy of the buffer
                return Frames(self.data[starts[first] : starts[stop]], self.lengths[first:stop])
            chosen = range(first, stop, step)
            data = memoryview(self.data)  # each frame copied once, into the join
            return Frames(
                b"".join([data[starts[i] : starts[i + 1]] for i in chosen]), self.lengths[first:stop:step]
            )
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"record {index} of a batch of {len(self)}")
        start = int(starts[index]) + HEADER
        return _bytes(self._readable()[start : start + int(self.lengths[index])])

    def __iter__(self) -> Iterator[bytes]:
        data, starts = self._readable(), (self.starts[:-1] + HEADER).tolist()
        for start, length in zip(starts, self.lengths.tolist(), strict=True):
            yield _bytes(data[start : start + length])

    def _readable(self) -> bytes | memoryview:
        """``data``, to slice records from with one copy each (a bytearray's slice is copied twice)."""
        return self.data if type(self.data) is bytes else memoryview(self.data)

    def triplets(self) -> Iterator[bytes | memoryview]:
        """Each frame as its header, data and footer, one after the other: what a writer of gzip
        members takes (it ends a member between frames)."""
        data = memoryview(self.data)
        for start, stop in itertools.pairwise(self.starts.tolist()):
            yield from (data[start : start + HEADER], data[start + HEADER : stop - FOOTER])
            yield data[stop - FOOTER : stop]


def _bytes(piece: bytes | memoryview) -> bytes:
    return piece if type(piece) is bytes else bytes(piece)


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
    # Header, record, glue, record, ..., footer: filled by two slice assignments, joined once.
    pieces: list[bytes] = [b""] * (2 * count + 1)
    pieces[1::2] = records
    pieces[2:-1:2] = _glue_format(count - 1).unpack_from(flat, FRAMING)
    pieces[0], pieces[-1] = flat[FOOTER:FRAMING], flat[-FRAMING:-HEADER]
    return Frames(b"".join(pieces), lengths)


def seal_frames(buffer: bytearray, lengths: np.ndarray) -> Frames:
    """Frames laid out in ``buffer`` with their headers (:func:`frame_heads`) and zero bytes for their
    footers, sealed: each data CRC computed where the data lies and written into its footer.

    The records are not copied: the CRC backend reads each in place (a uint8 view of the buffer).

    Example:
        >>> buffer = bytearray(frame_heads(np.array([2])).tobytes() + b"ab" + bytes(4))
        >>> seal_frames(buffer, np.array([2])).data == frame_records([b"ab"]).data
        True
    """
    count = len(lengths)
    if not count:
        return Frames(bytes(buffer), lengths)
    ends = np.cumsum(lengths + FRAMING) - FOOTER  # where each record's data ends, its footer starts
    view = np.frombuffer(buffer, np.uint8)
    records = map(view.__getitem__, map(slice, (ends - lengths).tolist(), ends.tolist()))
    crcs = mask_array(np.fromiter(map(crc_function(), records), np.uint32, count))
    view[(ends[:, None] + np.arange(FOOTER)).ravel()] = crcs.astype("<u4").view(np.uint8)
    del view, records  # the buffer is released: no export of it stays
    return Frames(buffer, lengths)


def frame_parts(parts: Sequence[RecordPart], lengths: np.ndarray) -> Frames | None:
    """The frames of records given as ``parts`` (their ``lengths``, int64), written straight into
    one buffer and checksummed a byte column at a time over every record
    (:class:`~.crc_columns.RowCrcs`): no ``bytes`` per record is made, and no CRC call per record.
    For short records only: None when a record may be longer than :data:`FRAMED_BYTES`.

    Each part is written into every frame by one numpy assignment (its value in each record as one
    item of its longest value's width, at the record's offset), in the order of the records' bytes:
    the bytes a shorter piece leaves after it are overwritten by the next part, or the footer; pieces
    whose lengths differ more than that are written byte by byte.

    Example:
        >>> frames = frame_parts([b"k", np.array([[1], [2]], np.uint8)], np.array([2, 2]))
        >>> frames.data == frame_records([b"k\\x01", b"k\\x02"]).data
        True
    """
    count = len(lengths)
    widths = [_width(part) for part in parts]
    if not count or sum(widths) > FRAMED_BYTES:
        return None
    sizes = [part[1] if isinstance(part, tuple) else size for part, size in zip(parts, widths, strict=True)]
    after: list[int | np.ndarray] = []  # record bytes after each part: an int when those are of one width
    tail: int | np.ndarray = 0
    for size in reversed(sizes):
        after.append(tail)
        tail = tail + size
    after.reverse()
    total = int(lengths.sum()) + FRAMING * count
    buffer = bytearray(total + max(widths, default=0))  # room for the last record's longest piece
    view = np.frombuffer(buffer, np.uint8)
    at = np.zeros(count, np.int64)  # where each frame starts, then where its next part goes
    np.cumsum(lengths[:-1] + FRAMING, out=at[1:])
    _put(view, at, lengths.astype("<u8").view(np.uint8).reshape(count, 8))
    _put(view, at + 8, mask_array(length_crcs(lengths)).astype("<u4").view(np.uint8).reshape(count, 4))
    at += HEADER
    crcs = RowCrcs(lengths)
    for part, width, size, behind in zip(parts, widths, sizes, after, strict=True):
        if not width:
            continue
        if isinstance(part, bytes):
            crcs.add_constant(part, behind)
        elif isinstance(part, np.ndarray):
            crcs.add_block(part, behind + width - 1)
        else:
            pieces, lengths_of = part
            block = np.zeros((count, width), np.uint8)  # each piece, then zero bytes (none in a CRC)
            flat = pieces if isinstance(pieces, np.ndarray) else np.frombuffer(b"".join(pieces), np.uint8)
            block[np.arange(width) < lengths_of[:, None]] = flat
            crcs.add_block(block, behind + lengths_of - 1)
            if (width - lengths_of > behind + FOOTER).any():  # a row would run into the next frame
                starts = np.repeat(at - np.cumsum(lengths_of) + lengths_of, lengths_of)
                view[starts + np.arange(len(starts))] = flat
                at += size
                continue
            part = block
        _put(view, at, part)
        at += size
    _put(view, at, mask_array(crcs.crcs()).astype("<u4").view(np.uint8).reshape(count, FOOTER))
    del view
    del buffer[total:]
    return Frames(buffer, lengths)


def _put(buffer: np.ndarray, at: np.ndarray, values: bytes | np.ndarray) -> None:
    """Write ``values`` (a block: row ``i`` at ``at[i]``; or bytes, at every offset) into ``buffer``
    (uint8), each row as one item: numpy copies a narrow slice of many rows a row at a time, ~4x
    slower."""
    width = len(values) if isinstance(values, bytes) else values.shape[1]
    item = np.dtype((np.void, width))
    windows = np.ndarray((len(buffer) - width + 1,), item, buffer, strides=(1,))  # every offset's
    if isinstance(values, bytes):
        windows[at] = np.void(values)
    else:
        windows[at] = np.ascontiguousarray(values).view(item)[:, 0]


def _width(part: RecordPart) -> int:
    """The bytes ``part`` takes in a record at most: its longest value's."""
    if isinstance(part, bytes):
        return len(part)
    if isinstance(part, np.ndarray):
        return int(part.shape[1])
    return int(part[1].max()) if len(part[1]) else 0


@lru_cache(maxsize=64)
def _glue_format(count: int) -> struct.Struct:
    return struct.Struct(f"{FRAMING}s" * count)
