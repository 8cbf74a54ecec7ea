"""Columns: the values of one feature across a batch of Examples (example layer).

Parsing is batch-oriented: a list of serialized Examples goes in, and for each
requested key comes out a :class:`Column`, the kind found in each record, the
number of values in each, and all values concatenated. Spec semantics (shapes,
defaults, padding, sparse and ragged layouts) are applied to columns by
:mod:`tfrec.example.outputs`, so the per-record and the lockstep decoders share them.

Example:
    >>> columns = gather_columns([data0, data1], {b"label": INT64})
    >>> columns[b"label"].counts
    array([1, 1])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import wire
from .fixed import fixed_columns
from .lockstep import lockstep_columns, record_lengths

__all__ = ["Column", "as_array", "gather_columns"]


@dataclass
class Column:
    """One feature across a batch.

    Attributes:
        kinds: per record, the kind found (``wire.NONE`` when the key is
            missing or its Feature has no kind set).
        counts: per record, how many values it holds (0 unless its kind is the
            wanted kind).
        values: the values of the records whose kind is the wanted kind,
            concatenated in record order: int64 or float32 array, or a list of
            bytes.
        width: when known, that every record holds the wanted kind with this
            many values (so nothing needs checking or filling); else None.
    """

    kinds: np.ndarray
    counts: np.ndarray
    values: np.ndarray | list[bytes]
    width: int | None = None

    def offsets(self) -> np.ndarray:
        """Start of each record's values in :attr:`values` (length ``B + 1``)."""
        out = np.zeros(len(self.counts) + 1, np.int64)
        np.cumsum(self.counts, out=out[1:])
        return out


def empty_values(kind: int) -> np.ndarray | list[bytes]:
    if kind == wire.BYTES:
        return []
    return np.empty(0, np.float32 if kind == wire.FLOAT else np.int64)


def concat_values(kind: int, pieces: Sequence[np.ndarray | list[bytes]]) -> np.ndarray | list[bytes]:
    if kind == wire.BYTES:
        out: list[bytes] = []
        for piece in pieces:
            out += piece
        return out
    arrays = [p for p in pieces if len(p)]
    if not arrays:
        return empty_values(kind)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def columns_from_features(
    records: Sequence[bytes],
    scanned: Sequence[Mapping[bytes, wire.Feature]],
    wanted: Mapping[bytes, int],
    numbers: Sequence[int] | None = None,
) -> dict[bytes, Column]:
    """Build columns from per-record scans (``scanned[i]`` belongs to ``records[i]``).

    ``numbers`` are the records' indices in the caller's batch, for errors.
    """
    columns = {}
    for key, kind in wanted.items():
        kinds = np.zeros(len(records), np.int8)
        counts = np.zeros(len(records), np.int64)
        pieces = []
        for row, (data, features) in enumerate(zip(records, scanned, strict=True)):
            feature = features.get(key)
            if feature is None or feature.kind == wire.NONE:
                continue
            kinds[row] = feature.kind
            if feature.kind == kind:
                try:
                    values = wire.decode_values(data, feature)
                except wire.WireError as exc:
                    exc.index = numbers[row] if numbers is not None else row  # type: ignore[attr-defined]
                    raise
                counts[row] = len(values)
                pieces.append(values)
        columns[key] = Column(kinds, counts, concat_values(kind, pieces))
    return columns


def gather_columns(
    records: Sequence[bytes], wanted: Mapping[bytes, int], templates: int = 3
) -> dict[bytes, Column]:
    """Columns of the ``wanted`` keys (key -> expected kind) across ``records``.

    Records that repeat a template record's bytes but for their values are
    decoded by column offsets; otherwise those that share its layout are walked
    together in numpy. The rest are decoded the same way with a template of
    their own (up to ``templates`` times), and what is left one by one.

    Raises:
        wire.WireError: with ``.index`` set to the offending record.
    """
    parts: list[tuple[np.ndarray, dict[bytes, Column]]] = []  # (rows, their columns)
    rest = np.arange(len(records))
    all_lengths = record_lengths(records)
    for attempt in range(templates):
        batch = records if attempt == 0 else [records[row] for row in rest.tolist()]
        lengths = all_lengths if attempt == 0 else all_lengths[rest]
        # Later attempts need a layout of their own rows, not the one the first attempt used.
        fast = fixed_columns(batch, wanted, lengths) or lockstep_columns(
            batch, wanted, reuse=attempt == 0, lengths=lengths
        )
        if fast is None:
            break
        columns, odd = fast
        if not odd:  # the usual case: every row decoded
            parts.append((rest, columns))
            rest = rest[:0]
            break
        decoded = np.ones(rest.size, bool)
        decoded[odd] = False
        parts.append((rest[decoded], columns))
        rest = rest[odd]
        if not rest.size:
            break
    if rest.size or not parts:
        parts.append((rest, _per_record(records, rest.tolist(), wanted)))
    return parts[0][1] if len(parts) == 1 else _merge(parts, len(records), wanted)


def _per_record(
    records: Sequence[bytes], rows: list[int], wanted: Mapping[bytes, int]
) -> dict[bytes, Column]:
    keys = frozenset(wanted)
    scanned = []
    for row in rows:
        try:
            scanned.append(wire.scan_example(records[row], keys))
        except wire.WireError as exc:
            exc.index = row  # type: ignore[attr-defined]
            raise
    return columns_from_features([records[row] for row in rows], scanned, wanted, rows)


def as_array(values: np.ndarray | list[bytes]) -> np.ndarray:
    """Values as an array: bytes as an object array, never through numpy's "S" dtype (it drops
    trailing NULs)."""
    if not isinstance(values, list):
        return values
    return np.fromiter(values, object, len(values))


def _merge(
    parts: list[tuple[np.ndarray, dict[bytes, Column]]], size: int, wanted: Mapping[bytes, int]
) -> dict[bytes, Column]:
    """One column per key from the parts' columns, rows back in record order."""
    # ``where[row]`` is the row's place among the parts' rows concatenated.
    where = np.empty(size, np.int64)
    where[np.concatenate([rows for rows, _ in parts])] = np.arange(size)
    merged = {}
    for key, kind in wanted.items():
        pieces = [columns[key] for _, columns in parts]
        values = as_array(concat_values(kind, [p.values for p in pieces]))
        width = pieces[0].width
        if width and all(p.width == width for p in pieces):  # every row full: whole rows, no checks
            out = values.reshape(-1, width)[where].reshape(-1)
            kinds, counts = np.full(size, kind, np.int8), np.full(size, width, np.int64)
            merged[key] = Column(kinds, counts, out.tolist() if kind == wire.BYTES else out, width)
            continue
        kinds = np.concatenate([p.kinds for p in pieces])[where]
        part_counts = np.concatenate([p.counts for p in pieces])
        counts = part_counts[where]
        width = int(counts[0]) if size else 0
        if width and (counts == width).all():  # as many values in every row (fixed shapes): whole rows
            out = values.reshape(-1, width)[where].reshape(-1)
        else:  # each output value's place among the concatenated values
            starts = np.cumsum(part_counts) - part_counts
            out_starts = np.cumsum(counts) - counts
            within = np.arange(int(counts.sum())) - np.repeat(out_starts, counts)
            out = values[np.repeat(starts[where], counts) + within]
        merged[key] = Column(kinds, counts, out.tolist() if kind == wire.BYTES else out)
    return merged
