"""TF-compatible parsing of Examples into numpy (example layer).

``parse_example``, ``parse_single_example``, ``parse_sequence_example`` and
``parse_single_sequence_example`` take the same arguments as ``tf.io``'s and
return the same values, as numpy arrays, :class:`SparseArray` and
:class:`RaggedArray`. A batch is decoded into columns first (see
:mod:`tfrec.example.columns`); each spec then turns its column into output with
vectorised numpy, reproducing TensorFlow's defaults, padding and checks.

Where TensorFlow's parser and protobuf read odd wire forms differently (a
Feature with two kinds, a list split over several packed chunks, unknown
fields in a map entry), tfrec follows protobuf: see the README.

Example:
    >>> spec = {"label": FixedLenFeature([], int64, default_value=0), "tags": VarLenFeature(string)}
    >>> parse_example([data0, data1], spec)["label"]
    array([3, 0])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import DecodeError, MissingFeatureError, SchemaError
from . import wire
from .columns import Column, columns_from_features, concat_values, gather_columns
from .specs import (
    PARTITIONS,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedArray,
    RaggedFeature,
    SparseArray,
    SparseFeature,
    VarLenFeature,
    as_dtype,
    float32,
    int64,
    string,
)

__all__ = ["parse_example", "parse_sequence_example", "parse_single_example", "parse_single_sequence_example"]

Spec = FixedLenFeature | VarLenFeature | FixedLenSequenceFeature | SparseFeature | RaggedFeature
_KIND = {id(int64): wire.INT64, id(float32): wire.FLOAT, id(string): wire.BYTES}
_TF_NAME = {wire.INT64: "int64", wire.FLOAT: "float", wire.BYTES: "string", wire.NONE: "none"}
_LIST_NAME = {wire.INT64: "int64", wire.FLOAT: "float", wire.BYTES: "bytes"}


def _kind(dtype: np.dtype) -> int:
    return _KIND[id(dtype)]


def _object_array(values: list[bytes]) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = values
    return out


def _as_array(values: np.ndarray | list[bytes]) -> np.ndarray:
    return _object_array(values) if isinstance(values, list) else values


# -- specs --------------------------------------------------------------------------------------


def _shape(key: str, feature: Any) -> tuple[int, ...]:
    if feature.shape is None:
        raise SchemaError(f"Missing shape for feature {key}. Received feature={feature}.")
    shape = tuple(feature.shape)
    if isinstance(feature, FixedLenFeature) and shape and shape[0] is None:
        raise SchemaError(
            f"First dimension of shape for feature {key} unknown. "
            f"Consider using FixedLenSequenceFeature. Received feature={feature}."
        )
    if any(d is None for d in shape):
        raise SchemaError(
            f"All dimensions of shape for feature {key} need to be known but received {list(shape)}."
        )
    if any(int(d) < 0 for d in shape):
        raise SchemaError(f"feature {key}: dimensions must be >= 0, got {list(shape)}")
    return tuple(int(d) for d in shape)


def _dtype(key: str, feature: Any) -> np.dtype:
    if feature.dtype is None:
        raise SchemaError(f"Missing type for feature {key}. Received feature={feature}.")
    try:
        return as_dtype(feature.dtype)
    except SchemaError as exc:
        raise SchemaError(f"feature {key}: {exc}") from None


def _default(key: str, dtype: np.dtype, value: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """A FixedLenFeature default as an array of ``shape`` (reshaped, never broadcast)."""
    if value is None:
        return None
    try:
        if dtype == string:
            items = np.asarray(value, dtype=object).ravel().tolist()
            if not all(isinstance(v, (str, bytes)) for v in items):
                raise TypeError(f"expected str or bytes values, got {value!r}")
            array = _object_array([v.encode() if isinstance(v, str) else bytes(v) for v in items])
        else:
            raw = np.asarray(value)
            # As TF: numpy arrays are cast; Python floats are not silently truncated to ints.
            python_floats = not isinstance(value, np.ndarray) and raw.dtype.kind == "f" and raw.size
            if raw.dtype.kind in "SUO" or (dtype == int64 and python_floats):
                raise TypeError(f"cannot convert {value!r} to {dtype}")
            array = raw.astype(dtype).ravel()
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"feature {key}: default_value does not fit dtype {dtype}: {exc}") from None
    if array.size != math.prod(shape):
        raise SchemaError(
            f"feature {key}: default_value has {array.size} values, but the shape {list(shape)} needs "
            f"{math.prod(shape)} (it is reshaped, never broadcast)"
        )
    if array.size == 0:
        return None  # as in TF: an empty default leaves the feature required
    return array.reshape(shape)


class _Plan:
    """Validated specs, and the raw features they read (key -> kind)."""

    def __init__(self, features: Mapping[str, Spec], *, sequence: bool = False) -> None:
        self.specs: dict[str, Spec] = {}
        self.reads: dict[bytes, int] = {}
        self._readers: dict[bytes, str] = {}  # which kind of spec reads each key: dense/sparse/ragged
        self._splits_dtypes: dict[str, np.dtype] = {}  # ragged keys: their row_splits dtype
        for key in sorted(features):
            feature = features[key]
            if isinstance(feature, FixedLenSequenceFeature) and not sequence and not feature.allow_missing:
                raise SchemaError("Unsupported: FixedLenSequenceFeature requires allow_missing to be True.")
        for key in sorted(features):
            self._add(key, features[key], sequence)

    def _read(self, key: str, kind: int, role: str) -> None:
        raw = key.encode()
        if self.reads.get(raw, kind) != kind:
            raise SchemaError(
                f"Conflicting type {_TF_NAME[self.reads[raw]]} vs {_TF_NAME[kind]} for feature {key}."
            )
        other = self._readers.get(raw, role)
        if other != role:
            raise SchemaError(f"{other.capitalize()} and {role} keys must not intersect; both read {key!r}")
        self.reads[raw] = kind
        self._readers[raw] = role

    def _add(self, key: str, feature: Any, sequence: bool) -> None:
        if isinstance(feature, FixedLenFeature):
            dtype, shape = _dtype(key, feature), _shape(key, feature)
            spec: Spec = FixedLenFeature(shape, dtype, _default(key, dtype, feature.default_value, shape))
            self._read(key, _kind(dtype), "dense")
        elif isinstance(feature, FixedLenSequenceFeature):
            dtype, shape = _dtype(key, feature), _shape(key, feature)
            if math.prod(shape) == 0:
                raise SchemaError(
                    f"feature {key}: a FixedLenSequenceFeature needs a shape with values, got {list(shape)}"
                )
            pad = None
            if feature.default_value is not None:
                if sequence:
                    raise SchemaError(f"Value feature_list.dense_defaults[{key}] must be None")
                pad = _default(key, dtype, feature.default_value, ())
            spec = FixedLenSequenceFeature(shape, dtype, feature.allow_missing, pad)
            self._read(key, _kind(dtype), "dense")
        elif isinstance(feature, VarLenFeature):
            dtype = _dtype(key, feature)
            spec = VarLenFeature(dtype)
            self._read(key, _kind(dtype), "sparse")
        elif isinstance(feature, SparseFeature) and not sequence:
            spec = self._sparse(key, feature)
        elif isinstance(feature, RaggedFeature):
            spec = self._ragged(key, feature)
        else:
            raise SchemaError(f"Unsupported {type(feature).__name__} {feature} for key '{key}'")
        self.specs[key] = spec

    def _sparse(self, key: str, feature: SparseFeature) -> SparseFeature:
        if not feature.index_key:
            raise SchemaError(f"Missing index_key for SparseFeature {feature}.")
        if not feature.value_key:
            raise SchemaError(f"Missing value_key for SparseFeature {feature}.")
        dtype = _dtype(key, feature)
        if isinstance(feature.index_key, str):
            if isinstance(feature.size, bool) or not isinstance(feature.size, (int, np.integer)):
                raise SchemaError(f"SparseFeature {key}: size must be an int when index_key is a str")
            index_keys, sizes = [feature.index_key], [int(feature.size)]
        else:
            index_keys = list(feature.index_key)
            if not isinstance(feature.size, (list, tuple)):
                raise SchemaError(f"SparseFeature {key}: size must be a list when index_key is a list")
            sizes = [int(s) for s in feature.size]
            if len(sizes) != len(index_keys):
                raise SchemaError(f"SparseFeature {key}: index_key and size have different lengths")
        for index_key in index_keys:
            self._read(index_key, wire.INT64, "sparse")
        self._read(feature.value_key, _kind(dtype), "sparse")
        return SparseFeature(
            tuple(index_keys), feature.value_key, dtype, tuple(sizes), bool(feature.already_sorted)
        )

    def _ragged(self, key: str, feature: RaggedFeature) -> RaggedFeature:
        if feature.value_key is not None and not isinstance(feature.value_key, str):
            raise SchemaError(f"Argument `value_key` must be a string; got {feature.value_key}")
        if feature.value_key == "":
            raise SchemaError("Argument `value_key` must not be empty")
        dtype = _dtype(key, feature)
        splits_dtype = np.dtype(getattr(feature.row_splits_dtype, "name", feature.row_splits_dtype))
        if splits_dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise SchemaError(
                f"Argument `row_splits_dtype` must be int32 or int64; got {feature.row_splits_dtype!r}"
            )
        partitions = tuple(feature.partitions)
        for partition in partitions:
            if not isinstance(partition, PARTITIONS):
                raise SchemaError(
                    f"Argument `partitions` holds {partition!r}, which is not a RaggedFeature partition"
                )
            if not isinstance(partition, RaggedFeature.UniformRowLength):
                self._read(partition.key, wire.INT64, "ragged")
        value_key = feature.value_key or key
        self._read(value_key, _kind(dtype), "ragged")
        for raw in [value_key] + [p.key for p in partitions if hasattr(p, "key")]:
            other = self._splits_dtypes.setdefault(raw, splits_dtype)
            if other != splits_dtype:
                raise SchemaError(f"Conflicting partition type {other} vs {splits_dtype} for feature {raw}.")
        return RaggedFeature(dtype, value_key, partitions, splits_dtype, bool(feature.validate))


_MAX_PLANS = 64  # plans kept for the specs seen last
_PLANS: dict[tuple[object, ...], _Plan] = {}


def _plan(features: Mapping[str, Spec], *, sequence: bool = False) -> _Plan:
    """The validated plan of ``features``, cached by value: validating costs as much as a small batch."""
    try:
        key = (sequence, *((name, _frozen(spec)) for name, spec in features.items()))
    except TypeError:  # an array in a spec (mutable): validated on every call
        return _Plan(features, sequence=sequence)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _Plan(features, sequence=sequence)
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a spec or one of its fields, equal only for the same types and values.

    Raises TypeError for what may change in place (arrays, other unhashable objects).
    """
    if isinstance(value, (list, tuple)):  # NamedTuple specs and partitions too
        return (type(value), *map(_frozen, value))
    if isinstance(value, RaggedFeature):
        return (RaggedFeature, *(_frozen(getattr(value, f.name)) for f in dataclasses.fields(value)))
    hash(value)
    return (type(value), value)


