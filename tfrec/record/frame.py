"""The TFRecord frame: uint64 length, masked CRC32C of the length, data, masked CRC32C of the data
(record layer).

Both CRCs are masked as TensorFlow masks them (:func:`~tfrec.record.crc.mask`). Here are the
frame's sizes, its header for a length (shared by writer and reader: it depends on the length
alone), and the vectorised steps the reader takes over a block of frames.

Example:
    >>> header(5) == struct.pack("<Q", 5) + struct.pack("<I", masked_crc(struct.pack("<Q", 5)))
    True
    >>> HEADER + 5 + FOOTER  # the bytes of a frame of 5 data bytes
    21
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence

import numpy as np

from ..cache import BoundedCache
from ..errors import ChecksumError, TruncatedRecordError
from .crc import masked_crc, masked_crc_rows, unmask_array

__all__ = [
    "FOOTER",
    "FRAMING",
    "HEADER",
    "LARGE",
    "MIN_RUN",
    "SMALL_FRAME",
    "count_equal_headers",
    "data_error",
    "first_bad_length",
    "header",
    "length_crc",
    "length_crcs",
    "length_error",
    "length_ok",
    "pack_crc",
    "slice_records",
    "small_frame_chain",
    "stored_crcs",
    "truncation_error",
    "unpack_crc",
    "unpack_header",
    "unpack_length",
]

HEADER = 12  # uint64 length + uint32 masked CRC of the length
FOOTER = 4  # uint32 masked CRC of the data
FRAMING = HEADER + FOOTER  # the bytes of a frame around its data: an index's frame length is data + FRAMING
LARGE = 1 << 16  # records at least this long are read into their own object; the length table's size
MIN_RUN = 32  # records ahead before a run of equal headers is worth numpy
SMALL_FRAME = 256  # frames below this size on average are found with numpy over a block's bytes
_CRC_BYTES = np.arange(4)
unpack_header = struct.Struct("<QI").unpack_from
unpack_length = struct.Struct("<Q").unpack_from
unpack_crc = struct.Struct("<I").unpack_from
pack_crc = struct.Struct("<I").pack
_pack_length = struct.Struct("<Q").pack


def _make_header(length: int) -> bytes:
    length_bytes = _pack_length(length)
    return length_bytes + pack_crc(masked_crc(length_bytes))


# length -> the 12-byte header; shared by every writer and reader of the process.
_HEADERS: BoundedCache[int, bytes] = BoundedCache(1 << 16, compute=_make_header)
header = _HEADERS.__getitem__  # a bound dict lookup: the writer calls it per record


@functools.cache
def _length_crc_parts() -> tuple[np.uint32, np.ndarray, np.ndarray, np.ndarray]:
    """CRC32C of an 8-byte little-endian length, split by bits: 0-15, 16-31, 32-39 (XOR the parts)."""

    def crcs(values: np.ndarray, shift: int) -> np.ndarray:
        rows = (values.astype("<u8") << np.uint64(shift)).view(np.uint8).reshape(-1, 8)
        return unmask_array(masked_crc_rows(rows))

    zero = crcs(np.zeros(1, np.uint64), 0)[0]
    sixteen = np.arange(1 << 16, dtype=np.uint64)
    return zero, crcs(sixteen, 0) ^ zero, crcs(sixteen, 16) ^ zero, crcs(sixteen[:256], 32) ^ zero


def length_crcs(lengths: np.ndarray) -> np.ndarray:
    """The unmasked CRC32C of each length field (int64 lengths below 2**40), with no loop per length.

    CRCs are affine, so a length's CRC is the XOR of a table entry per 16 bits.
    """
    zero, low, middle, high = _length_crc_parts()
    crcs: np.ndarray = zero ^ low[lengths & 0xFFFF] ^ middle[(lengths >> 16) & 0xFFFF]
    crcs ^= high[(lengths >> 32) & 0xFF]
    return crcs


@functools.cache
def _length_table() -> np.ndarray:
    """The masked length CRC of every length below LARGE, so that a block's are checked in one step."""
    table: np.ndarray = masked_crc_rows(np.arange(LARGE, dtype="<u8").view(np.uint8).reshape(-1, 8))
    return table


