"""RaggedFeature partitions that do not add up to their values, against real TensorFlow (Hardening 2,
item 14; skipped when TensorFlow is absent).

Every partition kind (RowSplits, RowLengths, RowStarts, RowLimits, ValueRowIds, UniformRowLength),
with and without ``validate``, in int32 and int64 row splits, through every parse function: Examples
(``parse_example``, ``parse_single_example``, SequenceExample contexts) and feature lists
(``parse_sequence_example``, ``parse_single_sequence_example``). Where TensorFlow raises (its
InvalidArgumentError, or the ValueError of an eager shape check), tfrec raises a DecodeError naming
the key; where TensorFlow returns, tfrec returns the same row splits, unchecked ones included. A
table of hand-picked cases first, then hypothesis: random partitions, most of which do not add up.
Run with ``pytest -m conformance tests/conformance``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.conformance

RF = tfrec.RaggedFeature


def _ints(values: list[int]) -> np.ndarray:
    return np.array(values, np.int64)


def _example(data: dict[str, list[int]]) -> bytes:
    return tfrec.encode_example({key: _ints(values) for key, values in data.items()})


def _context(data: dict[str, list[int]]) -> bytes:
    return tfrec.encode_sequence_example({key: _ints(values) for key, values in data.items()}, {})


def _sequence(lists: dict[str, list[list[int]]]) -> bytes:
    return tfrec.encode_sequence_example({}, {key: [_ints(s) for s in steps] for key, steps in lists.items()})


Call = Callable[[list[bytes], dict[str, Any]], Any]

# name -> (record builder, tfrec's call, TF's call); a call takes records and {key: spec}
EXAMPLE_FUNCTIONS: dict[str, tuple[Callable[..., bytes], Call, Call]] = {
    "parse_example": (
        _example,
        lambda records, spec: tfrec.parse_example(records, spec),
        lambda records, spec: tf.io.parse_example(tf.constant(records, tf.string, [len(records)]), spec),
    ),
    "parse_single_example": (
        _example,
        lambda records, spec: tfrec.parse_single_example(records[0], spec),
        lambda records, spec: tf.io.parse_single_example(tf.constant(records[0]), spec),
    ),
    "parse_sequence_example context": (
        _context,
        lambda records, spec: tfrec.parse_sequence_example(records, context_features=spec)[0],
        lambda records, spec: tf.io.parse_sequence_example(
            tf.constant(records, tf.string, [len(records)]), context_features=spec
        )[0],
    ),
    "parse_single_sequence_example context": (
        _context,
        lambda records, spec: tfrec.parse_single_sequence_example(records[0], context_features=spec)[0],
        lambda records, spec: tf.io.parse_single_sequence_example(
            tf.constant(records[0]), context_features=spec
        )[0],
    ),
}
LIST_FUNCTIONS: dict[str, tuple[Callable[..., bytes], Call, Call]] = {
    "parse_sequence_example": (
        _sequence,
        lambda records, spec: tfrec.parse_sequence_example(records, sequence_features=spec)[1],
        lambda records, spec: tf.io.parse_sequence_example(
            tf.constant(records, tf.string, [len(records)]), sequence_features=spec
        )[1],
    ),
    "parse_single_sequence_example": (
        _sequence,
        lambda records, spec: tfrec.parse_single_sequence_example(records[0], sequence_features=spec)[1],
        lambda records, spec: tf.io.parse_single_sequence_example(
            tf.constant(records[0]), sequence_features=spec
        )[1],
    ),
}


def tf_spec(spec: tfrec.RaggedFeature) -> Any:
    partitions = tuple(getattr(tf.io.RaggedFeature, type(p).__name__)(*p) for p in spec.partitions)
    splits = tf.as_dtype(np.dtype(spec.row_splits_dtype).name)
    return tf.io.RaggedFeature(tf.int64, spec.value_key, partitions, splits, spec.validate)


def layout(value: Any) -> Any:
    """Row splits (with their dtype) and values, level by level, as nested tuples."""
    if isinstance(value, (tf.RaggedTensor, tfrec.RaggedArray)):
        splits = np.asarray(value.row_splits)
        return (str(splits.dtype), splits.tolist(), layout(value.values))
    array = np.asarray(value)
    return (str(array.dtype), array.tolist())


def compare(
    function: tuple[Callable[..., bytes], Call, Call], records: list[Any], spec: tfrec.RaggedFeature
) -> None:
    make, ours, theirs = function
    serialized = [make(r) for r in records]
    try:
        expected = layout(theirs(serialized, {"r": tf_spec(spec)})["r"])
    except (tf.errors.InvalidArgumentError, ValueError) as exc:  # eager shape checks are ValueErrors
        with pytest.raises(tfrec.DecodeError) as caught:
            ours(serialized, {"r": spec})
        assert caught.value.key == "r", f"TF: {exc}"
        return
    assert layout(ours(serialized, {"r": spec})["r"]) == expected


# -- 1. hand-picked cases: every kind, short and long, through every function -----------------------

E: list[int] = []
KINDS = ["RowSplits", "RowLengths", "RowStarts", "RowLimits", "ValueRowIds"]

# Example data over 3 values, per partition kind: (fits, too few, too many, odd) partition values.
EXAMPLE_PARTITIONS = {
    "RowSplits": ([0, 1, 3], [0, 1, 2], [0, 1, 2, 3, 4], [1, 1, 3]),
    "RowLengths": ([1, 2], [1, 1], [1, 1, 1, 1], [-1, 4]),
    "RowStarts": ([0, 1], E, [0, 1, 2, 5], [1, 2]),
    "RowLimits": ([1, 3], [1, 2], [1, 2, 3, 4], [-1, 3]),
    "ValueRowIds": ([0, 1, 1], [0, 1], [0, 1, 1, 2], [1, 2, 0]),
}
EXAMPLE_CASES = [
    (kind, i, [{"v": [1, 2, 3], "p": values}, {"v": [4], "p": EXAMPLE_PARTITIONS[kind][0][:1]}])
    for kind in KINDS
    for i, values in enumerate(EXAMPLE_PARTITIONS[kind])
] + [  # items whose totals agree over the batch but not one by one
    ("RowLengths", "misaligned", [{"v": E, "p": [3]}, {"v": [1, 2, 3], "p": E}]),
    ("RowSplits", "misaligned", [{"v": E, "p": [0, 3]}, {"v": [1, 2, 3], "p": [0]}]),
    ("RowStarts", "misaligned", [{"v": E, "p": [0]}, {"v": [1, 2, 3], "p": E}]),
    ("RowLimits", "misaligned", [{"v": E, "p": [3]}, {"v": [1, 2, 3], "p": E}]),
    ("ValueRowIds", "misaligned", [{"v": E, "p": [0, 0, 0]}, {"v": [1, 2, 3], "p": E}]),
    ("ValueRowIds", "negative later", [{"v": [1, 2, 3], "p": [0, 1, 2]}, {"v": [4], "p": [-1]}]),
    ("ValueRowIds", "negative first", [{"v": [4], "p": [-1]}, {"v": [1, 2, 3], "p": [0, 1, 2]}]),
    ("RowSplits", "missing", [{"v": [1, 2]}, {"v": [3], "p": [0, 1]}]),
]


@pytest.mark.parametrize("function", sorted(EXAMPLE_FUNCTIONS))
@pytest.mark.parametrize("splits_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("validate", [False, True])
@pytest.mark.parametrize(
    ("kind", "case", "records"), EXAMPLE_CASES, ids=[f"{k}-{c}" for k, c, _ in EXAMPLE_CASES]
)
def test_example_partitions_that_do_not_add_up(
    kind: str, case: Any, records: list[Any], validate: bool, splits_dtype: Any, function: str
) -> None:
    spec = RF(tfrec.int64, "v", [getattr(RF, kind)("p")], splits_dtype, validate)
    compare(EXAMPLE_FUNCTIONS[function], records, spec)


NESTED = [
    ([RF.UniformRowLength(2), RF.RowLengths("p")], {"v": [1, 2, 3], "p": [1, 1, 1]}),
    ([RF.UniformRowLength(2), RF.RowLengths("p")], {"v": [1, 2, 3, 4], "p": [1, 3]}),
    ([RF.RowSplits("q"), RF.RowLengths("p")], {"v": [1, 2, 3], "p": [1, 2], "q": [0, 3]}),
    ([RF.RowSplits("q"), RF.RowStarts("p")], {"v": [1, 2, 3, 4], "p": E, "q": [0]}),
    ([RF.ValueRowIds("q"), RF.RowLimits("p")], {"v": [1, 2, 3], "p": [1, 3], "q": [0, 0, 1]}),
    ([RF.RowLengths("q"), RF.ValueRowIds("p")], {"v": [1, 2, 3], "p": [0, 0, 1], "q": [1, 0, 1]}),
    ([RF.RowSplits("q"), RF.RowSplits("p")], {"v": [1, 2], "p": E, "q": [0, 1]}),
    ([RF.RowLimits("q"), RF.UniformRowLength(2)], {"v": [1, 2, 3], "q": [1]}),
]


@pytest.mark.parametrize("function", sorted(EXAMPLE_FUNCTIONS))
@pytest.mark.parametrize("validate", [False, True])
@pytest.mark.parametrize(("partitions", "record"), NESTED, ids=[str(i) for i in range(len(NESTED))])
def test_nested_partitions_that_do_not_add_up(
    partitions: list[Any], record: dict[str, list[int]], validate: bool, function: str
) -> None:
    spec = RF(tfrec.int64, "v", partitions, np.int64, validate)
    compare(EXAMPLE_FUNCTIONS[function], [record, record], spec)


# Feature lists: the values' steps and the partition's steps, each a list of per-step values.
LIST_CASES = [
    ("RowSplits", "fits", {"v": [[1, 2], [3]], "p": [[0, 2], [0, 0, 1]]}),
    ("RowSplits", "short", {"v": [[1, 2], [3]], "p": [[0, 1], [0, 1]]}),
    ("RowSplits", "fewer steps", {"v": [[1, 2, 3, 4], [2, 4, 6]], "p": [[0, 1, 4]]}),
    ("RowSplits", "one empty step", {"p": [[]]}),
    ("RowLengths", "fits", {"v": [[1, 2], [3]], "p": [[2], [1]]}),
    ("RowLengths", "moved between steps", {"v": [[1, 2], [3]], "p": [[1], [2]]}),
    ("RowLengths", "short", {"v": [[1, 2], [3]], "p": [[1], [1]]}),
    ("RowLengths", "more steps", {"v": [[1, 2], [3]], "p": [[2], [1], [0]]}),
    ("RowStarts", "one step over three", {"v": [[0, 1, 2], [], []], "p": [[]]}),
    ("RowStarts", "past the values", {"v": [[1, 2]], "p": [[0, 5]]}),
    ("RowLimits", "one step over two", {"v": [[1], [2]], "p": [[0]]}),
    ("RowLimits", "two limits over three steps", {"v": [[1], [2], [3]], "p": [[0, 0]]}),
    ("RowLimits", "fits", {"v": [[1], [2, 3]], "p": [[1], [1, 2]]}),
    ("ValueRowIds", "fits", {"v": [[1, 2], [3]], "p": [[0, 1], [0]]}),
    ("ValueRowIds", "short", {"v": [[1, 2], [3]], "p": [[0], [0]]}),
    ("ValueRowIds", "unsorted", {"v": [[1, 2, 3]], "p": [[1, 2, 0]]}),
    ("ValueRowIds", "negative", {"v": [[1], [2]], "p": [[0], [-1]]}),
]


@pytest.mark.parametrize("function", sorted(LIST_FUNCTIONS))
@pytest.mark.parametrize("validate", [False, True])
@pytest.mark.parametrize(("kind", "case", "record"), LIST_CASES, ids=[f"{k}-{c}" for k, c, _ in LIST_CASES])
def test_feature_list_partitions_that_do_not_add_up(
    kind: str, case: str, record: dict[str, Any], validate: bool, function: str
) -> None:
    spec = RF(tfrec.int64, "v", [getattr(RF, kind)("p")], np.int64, validate)
    compare(LIST_FUNCTIONS[function], [record, {"v": [[7]], "p": record.get("p", [])[:1]}], spec)


# -- 2. hypothesis: random partitions, most of which do not add up ---------------------------------


@st.composite
def ragged_specs(draw: st.DrawFn) -> tfrec.RaggedFeature:
    partitions = []
    for level in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from([*KINDS, "UniformRowLength"]))
        partitions.append(
            RF.UniformRowLength(draw(st.integers(1, 2)))
            if kind == "UniformRowLength"
            else getattr(RF, kind)(f"p{level}")
        )
    return RF(tfrec.int64, "v", partitions, draw(st.sampled_from([np.int32, np.int64])), draw(st.booleans()))


def _keys(spec: tfrec.RaggedFeature) -> list[str]:
    return ["v"] + [p.key for p in spec.partitions if not isinstance(p, RF.UniformRowLength)]


SMALL = st.lists(st.integers(-1, 4), max_size=4)
SORTED = SMALL.map(sorted)  # sorted partitions fit more often: more of TF's returns are compared
PARTITION_VALUES = st.one_of(SMALL, SORTED)
RANDOM = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@RANDOM
@given(data=st.data(), spec=ragged_specs(), function=st.sampled_from(sorted(EXAMPLE_FUNCTIONS)))
def test_random_example_partitions_parse_like_tf(data: st.DataObject, spec: Any, function: str) -> None:
    record = st.dictionaries(st.sampled_from(_keys(spec)), PARTITION_VALUES)
    records = data.draw(st.lists(record, min_size=1, max_size=3))
    compare(EXAMPLE_FUNCTIONS[function], records, spec)


@RANDOM
@given(data=st.data(), spec=ragged_specs(), function=st.sampled_from(sorted(LIST_FUNCTIONS)))
def test_random_feature_list_partitions_parse_like_tf(data: st.DataObject, spec: Any, function: str) -> None:
    record = st.dictionaries(st.sampled_from(_keys(spec)), st.lists(PARTITION_VALUES, max_size=3))
    records = data.draw(st.lists(record, min_size=1, max_size=3))
    compare(LIST_FUNCTIONS[function], records, spec)
