"""RaggedFeature partitions that do not add up to their values (Hardening 2, item 14).

TensorFlow builds a RaggedFeature with one RaggedTensor factory per partition, and each factory
checks something of its own: with ``validate=True`` row splits must start at 0 and end at the
values, row starts need only start at 0 and stay within them; whatever ``validate`` says,
value_rowids must be as many as the values and not negative once merged into the batch, and the
steps of a feature list must line up with the values under them (or broadcast, as TF's ``repeat``
does). Each case below is what TensorFlow 2.21 does, measured: a DecodeError naming the key where
it raises, its row splits (unchecked ones too) where it returns. The TensorFlow side is in
tests/conformance/test_parse_tf.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec

RF = tfrec.RaggedFeature
Data = dict[str, list[int]]
Steps = dict[str, list[list[int]]]


def _ints(values: list[int]) -> np.ndarray:
    return np.array(values, np.int64)


def _example(data: Data) -> bytes:
    return tfrec.encode_example({key: _ints(values) for key, values in data.items()})


def _sequence(lists: Steps) -> bytes:
    return tfrec.encode_sequence_example({}, {key: [_ints(s) for s in steps] for key, steps in lists.items()})


def _context(data: Data) -> bytes:
    return tfrec.encode_sequence_example({key: _ints(values) for key, values in data.items()}, {})


# function -> (how a record is built, how a list of records is parsed with a spec)
FUNCTIONS: dict[str, tuple[Callable[[Any], bytes], Callable[[list[bytes], Any], Any]]] = {
    "parse_example": (_example, lambda records, spec: tfrec.parse_example(records, spec)),
    "parse_single_example": (_example, lambda records, spec: tfrec.parse_single_example(records[0], spec)),
    "parse_sequence_example": (
        _sequence,
        lambda records, spec: tfrec.parse_sequence_example(records, sequence_features=spec)[1],
    ),
    "parse_single_sequence_example": (
        _sequence,
        lambda records, spec: tfrec.parse_single_sequence_example(records[0], sequence_features=spec)[1],
    ),
    "parse_sequence_example context": (
        _context,
        lambda records, spec: tfrec.parse_sequence_example(records, context_features=spec)[0],
    ),
    "parse_single_sequence_example context": (
        _context,
        lambda records, spec: tfrec.parse_single_sequence_example(records[0], context_features=spec)[0],
    ),
}


def layout(value: Any) -> Any:
    """A RaggedArray as nested (row_splits, values) lists: unchecked splits are compared as they are."""
    if isinstance(value, tfrec.RaggedArray):
        return (value.row_splits.tolist(), layout(value.values))
    return value.tolist()


def parse(function: str, records: list[Any], partitions: list[Any], validate: bool) -> Any:
    make, call = FUNCTIONS[function]
    spec = {"r": RF(tfrec.int64, "v", partitions, row_splits_dtype=np.int64, validate=validate)}
    return layout(call([make(r) for r in records], spec)["r"])


E: list[int] = []
ERROR = "DecodeError"

# (function, records, partitions, validate, TF 2.21's row splits or ERROR)
CASES: list[tuple[str, list[Any], list[Any], bool, Any]] = [
    # value_rowids of the wrong count fail whatever validate says (TF: a static shape check)
    ("parse_single_example", [{"v": [10, 20, 30], "p": [0, 1]}], [RF.ValueRowIds("p")], False, ERROR),
    ("parse_single_example", [{"v": [10, 20], "p": [0, 1, 1]}], [RF.ValueRowIds("p")], False, ERROR),
    ("parse_single_sequence_example context", [{"v": [1, 2], "p": [0]}], [RF.ValueRowIds("p")], False, ERROR),
    # rows run to the last value_rowid, not the largest: ids past it are dropped (TF's bincount)
    (
        "parse_single_example",
        [{"v": [1, 2, 3], "p": [1, 2, 0]}],
        [RF.ValueRowIds("p")],
        False,
        ([0, 1], [1, 2, 3]),
    ),
    (
        "parse_example",
        [{"v": [1, 2, 3], "p": [1, 2, 0]}],
        [RF.ValueRowIds("p")],
        False,
        ([0, 3], ([0, 1], [1, 2, 3])),
    ),
    (
        "parse_single_sequence_example context",
        [{"v": [1, 2], "p": [1, 0]}],
        [RF.ValueRowIds("p")],
        False,
        ([0, 1], [1, 2]),
    ),
    # a negative id is refused only where it stays negative once offset into the batch
    (
        "parse_example",
        [{"v": [1, 2, 3], "p": [0, 1, 2]}, {"v": [4], "p": [-1]}],
        [RF.ValueRowIds("p")],
        True,
        ([0, 3, 3], ([0, 1, 2, 4], [1, 2, 3, 4])),
    ),
    (
        "parse_sequence_example context",
        [{"v": [1, 2, 3], "p": [0, 1, 2]}, {"v": [4], "p": [-1]}],
        [RF.ValueRowIds("p")],
        False,
        ([0, 3, 3], ([0, 1, 2, 4], [1, 2, 3, 4])),
    ),
    (
        "parse_example",
        [{"v": [4], "p": [-1]}, {"v": [1, 2, 3], "p": [0, 1, 2]}],
        [RF.ValueRowIds("p")],
        False,
        ERROR,
    ),
    # row starts need not reach the values: no starts over 2 values is 0 rows, even validated
    ("parse_single_example", [{"v": [1, 2], "p": E}], [RF.RowStarts("p")], True, ([2], [1, 2])),
    ("parse_example", [{"v": [1, 2], "p": E}], [RF.RowStarts("p")], True, ([0, 0], ([2], [1, 2]))),
    (
        "parse_example",
        [{"v": [0, 1, 2, 3], "p0": [0], "p1": E}],
        [RF.RowSplits("p0"), RF.RowStarts("p1")],
        True,
        ([0, 0], ([0], ([4], [0, 1, 2, 3]))),
    ),
    ("parse_single_example", [{"v": [1, 2], "p": [0, 5]}], [RF.RowStarts("p")], True, ERROR),
    # row lengths, splits and limits must end at the values when validated, and are kept when not
    ("parse_single_example", [{"v": [1, 2], "p": [1, 1, 1]}], [RF.RowLengths("p")], True, ERROR),
    (
        "parse_single_example",
        [{"v": [1, 2], "p": [1, 1, 1]}],
        [RF.RowLengths("p")],
        False,
        ([0, 1, 2, 3], [1, 2]),
    ),
    (
        "parse_example",
        [{"v": [1, 2, 3], "p": [0, 2]}, {"v": [4], "p": [0, 2]}],
        [RF.RowSplits("p")],
        True,
        ERROR,
    ),
    (
        "parse_example",
        [{"v": [1, 2, 3], "p": [0, 2]}, {"v": [4], "p": [0, 2]}],
        [RF.RowSplits("p")],
        False,
        ([0, 1, 2], ([0, 2, 5], [1, 2, 3, 4])),
    ),
    ("parse_single_example", [{"v": [1, 2, 3], "p": [3]}], [RF.RowLimits("p")], True, ([0, 3], [1, 2, 3])),
    ("parse_single_example", [{"v": [1, 2, 3], "p": [2]}], [RF.RowLimits("p")], True, ERROR),
    # feature-list steps: a partition with one step broadcasts over the values' steps, as TF's repeat
    (
        "parse_single_sequence_example",
        [{"v": [[0, 1, 2], [], []], "p": [[]]}],
        [RF.RowStarts("p")],
        False,
        ([0, 0], ([3], [0, 1, 2])),
    ),
    (
        "parse_sequence_example",
        [{"v": [[0, 1, 2], [], []], "p": [[]]}],
        [RF.RowStarts("p")],
        False,
        ([0, 3], ([0, 0], ([3], [0, 1, 2]))),
    ),
    ("parse_single_sequence_example", [{"p": [[]]}], [RF.RowSplits("p")], False, ([0, 0], ([0], []))),
    ("parse_single_sequence_example", [{"v": [[1], [2]], "p": [[0]]}], [RF.RowLimits("p")], False, ERROR),
    (
        "parse_single_sequence_example",
        [{"v": [[1], [2], [3]], "p": [[0, 0]]}],
        [RF.RowLimits("p")],
        False,
        ERROR,
    ),
    # feature-list row lengths: checked over all the steps only, and only when validated
    ("parse_sequence_example", [{"v": [[1, 2], [3]], "p": [[1], [1]]}], [RF.RowLengths("p")], True, ERROR),
    (
        "parse_sequence_example",
        [{"v": [[1, 2], [3]], "p": [[1], [1]]}],
        [RF.RowLengths("p")],
        False,
        ([0, 2], ([0, 1, 2], ([0, 1, 2], [1, 2, 3]))),
    ),
    (
        "parse_single_sequence_example",
        [{"v": [[1, 2], [3]], "p": [[2], [1], [0]]}],
        [RF.RowLengths("p")],
        True,
        ([0, 1, 2, 3], ([0, 2, 3, 3], [1, 2, 3])),
    ),
]


@pytest.mark.parametrize(
    ("function", "records", "partitions", "validate", "expected"),
    CASES,
    ids=[f"{i}-{case[0].replace(' ', '-')}" for i, case in enumerate(CASES)],
)
def test_partitions_that_do_not_add_up_parse_as_tensorflow_does(
    function: str, records: list[Any], partitions: list[Any], validate: bool, expected: Any
) -> None:
    if expected != ERROR:
        assert parse(function, records, partitions, validate) == expected
        return
    with pytest.raises(tfrec.DecodeError) as caught:
        parse(function, records, partitions, validate)
    assert caught.value.key == "r" and str(caught.value).startswith("Key: r.  ")


# -- properties ------------------------------------------------------------------------------------

KINDS = [RF.RowSplits, RF.RowLengths, RF.RowStarts, RF.RowLimits, RF.ValueRowIds]


@st.composite
def partitioned_records(draw: st.DrawFn, sequence: bool) -> tuple[list[Any], list[Any], bool]:
    """Random records with one or two partitions, whose values may or may not add up."""
    partitions = [
        draw(st.sampled_from([*KINDS, RF.UniformRowLength])) for _ in range(draw(st.integers(1, 2)))
    ]
    partitions = [
        kind(draw(st.integers(1, 2))) if kind is RF.UniformRowLength else kind(f"p{level}")
        for level, kind in enumerate(partitions)
    ]
    keys = ["v"] + [p.key for p in partitions if not isinstance(p, RF.UniformRowLength)]
    small = st.lists(st.integers(-1, 4), max_size=4)
    if sequence:
        steps = st.lists(small, max_size=3)
        records = draw(st.lists(st.dictionaries(st.sampled_from(keys), steps), min_size=1, max_size=3))
    else:
        records = draw(st.lists(st.dictionaries(st.sampled_from(keys), small), min_size=1, max_size=3))
    return records, partitions, draw(st.booleans())


def _check_rows_cover_values(value: Any) -> None:
    """A validated result: every level's splits are non-decreasing and end at its values."""
    if not isinstance(value, tfrec.RaggedArray):
        return
    splits = value.row_splits
    assert splits.size and splits[0] == 0 and (np.diff(splits) >= 0).all()
    assert splits[-1] == len(value.values)
    _check_rows_cover_values(value.values)