def length_crc(length: int) -> int:
    """The masked CRC of a frame header's length field."""
    crc: int = unpack_crc(header(length), 8)[0]
    return crc


def length_ok(buf: bytes, pos: int) -> bool:
    """Whether the length CRC of the frame header at ``pos`` in ``buf`` matches."""
    length, stored = unpack_header(buf, pos)
    return length_crc(length) == stored


# -- the errors of a damaged frame, worded once for every reader --------------------------------------


def length_error(
    length: int, stored: int, hint: str, *, path: str | None, index: int, offset: int
) -> ChecksumError:
    """A header whose length CRC does not match; ``hint`` says what may be wrong."""
    computed = length_crc(length)
    return ChecksumError(
        f"length CRC mismatch in a record header claiming {length} bytes: "
        f"stored {stored:#010x}, computed {computed:#010x}; {hint}",
        part="length",
        stored=stored,
        computed=computed,
        path=path,
        index=index,
        offset=offset,
    )


def data_error(
    size: int, stored: int, computed: int, *, path: str | None, index: int, offset: int
) -> ChecksumError:
    """A frame of ``size`` data bytes at ``offset`` whose data CRC does not match."""
    return ChecksumError(
        f"data CRC mismatch in a record of {size} bytes (data at offset {offset + HEADER}): "
        f"stored {stored:#010x}, computed {computed:#010x}; the record's bytes are damaged",
        part="data",
        stored=stored,
        computed=computed,
        path=path,
        index=index,
        offset=offset,
    )


def truncation_error(
    length: int | None, available: int, *, path: str | None, index: int, offset: int, hint: str = ""
) -> TruncatedRecordError:
    """The stream ends inside the frame at ``offset``.

    ``length`` is ``None`` when even the header is incomplete (``available`` bytes of it);
    otherwise ``available`` counts the bytes after the header.
    """
    if length is None:
        problem = (
            f"the stream ends {available} bytes into a {HEADER}-byte record header: "
            "the file is truncated or has trailing garbage"
        )
    else:
        problem = (
            f"the record claims {length} bytes of data but the stream ends {available} bytes "
            f"after its header (a whole frame is {length + FRAMING} bytes): the file is truncated"
        )
    return TruncatedRecordError(problem + hint, path=path, index=index, offset=offset)


def first_bad_length(buf: bytes, first: int, ends: np.ndarray) -> int | None:
    """The start of the first frame (from ``first`` to ``ends``) whose length CRC does not match."""
    if not ends.size:
        return None
    starts = np.empty_like(ends)
    starts[0] = first
    starts[1:] = ends[:-1]
    lengths = ends - starts - FRAMING
    u8 = np.frombuffer(buf, np.uint8)
    stored = u8[(starts + 8)[:, None] + _CRC_BYTES].view("<u4").ravel()
    if int(lengths.max()) < LARGE:
        bad = np.flatnonzero(_length_table()[lengths] != stored)
    else:  # lengths beyond the table: few distinct ones, each header's CRC cached
        expected = np.fromiter(map(length_crc, lengths.tolist()), np.uint32, lengths.size)
        bad = np.flatnonzero(expected != stored)
    return int(starts[bad[0]]) if bad.size else None


def small_frame_chain(buf: bytes, pos: int) -> np.ndarray:
    """The ends of the whole frames that follow each other from ``pos`` in ``buf``, found with numpy.

    Every position is looked at as a header (a few numpy steps per byte, no loop per record), so
    this pays for frames smaller than about :data:`SMALL_FRAME` bytes. The chain holds only frames
    shorter than :data:`LARGE` whose length CRC matches, and it stops where the next frame is not
    one (or where a payload happens to hold a valid header): the caller walks on from there.
    """
    count = len(buf) - pos - HEADER + 1
    if count <= 0:
        return np.empty(0, np.int64)
    every_length = np.ndarray((count,), "<u8", buf, pos, (1,))
    found = np.flatnonzero(every_length < LARGE)
    lengths = every_length[found].astype(np.int64)
    stored = np.ndarray((count,), "<u4", buf, pos + 8, (1,))[found]
    valid = _length_table()[lengths] == stored
    starts, ends = found[valid], found[valid] + lengths[valid] + FRAMING
    if not starts.size or starts[0] != 0:
        return np.empty(0, np.int64)
    breaks = np.flatnonzero(starts[1:] != ends[:-1])
    ends = ends[: breaks[0] + 1] if breaks.size else ends
    whole: np.ndarray = ends[ends <= len(buf) - pos] + pos  # increasing: the whole frames are a prefix
    return whole


