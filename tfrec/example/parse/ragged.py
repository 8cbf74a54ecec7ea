"""RaggedFeature assembly: a spec's partitions applied to its values as TensorFlow applies them
(example layer).

TensorFlow builds a RaggedFeature after parsing, innermost partition first, with the RaggedTensor
factories (``from_row_splits``, ``from_row_lengths``, ``from_row_starts``, ``from_row_limits``,
``from_value_rowids``, ``from_uniform_row_length``). Each factory checks its partition only when
the spec says ``validate=True``, and each checks something different (row starts need not end at
the values, row lengths must); a few problems fail whatever ``validate`` says (value_rowids of the
wrong count, a negative row id, a uniform length that does not divide the values). Batches (and the
steps of a feature list) go through TensorFlow's batched merge, which offsets every item's partition
into the whole batch and checks the merged partition once.

tfrec follows those factories check for check: a partition that does not add up to its values is a
:class:`DecodeError` naming the key exactly where TensorFlow raises, and TensorFlow's unchecked row
splits are returned where it returns them. One deliberate difference: value_rowids that imply more
than max(2**24, 16 x values) rows are refused (TensorFlow tries to allocate them).

Example:
    >>> checks = Checks(None, True, records)
    >>> ragged_output("r", RaggedFeature(int64, "v", [RaggedFeature.RowLengths("n")]), columns, checks)
    RaggedArray(values=RaggedArray(values=array([1, 2, 3]), row_splits=...), row_splits=...)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import DecodeError
from .. import wire
from ..columns import Column, as_array
from .checks import Checks
from .specs import RaggedArray, RaggedFeature, raw_key

__all__ = ["ragged_items", "ragged_output"]

Partitions = list[tuple[Any, Column | None]]  # (partition, its column; None for a uniform length)


def ragged_output(
    key: str, spec: RaggedFeature, columns: Mapping[bytes, Column], checks: Checks
) -> np.ndarray | RaggedArray | None:
    """One RaggedFeature's value from the batch's columns (None when ``checks`` noted a problem).

    Assembly problems are postponed on ``checks``: TF builds RaggedTensors after parsing, so a
    parse error anywhere in the batch is reported first.
    """
    assert spec.value_key is not None
    value_column = columns[raw_key(spec.value_key)]
    bad = checks.kinds(value_column, wire.kind_of_dtype(spec.dtype), spec.value_key)
    partitions: Partitions = []
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
    try:
        if not checks.batched:
            return _single(key, values, partitions, splits_dtype, spec.validate)
        return ragged_items(key, values, value_column.counts, partitions, splits_dtype, spec.validate)
    except DecodeError as exc:
        checks.postpone(exc)
        return None


# -- one example: TF's _add_ragged_partition --------------------------------------------------------


def _single(
    key: str, values: np.ndarray, partitions: Partitions, splits_dtype: np.dtype, validate: bool
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
        ids = _partition_values(key, partition, column, splits_dtype, _rows(current))
        factory = _FACTORIES[type(partition)]
        splits = factory(key, partition.key, ids, _rows(current), validate)
        current = RaggedArray(current, splits.astype(splits_dtype))
    return current


def _no_rows(key: str, outer: Any, partitions: Partitions) -> None:
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


# -- a batch, or the steps of a feature list: TF's _add_batched_ragged_partition ------------------


def ragged_items(
    key: str,
    values: np.ndarray,
    counts: np.ndarray,
    partitions: Partitions,
    splits_dtype: np.dtype,
    validate: bool,
) -> RaggedArray:
    """TF's batched merge: each item's partition values are offset into the whole batch.

    ``counts`` are the values of each item (an example of a batch, or a step of a feature list:
    TensorFlow treats each step of a sequence as an item); each partition column has a row per item
    of its own. The result's rows are the outermost partition's items.
    """
    current: Any = values
    item_splits = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)  # TF's rt.row_splits
    for partition, column in reversed(partitions):
        total = _rows(current)
        if column is None:
            length = partition.length
            current = _uniform(key, current, length, validate)  # checks that the batch total divides
            if isinstance(current, RaggedArray):
                current = RaggedArray(current.values, current.row_splits.astype(splits_dtype))
            # As TF: the batch's row boundaries are divided by the length (only the total must divide).
            item_splits = item_splits // length
            continue
        ids = _partition_values(key, partition, column, splits_dtype, total)
        rows = column.counts  # per item: its rows at this level
        if isinstance(partition, RaggedFeature.RowLengths):
            splits = _from_row_lengths(key, partition.key, ids, total, validate)
        elif isinstance(partition, RaggedFeature.ValueRowIds):
            splits, rows = _merged_row_ids(key, partition.key, ids, column, total, validate)
        else:
            if isinstance(partition, RaggedFeature.RowSplits):  # TF: each item's splits after the first
                keep = np.ones(ids.size, bool)
                first = column.offsets()[:-1]
                keep[first[rows > 0]] = False
                ids, rows = ids[keep], np.maximum(rows - 1, 0)
            ids = _offset(key, partition.key, ids, item_splits[:-1], rows)
            factory = _from_row_starts if isinstance(partition, RaggedFeature.RowStarts) else _from_row_limits
            splits = factory(key, partition.key, ids, total, validate)
        current = RaggedArray(current, splits.astype(splits_dtype))
        item_splits = np.concatenate(([0], np.cumsum(rows))).astype(np.int64)
    return RaggedArray(current, item_splits.astype(splits_dtype))


def _offset(key: str, name: str, ids: np.ndarray, starts: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``ids + repeat(starts, rows)`` with TensorFlow's broadcasting: items whose partition has
    another number of items than the values under it (steps of a feature list) fail, or broadcast
    where one side has a single item, as in TF."""
    if rows.size in (starts.size, 1):  # np.repeat broadcasts one count over every item, as tf.repeat
        offsets = np.repeat(starts, rows)
        if offsets.size in (ids.size, 1):  # and TF's with_values wants one row per partition value
            return ids + offsets
    raise DecodeError(
        f"Key: {key}.  Partition {name} has {rows.size} items, but the values under it have {starts.size}",
        key=key,
    )


