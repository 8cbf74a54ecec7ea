"""TF-compatible parsing of SequenceExamples into numpy (example layer).

``parse_sequence_example`` and ``parse_single_sequence_example`` take the same
arguments as ``tf.io``'s and return the same values. Context features become
columns and outputs as an Example's do (:mod:`.examples`); each
feature list is gathered into per-step counts and values. TensorFlow checks a
SequenceExample batch in phases, and so does tfrec, to raise the same error.

Example:
    >>> context, lists, lengths = parse_sequence_example(
    ...     [blob], sequence_features={"tokens": VarLenFeature(int64)})
    >>> lists["tokens"].values
    array([1, 2, 3])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import DecodeError, MissingFeatureError, SchemaError, WireError
from .. import wire
from ..columns import Column, as_array, columns_from_features, concat_values, empty_values
from .checks import TF_KIND_NAME, Checks, example_name, shape_text
from .inputs import as_records, decode_error, record_names
from .outputs import fill_fixed, pad_steps, spec_output
from .plan import Plan, Spec, plan_of
from .ragged import ragged_items
from .specs import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedArray,
    RaggedFeature,
    SparseArray,
    VarLenFeature,
    raw_key,
)

__all__ = ["parse_sequence_example", "parse_single_sequence_example"]


def _sequence_plans(
    context_features: Mapping[str, Spec] | None, sequence_features: Mapping[str, Spec] | None
) -> tuple[Plan | None, Plan | None]:
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
    return (
        plan_of(context_features) if context_features else None,
        plan_of(sequence_features, sequence=True) if sequence_features else None,
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
                where = f"Name: {example_name(names, row)}, Feature list: {name}, Index: {step}."
                raise DecodeError(
                    f"{where}  Data types don't match. Expected type: {TF_KIND_NAME[kind]}", key=name
                )
            try:
                values = wire.decode_values(data, feature) if feature.kind == kind else []
            except WireError as exc:  # a malformed list inside a step
                exc.index = row
                raise decode_error(exc, names) from None
            counts.append(len(values))
            pieces.append(values)
    values_all = concat_values(kind, pieces) if pieces else empty_values(kind)
    return present, steps, np.array(counts, np.int64), values_all


# TF's sequence parser checks in phases, each over the whole batch: the kinds of the context features,
# the kinds of the feature lists' steps, the counts of the context FixedLenFeatures, then those of the
# FixedLenSequenceFeatures; RaggedTensors are built last. Context messages differ from parse_example's.


def _context_kinds(plan: Plan, columns: Mapping[bytes, Column], names: Sequence[str] | None) -> None:
    for raw, kind in plan.reads.items():
        column = columns[raw]
        rows = np.flatnonzero((column.kinds != wire.NONE) & (column.kinds != kind))
        if rows.size:
            key = raw.decode("utf-8", "backslashreplace")
            raise DecodeError(
                f"Name: {example_name(names, int(rows[0]))}, Context feature: {key}.  "
                f"Data types don't match. Expected type: {TF_KIND_NAME[kind]}",
                key=key,
            )


def _empty_context_is_present(
    plan: Plan, columns: Mapping[bytes, Column], scanned: Sequence[Mapping[bytes, wire.Feature]]
) -> None:
    """As TensorFlow 2.21: a ``Feature{}`` in a SequenceExample's context is present with no values
    (in an Example it counts as missing), so its column gets the wanted kind and a count of 0."""
    for raw, kind in plan.reads.items():
        rows = [
            row
            for row, found in enumerate(scanned)
            if (f := found.get(raw)) is not None and f.kind == wire.NONE
        ]
        if rows:
            column = columns[raw]
            column.kinds = column.kinds.copy()
            column.kinds[rows] = kind
            column.width = None


def _context_fixed(
    key: str, spec: FixedLenFeature, column: Column, names: Sequence[str] | None
) -> np.ndarray:
    """A context FixedLenFeature, checked as TF does: first the longest value list in the batch."""
    kind = wire.kind_of_dtype(spec.dtype)
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
        if absent[row]:
            problem = f"Feature: {key} (data type: {TF_KIND_NAME[kind]}) is required but could not be found."
            raise MissingFeatureError(problem, key=key, index=row)
        raise DecodeError(
            f"Unexpected number of elements in example {example_name(names, row)}", key=key, index=row
        )
    return fill_fixed(spec, column, present)


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
            f"is not consistent with output shape: {shape_text(('?', *spec.shape))}",
            key=key,
        )
    missing = np.flatnonzero(~present) if not spec.allow_missing else np.empty(0, np.int64)
    wrong = np.flatnonzero(counts != stride)
    row_of_step = np.repeat(np.arange(len(steps)), steps)
    if wrong.size and not (missing.size and missing[0] < row_of_step[wrong[0]]):
        row = int(row_of_step[wrong[0]])
        step = int(wrong[0] - (ends[row] - steps[row]))
        raise DecodeError(
            f"Name: {example_name(names, row)}, Key: {key}, Index: {step}.  Number of values != expected.  "
            f"values size: {int(counts[wrong[0]])} but output shape: {shape_text(spec.shape)}",
            key=key,
        )
    if missing.size:
        raise MissingFeatureError(
            f"Name: {example_name(names, int(missing[0]))}, Feature list '{key}' is required but could "
            "not be found.  Did you mean to include it in feature_list_dense_missing_assumed_empty or "
            "feature_list_dense_defaults?",
            key=key,
        )


def _sequence_outputs(
    plan: Plan, found: Mapping[str, Steps], partition_steps: Mapping[Any, Steps], rows: int, batched: bool
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    out: dict[str, Any] = {}
    lengths: dict[str, np.ndarray] = {}
    for key, spec in plan.specs.items():
        _, steps, counts, values = found[key]
        array = as_array(values)
        if isinstance(spec, FixedLenSequenceFeature):
            padded = pad_steps(array, steps, spec.shape, spec.dtype, None)
            out[key] = padded if batched else padded[0]
            lengths[key] = steps if batched else steps[0, ...]
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
        elif isinstance(spec, RaggedFeature) and spec.partitions:
            out[key] = _partitioned_steps(key, spec, found[key], partition_steps, batched)
        else:
            splits_dtype = np.dtype(spec.row_splits_dtype)  # type: ignore[union-attr]
            inner = RaggedArray(array, np.concatenate(([0], np.cumsum(counts))).astype(splits_dtype))
            if batched:
                out[key] = RaggedArray(inner, np.concatenate(([0], np.cumsum(steps))).astype(splits_dtype))
            else:
                out[key] = inner
    return out, lengths


def _partitioned_steps(
    key: str, spec: RaggedFeature, values: Steps, partition_steps: Mapping[Any, Steps], batched: bool
) -> RaggedArray:
    """A RaggedFeature with partitions over a feature list, as TensorFlow builds it: every step is an
    item partitioned as an Example of a batch is (the steps' rows come from the outermost partition),
    then, in a batch, the steps are grouped by record as the value list's steps are."""
    _, steps, counts, flat = values
    splits_dtype = np.dtype(spec.row_splits_dtype)
    partitions: list[tuple[Any, Column | None]] = []
    for partition in spec.partitions:
        if isinstance(partition, RaggedFeature.UniformRowLength):
            partitions.append((partition, None))
            continue
        _, partition_records, step_counts, ids = partition_steps[partition.key]
        if batched and spec.validate and not np.array_equal(partition_records, steps):
            raise DecodeError(
                f"Feature {key}: values and partitions are not aligned: the feature lists {spec.value_key} "
                f"and {partition.key} have {steps.tolist()} and {partition_records.tolist()} steps",
                key=key,
            )
        kinds = np.full(len(step_counts), wire.INT64, np.int8)
        partitions.append((partition, Column(kinds, step_counts, ids)))
    result = ragged_items(key, as_array(flat), counts, partitions, splits_dtype, spec.validate)
    if not batched:
        return result
    if spec.validate and len(result) != int(steps.sum()):  # TF: from_row_splits(result, steps)
        raise DecodeError(
            f"Key: {key}.  Partition does not form a valid RaggedTensor: the records' {int(steps.sum())} "
            f"steps over {len(result)} rows",
            key=key,
        )
    return RaggedArray(result, np.concatenate(([0], np.cumsum(steps))).astype(splits_dtype))


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
    records, single = as_records(serialized)
    context_plan, sequence_plan = _sequence_plans(context_features, sequence_features)
    if single and isinstance(example_names, (str, bytes)):
        example_names = [example_names]
    names = record_names(example_names, len(records))
    batched = not single
    scanned_context, lists = [], []
    wanted_context = frozenset(context_plan.reads) if context_plan else frozenset()
    wanted_lists = frozenset(sequence_plan.reads) if sequence_plan else frozenset()
    for row, data in enumerate(records):
        try:
            context, steps = wire.scan_sequence_example(data, wanted_context, wanted_lists)
        except WireError as exc:
            exc.index = row
            raise decode_error(exc, names) from None
        scanned_context.append(context)
        lists.append(steps)
    context_specs = context_plan.specs if context_plan else {}
    sequence_specs = sequence_plan.specs if sequence_plan else {}
    try:
        columns = columns_from_features(records, scanned_context, context_plan.reads) if context_plan else {}
    except WireError as exc:  # a malformed list in a context feature (the index is set)
        raise decode_error(exc, names) from None
    if context_plan is not None:
        _context_kinds(context_plan, columns, names)
        _empty_context_is_present(context_plan, columns, scanned_context)
    found: dict[str, Steps] = {}
    partition_steps: dict[Any, Steps] = {}  # partition key -> its feature list's steps
    for key, spec in sequence_specs.items():
        source = spec.value_key if isinstance(spec, RaggedFeature) and spec.value_key else key
        found[key] = _step_columns(
            records, lists, raw_key(source), wire.kind_of_dtype(spec.dtype), source, names
        )
        for partition in spec.partitions if isinstance(spec, RaggedFeature) else ():
            if (
                not isinstance(partition, RaggedFeature.UniformRowLength)
                and partition.key not in partition_steps
            ):
                partition_steps[partition.key] = _step_columns(
                    records, lists, raw_key(partition.key), wire.INT64, partition.key, names
                )
    context_out: dict[str, Any] = {}
    for key, spec in context_specs.items():
        if isinstance(spec, FixedLenFeature):
            value = _context_fixed(key, spec, columns[raw_key(key)], names)
            context_out[key] = value if batched else value[0, ...]  # 0-d array, not a scalar
    for key, spec in sequence_specs.items():
        if isinstance(spec, FixedLenSequenceFeature):
            _check_steps(key, spec, found[key], names)
    lists_out: dict[str, Any] = {}
    lengths: dict[str, np.ndarray] = {}
    if sequence_plan is not None:
        lists_out, lengths = _sequence_outputs(sequence_plan, found, partition_steps, len(records), batched)
    checks = Checks(names, batched, records)
    for key, spec in context_specs.items():
        if key not in context_out:
            context_out[key] = spec_output(key, spec, columns, checks)
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
    records, single = as_records(serialized)
    if not single:
        raise SchemaError("Input serialized must be a scalar")
    names = None if example_name is None else [example_name]  # TF names the record in its messages
    context, lists, _ = parse_sequence_example(records[0], context_features, sequence_features, names)
    return context, lists
