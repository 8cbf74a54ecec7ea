"""Outputs: what each parse spec makes of its column (example layer).

:func:`spec_output` turns the batch's columns (see :mod:`tfrec.example.columns`)
into one spec's value with vectorised numpy, reproducing TensorFlow's defaults
and padding: dense arrays for FixedLen and FixedLenSequence features,
:class:`SparseArray` for VarLen and Sparse features, :class:`RaggedArray` from a
RaggedFeature's partitions. Data that does not fit the spec is noted on the
:class:`~tfrec.example.checks.Checks`, which raises what TensorFlow would.

Example:
    >>> checks = Checks(None, True, records)
    >>> spec_output("label", FixedLenFeature((), int64), columns, checks)
    array([3, 0])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import DecodeError
from .. import wire
from ..columns import Column, as_array
from .checks import TF_KIND_NAME, Checks, example_name, shape_text
from .plan import Spec
from .specs import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedArray,
    RaggedFeature,
    SparseArray,
    SparseFeature,
    VarLenFeature,
    raw_key,
    string,
)

_LIST_NAME = {wire.INT64: "int64", wire.FLOAT: "float", wire.BYTES: "bytes"}


def spec_output(key: str, spec: Spec, columns: Mapping[bytes, Column], checks: Checks) -> Any:
    """One spec's output from the batch's columns (None when ``checks`` noted a problem)."""
    if isinstance(spec, FixedLenFeature):
        value = _fixed(key, spec, columns[raw_key(key)], checks)
        return value if checks.batched or value is None else value[0, ...]  # 0-d array, not a scalar
    if isinstance(spec, VarLenFeature):
        return _var_len(key, spec, columns[raw_key(key)], checks)
    if isinstance(spec, FixedLenSequenceFeature):
        value = _sequence(key, spec, columns[raw_key(key)], checks)
        return value if checks.batched or value is None else value[0, ...]  # 0-d array, not a scalar
    if isinstance(spec, SparseFeature):
        return _sparse(key, spec, columns, checks)
    try:
        return _ragged(key, spec, columns, checks)
    except DecodeError as exc:  # TF builds RaggedTensors after parsing: reported after parse errors
        checks.postpone(exc)
        return None


# -- one spec, one column -------------------------------------------------------------------------


def _fixed(key: str, spec: FixedLenFeature, column: Column, checks: Checks) -> np.ndarray | None:
    kind = wire.kind_of_dtype(spec.dtype)
    size = math.prod(spec.shape)
    if column.width == size:  # every record holds its values: nothing to check or fill
        return as_array(column.values).reshape((len(column.kinds), *spec.shape))
    present = column.kinds == kind
    if present.all() and (column.counts == size).all():  # the usual case: nothing to check or fill
        return as_array(column.values).reshape((len(present), *spec.shape))
    bad = checks.kinds(column, kind, key)
    bad |= checks.refuse(
        present & (column.counts != size), key, lambda row: _count_problem(checks, key, spec, row, column)
    )
    if spec.default_value is None:
        prefix = "Name: {}, " if checks.batched else ""
        bad |= checks.require(
            column.kinds == wire.NONE,
            key,
            lambda row: (
                prefix.format(example_name(checks.names, row))
                + f"Feature: {key} (data type: {TF_KIND_NAME[kind]}) is required but could not be found."
            ),
        )
    if bad:
        return None
    return fill_fixed(spec, column, present)


def _count_problem(checks: Checks, key: str, spec: FixedLenFeature, row: int, column: Column) -> str:
    """TF's message for a FixedLenFeature with the wrong number of values in record ``row``."""
    kind, count = wire.kind_of_dtype(spec.dtype), int(column.counts[row])
    if checks.batched:
        return (
            f"{checks.where(row, key)}  Number of {_LIST_NAME[kind]} values != expected.  "
            f"Values size: {count} but output shape: {shape_text(spec.shape)}"
        )
    # parse_single_example fills a fixed-size slice: too many strings overflow it while being parsed.
    list_name = _LIST_NAME[kind] + "_list"
    overflow = kind == wire.BYTES and count > math.prod(spec.shape)
    problem = f"Parsing {list_name} failed." if overflow else f"Some {list_name} slice was not parsed."
    return f"Key: {key}.  Can't parse serialized Example: {problem}"


def fill_fixed(spec: FixedLenFeature, column: Column, present: np.ndarray) -> np.ndarray:
    """``[rows] + shape``: each record's values, or the default where the feature is absent."""
    rows = len(column.kinds)
    values = as_array(column.values)
    if present.all():
        return values.reshape((rows, *spec.shape))
    out = np.empty((rows, *spec.shape), spec.dtype)
    out[~present] = spec.default_value
    out[present] = values.reshape((-1, *spec.shape))
    return out