def stored_crcs(buf: bytes, ends: np.ndarray) -> np.ndarray:
    """The data CRCs stored in the footers of the frames ending at ``ends`` in ``buf``."""
    stored: np.ndarray = np.frombuffer(buf, np.uint8)[(ends - FOOTER)[:, None] + _CRC_BYTES]
    return stored.view("<u4").ravel()


class _FrameFormats(dict[int, str]):
    """struct codes that take the data of a frame of each length: skip header, take data, skip footer."""

    def __missing__(self, length: int) -> str:
        code = self[length] = f"{HEADER}x{length}s{FOOTER}x"
        return code


_FRAME_FORMATS = _FrameFormats()


FEW_LENGTHS = 8  # up to this many distinct lengths in a block, records are made a length at a time


def slice_records(buf: bytes, first: int, ends: np.ndarray) -> Sequence[bytes]:
    """The data of the consecutive frames from ``first`` to ``ends``, as new bytes objects.

    Records of one length are the rows of a strided void view, whose ``tolist`` makes them all in
    one C loop; records of a few lengths are made so a length at a time, each into its place. Many
    lengths take one struct call. (Either beats a slice per record; the void rows also beat
    building and compiling a struct format of a code per record.)
    """
    if not ends.size:
        return []
    lengths = np.diff(ends, prepend=first) - FRAMING
    starts = ends - FOOTER - lengths
    size = int(lengths[0])
    if (lengths == size).all():
        return _records_of_size(buf, starts, size, size + FRAMING)
    # The lengths present: counted when short (a sort of every length costs more than the rest).
    sizes = np.flatnonzero(np.bincount(lengths)) if int(lengths.max()) < LARGE else np.unique(lengths)
    if sizes.size > FEW_LENGTHS:
        layout = "".join(map(_FRAME_FORMATS.__getitem__, lengths.tolist()))
        return struct.Struct(layout).unpack_from(buf, first)  # Struct(): not kept in struct's cache
    out = np.empty(ends.size, object)
    for size in sizes.tolist():
        where = np.flatnonzero(lengths == size)
        out[where] = _rows(buf, starts[where], size) if size else b""  # void items become bytes
    records: list[bytes] = out.tolist()
    return records


def _records_of_size(buf: bytes, starts: np.ndarray, size: int, stride: int) -> list[bytes]:
    """The ``size``-byte records at ``starts`` in ``buf``, evenly spaced by ``stride``."""
    if not size:  # (no zero-sized void type)
        return [b""] * starts.size
    records: list[bytes] = np.ndarray((starts.size,), f"V{size}", buf, int(starts[0]), (stride,)).tolist()
    return records


def _rows(buf: bytes, starts: np.ndarray, size: int) -> np.ndarray:
    """The ``size``-byte records at ``starts`` in ``buf``, as void items (a void item at every position
    of the buffer, gathered)."""
    rows: np.ndarray = np.ndarray((len(buf) - size + 1,), f"V{size}", buf, 0, (1,))[starts]
    return rows


def count_equal_headers(buf: bytes, pos: int, stride: int) -> int:
    """How many consecutive frames of size ``stride`` from ``pos`` repeat the header at ``pos``.

    Looks at MIN_RUN frames first, so a short run costs little.
    """
    available = (len(buf) - pos) // stride
    rows = min(available, MIN_RUN)
    while True:
        frames = np.frombuffer(buf, np.uint8, count=rows * stride, offset=pos).reshape(rows, stride)
        same = (frames[:, :HEADER] == frames[0, :HEADER]).all(axis=1)
        if not same.all():
            return int(same.argmin())
        if rows == available:
            return rows
        rows = available