# -- errors -------------------------------------------------------------------------------------


def _name(names: Sequence[str] | None, row: int) -> str:
    return names[row] if names is not None else "<unknown>"


class _Checks:
    """Collects data errors across every key and raises the one TensorFlow reports.

    TF parses a batch record by record and stops at the first record with a problem. Within that
    record it walks the feature entries from the last on the wire to the first and stops at the first
    bad entry (a wrong kind, a wrong count); only when every entry is fine does it look for missing
    required features, in spec order. Problems found after parsing (a SparseFeature's index and value
    counts) come last, in spec order. Messages are made at once, but only for a failing key.
    """

    def __init__(self, names: Sequence[str] | None, batched: bool, records: Sequence[bytes]) -> None:
        self.names = names
        self.batched = batched
        self.records = records
        self.entries: list[tuple[int, str, str]] = []  # bad entries: (row, key on the wire, message)
        self.missing: tuple[int, str, str] | None = None
        self.later: DecodeError | None = None  # found after parsing: the first in spec order

    def where(self, row: int, key: str) -> str:
        if not self.batched:
            return f"Key: {key}."
        return f"Name: {_name(self.names, row)}, Key: {key}, Index: {row}."

    def refuse(self, bad: np.ndarray, key: str, problem: Callable[[int], str]) -> bool:
        """Note the first row where the entry of ``key`` is bad (``problem(row)`` says how); True if any."""
        rows = np.flatnonzero(bad)
        if not rows.size:
            return False
        row = int(rows[0])
        self.entries.append((row, key, problem(row)))
        return True

    def require(self, absent: np.ndarray, key: str, problem: Callable[[int], str]) -> bool:
        """Note the first row where the required ``key`` is absent; True if any is."""
        rows = np.flatnonzero(absent)
        if not rows.size:
            return False
        row = int(rows[0])
        if self.missing is None or row < self.missing[0]:
            self.missing = (row, key, problem(row))
        return True

    def refuse_later(self, bad: np.ndarray, key: str, problem: Callable[[int], str]) -> bool:
        """Note a problem TF finds after parsing (reported only when parsing found none); True if any."""
        rows = np.flatnonzero(bad)
        if not rows.size:
            return False
        row = int(rows[0])
        exc = DecodeError(problem(row), key=key)
        exc.index = row  # type: ignore[attr-defined]
        self.postpone(exc)
        return True

    def postpone(self, exc: DecodeError) -> None:
        """Keep ``exc``, found after parsing, unless an earlier spec had one."""
        if self.later is None:
            self.later = exc

    def kinds(self, column: Column, kind: int, key: str) -> bool:
        """Refuse rows whose feature has another kind (even when empty)."""
        return self.refuse(
            (column.kinds != wire.NONE) & (column.kinds != kind),
            key,
            lambda row: (
                f"{self.where(row, key)}  Data types don't match. Expected type: {_TF_NAME[kind]}, "
                f"Actual type: {_TF_NAME[int(column.kinds[row])]}"
            ),
        )

    def _last_on_the_wire(self, row: int, keys: list[str]) -> str:
        """Of ``keys``, the one whose entry in record ``row`` comes last (TF checks entries backwards)."""
        found = wire.scan_example(self.records[row], frozenset(k.encode() for k in keys))
        none = wire.Feature(wire.NONE, ())
        ends = {k: max((end for _, end in found.get(k.encode(), none).spans), default=-1) for k in keys}
        return max(keys, key=lambda k: ends[k])  # the first such key on a tie (one entry, two specs)

    def raise_first(self) -> None:
        exc: DecodeError | MissingFeatureError
        row = min((entry[0] for entry in self.entries), default=None)
        if row is not None and (self.missing is None or row <= self.missing[0]):
            here: dict[str, str] = {}  # the bad entries of that record, in spec order
            for r, key, message in self.entries:
                if r == row:
                    here.setdefault(key, message)
            key = self._last_on_the_wire(row, list(here)) if len(here) > 1 else next(iter(here))
            exc = DecodeError(here[key], key=key)
        elif self.missing is not None:
            row, key, message = self.missing
            exc = MissingFeatureError(message, key=key)
        elif self.later is not None:
            raise self.later
        else:
            return
        exc.index = row  # type: ignore[union-attr]
        raise exc