def _var_len(key: str, spec: VarLenFeature, column: Column, checks: Checks) -> SparseArray | None:
    if checks.kinds(column, wire.kind_of_dtype(spec.dtype), key):
        return None
    values = as_array(column.values)
    counts = column.counts
    position = np.arange(values.size) - np.repeat(column.offsets()[:-1], counts)
    if not checks.batched:
        return SparseArray(position[:, None], values, np.array([values.size], np.int64))
    rows = np.repeat(np.arange(counts.size), counts)
    width = int(counts.max()) if counts.size else 0
    return SparseArray(np.stack([rows, position], axis=1), values, np.array([counts.size, width], np.int64))


def _sequence(key: str, spec: FixedLenSequenceFeature, column: Column, checks: Checks) -> np.ndarray | None:
    kind = wire.kind_of_dtype(spec.dtype)
    stride = math.prod(spec.shape)
    bad = checks.kinds(column, kind, key)
    bad |= checks.refuse(
        column.counts % stride != 0,
        key,
        lambda row: (
            f"{checks.where(row, key)}  Number of {_LIST_NAME[kind]} values is not a multiple of "
            f"stride length. Saw {int(column.counts[row])} values but output shape is: "
            f"[?,{shape_text(spec.shape)[1:]}"
            if checks.batched
            else f"Error while parsing feature with key {key}: number of elements should be divisible "
            f"by {stride}, found {int(column.counts[row])} instead"
        ),
    )
    if bad:
        return None
    return pad_steps(
        as_array(column.values), column.counts // stride, spec.shape, spec.dtype, spec.default_value
    )


def pad_steps(
    values: np.ndarray, steps: np.ndarray, shape: tuple[int, ...], dtype: np.dtype, pad: Any
) -> np.ndarray:
    """``[rows, max(steps)] + shape``: row ``r`` holds its ``steps[r]`` items, then ``pad``."""
    stride = math.prod(shape)
    longest = int(steps.max()) if steps.size else 0
    fill = (b"" if dtype == string else 0) if pad is None else pad
    out = np.full((steps.size, longest * stride), fill, dtype)
    out[np.arange(longest * stride)[None, :] < (steps * stride)[:, None]] = values
    return out.reshape((steps.size, longest, *shape))


def _sparse(
    key: str, spec: SparseFeature, columns: Mapping[bytes, Column], checks: Checks
) -> SparseArray | None:
    value_column = columns[raw_key(spec.value_key)]
    bad = checks.kinds(value_column, wire.kind_of_dtype(spec.dtype), spec.value_key)
    index_columns = [columns[raw_key(k)] for k in spec.index_key]
    for index_key, column in zip(spec.index_key, index_columns, strict=True):
        bad |= checks.kinds(column, wire.INT64, index_key)
    if bad:
        return None
    # As TF: only the batch's totals must agree (its merge takes the row of each value from
    # the first index feature); the record named is the first whose own counts differ.
    found, wanted = value_column.counts, value_column.counts
    for column in index_columns:
        if column.counts.sum() != wanted.sum():
            found = column.counts
            break
    if checks.refuse_later(
        found != wanted,
        key,
        lambda row: (
            f"{checks.where(row, key)}  Number of elements in indices "
            f"({int(found.sum())}) and values ({int(wanted.sum())}) do not match"
        ),
    ):
        return None
    counts = index_columns[0].counts
    parts = [np.repeat(np.arange(counts.size), counts)] if checks.batched else []
    parts += [np.asarray(c.values, np.int64) for c in index_columns]
    indices = np.stack(parts, axis=1) if parts[0].size else np.empty((0, len(parts)), np.int64)
    values = as_array(value_column.values)
    if not spec.already_sorted and len(values):
        order = np.lexsort(indices.T[::-1])  # stable: equal indices keep their order
        indices, values = indices[order], values[order]
    dense_shape = ([counts.size] if checks.batched else []) + list(spec.size)
    return SparseArray(indices, values, np.array(dense_shape, np.int64))


# -- ragged ---------------------------------------------------------------------------------------


def _ragged(
    key: str, spec: RaggedFeature, columns: Mapping[bytes, Column], checks: Checks
) -> np.ndarray | RaggedArray | None:
    assert spec.value_key is not None
    value_column = columns[raw_key(spec.value_key)]
    bad = checks.kinds(value_column, wire.kind_of_dtype(spec.dtype), spec.value_key)
    partitions: list[tuple[Any, Column | None]] = []
    for partition in spec.partitions:
        if isinstance(partition, RaggedFeature.UniformRowLength):
            partitions.append((partition, None))
            continue
        column = columns[raw_key(partition.key)]
        bad |= checks.kinds(column, wire.INT64, partition.key)
        partitions.append((partition, column))
    if bad:
        return None
    splits_dtype = np.dtype(spec.row_splits_dtype)
    values = as_array(value_column.values)
    if not checks.batched:
        return _ragged_single(key, values, partitions, splits_dtype, spec.validate)
    return ragged_items(key, values, value_column.counts, partitions, splits_dtype, spec.validate)


