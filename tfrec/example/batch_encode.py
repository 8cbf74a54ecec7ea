"""Batched, columnar Example encoding (example layer): columns in, the bytes of every record out.

A column holds one feature of every record of a batch. Its values are encoded for the whole
column at once in numpy (float32s as one cast, varints vectorised over every value whatever their
lengths), as parts of every record: a constant (a map entry head that every record shares), a
block (values of one width in every record: rows of one array, beside the constants around them),
or one piece per record (bytes values, varints and heads whose lengths differ, cut from one buffer
by one ``struct`` call). Each record is then joined from its parts, and :func:`encode_records`
gives their lengths too, for framing them together; or :class:`RecordParts` joins every record
straight into one buffer, between bytes of a writer's (its frame headers and footers). There are
no per-layout templates: the work per batch does not grow with the number of distinct field sizes.
The bytes are those of :func:`~tfrec.example.codec.encode_typed_example` record by record (a
property test compares them).

Example:
    >>> columns = [Column(b"id", wire.INT64, np.arange(3)[:, None])]
    >>> encode_columns(columns, 3)[2] == tfrec.encode_example({"id": 2})
    True
"""

from __future__ import annotations

import functools
import operator
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from . import wire
from .codec import encode_entries, encode_example, packed_head, varint

__all__ = [
    "RAW",
    "Column",
    "RecordParts",
    "encode_columns",
    "encode_examples",
    "encode_records",
    "split",
    "varint_array",
    "varint_lengths",
]

RAW = -1  # a column of whole map entries, already encoded, one ``bytes`` per record


@dataclass(frozen=True)
class Column:
    """One feature of every record of a batch, its values checked and of its stored type.

    ``values``: for INT64, an int64 (or uint64, stored bit for bit) array of shape
    ``(records, count)``; for FLOAT, a float32 array of that shape; for BYTES, one ``bytes`` value
    per record; for :data:`RAW` (``key`` unused), the encoded map entries of each record.

    Example:
        >>> Column(b"emb", wire.FLOAT, np.zeros((8, 4), np.float32))
        Column(...)
    """

    key: bytes
    kind: int
    values: Any