def _shape_text(shape: Sequence[int | str]) -> str:
    return "[" + ",".join(map(str, shape)) + "]"  # as TF prints shapes


# -- one spec, one column -------------------------------------------------------------------------


def _fixed(key: str, spec: FixedLenFeature, column: Column, checks: _Checks) -> np.ndarray | None:
    kind = _kind(spec.dtype)
    size = math.prod(spec.shape)
    if column.width == size:  # every record holds its values: nothing to check or fill
        return _as_array(column.values).reshape((len(column.kinds), *spec.shape))
    present = column.kinds == kind
    if present.all() and (column.counts == size).all():  # the usual case: nothing to check or fill
        return _as_array(column.values).reshape((len(present), *spec.shape))
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
                prefix.format(_name(checks.names, row))
                + f"Feature: {key} (data type: {_TF_NAME[kind]}) is required but could not be found."
            ),
        )
    if bad:
        return None
    return _fill_fixed(spec, column, present)


def _count_problem(checks: _Checks, key: str, spec: FixedLenFeature, row: int, column: Column) -> str:
    """TF's message for a FixedLenFeature with the wrong number of values in record ``row``."""
    kind, count = _kind(spec.dtype), int(column.counts[row])
    if checks.batched:
        return (
            f"{checks.where(row, key)}  Number of {_LIST_NAME[kind]} values != expected.  "
            f"Values size: {count} but output shape: {_shape_text(spec.shape)}"
        )
    # parse_single_example fills a fixed-size slice: too many strings overflow it while being parsed.
    list_name = _LIST_NAME[kind] + "_list"
    overflow = kind == wire.BYTES and count > math.prod(spec.shape)
    problem = f"Parsing {list_name} failed." if overflow else f"Some {list_name} slice was not parsed."
    return f"Key: {key}.  Can't parse serialized Example: {problem}"


