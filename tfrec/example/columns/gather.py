"""Gathering a batch's columns: the fastest decoder that fits each part of the batch (example layer).

Records that repeat a template record byte for byte but for their values go to
:mod:`.fixed`; those that share its keys in order to :mod:`.lockstep`; the odd
ones out are scanned one by one. The parts are merged back in record order.

Example:
    >>> columns = gather_columns([data0, data1], {b"label": INT64})
    >>> columns[b"label"].counts
    array([1, 1])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...errors import WireError
from .. import wire
from .column import Column, as_array, columns_from_features, concat_values, record_lengths
from .fixed import fixed_columns
from .lockstep import lockstep_columns

__all__ = ["gather_columns", "per_record_columns"]


def gather_columns(
    records: Sequence[bytes],
    wanted: Mapping[bytes, int],
    templates: int = 3,
    packed: frozenset[bytes] = frozenset(),
) -> dict[bytes, Column]:
    """Columns of the ``wanted`` keys (key -> expected kind) across ``records``.

    Bytes values of the ``packed`` keys may come as :class:`~.column.PackedStrings` (when the
    batched decoders find them all of one length), for who hands them over as one buffer.

    Records that repeat a template record's bytes but for their values are
    decoded by column offsets; otherwise those that share its layout are walked
    together in numpy. The rest are decoded the same way with a template of
    their own (up to ``templates`` times), and what is left one by one.

    Raises:
        WireError: with ``.index`` set to the offending record.
    """
    parts: list[tuple[np.ndarray, dict[bytes, Column]]] = []  # (rows, their columns)
    rest = np.arange(len(records))
    all_lengths = record_lengths(records)
    for attempt in range(templates):
        batch = records if attempt == 0 else [records[row] for row in rest.tolist()]
        lengths = all_lengths if attempt == 0 else all_lengths[rest]
        # Later attempts need a layout of their own rows, not the one the first attempt used.
        fast = fixed_columns(batch, wanted, lengths, packed) or lockstep_columns(
            batch, wanted, reuse=attempt == 0, packed=packed
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
        parts.append((rest, per_record_columns(records, rest.tolist(), wanted)))
    return parts[0][1] if len(parts) == 1 else _merge(parts, len(records), wanted)


def per_record_columns(
    records: Sequence[bytes], rows: list[int], wanted: Mapping[bytes, int]
) -> dict[bytes, Column]:
    keys = frozenset(wanted)
    scanned = []
    for row in rows:
        try:
            scanned.append(wire.scan_example(records[row], keys))
        except WireError as exc:
            exc.index = row
            raise
    return columns_from_features([records[row] for row in rows], scanned, wanted, rows)


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
