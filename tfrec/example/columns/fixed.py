"""Decode the Examples of a batch that repeat the first record's byte layout exactly (example layer).

Records of one writer very often have the same length and the same bytes
everywhere but in their values: same keys in the same order, same list
lengths. The first record then serves as a byte template: the records of its
length are viewed as the rows of one 2-D array, one compare checks their
structural bytes (tags, lengths, keys), and each feature's values are columns
of fixed offsets. Packed varints must also keep their continuation bits, so
that their boundaries are the template's. Layouts are kept between batches by
record length. Records that differ anywhere are left to the lockstep decoder
(:mod:`tfrec.example.lockstep`).

Example:
    >>> columns, rest = fixed_columns(records, {b"label": INT64})
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from itertools import compress
from typing import NamedTuple

import numpy as np

from ...cache import BoundedCache
from ...errors import WireError
from .. import wire
from .column import (
    SHORT_BYTES,
    Column,
    PackedStrings,
    empty_values,
    is_span_batch,
    record_lengths,
    record_spans,
)
from .template import template

__all__ = ["fixed_columns"]

_MIN_ROWS = 8  # below this many matching records the lockstep decoder is as fast


class _Values(NamedTuple):
    """Where one wanted key's values sit in the template record."""

    kind: int  # NONE when its Feature is empty
    start: int  # packed payload (numeric kinds)
    end: int
    spans: tuple[tuple[int, int], ...]  # each value (bytes kind)


_MAX_CACHED_RECORD = 1 << 16  # layouts are kept for records up to this size (one holds two copies' worth)
_LAYOUTS: BoundedCache[tuple[object, ...], tuple[np.ndarray, np.ndarray, dict[bytes, _Values]]] = (
    BoundedCache(
        64  # layouts kept between batches
    )
)


def _layout(data: bytes, wanted: Mapping[bytes, int]) -> tuple[np.ndarray, dict[bytes, _Values]] | None:
    """The template's value regions, and per byte the bits every matching record must share.

    Structure bytes (tags, lengths, keys) must be equal; inside packed varints
    the continuation bits, so that value boundaries are the template's; the
    other value bytes may be anything.
    """
    if template(data, wanted) is None:
        return None
    try:
        return _regions(data, wanted)
    except WireError:  # a malformed list in the template: left to the other decoders
        return None


def _regions(data: bytes, wanted: Mapping[bytes, int]) -> tuple[np.ndarray, dict[bytes, _Values]] | None:
    structure = np.full(len(data), 0xFF, np.uint8)
    found: dict[bytes, _Values] = {}
    ((_, _, features),) = wire.fields(data, 0, len(data))
    for _, _, entry in wire.fields(data, *features):
        (_, _, key_span), (_, _, value_span) = wire.fields(data, *entry)
        key = data[key_span[0] : key_span[1]]
        if key not in wanted:
            structure[value_span[0] : value_span[1]] = 0  # any value of the right length
            continue
        inner = list(wire.fields(data, *value_span))
        if not inner:
            found[key] = _Values(wire.NONE, 0, 0, ())
            continue
        kind, _, body = inner[0]
        fields = list(wire.fields(data, *body))
        if kind == wire.BYTES:
            spans = tuple(span for number, wire_type, span in fields if (number, wire_type) == (1, wire.LEN))
            if len(spans) != len(fields):
                return None
            for start, end in spans:
                structure[start:end] = 0
            found[key] = _Values(kind, 0, 0, spans)
        else:
            if len(fields) > 1 or (fields and fields[0][:2] != (1, wire.LEN)):
                return None  # not one packed run
            start, end = fields[0][2] if fields else (body[1], body[1])
            # Rows share the template's value boundaries, so its run must be well formed.
            if kind == wire.FLOAT and (end - start) % 4:
                return None
            if kind == wire.INT64:
                wire.decode_varints(data, start, end)  # raises for a truncated or overlong varint
            structure[start:end] = 0x80 if kind == wire.INT64 else 0
            found[key] = _Values(kind, start, end, ())
    return structure, found