def _fill_fixed(spec: FixedLenFeature, column: Column, present: np.ndarray) -> np.ndarray:
    """``[rows] + shape``: each record's values, or the default where the feature is absent."""
    rows = len(column.kinds)
    values = _as_array(column.values)
    if present.all():
        return values.reshape((rows, *spec.shape))
    out = np.empty((rows, *spec.shape), spec.dtype)
    out[~present] = spec.default_value
    out[present] = values.reshape((-1, *spec.shape))
    return out


def _var_len(key: str, spec: VarLenFeature, column: Column, checks: _Checks) -> SparseArray | None:
    if checks.kinds(column, _kind(spec.dtype), key):
        return None
    values = _as_array(column.values)
    counts = column.counts
    position = np.arange(values.size) - np.repeat(column.offsets()[:-1], counts)
    if not checks.batched:
        return SparseArray(position[:, None], values, np.array([values.size], np.int64))
    rows = np.repeat(np.arange(counts.size), counts)
    width = int(counts.max()) if counts.size else 0
    return SparseArray(np.stack([rows, position], axis=1), values, np.array([counts.size, width], np.int64))


def _sequence(key: str, spec: FixedLenSequenceFeature, column: Column, checks: _Checks) -> np.ndarray | None:
    kind = _kind(spec.dtype)
    stride = math.prod(spec.shape)
    bad = checks.kinds(column, kind, key)
    bad |= checks.refuse(
        column.counts % stride != 0,
        key,
        lambda row: (
            f"{checks.where(row, key)}  Number of {_LIST_NAME[kind]} values is not a multiple of "
            f"stride length. Saw {int(column.counts[row])} values but output shape is: "
            f"[?,{_shape_text(spec.shape)[1:]}"
            if checks.batched
            else f"Error while parsing feature with key {key}: number of elements should be divisible "
            f"by {stride}, found {int(column.counts[row])} instead"
        ),
    )
    if bad:
        return None
    return _pad_steps(
        _as_array(column.values), column.counts // stride, spec.shape, spec.dtype, spec.default_value
    )


def _pad_steps(
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
    key: str, spec: SparseFeature, columns: Mapping[bytes, Column], checks: _Checks
) -> SparseArray | None:
    value_column = columns[spec.value_key.encode()]
    bad = checks.kinds(value_column, _kind(spec.dtype), spec.value_key)
    index_columns = [columns[k.encode()] for k in spec.index_key]
    for index_key, column in zip(spec.index_key, index_columns, strict=True):
        bad |= checks.kinds(column, wire.INT64, index_key)
        found, wanted = column.counts, value_column.counts
        bad |= checks.refuse_later(
            found != wanted,
            key,
            # refuse_later() calls this before the loop moves on: binding the loop variables late is safe.
            lambda row: (
                f"{checks.where(row, key)}  Number of elements in indices "
                f"({int(found[row])}) and values ({int(wanted[row])}) do not match"  # noqa: B023
            ),
        )
    if bad:
        return None
    counts = value_column.counts
    parts = [np.repeat(np.arange(counts.size), counts)] if checks.batched else []
    parts += [np.asarray(c.values, np.int64) for c in index_columns]
    indices = np.stack(parts, axis=1) if parts[0].size else np.empty((0, len(parts)), np.int64)
    values = _as_array(value_column.values)
    if not spec.already_sorted and len(values):
        order = np.lexsort(indices.T[::-1])  # stable: equal indices keep their order
        indices, values = indices[order], values[order]
    dense_shape = ([counts.size] if checks.batched else []) + list(spec.size)
    return SparseArray(indices, values, np.array(dense_shape, np.int64))