def _merged_row_ids(
    key: str, name: str, ids: np.ndarray, column: Column, total: int, validate: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Row splits of merged value_rowids, and the rows of each item (its largest id + 1)."""
    per_item = np.zeros(column.counts.size, np.int64)
    nonempty = column.counts > 0
    if ids.size:
        first = column.offsets()[:-1]
        per_item[nonempty] = np.maximum(np.maximum.reduceat(ids, first[nonempty]) + 1, 0)
    _check_row_count(key, int(per_item.sum()), total)
    merged = ids + np.repeat(np.cumsum(per_item) - per_item, column.counts)
    splits = _from_value_rowids(key, name, merged, total, validate)
    if validate and int(per_item.sum()) != splits.size - 1:  # from_row_lengths(inner, per_item)
        raise _invalid(key, name, f"the items' {int(per_item.sum())} rows", f"{splits.size - 1} rows")
    return splits, per_item


# -- the factories, with the checks TensorFlow makes ----------------------------------------------


def _from_row_splits(key: str, name: str, splits: np.ndarray, total: int, validate: bool) -> np.ndarray:
    if validate:
        if splits.size == 0:
            raise _invalid(key, name, "row splits", "none (TensorFlow: slice index 0 out of bounds)")
        if splits[0] != 0:
            raise _invalid(key, name, "row splits starting at 0", f"{int(splits[0])}")
        _increasing(key, name, "row splits", splits)
        _ends_at(key, name, int(splits[-1]), total)
    return splits


def _from_row_lengths(key: str, name: str, lengths: np.ndarray, total: int, validate: bool) -> np.ndarray:
    splits = np.concatenate(([0], np.cumsum(lengths)))
    if validate:
        if lengths.size and lengths.min() < 0:
            raise _invalid(key, name, "row lengths >= 0", f"{int(lengths.min())}")
        _ends_at(key, name, int(splits[-1]), total)
    return splits


def _from_row_starts(key: str, name: str, starts: np.ndarray, total: int, validate: bool) -> np.ndarray:
    if validate and starts.size:  # the last row ends at the values, whatever the starts say
        if starts[0] != 0:
            raise _invalid(key, name, "row starts starting at 0", f"{int(starts[0])}")
        _increasing(key, name, "row starts", starts)
        if starts[-1] > total:
            raise _invalid(key, name, f"row starts <= {total} (the values)", f"{int(starts[-1])}")
    return np.concatenate((starts, [total]))


def _from_row_limits(key: str, name: str, limits: np.ndarray, total: int, validate: bool) -> np.ndarray:
    if validate:
        if limits.size and limits[0] < 0:
            raise _invalid(key, name, "row limits >= 0", f"{int(limits[0])}")
        _increasing(key, name, "row limits", limits)
        _ends_at(key, name, int(limits[-1]) if limits.size else 0, total)
    return np.concatenate(([0], limits))


def _from_value_rowids(key: str, name: str, ids: np.ndarray, total: int, validate: bool) -> np.ndarray:
    if ids.size != total:  # found whatever validate says (TF: a static shape check)
        raise DecodeError(
            f"Key: {key}.  Partition {name} has {ids.size} value_rowids for {total} values "
            f"(TensorFlow: Shapes ({total},) and ({ids.size},) are incompatible)",
            key=key,
        )
    if validate:
        _increasing(key, name, "value_rowids", ids, "value_rowids are not sorted")
    if ids.size and ids.min() < 0:  # TF's bincount refuses them whatever validate says
        raise DecodeError(f"Key: {key}.  value_rowids must be >= 0, found {int(ids.min())}", key=key)
    rows = int(ids[-1]) + 1 if ids.size else 0  # as TF: rows up to the last id (not the largest)
    _check_row_count(key, rows, total)
    counts = np.bincount(ids[ids < rows], minlength=rows)  # ids past the last one's row are dropped
    return np.concatenate(([0], np.cumsum(counts)))


_FACTORIES = {
    RaggedFeature.RowSplits: _from_row_splits,
    RaggedFeature.RowLengths: _from_row_lengths,
    RaggedFeature.RowStarts: _from_row_starts,
    RaggedFeature.RowLimits: _from_row_limits,
    RaggedFeature.ValueRowIds: _from_value_rowids,
}


def _invalid(key: str, name: str, expected: str, found: str) -> DecodeError:
    return DecodeError(
        f"Key: {key}.  Partition {name} does not form a valid RaggedTensor: expected {expected}, "
        f"found {found}",
        key=key,
    )


def _increasing(key: str, name: str, what: str, array: np.ndarray, problem: str = "") -> None:
    if array.size > 1 and (np.diff(array) < 0).any():
        where = int(np.flatnonzero(np.diff(array) < 0)[0]) + 1
        found = f"{int(array[where - 1])} then {int(array[where])}"
        if problem:
            raise DecodeError(
                f"Key: {key}.  Partition does not form a valid RaggedTensor: {problem} ({found})", key=key
            )
        raise _invalid(key, name, f"{what} in increasing order", found)


def _ends_at(key: str, name: str, end: int, total: int) -> None:
    """The partition must cover the values exactly (TF's check in _from_row_partition)."""
    if end != total:
        raise _invalid(key, name, f"rows that end at the {total} values", f"rows that end at {end}")


# -- shared -------------------------------------------------------------------------------------


def _rows(current: np.ndarray | RaggedArray) -> int:
    """The rows a partition divides: the values' first dimension (-1 for splits without any)."""
    return len(current) if isinstance(current, RaggedArray) else int(current.shape[0])


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