def _partition_values(
    key: str, partition: Any, column: Column, splits_dtype: np.dtype, total: int
) -> np.ndarray:
    """A partition feature's values as TF uses them: cast to the row splits' dtype (int32 wraps).

    Row ids are bounded as stored, before the cast: in int32, an id of 2**40 would wrap to 0 and
    parse as a row that was never written.
    """
    stored = np.asarray(column.values, np.int64)
    if isinstance(partition, RaggedFeature.ValueRowIds) and stored.size:
        _check_row_count(key, int(stored.max()) + 1, total)
    return stored.astype(splits_dtype).astype(np.int64)


_MIN_ROW_LIMIT = 1 << 24  # value_rowids may imply this many rows whatever the values


def _check_row_count(key: str, rows: int, total: int) -> None:
    """Refuse value_rowids that imply far more (empty) rows than there are values: a corrupt id
    must not make tfrec allocate what it asks for."""
    if rows > max(_MIN_ROW_LIMIT, 16 * total):
        raise DecodeError(f"Key: {key}.  value_rowids imply {rows} rows for {total} values", key=key)


def _validate_rowids(key: str, partition: Any, ids: np.ndarray) -> None:
    if isinstance(partition, RaggedFeature.ValueRowIds) and (np.diff(ids) < 0).any():
        raise DecodeError(
            f"Key: {key}.  Partition does not form a valid RaggedTensor: value_rowids are not sorted",
            key=key,
        )


def _splits_from(key: str, partition: Any, ids: np.ndarray, rows_before: int, total: int) -> np.ndarray:
    """Row splits over ``total`` values for one partition feature's values ``ids``."""
    if isinstance(partition, RaggedFeature.RowSplits):
        return ids
    if isinstance(partition, RaggedFeature.RowLengths):
        return np.concatenate(([0], np.cumsum(ids)))
    if isinstance(partition, RaggedFeature.RowStarts):
        return np.concatenate((ids, [total]))
    if isinstance(partition, RaggedFeature.RowLimits):
        return np.concatenate(([0], ids))
    # ValueRowIds: rows counted from 0 to the largest id.
    if ids.size and ids.min() < 0:
        raise DecodeError(f"value_rowids must be >= 0, found {int(ids.min())}")
    rows = int(ids.max()) + 1 if ids.size else 0
    _check_row_count(key, max(rows, rows_before), total)
    return np.concatenate(([0], np.cumsum(np.bincount(ids, minlength=max(rows, rows_before)))))


def _validate(key: str, splits: np.ndarray, total: int) -> None:
    if splits.size == 0 or splits[0] != 0 or (np.diff(splits) < 0).any() or splits[-1] != total:
        raise DecodeError(
            f"Key: {key}.  Partition does not form a valid RaggedTensor: row splits {splits.tolist()} "
            f"over {total} values",
            key=key,
        )


