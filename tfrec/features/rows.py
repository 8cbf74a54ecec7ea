"""Rows of decoded batches (features layer): take record ``i`` of a batch, and stack records back.

A decoded batch is an array (leading dimension = the records), a
:class:`~tfrec.RaggedArray` (rows of different lengths) or a dict of these.
:func:`apply_rows` runs a one-record function over a batch, as tfds maps a
connector's ``decode_example`` over a batch.

Example:
    >>> row({"x": np.arange(6).reshape(3, 2)}, 1)
    {'x': array([2, 3])}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..example import RaggedArray

__all__ = ["apply_rows", "count", "row", "stack"]


def count(batch: Any) -> int:
    """The number of records in a batch."""
    if isinstance(batch, dict):
        return count(next(iter(batch.values()))) if batch else 0
    return len(batch)


def row(batch: Any, i: int) -> Any:
    """Record ``i`` of a batch: of a dense array, or of a RaggedArray (its values, inner splits rebased)."""
    if isinstance(batch, dict):
        return {key: row(value, i) for key, value in batch.items()}
    if isinstance(batch, RaggedArray):
        splits = batch.row_splits
        return _slice(batch.values, int(splits[i]), int(splits[i + 1]))
    return batch[i]


def _slice(values: Any, start: int, stop: int) -> Any:
    if isinstance(values, RaggedArray):
        splits = values.row_splits[start : stop + 1]
        return RaggedArray(_slice(values.values, int(splits[0]), int(splits[-1])), splits - splits[0])
    return values[start:stop]


def stack(records: list[Any]) -> Any:
    """Records stacked into a batch: dicts key by key; arrays of one shape densely, others as objects."""
    if records and all(isinstance(r, dict) for r in records):
        return {key: stack([r[key] for r in records]) for key in records[0]}
    arrays: list[Any] = [np.asarray(r) if not isinstance(r, (str, bytes)) else r for r in records]
    if arrays and all(
        isinstance(a, np.ndarray) and a.shape == arrays[0].shape and a.dtype == arrays[0].dtype
        for a in arrays
    ):
        return np.stack(arrays)
    out = np.empty(len(records), object)
    for i, record in enumerate(records):  # one by one: numpy would broadcast equal-length lists
        out[i] = record
    return out


def apply_rows(fn: Callable[[Any], Any], value: Any, batched: bool) -> Any:
    """``fn`` on one record's value, or on each record of a batch (stacked back)."""
    if not batched:
        return fn(value)
    if not count(value):
        return value  # no record to run fn on: the empty batch as stored
    return stack([fn(row(value, i)) for i in range(count(value))])
