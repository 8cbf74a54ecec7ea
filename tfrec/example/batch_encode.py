"""Batched, columnar Example encoding (example layer): columns in, the bytes of every record out.

A column holds one feature of every record of a batch. Its values are encoded for the whole
column at once in numpy (float32s as one cast, varints vectorised over every value), then the
records are assembled. Records whose fields all have the same byte sizes share a layout: their
bytes are rows of one ``(records, length)`` array filled column by column from a template of
heads (key, tags and lengths, the same for every record of the layout). A record whose layout
no other record shares is joined on its own. The bytes are those of
:func:`~tfrec.example.codec.encode_typed_example` record by record (a property test compares them).

Example:
    >>> columns = [Column(b"id", wire.INT64, np.arange(3)[:, None])]
    >>> encode_columns(columns, 3)[2] == tfrec.encode_example({"id": 2})
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from . import wire
from .codec import encode_entries, packed_head, varint

__all__ = ["RAW", "Column", "encode_columns", "encode_examples", "varint_array"]

RAW = -1  # a column of whole map entries, already encoded, one ``bytes`` per record
_FEW_LAYOUTS = 16
_MIN_LAYOUT = 4  # fewer records than this in a layout: joined one by one (a template costs more)


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
    lengths = np.ones(unsigned.size, np.int64)
    for i in range(1, 10):
        above = unsigned >= np.uint64(1 << (7 * i))
        if not above.any():
            break
        lengths += above
    ends = np.cumsum(lengths)
    out = np.empty(int(ends[-1]), np.uint8)
    starts = ends - lengths
    rest = unsigned
    for i in range(int(lengths.max())):  # byte i of every varint that has one
        present = lengths > i
        byte = (rest & np.uint64(0x7F)).astype(np.uint8) | np.where(lengths > i + 1, 0x80, 0).astype(np.uint8)
        out[(starts + i)[present]] = byte[present]
        rest = rest >> np.uint64(7)
    return out, lengths


@dataclass
class _Encoded:
    """A column encoded: its records' payloads back to back, each payload's length, the head of
    each length (bytes before a payload of that length) and whether every length is the same."""

    data: np.ndarray  # uint8
    lengths: np.ndarray  # int64, one per record
    heads: dict[int, bytes]
    even: bool
    _blob: bytes | None = None
    _starts: np.ndarray | None = None

    @property
    def blob(self) -> bytes:
        if self._blob is None:
            self._blob = self.data.tobytes()
        return self._blob

    @property
    def starts(self) -> np.ndarray:
        if self._starts is None:
            self._starts = np.cumsum(self.lengths) - self.lengths
        return self._starts


def _encode_column(column: Column, count: int) -> _Encoded:
    kind, values = column.kind, column.values
    if kind in (wire.BYTES, RAW):
        if len(values) != count:
            raise ValueError(f"column {column.key!r} has {len(values)} values for {count} records")
        data = np.frombuffer(b"".join(values), np.uint8)
        lengths = np.fromiter(map(len, values), np.int64, count)
        blob: bytes | None = None
    elif kind == wire.FLOAT:
        array = np.ascontiguousarray(values, "<f4").reshape(count, -1)
        data = array.view(np.uint8).reshape(-1)
        lengths = np.full(count, array.shape[1] * 4, np.int64)
        blob = None
    elif kind == wire.INT64:
        array = np.asarray(values).reshape(count, -1)
        data, each = varint_array(array)
        width = array.shape[1]
        lengths = each.reshape(count, width).sum(1) if width else np.zeros(count, np.int64)
        blob = None
    else:
        raise ValueError(f"column {column.key!r}: no batched encoding for kind {kind}")
    even = bool(count == 0 or (lengths == lengths[0]).all())
    unique = [int(lengths[0])] if even and count else np.unique(lengths).tolist()
    if kind == RAW:
        heads = dict.fromkeys(unique, b"")
    else:
        heads = {size: packed_head(column.key, kind, size) for size in unique}
    return _Encoded(data, lengths, heads, even, blob)


def encode_columns(columns: Sequence[Column], count: int) -> list[bytes]:
    """The Example bytes of each of ``count`` records whose features are ``columns``, in order.

    Raises:
        ValueError: a column does not hold ``count`` records (a caller's bug: values are checked
            before they are made columns).

    Example:
        >>> encode_columns([Column(b"t", wire.BYTES, [b"a", b"bc"])], 2)[1] == encode_example({"t": b"bc"})
        True
    """
    if not count:
        return []
    encoded = [_encode_column(column, count) for column in columns]
    if all(e.even for e in encoded):
        return _fill(encoded, None, count)
    layouts, inverse = _layouts([e.lengths for e in encoded if not e.even])
    records: list[bytes] = [b""] * count
    if layouts <= _FEW_LAYOUTS:  # a pass per layout beats a sort
        groups = [np.flatnonzero(inverse == group) for group in range(layouts)]
    else:
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(layouts + 1))
        groups = [order[bounds[group] : bounds[group + 1]] for group in range(layouts)]
    for rows in groups:
        if len(rows) < _MIN_LAYOUT:
            for row in rows.tolist():
                records[row] = _join_one(encoded, row)
        else:
            for row, record in zip(rows.tolist(), _fill(encoded, rows, len(rows)), strict=True):
                records[row] = record
    return records


def _layouts(lengths: list[np.ndarray]) -> tuple[int, np.ndarray]:
    """``(number of layouts, each record's layout)``: records of a layout have the same sizes."""
    key = np.zeros(len(lengths[0]), np.int64)
    span = 1
    for sizes in lengths:  # one int per record: its sizes in mixed radix, while that fits int64
        top = int(sizes.max()) + 1
        span *= top
        if span >= 1 << 62:
            _, inverse = np.unique(np.stack(lengths, 1), axis=0, return_inverse=True)
            return int(inverse.max()) + 1, inverse.reshape(-1)
        key = key * top + sizes
    values, inverse = np.unique(key, return_inverse=True)
    return len(values), inverse.reshape(-1)


def _join_one(encoded: list[_Encoded], row: int) -> bytes:
    """One record's bytes, joined from its heads and payload slices."""
    parts: list[bytes] = []
    for e in encoded:
        size = int(e.lengths[row])
        start = int(e.starts[row])
        parts += (e.heads[size], e.blob[start : start + size])
    body = b"".join(parts)
    return bytes((wire.FIELD_1,)) + varint(len(body)) + body


def _fill(encoded: list[_Encoded], rows: np.ndarray | None, count: int) -> list[bytes]:
    """The records ``rows`` (all, when None), which share one layout: rows of one array."""
    first = 0 if rows is None else int(rows[0])
    heads = [e.heads[int(e.lengths[first])] for e in encoded]
    sizes = [int(e.lengths[first]) for e in encoded]
    body = sum(sizes) + sum(map(len, heads))
    outer = bytes((wire.FIELD_1,)) + varint(body)
    width = len(outer) + body
    out = np.empty((count, width), np.uint8)
    out[:, : len(outer)] = np.frombuffer(outer, np.uint8)
    at = len(outer)
    for e, head, size in zip(encoded, heads, sizes, strict=True):
        if head:
            out[:, at : at + len(head)] = np.frombuffer(head, np.uint8)
            at += len(head)
        if size:
            if e.even:
                payload = e.data.reshape(-1, size)
                out[:, at : at + size] = payload if rows is None else payload[rows]
            else:  # this layout's records have one size here, the column's others not
                assert rows is not None
                out[:, at : at + size] = e.data[e.starts[rows][:, None] + np.arange(size)]
            at += size
    blob = out.tobytes()
    return [blob[i : i + width] for i in range(0, count * width, width)]


def encode_examples(columns: Mapping[str, Any]) -> list[bytes]:
    """The Example bytes of each row of ``columns`` (feature key -> one value per row), as
    :func:`~tfrec.example.codec.encode_example` encodes each row.

    A numpy column of ints, bools or floats is encoded in one go, its rows flattened row-major
    (floats rounded to float32; a finite float beyond float32's range raises, as encode_example
    does); a list of bytes too. Any other column (text, lists, object arrays) is encoded row by row.

    Raises:
        EncodeError: a value cannot be stored, as for ``encode_example``.
        InvalidArgumentError: the columns do not have the same number of rows.

    Example:
        >>> records = tfrec.example.encode_examples({"id": np.arange(3), "emb": np.ones((3, 4), np.float32)})
        >>> records[1] == tfrec.encode_example({"id": 1, "emb": np.ones(4, np.float32)})
        True
    """
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