def _uniform(key: str, current: Any, length: int, validate: bool) -> Any:
    """Group ``current`` into rows of ``length``: a reshape of dense values, a partition of ragged rows."""
    total = len(current)
    if isinstance(current, RaggedArray) and length > 0 and not (validate and total % length):
        # As TF without validation: rows beyond the last whole group are left out.
        return RaggedArray(current, np.arange(0, total // length * length + 1, length))
    if length <= 0 or total % length:
        raise DecodeError(
            f"Key: {key}.  Input to reshape is a tensor with {total} values, but the requested shape "
            f"requires a multiple of {length}",
            key=key,
        )
    return current.reshape((-1, length, *current.shape[1:]))


def _ragged_single(
    key: str,
    values: np.ndarray,
    partitions: list[tuple[Any, Column | None]],
    splits_dtype: np.dtype,
    validate: bool,
) -> np.ndarray | RaggedArray:
    current: Any = values
    for partition, column in reversed(partitions):  # innermost first, as TF
        if isinstance(current, RaggedArray) and current.row_splits.size == 0:
            _no_rows(key, partition, partitions)
        if column is None:
            current = _uniform(key, current, partition.length, validate)
            if isinstance(current, RaggedArray):
                current = RaggedArray(current.values, current.row_splits.astype(splits_dtype))
            continue
        ids = _partition_values(key, partition, column, splits_dtype, len(current))
        splits = _splits_from(key, partition, ids, 0, len(current))
        if validate:
            _validate(key, splits, len(current))
            _validate_rowids(key, partition, ids)
        current = RaggedArray(current, splits.astype(splits_dtype))
    return current


def _no_rows(key: str, outer: Any, partitions: list[tuple[Any, Column | None]]) -> None:
    """An inner RowSplits partition without splits has -1 rows: nothing can be partitioned over it."""
    inner = partitions[[p for p, _ in partitions].index(outer) + 1][0]
    raise DecodeError(
        f"Key: {key}.  Partition {inner.key} has no row splits, so {_partition_name(outer)} "
        "partitions a dimension of -1 rows (TensorFlow: Dimension -1 must be >= 0)",
        key=key,
    )


def _partition_name(partition: Any) -> str:
    if isinstance(partition, RaggedFeature.UniformRowLength):
        return f"UniformRowLength({partition.length})"
    return f"{type(partition).__name__}({partition.key})"


def ragged_items(
    key: str,
    values: np.ndarray,
    counts: np.ndarray,
    partitions: list[tuple[Any, Column | None]],
    splits_dtype: np.dtype,
    validate: bool,
) -> RaggedArray:
    """TF's batched merge: each item's partition values are offset into the whole batch.

    ``counts`` are the values of each item (an example of a batch, or a step of a feature list:
    TensorFlow treats each step of a sequence as an item); each partition column has a row per item
    of its own. The result's rows are the outermost partition's items.
    """
    current: Any = values
    rows = counts.astype(np.int64)  # per example: number of items at the current level
    for partition, column in reversed(partitions):
        starts = np.cumsum(rows) - rows  # where each example's items begin
        total = int(rows.sum())
        if column is None:
            length = partition.length
            current = _uniform(key, current, length, validate)  # checks that the batch total divides
            if isinstance(current, RaggedArray):
                current = RaggedArray(current.values, current.row_splits.astype(splits_dtype))
            # As TF: the batch's row boundaries are divided by the length (only the total must divide).
            rows = np.diff(np.concatenate(([0], np.cumsum(rows))) // length)
            continue
        ids = _partition_values(key, partition, column, splits_dtype, total)
        offsets = np.zeros(0, np.int64)  # where each item's rows start: for splits, starts and limits
        if isinstance(partition, (RaggedFeature.RowSplits, RaggedFeature.RowStarts, RaggedFeature.RowLimits)):
            if len(starts) != len(column.counts):
                raise DecodeError(
                    f"Key: {key}.  Partition {partition.key} has {len(column.counts)} items, but the "
                    f"values under it have {len(starts)}",
                    key=key,
                )
            offsets = np.repeat(starts, column.counts)
        elif isinstance(partition, RaggedFeature.ValueRowIds) and ids.size != total:
            raise DecodeError(
                f"Key: {key}.  Partition {partition.key} has {ids.size} value_rowids for {total} values "
                f"(TensorFlow: Shapes ({total},) and ({ids.size},) are incompatible)",
                key=key,
            )
        first = column.offsets()[:-1]
        if isinstance(partition, RaggedFeature.RowSplits):
            # TF uses each example's splits after the first as row limits.
            keep = np.ones(ids.size, bool)
            keep[first[column.counts > 0]] = False
            splits = np.concatenate(([0], (ids + offsets)[keep]))
            rows = np.maximum(column.counts - 1, 0)
        elif isinstance(partition, RaggedFeature.RowLengths):
            splits = np.concatenate(([0], np.cumsum(ids)))
            rows = column.counts.copy()
        elif isinstance(partition, RaggedFeature.RowStarts):
            splits = np.concatenate((ids + offsets, [total]))
            rows = column.counts.copy()
        elif isinstance(partition, RaggedFeature.RowLimits):
            splits = np.concatenate(([0], ids + offsets))
            rows = column.counts.copy()
        else:  # ValueRowIds
            if ids.size and ids.min() < 0:
                raise DecodeError(f"Key: {key}.  value_rowids must be >= 0, found {int(ids.min())}", key=key)
            if ids.size:  # before the per-example row counts are summed: they could overflow int64
                _check_row_count(key, int(ids.max()) + 1, total)
            per_row = np.zeros(column.counts.size, np.int64)
            nonempty = column.counts > 0
            per_row[nonempty] = np.maximum.reduceat(ids, first[nonempty]) + 1 if ids.size else 0
            row_offsets = np.cumsum(per_row) - per_row
            global_ids = ids + np.repeat(row_offsets, column.counts)
            _check_row_count(key, int(per_row.sum()), total)
            splits = np.concatenate(([0], np.cumsum(np.bincount(global_ids, minlength=int(per_row.sum())))))
            rows = per_row
            if validate:
                _validate_rowids(key, partition, global_ids)
        if validate:
            _validate(key, splits, total)
        current = RaggedArray(current, splits.astype(splits_dtype))
    batch_splits = np.concatenate(([0], np.cumsum(rows))).astype(splits_dtype)
    return RaggedArray(current, batch_splits)