@settings(max_examples=300, deadline=None)
@given(case=partitioned_records(sequence=False), function=st.sampled_from(list(FUNCTIONS)[:2]))
def test_any_partition_is_a_result_or_a_decode_error(
    case: tuple[list[Any], list[Any], bool], function: str
) -> None:
    records, partitions, validate = case
    make, call = FUNCTIONS[function]
    spec = {"r": RF(tfrec.int64, "v", partitions, row_splits_dtype=np.int64, validate=validate)}
    try:
        value = call([make(r) for r in records], spec)["r"]
    except tfrec.DecodeError as exc:
        assert exc.key == "r"
        return
    if validate and not any(isinstance(p, RF.RowStarts) for p in partitions):  # starts need not start at 0
        _check_rows_cover_values(value)


@settings(max_examples=200, deadline=None)
@given(case=partitioned_records(sequence=True), function=st.sampled_from(list(FUNCTIONS)[2:4]))
def test_any_feature_list_partition_is_a_result_or_a_decode_error(
    case: tuple[list[Any], list[Any], bool], function: str
) -> None:
    records, partitions, validate = case
    make, call = FUNCTIONS[function]
    spec = {"r": RF(tfrec.int64, "v", partitions, row_splits_dtype=np.int64, validate=validate)}
    try:
        call([make(r) for r in records], spec)
    except tfrec.DecodeError as exc:
        assert exc.key == "r"