# -- ragged ---------------------------------------------------------------------------------------


def _ragged(
    key: str, spec: RaggedFeature, columns: Mapping[bytes, Column], checks: _Checks
) -> np.ndarray | RaggedArray | None:
    assert spec.value_key is not None
    value_column = columns[spec.value_key.encode()]
    bad = checks.kinds(value_column, _kind(spec.dtype), spec.value_key)
    partitions: list[tuple[Any, Column | None]] = []
    for partition in spec.partitions:
        if isinstance(partition, RaggedFeature.UniformRowLength):
            partitions.append((partition, None))
            continue
        column = columns[partition.key.encode()]
        bad |= checks.kinds(column, wire.INT64, partition.key)
        partitions.append((partition, column))
    if bad:
        return None
    splits_dtype = np.dtype(spec.row_splits_dtype)
    values = _as_array(value_column.values)
    if not checks.batched:
        return _ragged_single(key, values, partitions, splits_dtype, spec.validate)
    return _ragged_batch(key, values, value_column.counts, partitions, splits_dtype, spec.validate)


def _splits_from(partition: Any, ids: np.ndarray, rows_before: int, total: int) -> np.ndarray:
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
        if column is None:
            current = _uniform(key, current, partition.length, validate)
            if isinstance(current, RaggedArray):
                current = RaggedArray(current.values, current.row_splits.astype(splits_dtype))
            continue
        ids = np.asarray(column.values, np.int64)
        splits = _splits_from(partition, ids, 0, len(current))
        if validate:
            _validate(key, splits, len(current))
        current = RaggedArray(current, splits.astype(splits_dtype))
    return current


def _ragged_batch(
    key: str,
    values: np.ndarray,
    counts: np.ndarray,
    partitions: list[tuple[Any, Column | None]],
    splits_dtype: np.dtype,
    validate: bool,
) -> RaggedArray:
    """TF's batched merge: each example's partition values are offset into the whole batch."""
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
        ids = np.asarray(column.values, np.int64)
        offsets = np.repeat(starts, column.counts)
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
            per_row = np.zeros(counts.size, np.int64)
            nonempty = column.counts > 0
            per_row[nonempty] = np.maximum.reduceat(ids, first[nonempty]) + 1 if ids.size else 0
            row_offsets = np.cumsum(per_row) - per_row
            global_ids = ids + np.repeat(row_offsets, column.counts)
            splits = np.concatenate(([0], np.cumsum(np.bincount(global_ids, minlength=int(per_row.sum())))))
            rows = per_row
        if validate:
            _validate(key, splits, total)
        current = RaggedArray(current, splits.astype(splits_dtype))
    batch_splits = np.concatenate(([0], np.cumsum(rows))).astype(splits_dtype)
    return RaggedArray(current, batch_splits)


# -- public functions -----------------------------------------------------------------------------


def _records(serialized: Any) -> tuple[list[bytes], bool]:
    """The records as a list of bytes, and whether the input was a single record."""
    if isinstance(serialized, (bytes, bytearray, memoryview)):
        return [bytes(serialized)], True
    if isinstance(serialized, np.ndarray) and serialized.ndim == 0:
        return [bytes(serialized.item())], True
    if isinstance(serialized, np.ndarray) and serialized.ndim > 1:
        raise SchemaError(
            f"Expected serialized to be a scalar or vector, got shape: {list(serialized.shape)}"
        )
    records = serialized if type(serialized) is list else list(serialized)
    if set(map(type, records)) - {bytes}:  # bytes already: no copy
        records = [bytes(r) for r in records]
    return records, False


def _names(names: Any, count: int) -> list[str] | None:
    if names is None:
        return None
    out = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    if len(out) != count:
        raise SchemaError(f"example_names has {len(out)} names for {count} records")
    return out


def _output(key: str, spec: Spec, columns: Mapping[bytes, Column], checks: _Checks) -> Any:
    """One spec's output from the batch's columns (None when ``checks`` noted a problem)."""
    if isinstance(spec, FixedLenFeature):
        value = _fixed(key, spec, columns[key.encode()], checks)
        return value if checks.batched or value is None else value[0]
    if isinstance(spec, VarLenFeature):
        return _var_len(key, spec, columns[key.encode()], checks)
    if isinstance(spec, FixedLenSequenceFeature):
        value = _sequence(key, spec, columns[key.encode()], checks)
        return value if checks.batched or value is None else value[0]
    if isinstance(spec, SparseFeature):
        return _sparse(key, spec, columns, checks)
    try:
        return _ragged(key, spec, columns, checks)
    except DecodeError as exc:  # TF builds RaggedTensors after parsing: reported after parse errors
        checks.postpone(exc)
        return None