def varint_array(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varints of int64 (or uint64) ``values``, vectorised: ``(bytes as uint8, length of each)``.

    Negative values take 10 bytes (two's complement), as protobuf stores an int64.

    Example:
        >>> data, lengths = varint_array(np.array([1, 300]))
        >>> data.tobytes(), lengths.tolist()
        (b'\\x01\\xac\\x02', [1, 2])
    """
    unsigned = values.astype(np.int64, copy=False).view(np.uint64).ravel()
    if not unsigned.size or int(unsigned.max()) < 0x80:  # one byte each: the values themselves
        return unsigned.astype(np.uint8), np.ones(unsigned.size, np.int64)
    lengths = varint_lengths(unsigned)
    longest = int(lengths.max())
    if longest <= 8:  # each varint in one little-endian word: 7 bits a byte, then the high bits
        word_type = np.dtype("<u4") if longest <= 4 else np.dtype("<u8")
        word = word_type.type
        narrow = unsigned.astype(word_type)
        low = word(0x7F)
        words = np.bitwise_and(narrow, low)
        for i in range(1, longest):
            words |= np.left_shift(np.bitwise_and(np.right_shift(narrow, word(7 * i)), low), word(8 * i))
        words |= _CONTINUED[lengths].astype(word_type, copy=False)
        rows = words.view(np.uint8)
        keep = _KEPT[lengths].astype(word_type, copy=False).view(np.bool_)  # a byte of 1 for each kept
        return np.compress(keep, rows), lengths
    # Byte i of every value in column i (7 bits, and the high bit when more follow), then the
    # bytes each value has, row by row. Column by column: numpy is slow across short rows.
    has = np.empty((unsigned.size, longest), np.bool_)  # whether value v has byte i
    for i in range(longest):
        np.greater(lengths, i, out=has[:, i])
    groups = np.empty((unsigned.size, longest), np.uint8)
    rest = unsigned
    for i in range(longest):
        groups[:, i] = rest & np.uint64(0x7F)
        if i + 1 < longest:
            groups[:, i] |= has[:, i + 1].view(np.uint8) << 7
        rest = rest >> np.uint64(7)
    return np.compress(has.ravel(), groups.ravel()), lengths


# By a varint's length (up to 8), in a little-endian word: the high bit of each of its bytes but the
# last; a byte of 1 for each of its bytes.
_CONTINUED = np.array([sum(0x80 << (8 * i) for i in range(n - 1)) for n in range(9)], np.uint64)
_KEPT = np.array([sum(1 << (8 * i) for i in range(n)) for n in range(9)], np.uint64)


# One part of every record of a batch, in the order of the record's bytes: a constant (``bytes``, the
# same in every record), a block (a uint8 array of one row per record, all rows of one width), or
# pieces (one ``bytes`` per record, or all of them back to back in one uint8 array; and their
# lengths). The record layer frames parts of this form (tfrec.record.framing_batch.RecordPart).
_Part = bytes | np.ndarray | tuple[Sequence[bytes] | np.ndarray, np.ndarray]


def _column_parts(column: Column, count: int) -> list[_Part]:
    """The parts of ``column``: each record's map entry head, then its values."""
    kind, values = column.kind, column.values
    if kind in (wire.BYTES, RAW):
        if len(values) != count:
            raise ValueError(f"column {column.key!r} has {len(values)} values for {count} records")
        lengths = np.fromiter(map(len, values), np.int64, count)
        values = values if isinstance(values, list) else list(values)
        if kind == RAW:
            return [(values, lengths)]
        size = int(lengths[0]) if count else 0
        if count and size <= _BLOCK_BYTES and (lengths == size).all():  # short, of one length (ids...)
            block = np.frombuffer(b"".join(values), np.uint8).reshape(count, size)
            return [_packed_head(column.key, kind, size), block]
        return [_heads(column.key, kind, lengths), (values, lengths)]
    if kind == wire.FLOAT:
        block = np.ascontiguousarray(values, "<f4").reshape(count, -1).view(np.uint8)
        return [_packed_head(column.key, kind, block.shape[1]), block]
    if kind == wire.INT64:
        array = np.asarray(values).reshape(count, -1)
        if array.shape[1] == 1 and count:
            small = _small_varints(array[:, 0])
            if small is not None:  # one int per record, of one or two bytes: looked up, not computed
                return [_heads(column.key, kind, small[1]), small[0]]
        data, each = varint_array(array)
        width = array.shape[1]
        lengths = each.reshape(count, width).sum(1) if width else np.zeros(count, np.int64)
        if not count or (lengths == lengths[0]).all():  # every record's varints take the same bytes
            size = int(lengths[0]) if count else 0
            return [_packed_head(column.key, kind, size), data.reshape(count, size)]
        return [_heads(column.key, kind, lengths), (data, lengths)]  # cut into pieces when joined
    raise ValueError(f"column {column.key!r}: no batched encoding for kind {kind}")


_BLOCK_BYTES = 64  # bytes values up to this long, all of one length, are rows of a block, not pieces


def _small_varints(values: np.ndarray) -> tuple[_Part, np.ndarray] | None:
    """The varints of ``values`` (int64) when all take one or two bytes, and their lengths: a block
    when all take one, else one piece per record from a table; None when some take more."""
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= 1 << 14:
        return None
    if high < 0x80:
        return values.astype(np.uint8)[:, None], np.ones(len(values), np.int64)
    lengths = 1 + (values >= 0x80)
    if low >= 0x80:  # two bytes each: a block of rows, computed
        rows = np.empty((len(values), 2), np.uint8)
        rows[:, 0] = values & 0x7F | 0x80
        rows[:, 1] = values >> 7
        return rows, lengths
    if len(values) == 1:
        return ((_varint_table()[high],), lengths), lengths
    pieces = operator.itemgetter(*values.tolist())(_varint_table())
    return (pieces, lengths), lengths


@functools.cache
def _varint_table() -> list[bytes]:
    """The varint of every int of one or two bytes (below 2**14), made on first use."""
    return [varint(value) for value in range(1 << 14)]


def _heads(key: bytes, kind: int, sizes: np.ndarray) -> _Part:
    """The map entry heads before values of ``sizes`` bytes: one constant; rows of a block when all
    heads take the same bytes (sizes that do not cross a varint's length); else one piece each."""
    low = int(sizes.min()) if sizes.size else 0
    if not sizes.size or (sizes == low).all():
        return _packed_head(key, kind, low)
    return _table_part(functools.partial(_packed_head, key, kind), sizes)


def _table_part(head: Callable[[int], bytes], sizes: np.ndarray) -> _Part:
    """``head(size)`` for each of ``sizes`` (which differ): a block when all have one length, else
    pieces. Each distinct size is made once."""
    low, high = int(sizes.min()), int(sizes.max())
    if high - low < 4 * len(sizes):  # a table by size, without sorting the sizes
        found = np.flatnonzero(np.bincount(sizes - low)) + low
        index = sizes - low
        table = [head(size) for size in found.tolist()]
        if len(set(map(len, table))) == 1:
            rows = np.zeros((high - low + 1, len(table[0])), np.uint8)
            rows[found - low] = np.frombuffer(b"".join(table), np.uint8).reshape(len(table), -1)
            return rows[index]
        full = [b""] * (high - low + 1)
        for size, made in zip(found.tolist(), table, strict=True):
            full[size - low] = made
    else:
        distinct, index = np.unique(sizes, return_inverse=True)
        full = [head(size) for size in distinct.tolist()]
        if len(set(map(len, full))) == 1:
            return np.frombuffer(b"".join(full), np.uint8).reshape(len(full), -1)[index]
    heads = operator.itemgetter(*index.tolist())(full)  # sizes differ: more than one record
    return (heads, np.array(list(map(len, full)), np.int64)[index])


def split(data: bytes, lengths: np.ndarray) -> tuple[bytes, ...]:
    """``data`` cut into pieces of ``lengths`` (int64, summing to its length), in one C call.

    Example:
        >>> split(b"abcdef", np.array([1, 0, 5]))
        (b'a', b'', b'bcdef')
    """
    sizes = lengths.tolist()
    if max(sizes, default=0) < len(_FORMATS):
        return struct.unpack("".join(map(_FORMATS.__getitem__, sizes)), data)
    return struct.unpack("".join([f"{size}s" for size in sizes]), data)


_FORMATS = [f"{size}s" for size in range(256)]


def encode_columns(columns: Sequence[Column], count: int) -> list[bytes]:
    """The Example bytes of each of ``count`` records whose features are ``columns``, in order.

    Every column is encoded at once (varints vectorised, whatever their lengths), then each record
    is joined from its parts: runs of parts of one width in every record are filled in as rows of
    one array, the rest (bytes values, varints of varying lengths) are taken as they are.

    Raises:
        ValueError: a column does not hold ``count`` records (a caller's bug: values are checked
            before they are made columns).

    Example:
        >>> encode_columns([Column(b"t", wire.BYTES, [b"a", b"bc"])], 2)[1] == encode_example({"t": b"bc"})
        True
    """
    return encode_records(columns, count)[0]


def encode_records(columns: Sequence[Column], count: int) -> tuple[list[bytes], np.ndarray]:
    """:func:`encode_columns`, and the length of each record (int64), for framing them together.

    Example:
        >>> records, lengths = encode_records([Column(b"t", wire.BYTES, [b"a", b"bc"])], 2)
        >>> lengths.tolist() == [len(r) for r in records]
        True
    """
    parts = RecordParts(columns, count)
    return parts.records(), parts.lengths


class RecordParts:
    """The records of ``columns``, encoded column by column but not joined yet: ``lengths`` (int64)
    says how long each record is, :meth:`records` joins each record alone and :meth:`joined` all of
    them into one buffer, each between bytes of the caller's (a writer's frame header and footer).

    Example:
        >>> parts = RecordParts([Column(b"t", wire.BYTES, [b"a", b"bc"])], 2)
        >>> parts.records()[1] == encode_example({"t": b"bc"}), parts.lengths.tolist()
        (True, [10, 11])
    """

    def __init__(self, columns: Sequence[Column], count: int) -> None:
        self.count = count
        if count:
            self._parts, self.lengths = _record_parts(columns, count)
        else:
            self._parts, self.lengths = [], np.zeros(0, np.int64)

    @property
    def parts(self) -> list[_Part]:
        """The parts of every record, in the order of its bytes (its head first): each a constant
        (``bytes``), a block (uint8 rows, one per record) or pieces (``(bytes of each, lengths)``),
        as :func:`~tfrec.record.framing_batch.frame_parts` takes them."""
        return self._parts

    def records(self) -> list[bytes]:
        """Each record's bytes."""
        return _join(_merged(self._parts, self.count), self.count) if self.count else []

    def joined(self, before: Callable[[np.ndarray], np.ndarray], after: int) -> bytearray:
        """Every record's bytes back to back in one buffer, each after its row of ``before(lengths)``
        (a uint8 array ``(count, width)``: a writer's frame headers) and before ``after`` zero bytes
        (room for its footer). A large value (an image...) is copied once, into the buffer, where
        :meth:`records` and a join of the records copy it twice.

        Example:
            >>> parts = RecordParts([Column(b"t", wire.BYTES, [b"a", b"bc"])], 2)
            >>> buffer = parts.joined(lambda lengths: lengths[:, None].astype(np.uint8), 1)
            >>> bytes(buffer[1:11]) == encode_example({"t": b"a"})
            True
        """
        if not self.count:
            return bytearray()
        bounded = _merged([before(self.lengths), *self._parts, bytes(after)], self.count)
        return bytearray().join(_interleaved(bounded, self.count))


def _record_parts(columns: Sequence[Column], count: int) -> tuple[list[_Part], np.ndarray]:
    """The parts of every record, the record's own head first, and the length of each record."""
    parts: list[_Part] = []
    for column in columns:
        parts += _column_parts(column, count)
    body = np.zeros(count, np.int64)
    for part in parts:
        body += _part_lengths(part)
    heads = 1 + varint_lengths(body)
    return [_outer_heads(body), *parts], body + heads


def _part_lengths(part: _Part) -> np.ndarray | int:
    if isinstance(part, bytes):
        return len(part)
    if isinstance(part, np.ndarray):
        return part.shape[1]
    return part[1]


def _outer_heads(body: np.ndarray) -> _Part:
    """Each record's own head: the tag of its ``features`` field and the length of its entries,
    ``body``."""
    if (body == body[0]).all():
        return _outer_head(int(body[0]))
    return _table_part(_outer_head, body)


def _outer_head(size: int) -> bytes:
    return _FIELD_1 + varint(size)


_FIELD_1 = bytes((wire.FIELD_1,))

# The heads of a writer's columns repeat a few keys, kinds and sizes from batch to batch.
_packed_head = functools.lru_cache(maxsize=4096)(packed_head)


def _merged(parts: list[_Part], count: int) -> list[_Part]:
    """``parts`` with each run of constants and blocks made one part: one array of rows, or one
    constant when the run holds no block."""
    out: list[_Part] = []
    run: list[bytes | np.ndarray] = []
    for part in [*parts, None]:
        if isinstance(part, (bytes, np.ndarray)):
            if not (isinstance(part, bytes) and not part) and not (
                isinstance(part, np.ndarray) and not part.shape[1]
            ):
                run.append(part)
            continue
        if run:
            out.append(_fill(run, count))
            run = []
        if part is not None:
            out.append(part)
    return out


def _fill(run: list[bytes | np.ndarray], count: int) -> bytes | np.ndarray:
    """One part from a run of constants and blocks: their bytes side by side in every row."""
    if all(isinstance(part, bytes) for part in run):
        return b"".join(run)  # type: ignore[arg-type]
    if len(run) == 1:
        return run[0]
    width = sum(len(part) if isinstance(part, bytes) else part.shape[1] for part in run)
    out = np.empty((count, width), np.uint8)
    at = 0
    for part in run:
        if isinstance(part, bytes):
            out[:, at : at + len(part)] = np.frombuffer(part, np.uint8)
            at += len(part)
        else:
            out[:, at : at + part.shape[1]] = part
            at += part.shape[1]
    return out


def _join(parts: list[_Part], count: int) -> list[bytes]:
    """Each record's bytes: its piece of every part, joined."""
    if len(parts) == 1:
        part = parts[0]
        if isinstance(part, bytes):
            return [part] * count
        return list(_rows(part) if isinstance(part, np.ndarray) else _pieces_of(part))
    return list(map(b"".join, _pieces(parts, count)))


def _pieces(parts: list[_Part], count: int) -> Iterator[tuple[bytes, ...]]:
    """Each record's piece of every part, in order: a tuple per record."""
    columns = [_column_of(part, count) for part in parts]
    return zip(*columns, strict=True)


def _interleaved(parts: list[_Part], count: int) -> list[bytes]:
    """Every record's piece of every part, record after record, in one list (filled a part at a
    time by slice assignments: no tuple per record)."""
    width = len(parts)
    out = [b""] * (width * count)
    for at, part in enumerate(parts):
        out[at::width] = _column_of(part, count)
    return out


def _column_of(part: _Part, count: int) -> Sequence[bytes]:
    """The piece of ``part`` of each record."""
    if isinstance(part, bytes):
        return [part] * count
    if isinstance(part, np.ndarray):
        return _rows(part)
    return _pieces_of(part)


def _pieces_of(part: tuple[Sequence[bytes] | np.ndarray, np.ndarray]) -> Sequence[bytes]:
    """The pieces of ``part``, cut from its bytes when they are one uint8 array."""
    pieces, lengths = part
    return split(pieces.tobytes(), lengths) if isinstance(pieces, np.ndarray) else pieces


def _rows(block: np.ndarray) -> tuple[bytes, ...]:
    """The rows of a uint8 block, one ``bytes`` each."""
    count, width = block.shape
    return _row_format(width, count).unpack(block.tobytes())


@functools.lru_cache(maxsize=64)
def _row_format(width: int, count: int) -> struct.Struct:
    return struct.Struct(f"{width}s" * count)


def varint_lengths(values: np.ndarray) -> np.ndarray:
    """The byte length of the varint of each of ``values`` (uint64, or non-negative int64).

    Example:
        >>> varint_lengths(np.array([0, 127, 128, 2**63], np.uint64)).tolist()
        [1, 1, 2, 10]
    """
    lengths = np.ones(values.shape, np.int64)
    top = int(values.max()) if values.size else 0
    for i in range(1, 10):
        if top < 1 << (7 * i):
            break
        lengths += values >= np.uint64(1 << (7 * i)) if values.dtype == np.uint64 else values >= 1 << (7 * i)
    return lengths


def encode_examples(columns: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[bytes]:
    """The Example bytes of each row of ``columns`` (feature key -> one value per row), as
    :func:`~tfrec.example.codec.encode_example` encodes each row; or of each mapping of a sequence
    of them (samples, as ``encode_example`` takes them), encoded together.

    A numpy column of ints, bools or floats is encoded in one go, its rows flattened row-major
    (floats rounded to float32; a finite float beyond float32's range raises, as encode_example
    does); a list of bytes too. Any other column (text, lists, object arrays) is encoded row by row.
    Samples of the same keys in the same order are made columns first: Python ints, floats, bools,
    str and bytes, numpy scalars, and arrays of one dtype and shape are encoded as such columns.

    Raises:
        EncodeError: a value cannot be stored, as for ``encode_example``.
        InvalidArgumentError: the columns do not have the same number of rows.

    Example:
        >>> records = tfrec.example.encode_examples({"id": np.arange(3), "emb": np.ones((3, 4), np.float32)})
        >>> records[1] == tfrec.encode_example({"id": 1, "emb": np.ones(4, np.float32)})
        True
        >>> tfrec.example.encode_examples([{"id": 1}, {"id": 2}])[1] == tfrec.encode_example({"id": 2})
        True
    """
    if not isinstance(columns, Mapping):
        return _encode_samples(columns)
    counts = {key: len(values) for key, values in columns.items()}
    if len(set(counts.values())) > 1:
        raise InvalidArgumentError(f"encode_examples: columns differ in length: {counts}")
    count = next(iter(counts.values()), 0)
    batch = []
    for key, values in columns.items():
        column = _numeric_column(key, values)
        if column is None:
            column = Column(b"", RAW, [_entry(key, value) for value in values])
        batch.append(column)
    return encode_columns(batch, count)


def _encode_samples(samples: Sequence[Mapping[str, Any]]) -> list[bytes]:
    """Samples of the same keys, in the same order, as columns; any others one by one."""
    rows = list(samples)
    if not rows:
        return []
    keys = tuple(rows[0]) if type(rows[0]) is dict else None
    if not keys or set(map(type, rows)) != {dict} or set(map(tuple, rows)) != {keys}:
        return [encode_example(row) for row in rows]  # each with its own keys (and errors)
    return encode_examples({key: _as_column(list(map(operator.itemgetter(key), rows))) for key in keys})


def _as_column(values: list[Any]) -> Any:
    """One key's values of every sample as a column :func:`_numeric_column` takes, when they are all
    of one type it can take at once; else the values as they are (encoded one by one)."""
    types = set(map(type, values))
    if len(types) != 1:
        return values
    (kind,) = types
    if kind is int:
        try:
            return np.array(values, np.int64)
        except OverflowError:
            return values  # the row path words the error
    if kind in (bool, float) or (issubclass(kind, np.generic) and np.dtype(kind).kind in "biuf"):
        return np.array(values)
    if kind is str:
        try:
            return list(map(str.encode, values))  # UTF-8
        except UnicodeEncodeError:
            return values
    if kind is np.ndarray:
        first = values[0]
        if first.dtype.kind in "biuf" and all(
            v.dtype == first.dtype and v.shape == first.shape for v in values
        ):
            return np.stack(values)
    return values


def _numeric_column(key: str, values: Any) -> Column | None:
    """``values`` as a Column when numpy (or a list of bytes) can encode it at once, else None."""
    try:
        raw_key = key.encode("utf-8")
    except (AttributeError, UnicodeEncodeError):
        return None  # the row path words the key's error
    if isinstance(values, np.ndarray) and values.ndim >= 1:
        dtype = values.dtype
        flat = values.reshape(len(values), int(np.prod(values.shape[1:])))
        if dtype.kind in "bi" or (dtype.kind == "u" and dtype.itemsize < 8):
            return Column(raw_key, wire.INT64, flat.astype(np.int64, copy=False))
        if dtype.kind == "f" and dtype.itemsize <= 4:
            return Column(raw_key, wire.FLOAT, flat.astype(np.float32, copy=False))
        if dtype.kind == "f" and dtype.itemsize == 8:
            with np.errstate(over="ignore", invalid="ignore"):
                narrow = flat.astype(np.float32)
            if (np.isinf(narrow) & np.isfinite(flat)).any():
                return None  # the row path raises, naming the key
            return Column(raw_key, wire.FLOAT, narrow)
        return None
    if isinstance(values, list) and all(type(v) is bytes for v in values):
        return Column(raw_key, wire.BYTES, values)
    return None


def _entry(key: str, value: Any) -> bytes:
    """The encoded map entry of ``key`` -> ``value``."""
    return encode_entries({key: value})
