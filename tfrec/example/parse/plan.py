"""Plans: parse specs validated once, with the raw features they read (example layer).

A plan checks a ``{key: spec}`` mapping as ``tf.io`` does (shapes known, dtypes
supported, defaults that fit, no key read two ways), keeps each spec in a
normalised form, and lists the wire keys to decode with the kind each must have.
Plans are cached by the specs' values: validating costs as much as a small batch.

Example:
    >>> plan = plan_of({"label": FixedLenFeature([], int64, default_value=0)})
    >>> plan.reads
    {b'label': 3}
"""

from __future__ import annotations

import dataclasses
import math
import operator
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...cache import BoundedCache
from ...errors import SchemaError
from .. import wire
from ..columns import as_array
from .checks import TF_KIND_NAME
from .specs import (
    PARTITIONS,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
    as_dtype,
    int64,
    raw_key,
    string,
)

Spec = FixedLenFeature | VarLenFeature | FixedLenSequenceFeature | SparseFeature | RaggedFeature


def _shape(key: str, feature: Any) -> tuple[int, ...]:
    """The spec's shape as a tuple of ints; an int ``n`` means ``(n,)``, as in TensorFlow."""
    if feature.shape is None:
        raise SchemaError(f"Missing shape for feature {key}. Received feature={feature}.")
    wrong = SchemaError(f"feature {key}: shape must be an int or a sequence of ints, got {feature.shape!r}")
    if isinstance(feature.shape, (str, bytes)):
        raise wrong
    try:
        shape: tuple[Any, ...] = (operator.index(feature.shape),)
    except TypeError:
        try:
            shape = tuple(feature.shape)
        except TypeError:
            raise wrong from None
    if isinstance(feature, FixedLenFeature) and shape and shape[0] is None:
        raise SchemaError(
            f"First dimension of shape for feature {key} unknown. "
            f"Consider using FixedLenSequenceFeature. Received feature={feature}."
        )
    if any(d is None for d in shape):
        raise SchemaError(
            f"All dimensions of shape for feature {key} need to be known but received {list(shape)}."
        )
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise wrong from None
    if any(d < 0 for d in dims):
        raise SchemaError(f"feature {key}: dimensions must be >= 0, got {list(dims)}")
    return dims


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
            array = as_array([v.encode() if isinstance(v, str) else bytes(v) for v in items])
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