def _cached_layout(
    template: bytes, wanted: Mapping[bytes, int]
) -> tuple[np.ndarray, np.ndarray, dict[bytes, _Values]] | None:
    """The layout of ``template`` as (reference bytes, check bits, value regions).

    Walking a template costs as much as decoding a small batch, and one writer's
    batches keep repeating the same few layouts: a record that matches a cached
    reference in every checked bit has that reference's layout.
    """
    key = (len(template), *wanted.items())
    cached = _LAYOUTS.get(key)
    if cached is not None:
        reference, check, _ = cached
        if not ((np.frombuffer(template, np.uint8) ^ reference) & check).any():
            return cached
    layout = _layout(template, wanted)
    if layout is None:
        return None
    cached = (np.frombuffer(bytes(template), np.uint8), *layout)
    if len(template) <= _MAX_CACHED_RECORD:  # large records: walking one costs little next to its batch
        _LAYOUTS.put(key, cached)
    return cached


def fixed_columns(
    records: Sequence[bytes],
    wanted: Mapping[bytes, int],
    lengths: np.ndarray | None = None,
    packed: frozenset[bytes] = frozenset(),
) -> tuple[dict[bytes, Column], list[int]] | None:
    """Columns of the records that repeat the first record's layout byte for byte, and the other rows.

    ``lengths``: the records' lengths, if known. Returns ``None`` when too few
    records match for this to pay. A ``packed`` key's bytes values come as
    :class:`~.column.PackedStrings` when they share one length.
    """
    if len(records) < _MIN_ROWS:
        return None
    size = len(records[0])
    if lengths is None:
        lengths = record_lengths(records)
    candidates = lengths == size
    count = int(np.count_nonzero(candidates))
    if count < _MIN_ROWS or count * 2 < len(records):
        return None  # before walking the template: records of varying lengths are common
    layout = _cached_layout(records[0], wanted)
    if layout is None:
        return None
    reference, check, found = layout
    buffer, row_starts = _rows_source(records, candidates, count, size)
    rows = _row_view(buffer, row_starts, size)
    same = _matches(rows, reference, check)
    matched = np.flatnonzero(candidates)
    if not same.all():
        matched = matched[same]
        if matched.size < _MIN_ROWS or matched.size * 2 < len(records):
            return None
        rows = rows[same]
        row_starts = row_starts[same]
    columns = {}
    count = matched.size
    for key, kind in wanted.items():
        values = found.get(key)
        if values is None or values.kind == wire.NONE:
            columns[key] = Column(np.zeros(count, np.int8), np.zeros(count, np.int64), empty_values(kind))
            continue
        kinds = np.full(count, values.kind, np.int8)
        if values.kind != kind:
            columns[key] = Column(kinds, np.zeros(count, np.int64), empty_values(kind))
        elif kind == wire.BYTES:
            counts = np.full(count, len(values.spans), np.int64)
            values_bytes = _bytes(rows, buffer, row_starts, values.spans, key in packed)
            columns[key] = Column(kinds, counts, values_bytes, len(values.spans))
        else:
            payload = rows[:, values.start : values.end]
            if kind == wire.FLOAT:
                floats = np.ascontiguousarray(payload).view("<f4").astype(np.float32, copy=False)
                width = floats.shape[1]
                columns[key] = Column(kinds, np.full(count, width, np.int64), floats.reshape(-1), width)
            else:
                ints = _varints(payload, reference[values.start : values.end])
                width = ints.shape[1]
                columns[key] = Column(kinds, np.full(count, width, np.int64), ints.reshape(-1), width)
    others = np.ones(len(records), bool)
    others[matched] = False
    return columns, np.flatnonzero(others).tolist()


