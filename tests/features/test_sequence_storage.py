"""A schema stored as a SequenceExample reads back the same values as when stored as an Example."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.features import ClassLabel, FeaturesDict, Image, Sequence, Tensor, Text

FEATURES = FeaturesDict(
    {
        "id": np.int64,
        "title": Text(),
        "emb": Tensor(shape=(None,), dtype=np.float32),
        "tokens": Sequence(np.int64),
        "frames": Sequence(Tensor(shape=(2,), dtype=np.float32)),
        "words": Sequence({"w": Text(), "tag": ClassLabel(names=["N", "V"])}),
        "nested": Sequence(Sequence(np.int64)),
        "fixed": Sequence(np.int32, length=2),
        "spans": Sequence({"ids": Sequence(np.int64), "label": Text()}),
    }
)


def _value(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "title": f"title {i} é",
        "emb": np.arange(i % 3, dtype=np.float32),
        "tokens": list(range(i % 4)),
        "frames": np.full((i % 2 + 1, 2), i, np.float32),
        "words": [{"w": "a" * (j + 1), "tag": j % 2} for j in range(i % 3)],
        "nested": [[j] * j for j in range(i % 4)],
        "fixed": [i, -i],
        "spans": [{"ids": list(range(j)), "label": f"s{j}"} for j in range(i % 3)],
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tfrec.RaggedArray) or isinstance(b, tfrec.RaggedArray):
        return isinstance(a, tfrec.RaggedArray) and a == b
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


def test_stored_as_feature_lists_and_context() -> None:
    context, lists = tfrec.decode_sequence_example(
        FEATURES.serialize_example(_value(3), sequence_example=True)
    )
    assert sorted(context) == ["emb", "fixed", "id", "title"] or sorted(context) == ["emb", "id", "title"]
    assert {"tokens", "frames", "words/w", "words/tag", "nested/ragged_flat_values"} <= set(lists)
    assert [step.tolist() for step in lists["nested/ragged_flat_values"]] == [[], [1], [2, 2]]
    assert [step.tolist() for step in lists["frames"]] == [[3.0, 3.0], [3.0, 3.0]]


@pytest.mark.parametrize("i", range(6))
def test_one_record_reads_back_as_from_an_example(i: int) -> None:
    value = _value(i)
    as_example = FEATURES.deserialize_example(FEATURES.serialize_example(value))
    as_sequence = FEATURES.deserialize_example(
        FEATURES.serialize_example(value, sequence_example=True), sequence_example=True
    )
    assert _same(as_sequence, as_example)


@pytest.mark.parametrize("rows", [[1], [2, 2], [0, 1, 2, 3, 4, 5]])
def test_batches_read_back_as_from_examples(rows: list[int]) -> None:
    examples = [FEATURES.serialize_example(_value(i)) for i in rows]
    sequences = [FEATURES.serialize_example(_value(i), sequence_example=True) for i in rows]
    assert _same(
        FEATURES.deserialize_batch(sequences, sequence_example=True), FEATURES.deserialize_batch(examples)
    )


def test_a_sequence_of_dicts_holding_sequences_becomes_one_list_per_leaf() -> None:
    blob = FEATURES.serialize_example(_value(5), sequence_example=True)
    _, lists = tfrec.decode_sequence_example(blob)
    assert [step.tolist() for step in lists["spans/ids/ragged_flat_values"]] == [[], [0]]
    assert lists["spans/label"] == [[b"s0"], [b"s1"]]
    assert "spans/ids/ragged_row_lengths_0" not in lists  # the steps' own lengths


def test_three_levels_of_sequence_cannot_be_a_sequence_example() -> None:
    features = FeaturesDict({"k": Sequence({"x": Sequence(Sequence(np.int64))})})
    with pytest.raises(tfrec.SchemaError, match="k/x: a value inside three levels"):
        features.serialize_example({"k": []}, sequence_example=True)
    assert features.deserialize_example(features.serialize_example({"k": []}))["k"]["x"].to_list() == []


def test_a_schema_without_top_level_sequences_cannot_be_a_sequence_example() -> None:
    with pytest.raises(tfrec.SchemaError, match="top-level Sequence"):
        FeaturesDict({"id": np.int64}).serialize_example({"id": 1}, sequence_example=True)


def test_sequences_of_images_become_feature_lists_of_encoded_images() -> None:
    pytest.importorskip("PIL")
    features = FeaturesDict({"clip": Sequence(Image(shape=(2, 2, 3)))})
    clip = np.arange(2 * 2 * 2 * 3, dtype=np.uint8).reshape(2, 2, 2, 3)
    blob = features.serialize_example({"clip": clip}, sequence_example=True)
    _, lists = tfrec.decode_sequence_example(blob)
    assert all(step[0].startswith(b"\x89PNG") for step in lists["clip"])
    np.testing.assert_array_equal(features.deserialize_example(blob, sequence_example=True)["clip"], clip)
