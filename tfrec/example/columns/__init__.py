"""Batch decoding: a batch of serialized Examples in, one :class:`Column` per wanted key out
(example layer).

:mod:`.column` defines the column; :mod:`.template` the layout of one record that the fast
decoders read a batch against: :mod:`.fixed` (records that repeat it byte for byte but for their
values) and :mod:`.lockstep` (records with its keys in order); :mod:`.gather` picks among them and
scans the odd records one by one.

Example:
    >>> gather_columns([data0, data1], {b"label": wire.INT64})[b"label"].values
    array([3, 4])
"""

from __future__ import annotations

from .column import (
    Column,
    PackedStrings,
    as_array,
    columns_from_features,
    concat_values,
    empty_values,
    is_span_batch,
    record_lengths,
)
from .gather import gather_columns

__all__ = [
    "Column",
    "PackedStrings",
    "as_array",
    "columns_from_features",
    "concat_values",
    "empty_values",
    "gather_columns",
    "is_span_batch",
    "record_lengths",
]