def _matches(rows: np.ndarray, reference: np.ndarray, check: np.ndarray) -> np.ndarray:
    """Per row: equal to ``reference`` in the bits set in ``check``."""
    columns = np.flatnonzero(check)
    if columns.size * 4 < reference.size:  # mostly values (large records): never gather the values
        rows, reference, check = np.take(rows, columns, axis=1), reference[columns], check[columns]
    # Rows compared as void scalars: one memcmp each, much faster than .all(axis=1).
    void = f"V{reference.size}"
    return (rows & check).view(void).reshape(-1) == (reference & check).view(void)


def _rows_source(
    records: Sequence[bytes], candidates: np.ndarray, count: int, size: int
) -> tuple[bytes, np.ndarray]:
    """A buffer holding the candidate rows (records of ``size`` bytes), and where each starts in it.

    A batch that is spans of one buffer is read in place; other records are joined once.
    """
    if count == len(records) or is_span_batch(records):
        buffer, starts, _ = record_spans(records, 0)
        return buffer, starts if count == len(records) else starts[candidates]
    joined = b"".join(compress(records, candidates.tolist()))
    return joined, np.arange(0, count * size, size, dtype=np.int64)


def _row_view(buffer: bytes, starts: np.ndarray, size: int) -> np.ndarray:
    """The rows of ``size`` bytes at ``starts`` as a 2-D uint8 array: a strided view when they are
    evenly spaced (records back to back, or frames of one length in a read block), else a gather."""
    count = starts.size
    stride = int(starts[1] - starts[0]) if count > 1 else size
    if stride >= size and (count < 3 or (np.diff(starts) == stride).all()):
        return np.ndarray((count, size), np.uint8, buffer, int(starts[0]) if count else 0, (stride, 1))
    if not size:
        return np.zeros((count, 0), np.uint8)
    items = np.ndarray((len(buffer) - size + 1,), f"V{size}", buffer, 0, (1,))  # a block per position
    return items[starts].view(np.uint8).reshape(count, size)


def _bytes(
    rows: np.ndarray,
    buffer: bytes,
    row_starts: np.ndarray,
    spans: tuple[tuple[int, int], ...],
    packed: bool = False,
) -> list[bytes] | np.ndarray:
    """The bytes values at ``spans`` of every row (rows start at ``row_starts`` in ``buffer``);
    ``packed``: as :class:`~.column.PackedStrings` when the spans have one length."""
    size = spans[0][1] - spans[0][0] if spans else 0
    if packed and size and all(end - start == size for start, end in spans):
        # One copy of each value, into its place in the rows; the consumer makes the bytes.
        out = np.empty((len(rows), len(spans), size), np.uint8)
        for place, (start, end) in enumerate(spans):
            out[:, place] = rows[:, start:end]
        return out.view(f"V{size}").reshape(-1).view(PackedStrings)
    if len(spans) == 1:
        start, end = spans[0]
        if 0 < end - start <= SHORT_BYTES:
            # Short values: a void view's tolist makes the bytes objects in one C loop.
            return np.ascontiguousarray(rows[:, start:end]).view(f"V{end - start}").reshape(-1).tolist()
    return [buffer[row + s : row + e] for row in row_starts.tolist() for s, e in spans]


def _varints(payload: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Decode rows of packed varints whose boundaries are those of ``reference``."""
    continued = reference & 0x80
    if not continued.any():
        return payload.astype(np.int64)  # every value below 128: one byte each
    firsts, shifts = _boundaries(continued.tobytes())
    shifted = (payload & 0x7F).astype(np.uint64) << shifts
    return np.add.reduceat(shifted, firsts, axis=1).view(np.int64)


@functools.lru_cache(maxsize=256)
def _boundaries(continued: bytes) -> tuple[np.ndarray, np.ndarray]:
    """For packed varints with these continuation bits: each one's first byte, and each byte's shift."""
    last = np.frombuffer(continued, np.uint8) == 0
    firsts = np.flatnonzero(np.concatenate(([True], last[:-1])))
    position = np.arange(last.size) - np.repeat(firsts, np.diff(np.append(firsts, last.size)))
    return firsts, (7 * position).astype(np.uint64)