class Plan:
    """Validated specs, and the raw features they read (key -> kind)."""

    def __init__(self, features: Mapping[str, Spec], *, sequence: bool = False) -> None:
        self.specs: dict[str, Spec] = {}  # keys as given (str or bytes), sorted by their wire names
        self.reads: dict[bytes, int] = {}
        self._readers: dict[bytes, str] = {}  # which kind of spec reads each key: dense/sparse/ragged
        self._splits_dtypes: dict[bytes, np.dtype] = {}  # ragged keys: their row_splits dtype
        keys = sorted(features, key=raw_key)  # str and bytes keys alike, in TF's order
        for key in keys:
            feature = features[key]
            if isinstance(feature, FixedLenSequenceFeature) and not sequence and not feature.allow_missing:
                raise SchemaError("Unsupported: FixedLenSequenceFeature requires allow_missing to be True.")
        for key in keys:
            try:
                self._add(key, features[key], sequence)
            except SchemaError as exc:
                if _names(str(exc), key):
                    raise
                raise SchemaError(f"feature {key!r}: {exc}") from None
            except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as exc:
                # A spec no check foresaw: still the user's spec, never a builtin error from inside.
                raise SchemaError(
                    f"feature {key!r}: invalid spec {features[key]!r}: {type(exc).__name__}: {exc}"
                ) from exc
        # Keys only FixedLenFeature strings read: their values may come packed (see
        # tfrec.example.columns.PackedStrings), which those outputs keep as they are.
        dense = [
            (raw_key(key), spec)
            for key, spec in self.specs.items()
            if self._readers.get(raw_key(key)) == "dense"
        ]
        strings = {raw for raw, spec in dense if isinstance(spec, FixedLenFeature) and spec.dtype == string}
        self.packable = frozenset(
            strings - {raw for raw, spec in dense if not isinstance(spec, FixedLenFeature)}
        )

    def _read(self, key: Any, kind: int, role: str) -> None:
        raw = raw_key(key)
        if self.reads.get(raw, kind) != kind:
            raise SchemaError(
                f"Conflicting type {TF_KIND_NAME[self.reads[raw]]} vs {TF_KIND_NAME[kind]} for feature {key}."
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
            self._read(key, wire.kind_of_dtype(dtype), "dense")
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
            self._read(key, wire.kind_of_dtype(dtype), "dense")
        elif isinstance(feature, VarLenFeature):
            dtype = _dtype(key, feature)
            spec = VarLenFeature(dtype)
            self._read(key, wire.kind_of_dtype(dtype), "sparse")
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
        single = isinstance(feature.index_key, (str, bytes))
        try:
            index_keys = [feature.index_key] if single else list(feature.index_key)
        except TypeError:
            raise SchemaError(
                f"SparseFeature {key}: index_key must be a key or a list of keys, got {feature.index_key!r}"
            ) from None
        for name, what in [(k, "index_key") for k in index_keys] + [(feature.value_key, "value_key")]:
            if not isinstance(name, (str, bytes)):
                raise SchemaError(f"SparseFeature {key}: {what} must be a str or bytes, got {name!r}")
        sizes = _sizes(key, feature.size, len(index_keys))
        for index_key in index_keys:
            self._read(index_key, wire.INT64, "sparse")
        self._read(feature.value_key, wire.kind_of_dtype(dtype), "sparse")
        return SparseFeature(
            tuple(index_keys), feature.value_key, dtype, tuple(sizes), bool(feature.already_sorted)
        )

    def _ragged(self, key: str, feature: RaggedFeature) -> RaggedFeature:
        if feature.value_key is not None and not isinstance(feature.value_key, (str, bytes)):
            raise SchemaError(f"Argument `value_key` must be a string; got {feature.value_key}")
        if feature.value_key in ("", b""):
            raise SchemaError("Argument `value_key` must not be empty")
        dtype = _dtype(key, feature)
        splits_dtype = np.dtype(getattr(feature.row_splits_dtype, "name", feature.row_splits_dtype))
        if splits_dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise SchemaError(
                f"Argument `row_splits_dtype` must be int32 or int64; got {feature.row_splits_dtype!r}"
            )
        partitions = _partitions(key, feature.partitions)
        for partition in partitions:
            if not isinstance(partition, RaggedFeature.UniformRowLength):
                self._read(partition.key, wire.INT64, "ragged")
        value_key = feature.value_key or key
        self._read(value_key, wire.kind_of_dtype(dtype), "ragged")
        for name in [value_key] + [p.key for p in partitions if hasattr(p, "key")]:
            other = self._splits_dtypes.setdefault(raw_key(name), splits_dtype)
            if other != splits_dtype:
                raise SchemaError(f"Conflicting partition type {other} vs {splits_dtype} for feature {name}.")
        return RaggedFeature(dtype, value_key, partitions, splits_dtype, bool(feature.validate))


def _partitions(key: str, partitions: Any) -> tuple[Any, ...]:
    """A RaggedFeature's partitions, each checked: a key of str or bytes, or a uniform int length."""
    try:
        given = tuple(partitions)
    except TypeError:
        raise SchemaError(f"RaggedFeature {key}: partitions must be a list, got {partitions!r}") from None
    out = []
    for partition in given:
        if not isinstance(partition, PARTITIONS):
            raise SchemaError(
                f"Argument `partitions` holds {partition!r}, which is not a RaggedFeature partition"
            )
        if isinstance(partition, RaggedFeature.UniformRowLength):
            try:
                partition = RaggedFeature.UniformRowLength(operator.index(partition.length))
            except TypeError:
                raise SchemaError(
                    f"RaggedFeature {key}: UniformRowLength needs an int length, got {partition.length!r}"
                ) from None
        elif not isinstance(partition.key, (str, bytes)):
            raise SchemaError(f"RaggedFeature {key}: a partition key must be a str, got {partition.key!r}")
        out.append(partition)
    return tuple(out)


def _names(message: str, key: Any) -> bool:
    """Whether ``message`` names the spec key (as a word, or as its repr)."""
    return repr(key) in message or re.search(rf"(?<!\w){re.escape(str(key))}(?!\w)", message) is not None


def _sizes(key: str, size: Any, indices: int) -> list[int]:
    """A SparseFeature's dense shape: an int, or a list with one size per index key (TF takes an int
    for a single index key and a list for a list; either is accepted when there is one index)."""
    try:
        sizes = [operator.index(size)]
    except TypeError:
        if isinstance(size, (str, bytes)):
            sizes = None
        else:
            try:
                sizes = [operator.index(s) for s in size]
            except TypeError:
                sizes = None
    if sizes is None:
        raise SchemaError(f"SparseFeature {key}: size must be an int or a list of ints, got {size!r}")
    if len(sizes) != indices:
        raise SchemaError(
            f"SparseFeature {key}: index_key and size have different lengths: "
            f"{indices} index key(s), size {size!r}"
        )
    return sizes


_PLANS: BoundedCache[tuple[object, ...], Plan] = BoundedCache(64)  # plans of the specs seen last


# The plans of the spec mappings seen last, by identity: a one-record call (tens of microseconds)
# cannot afford to freeze its specs into a key. An entry keeps the mapping alive (so its id is not
# reused) and what the mapping held, compared by identity on each hit, so a mapping changed in
# place misses. Specs with an unhashable field other than a list shape are never kept here.
_RECENT: BoundedCache[tuple[int, bool], tuple[object, tuple[tuple[Any, Any, Any], ...], Plan]] = BoundedCache(
    64
)


def plan_of(features: Mapping[str, Spec], *, sequence: bool = False) -> Plan:
    """The validated plan of ``features``, cached by value: validating costs as much as a small batch."""
    recent = _RECENT.get((id(features), sequence))
    if recent is not None and recent[0] is features and _holds(features, recent[1]):
        return recent[2]
    plan = _plan_by_value(features, sequence)
    held = _held(features)
    if held is not None:
        _RECENT.put((id(features), sequence), (features, held, plan))
    return plan


def _held(features: Mapping[str, Spec]) -> tuple[tuple[Any, Any, Any], ...] | None:
    """``(key, spec, shape as a tuple when it is a list)`` of each spec, or None when a spec may change
    in place otherwise than through a list shape."""
    held = []
    for key, spec in features.items():
        shape = None
        try:
            hash(spec)
        except TypeError:
            listed = getattr(spec, "shape", None)
            if not isinstance(spec, tuple) or type(listed) is not list:
                return None
            try:
                hash((*spec[1:], *listed))
            except TypeError:
                return None
            shape = tuple(listed)
        held.append((key, spec, shape))
    return tuple(held)


def _holds(features: Mapping[str, Spec], held: tuple[tuple[Any, Any, Any], ...]) -> bool:
    """Whether ``features`` still holds exactly the specs of ``held``."""
    if len(features) != len(held):
        return False
    for key, spec, shape in held:
        now = features.get(key)
        if now is not spec or (shape is not None and tuple(getattr(now, "shape", ())) != shape):
            return False
    return True


def _plan_by_value(features: Mapping[str, Spec], sequence: bool) -> Plan:
    try:
        key = (sequence, *((name, _frozen(spec)) for name, spec in features.items()))
    except TypeError:  # an array in a spec (mutable): validated on every call
        return Plan(features, sequence=sequence)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS.put(key, Plan(features, sequence=sequence))
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