def _build(
    plan: _Plan,
    columns: Mapping[bytes, Column],
    names: Sequence[str] | None,
    batched: bool,
    records: Sequence[bytes],
) -> dict[str, Any]:
    checks = _Checks(names, batched, records)
    out = {key: _output(key, spec, columns, checks) for key, spec in plan.specs.items()}
    checks.raise_first()  # the problem TF reports, whichever key it is in
    return out


def _decode_error(exc: wire.WireError, names: Sequence[str] | None) -> DecodeError:
    row = getattr(exc, "index", None)
    name = names[row] if names is not None and row is not None else "<unknown>"
    where = f"Name: {name}, Index: {row}.  " if row is not None else ""
    return DecodeError(f"{where}Could not parse example input: {exc}")


def parse_example(
    serialized: Any, features: Mapping[str, Spec], example_names: Any = None, name: str | None = None
) -> dict[str, Any]:
    """Parse a batch of serialized Examples like ``tf.io.parse_example``, into numpy.

    Args:
        serialized: a list (or 1-D array) of serialized Examples; a single
            ``bytes`` parses like :func:`parse_single_example`.
        features: key -> FixedLenFeature, VarLenFeature,
            FixedLenSequenceFeature (``allow_missing=True``), SparseFeature or
            RaggedFeature.
        example_names: optional names of the records, used in error messages.
        name: accepted for compatibility with ``tf.io``; unused.

    Returns:
        key -> dense array with a leading batch dimension, SparseArray or RaggedArray.

    Raises:
        SchemaError: an invalid spec. DecodeError, MissingFeatureError: data
            that does not fit it, naming the key and the example index.

    Example:
        >>> tfrec.parse_example([data], {"label": tfrec.FixedLenFeature([], tfrec.int64)})
        {'label': array([3])}
    """
    if not features:
        raise SchemaError(f"Argument `features` cannot be None or falsy. Got {features}")
    records, single = _records(serialized)
    if single:
        return parse_single_example(records[0], features, example_names)
    plan = _plan(features)
    names = _names(example_names, len(records))
    try:
        columns = gather_columns(records, plan.reads)
    except wire.WireError as exc:
        raise _decode_error(exc, names) from None
    return _build(plan, columns, names, True, records)


def parse_single_example(
    serialized: Any, features: Mapping[str, Spec], example_names: Any = None, name: str | None = None
) -> dict[str, Any]:
    """Parse one serialized Example like ``tf.io.parse_single_example``, into numpy.

    Example:
        >>> tfrec.parse_single_example(data, {"tags": tfrec.VarLenFeature(tfrec.string)})["tags"].values
        array([b'a', b'b'], dtype=object)
    """
    if features is None:
        raise SchemaError("Invalid argument: features cannot be None.")
    if not features:
        raise SchemaError("Invalid argument: features cannot be empty.")
    records, single = _records(serialized)
    if not single:
        raise SchemaError("Input serialized must be a scalar")
    plan = _plan(features)
    try:
        columns = columns_from_features(
            records, [wire.scan_example(records[0], frozenset(plan.reads))], plan.reads
        )
    except wire.WireError as exc:
        raise DecodeError(f"Could not parse example input: {exc}") from None
    return _build(plan, columns, None, False, records)


# -- sequence examples ----------------------------------------------------------------------------


def _sequence_plans(
    context_features: Mapping[str, Spec] | None, sequence_features: Mapping[str, Spec] | None
) -> tuple[_Plan | None, _Plan | None]:
    if not context_features and not sequence_features:
        raise SchemaError(
            "Both `context_features` and `sequence_features` argument are None, "
            "but at least one should have values."
        )
    for key, spec in (context_features or {}).items():
        if not isinstance(spec, (FixedLenFeature, VarLenFeature, RaggedFeature)):
            raise SchemaError(f"Unsupported {type(spec).__name__} {spec} for key '{key}'")
    for key, spec in (sequence_features or {}).items():
        if not isinstance(spec, (FixedLenSequenceFeature, VarLenFeature, RaggedFeature)):
            raise SchemaError(f"Unsupported {type(spec).__name__} {spec} for key '{key}'")
        if isinstance(spec, RaggedFeature) and spec.partitions:
            raise SchemaError(
                f"feature list {key!r}: RaggedFeature partitions in sequence_features are not supported"
            )
    return (
        _plan(context_features) if context_features else None,
        _plan(sequence_features, sequence=True) if sequence_features else None,
    )


