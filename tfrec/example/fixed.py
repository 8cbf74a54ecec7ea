"""Decode the Examples of a batch that repeat the first record's byte layout exactly (example layer).

Records of one writer very often have the same length and the same bytes
everywhere but in their values: same keys in the same order, same list
lengths. The first record then serves as a byte template: one numpy compare
checks the structural bytes (tags, lengths, keys) of every record of the same
length at once, and each feature's values are gathered as columns of fixed
offsets. Packed varints must also keep their continuation bits, so that their
boundaries are the template's. Records that differ anywhere are left to the
lockstep decoder (:mod:`tfrec.example.lockstep`).

Example:
    >>> columns, rest = fixed_columns(records, {b"label": INT64})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from . import wire
from .lockstep import _template

if TYPE_CHECKING:
    from .columns import Column

__all__ = ["fixed_columns"]

_MIN_ROWS = 8  # below this many matching records the lockstep decoder is as fast


class _Values(NamedTuple):
    """Where one wanted key's values sit in the template record."""

    kind: int  # NONE when its Feature is empty
    start: int  # packed payload (numeric kinds)
    end: int
    spans: tuple[tuple[int, int], ...]  # each value (bytes kind)


def _layout(data: bytes, wanted: Mapping[bytes, int]) -> tuple[np.ndarray, dict[bytes, _Values]] | None:
    """The template's value regions, and a mask of the bytes that are structure (must be equal)."""
    if _template(data, wanted) is None:
        return None
    structure = np.ones(len(data), bool)
    found: dict[bytes, _Values] = {}
    ((_, _, features),) = wire._fields(data, 0, len(data))
    for _, _, entry in wire._fields(data, *features):
        (_, _, key_span), (_, _, value_span) = wire._fields(data, *entry)
        key = data[key_span[0] : key_span[1]]
        if key not in wanted:
            structure[value_span[0] : value_span[1]] = False  # any value of the right length
            continue
        inner = list(wire._fields(data, *value_span))
        if not inner:
            found[key] = _Values(wire.NONE, 0, 0, ())
            continue
        kind, _, body = inner[0]
        fields = list(wire._fields(data, *body))
        if kind == wire.BYTES:
            spans = tuple(span for number, wire_type, span in fields if (number, wire_type) == (1, 2))
            if len(spans) != len(fields):
                return None
            for start, end in spans:
                structure[start:end] = False
            found[key] = _Values(kind, 0, 0, spans)
        else:
            if len(fields) > 1 or (fields and fields[0][:2] != (1, 2)):
                return None  # not one packed run
            start, end = fields[0][2] if fields else (body[1], body[1])
            structure[start:end] = False
            found[key] = _Values(kind, start, end, ())
    return structure, found


def fixed_columns(
    records: Sequence[bytes], wanted: Mapping[bytes, int]
) -> tuple[dict[bytes, Column], list[int]] | None:
    """Columns of the records that repeat the first record's layout byte for byte, and the other rows.

    Returns ``None`` when too few records match for this to pay.
    """
    from .columns import Column, empty_values

    if len(records) < _MIN_ROWS:
        return None
    template = records[0]
    layout = _layout(template, wanted)
    if layout is None:
        return None
    structure, found = layout
    size = len(template)
    lengths = np.fromiter(map(len, records), np.int64, len(records))
    candidates = np.flatnonzero(lengths == size)
    if candidates.size < _MIN_ROWS:
        return None
    joined = b"".join(records)
    u8 = np.frombuffer(joined, np.uint8)
    reference = np.frombuffer(template, np.uint8)
    starts = (np.cumsum(lengths) - lengths)[candidates]
    # Structure bytes equal, and inside packed varints the continuation bits equal: gathered as
    # columns, so that large values (images) are never copied just to be compared.
    varint_bytes = np.zeros(size, bool)
    for where in found.values():
        if where.kind == wire.INT64:
            varint_bytes[where.start : where.end] = True
    columns_of = np.flatnonzero(structure)
    same = (u8[starts[:, None] + columns_of] == reference[columns_of]).all(axis=1)
    columns_of = np.flatnonzero(varint_bytes)
    if columns_of.size:
        same &= ((u8[starts[:, None] + columns_of] ^ reference[columns_of]) & 0x80 == 0).all(axis=1)
    matched = candidates[same]
    if matched.size < _MIN_ROWS or matched.size * 2 < len(records):
        return None
    starts = starts[same]
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
            offsets = [(s, e - s) for s, e in values.spans]
            data = [joined[row + s : row + s + n] for row in starts.tolist() for s, n in offsets]
            columns[key] = Column(kinds, np.full(count, len(offsets), np.int64), data)
        else:
            width = values.end - values.start
            payload = _rows(u8, starts + values.start, width)
            if kind == wire.FLOAT:
                floats = np.ascontiguousarray(payload).view("<f4").astype(np.float32)
                columns[key] = Column(kinds, np.full(count, floats.shape[1], np.int64), floats.reshape(-1))
            else:
                ints = _varints(payload, reference[values.start : values.end])
                columns[key] = Column(kinds, np.full(count, ints.shape[1], np.int64), ints.reshape(-1))
    others = np.ones(len(records), bool)
    others[matched] = False
    rest = np.flatnonzero(others).tolist()
    return columns, rest


def _rows(u8: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``u8[s : s + width]`` for every start, as one 2-D array (each row copied as one block)."""
    if not width:
        return np.empty((starts.size, 0), np.uint8)
    return np.lib.stride_tricks.sliding_window_view(u8, width)[starts]


def _varints(payload: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Decode rows of packed varints whose boundaries are those of ``reference``."""
    if not (reference & 0x80).any():
        return payload.astype(np.int64)  # every value below 128: one byte each
    last = reference < 0x80
    firsts = np.flatnonzero(np.concatenate(([True], last[:-1])))
    position = np.arange(reference.size) - np.repeat(firsts, np.diff(np.append(firsts, reference.size)))
    shifted = (payload & 0x7F).astype(np.uint64) << (7 * position).astype(np.uint64)
    return np.add.reduceat(shifted, firsts, axis=1).view(np.int64)
