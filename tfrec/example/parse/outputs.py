"""Outputs: what each parse spec makes of its column (example layer).

:func:`spec_output` turns the batch's columns (see :mod:`tfrec.example.columns`)
into one spec's value with vectorised numpy, reproducing TensorFlow's defaults
and padding: dense arrays for FixedLen and FixedLenSequence features,
:class:`SparseArray` for VarLen and Sparse features, :class:`RaggedArray` from a
RaggedFeature's partitions (see :mod:`.ragged`). Data that does not fit the spec is noted on the
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

from .. import wire
from ..columns import Column, as_array
from .checks import TF_KIND_NAME, Checks, example_name, shape_text
from .plan import Spec
from .ragged import ragged_output
from .specs import (
    FixedLenFeature,
    FixedLenSequenceFeature,
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
    return ragged_output(key, spec, columns, checks)


# -- one spec, one column -------------------------------------------------------------------------


def _fixed(key: str, spec: FixedLenFeature, column: Column, checks: Checks) -> np.ndarray | None:
    kind = wire.kind_of_dtype(spec.dtype)
    size = math.prod(spec.shape)
    # (Packed strings stay packed in the usual cases below, where the column is the output.)
    if column.width == size:  # every record holds its values: nothing to check or fill
        return as_array(column.values, packed=True).reshape((len(column.kinds), *spec.shape))
    present = column.kinds == kind
    if present.all() and (column.counts == size).all():  # the usual case: nothing to check or fill
        return as_array(column.values, packed=True).reshape((len(present), *spec.shape))
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