def _step_columns(
    records: Sequence[bytes],
    lists: Sequence[Mapping[bytes, list[wire.Feature]]],
    key: bytes,
    kind: int,
    name: str,
    names: Sequence[str] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | list[bytes]]:
    """For one feature list: per record present?/steps, per step counts, and all values."""
    present = np.zeros(len(records), bool)
    steps = np.zeros(len(records), np.int64)
    counts: list[int] = []
    pieces = []
    for row, (data, found) in enumerate(zip(records, lists, strict=True)):
        step_features = found.get(key)
        if step_features is None:
            continue
        present[row] = True
        steps[row] = len(step_features)
        for step, feature in enumerate(step_features):
            if feature.kind not in (wire.NONE, kind):
                where = f"Name: {_name(names, row)}, Feature list: {name}, Index: {step}."
                raise DecodeError(
                    f"{where}  Data types don't match. Expected type: {_TF_NAME[kind]}", key=name
                )
            values = wire.decode_values(data, feature) if feature.kind == kind else []
            counts.append(len(values))
            pieces.append(values)
    from .columns import empty_values

    values_all = concat_values(kind, pieces) if pieces else empty_values(kind)
    return present, steps, np.array(counts, np.int64), values_all


# TF's sequence parser checks in phases, each over the whole batch: the kinds of the context features,
# the kinds of the feature lists' steps, the counts of the context FixedLenFeatures, then those of the
# FixedLenSequenceFeatures; RaggedTensors are built last. Context messages differ from parse_example's.


def _context_kinds(plan: _Plan, columns: Mapping[bytes, Column], names: Sequence[str] | None) -> None:
    for raw, kind in plan.reads.items():
        column = columns[raw]
        rows = np.flatnonzero((column.kinds != wire.NONE) & (column.kinds != kind))
        if rows.size:
            key = raw.decode()
            raise DecodeError(
                f"Name: {_name(names, int(rows[0]))}, Context feature: {key}.  Data types don't match. "
                f"Expected type: {_TF_NAME[kind]}",
                key=key,
            )


def _context_fixed(
    key: str, spec: FixedLenFeature, column: Column, names: Sequence[str] | None
) -> np.ndarray:
    """A context FixedLenFeature, checked as TF does: first the longest value list in the batch."""
    kind = _kind(spec.dtype)
    size = math.prod(spec.shape)
    present = column.kinds == kind
    longest = int(column.counts.max(initial=0))
    if spec.default_value is not None:
        longest = max(longest, size)  # TF counts the default in, so only longer lists fail here
    if longest != size:
        # Found 0 when no record has the feature (an empty batch too): a missing required feature.
        error = DecodeError if present.any() else MissingFeatureError
        raise error(
            f"Inconsistent max number of elements for feature {key}: expected {size}, but found {longest}",
            key=key,
        )
    absent = ~present if spec.default_value is None else np.zeros_like(present)
    rows = np.flatnonzero(absent | (present & (column.counts != size)))
    if rows.size:
        row = int(rows[0])
        exc: DecodeError | MissingFeatureError
        if absent[row]:
            problem = f"Feature: {key} (data type: {_TF_NAME[kind]}) is required but could not be found."
            exc = MissingFeatureError(problem, key=key)
        else:
            exc = DecodeError(f"Unexpected number of elements in example {_name(names, row)}", key=key)
        exc.index = row  # type: ignore[union-attr]
        raise exc
    return _fill_fixed(spec, column, present)


Steps = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | list[bytes]]


def _check_steps(key: str, spec: FixedLenSequenceFeature, found: Steps, names: Sequence[str] | None) -> None:
    """A FixedLenSequenceFeature's counts, checked as TF does: first the largest total in the batch."""
    present, steps, counts, _ = found
    stride = math.prod(spec.shape)
    sums = np.concatenate(([0], np.cumsum(counts)))
    ends = np.cumsum(steps)
    longest = int((sums[ends] - sums[ends - steps]).max(initial=0))
    if longest % stride:
        raise DecodeError(
            f"Feature list '{key}' has an unexpected number of values.  Total values size: {longest} "
            f"is not consistent with output shape: {_shape_text(('?', *spec.shape))}",
            key=key,
        )
    missing = np.flatnonzero(~present) if not spec.allow_missing else np.empty(0, np.int64)
    wrong = np.flatnonzero(counts != stride)
    row_of_step = np.repeat(np.arange(len(steps)), steps)
    if wrong.size and not (missing.size and missing[0] < row_of_step[wrong[0]]):
        row = int(row_of_step[wrong[0]])
        step = int(wrong[0] - (ends[row] - steps[row]))
        raise DecodeError(
            f"Name: {_name(names, row)}, Key: {key}, Index: {step}.  Number of values != expected.  "
            f"values size: {int(counts[wrong[0]])} but output shape: {_shape_text(spec.shape)}",
            key=key,
        )
    if missing.size:
        raise MissingFeatureError(
            f"Name: {_name(names, int(missing[0]))}, Feature list '{key}' is required but could not be "
            "found.  Did you mean to include it in feature_list_dense_missing_assumed_empty or "
            "feature_list_dense_defaults?",
            key=key,
        )


def _sequence_outputs(
    plan: _Plan, found: Mapping[str, Steps], rows: int, batched: bool
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    out: dict[str, Any] = {}
    lengths: dict[str, np.ndarray] = {}
    for key, spec in plan.specs.items():
        _, steps, counts, values = found[key]
        array = _as_array(values)
        if isinstance(spec, FixedLenSequenceFeature):
            padded = _pad_steps(array, steps, spec.shape, spec.dtype, None)
            out[key] = padded if batched else padded[0]
            lengths[key] = steps if batched else steps[0]
        elif isinstance(spec, VarLenFeature):
            step_rows = np.repeat(np.arange(rows), steps)
            step_index = np.arange(steps.sum()) - np.repeat(np.cumsum(steps) - steps, steps)
            position = np.arange(array.size) - np.repeat(np.cumsum(counts) - counts, counts)
            width = int(counts.max()) if counts.size else 0
            longest = int(steps.max()) if steps.size else 0
            columns = [np.repeat(step_index, counts), position]
            if batched:
                columns.insert(0, np.repeat(step_rows, counts))
            indices = np.stack(columns, axis=1) if array.size else np.empty((0, len(columns)), np.int64)
            shape = ([rows] if batched else []) + [longest, width]
            out[key] = SparseArray(indices.astype(np.int64), array, np.array(shape, np.int64))
        else:
            splits_dtype = np.dtype(spec.row_splits_dtype)  # type: ignore[union-attr]
            inner = RaggedArray(array, np.concatenate(([0], np.cumsum(counts))).astype(splits_dtype))
            if batched:
                out[key] = RaggedArray(inner, np.concatenate(([0], np.cumsum(steps))).astype(splits_dtype))
            else:
                out[key] = inner
    return out, lengths


def parse_sequence_example(
    serialized: Any,
    context_features: Mapping[str, Spec] | None = None,
    sequence_features: Mapping[str, Spec] | None = None,
    example_names: Any = None,
    name: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    """Parse a batch of SequenceExamples like ``tf.io.parse_sequence_example``.

    Returns:
        ``(context, feature_lists, lengths)``; ``lengths`` has the number of
        steps per example for each FixedLenSequenceFeature.

    Example:
        >>> context, lists, lengths = tfrec.parse_sequence_example(
        ...     [blob], sequence_features={"tokens": tfrec.VarLenFeature(tfrec.int64)})
    """
    records, single = _records(serialized)
    context_plan, sequence_plan = _sequence_plans(context_features, sequence_features)
    if single and isinstance(example_names, (str, bytes)):
        example_names = [example_names]
    names = _names(example_names, len(records))
    batched = not single
    scanned_context, lists = [], []
    wanted_context = frozenset(context_plan.reads) if context_plan else frozenset()
    wanted_lists = frozenset(sequence_plan.reads) if sequence_plan else frozenset()
    for row, data in enumerate(records):
        try:
            context, steps = wire.scan_sequence_example(data, wanted_context, wanted_lists)
        except wire.WireError as exc:
            exc.index = row  # type: ignore[attr-defined]
            raise _decode_error(exc, names) from None
        scanned_context.append(context)
        lists.append(steps)
    context_specs = context_plan.specs if context_plan else {}
    sequence_specs = sequence_plan.specs if sequence_plan else {}
    columns = columns_from_features(records, scanned_context, context_plan.reads) if context_plan else {}
    if context_plan is not None:
        _context_kinds(context_plan, columns, names)
    found: dict[str, Steps] = {}
    for key, spec in sequence_specs.items():
        source = spec.value_key if isinstance(spec, RaggedFeature) and spec.value_key else key
        found[key] = _step_columns(records, lists, source.encode(), _kind(spec.dtype), source, names)
    context_out: dict[str, Any] = {}
    for key, spec in context_specs.items():
        if isinstance(spec, FixedLenFeature):
            value = _context_fixed(key, spec, columns[key.encode()], names)
            context_out[key] = value if batched else value[0]
    for key, spec in sequence_specs.items():
        if isinstance(spec, FixedLenSequenceFeature):
            _check_steps(key, spec, found[key], names)
    lists_out: dict[str, Any] = {}
    lengths: dict[str, np.ndarray] = {}
    if sequence_plan is not None:
        lists_out, lengths = _sequence_outputs(sequence_plan, found, len(records), batched)
    checks = _Checks(names, batched, records)
    for key, spec in context_specs.items():
        if key not in context_out:
            context_out[key] = _output(key, spec, columns, checks)
    checks.raise_first()  # only RaggedTensor problems are left
    return {key: context_out[key] for key in context_specs}, lists_out, lengths


def parse_single_sequence_example(
    serialized: Any,
    context_features: Mapping[str, Spec] | None = None,
    sequence_features: Mapping[str, Spec] | None = None,
    example_name: Any = None,
    name: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Parse one SequenceExample like ``tf.io.parse_single_sequence_example``.

    Returns:
        ``(context, feature_lists)``.

    Example:
        >>> context, lists = tfrec.parse_single_sequence_example(
        ...     blob, context_features={"id": tfrec.FixedLenFeature([], tfrec.int64)})
    """
    records, single = _records(serialized)
    if not single:
        raise SchemaError("Input serialized must be a scalar")
    names = None if example_name is None else [example_name]  # TF names the record in its messages
    context, lists, _ = parse_sequence_example(records[0], context_features, sequence_features, names)
    return context, lists
