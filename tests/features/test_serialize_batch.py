"""FeaturesDict.serialize_batch against serialize_example: the same bytes for every sample of a batch,
and an error of the same type for a batch holding a value that does not fit."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_features_property import SCHEMAS, SETTINGS, build, values
from test_serializer import BENCH_LIKE, COMMON_VALUES, loosened, outcome

import tfrec
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text
from tfrec.record.framing_batch import frame_records


def assert_batch_like_each(features: FeaturesDict, batch: list[Any]) -> None:
    each = [outcome(features.serialize_example, value) for value in batch]
    failed = [found for found in each if not isinstance(found, bytes)]
    if failed:
        with pytest.raises(tuple({found[0] for found in failed})):
            features.serialize_batch(batch)
    else:
        assert features.serialize_batch(batch) == each


@SETTINGS
@given(data=st.data(), spec=SCHEMAS, size=st.integers(0, 12))
def test_batch_bytes_equal_serialize_example(data: st.DataObject, spec: tuple[Any, ...], size: int) -> None:
    features = build(spec)
    batch = [data.draw(values(spec), label=f"value {i}")[0] for i in range(size)]
    assert features.serialize_batch(batch) == [features.serialize_example(value) for value in batch]
    loose = [data.draw(loosened(value), label=f"loosened {i}") for i, value in enumerate(batch)]
    assert_batch_like_each(features, loose)


@SETTINGS
@given(data=st.data(), spec=SCHEMAS, size=st.integers(0, 12))
def test_frames_are_the_frames_of_serialize_example(
    data: st.DataObject, spec: tuple[Any, ...], size: int
) -> None:
    """Every connector and dtype: the frames writers write hold serialize_example's bytes."""
    features = build(spec)
    batch = [data.draw(values(spec), label=f"value {i}")[0] for i in range(size)]
    expected = [features.serialize_example(value) for value in batch]
    frames = features.serialize_frames(batch)
    assert frames.data == frame_records(expected).data
    assert frames.lengths.tolist() == [len(record) for record in expected]


def test_common_values_in_one_batch() -> None:
    batch = COMMON_VALUES * 3
    assert BENCH_LIKE.serialize_batch(batch) == [BENCH_LIKE.serialize_example(value) for value in batch]


WORKLOAD = FeaturesDict(
    {
        "image": Tensor(shape=(), dtype=str),
        "label": ClassLabel(num_classes=1000),
        "embedding": Tensor(shape=(8,), dtype=np.float32),
        "tokens": Tensor(shape=(4,), dtype=np.int64),
        "flags": Tensor(shape=(2,), dtype=np.bool_),
        "ids": Tensor(shape=(3,), dtype=np.uint64),
        "score": np.float32,
        "count": np.uint8,
        "text": Text(),
    }
)


def workload(count: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return [
        {
            "image": rng.bytes(int(rng.integers(0, 40))),
            "label": int(rng.integers(-1, 1000)),
            "embedding": rng.standard_normal(8).astype(np.float32),
            "tokens": rng.integers(-(2**40), 2**40, 4) >> rng.integers(0, 40, 4),
            "flags": rng.random(2) > 0.5,
            "ids": rng.integers(0, 2**64 - 1, 3, np.uint64, endpoint=True),
            "score": float(rng.standard_normal()),
            "count": int(rng.integers(0, 256)),
            "text": f"caption {rng.integers(10**6)} é",
        }
        for _ in range(count)
    ]


def test_a_workload_of_many_layouts() -> None:
    batch = workload(300)
    assert WORKLOAD.serialize_batch(batch) == [WORKLOAD.serialize_example(value) for value in batch]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("count", 256),
        ("count", -1),
        ("label", 1000),
        ("label", "nope"),
        ("score", 1e300),
        ("text", b"\xff"),
        ("tokens", np.zeros(5, np.int64)),
        ("image", 3),
    ],
)
def test_a_value_that_does_not_fit_raises_as_serialize_example(name: str, value: Any) -> None:
    batch = workload(10)
    batch[6][name] = value
    assert_batch_like_each(WORKLOAD, batch)
    with pytest.raises(tfrec.EncodeError) as info:
        WORKLOAD.serialize_batch(batch)
    assert info.value.key == name


def test_odd_values_go_one_by_one() -> None:
    batch = workload(10)
    batch[2]["score"] = float("nan")
    batch[3]["embedding"] = batch[3]["embedding"].tolist()
    batch[4]["label"] = np.int64(5)
    batch[5]["text"] = b"bytes"
    assert WORKLOAD.serialize_batch(batch) == [WORKLOAD.serialize_example(value) for value in batch]


def test_exact_floats_refuse_in_batches_too() -> None:
    features = FeaturesDict({"x": np.float32}, exact_floats=True)
    assert features.serialize_batch([{"x": 0.5}]) == [features.serialize_example({"x": 0.5})]
    with pytest.raises(tfrec.EncodeError):
        features.serialize_batch([{"x": 0.5}, {"x": 0.1}])


def test_sequence_examples_and_pickling() -> None:
    features = FeaturesDict({"id": np.int64, "steps": tfrec.features.Sequence(np.int64)})
    batch = [{"id": 1, "steps": [1, 2]}, {"id": 2, "steps": []}]
    expected = [features.serialize_example(value, sequence_example=True) for value in batch]
    assert features.serialize_batch(batch, sequence_example=True) == expected
    features.serialize_batch(batch)  # compiles the batch encoder
    twin = pickle.loads(pickle.dumps(features))
    assert twin.serialize_batch(batch) == features.serialize_batch(batch)
    assert features.serialize_batch(iter(batch)) == features.serialize_batch(batch)


def test_frames_hold_the_records_of_serialize_batch() -> None:
    batch = workload(300, seed=1)
    frames = WORKLOAD.serialize_frames(batch)
    assert list(frames) == [WORKLOAD.serialize_example(value) for value in batch]
    assert frames.data == frame_records(list(frames)).data
    sequences = FeaturesDict({"tokens": tfrec.features.Sequence(np.int64)})
    samples = [{"tokens": [1, 2]}, {"tokens": []}]
    assert list(sequences.serialize_frames(samples, sequence_example=True)) == [
        sequences.serialize_example(s, sequence_example=True) for s in samples
    ]


@pytest.mark.parametrize("image_bytes", [0, 900, 5000])
def test_frames_of_large_records_hold_the_same_bytes(image_bytes: int) -> None:
    batch = workload(120, seed=3)
    rng = np.random.default_rng(image_bytes)
    for i, sample in enumerate(batch):  # around the size from which records are joined into frames
        sample["image"] = rng.bytes(image_bytes + i * 7)
    frames = WORKLOAD.serialize_frames(batch)
    expected = [WORKLOAD.serialize_example(value) for value in batch]
    assert frames.data == frame_records(expected).data
    assert list(frames) == expected
    assert frames[1::3].data == frame_records(expected[1::3]).data


@pytest.mark.parametrize("limit", [{"num_shards": 3}, {"max_records": 70}, {"max_bytes": 5000}])
def test_sharded_writers_write_the_frames_of_samples(tmp_path: Any, limit: dict[str, int]) -> None:
    batch = workload(500, seed=2)
    with tfrec.ShardedWriter(tmp_path / "w", features=WORKLOAD, index=True, **limit) as writer:
        assert writer.write_many(batch) == 500
    paths = writer.summary.paths
    written = [record for path in paths for record in tfrec.read_records(path)]
    expected = [WORKLOAD.serialize_example(value) for value in batch]
    if "num_shards" in limit:  # round-robin: record k in shard k % 3
        expected = [record for shard in range(3) for record in expected[shard::3]]
    assert written == expected
    assert sum(writer.summary.shard_lengths) == 500


@pytest.mark.parametrize("limit", [{"num_shards": 3}, {"num_shards": 1}, {"max_bytes": 300_000}])
def test_sharded_writers_write_the_frames_of_large_samples(tmp_path: Any, limit: dict[str, int]) -> None:
    batch = workload(400, seed=4)
    for i, sample in enumerate(batch):
        sample["image"] = bytes([i % 256]) * (3000 + i)
    with tfrec.ShardedWriter(tmp_path / "w", features=WORKLOAD, index=True, **limit) as writer:
        assert writer.write_many(batch) == 400
    written = [record for path in writer.summary.paths for record in tfrec.read_records(path)]
    expected = [WORKLOAD.serialize_example(value) for value in batch]
    shards = limit.get("num_shards", 1)
    assert written == [record for shard in range(shards) for record in expected[shard::shards]]


SHORT = FeaturesDict(
    {
        "id": np.int64,
        "score": np.float32,
        "tag": Tensor(shape=(), dtype=str),
        "values": Tensor(shape=(None,), dtype=np.int64),
        "text": Text(),
    }
)
EDGE_INTS = [0, 1, -1, 127, 128, 16383, 16384, 2**63 - 1, -(2**63)]
EDGE_FLOATS = [float("nan"), -0.0, float("inf"), -float("inf"), 1e-45, 3.4e38, 0.1]


def short_samples(count: int, seed: int) -> list[dict[str, Any]]:
    """Short records of many layouts (framed in numpy, a byte column at a time): edge values, varints
    of every length, empty lists, non-UTF-8 bytes, a text of varying length last."""
    rng = np.random.default_rng(seed)
    return [
        {
            "id": EDGE_INTS[int(rng.integers(len(EDGE_INTS)))],
            "score": EDGE_FLOATS[int(rng.integers(len(EDGE_FLOATS)))],
            "tag": rng.bytes(int(rng.integers(0, 3))) + b"\xff",
            "values": np.array(EDGE_INTS[: int(rng.integers(0, len(EDGE_INTS)))], np.int64),
            "text": "é" * int(rng.integers(0, 30)),
        }
        for _ in range(count)
    ]


@pytest.mark.parametrize("seed", range(4))
def test_frames_of_short_records_of_many_layouts(seed: int) -> None:
    batch = short_samples(200, seed)
    expected = [SHORT.serialize_example(value) for value in batch]
    assert SHORT.serialize_frames(batch).data == frame_records(expected).data
    same = [dict(value, values=np.arange(3), text="x") for value in batch]  # one layout but the id's
    assert SHORT.serialize_frames(same).data == frame_records([SHORT.serialize_example(v) for v in same]).data


@pytest.mark.parametrize(("name", "value"), [("id", 2**63), ("score", 1e300), ("text", b"\xff"), ("tag", 3)])
def test_a_bad_short_value_in_the_middle_raises_as_serialize_example(name: str, value: Any) -> None:
    batch = short_samples(50, 0)
    batch[25][name] = value
    with pytest.raises(tfrec.EncodeError) as each:
        SHORT.serialize_example(batch[25])
    with pytest.raises(type(each.value)) as batched:
        SHORT.serialize_frames(batch)
    assert str(batched.value) == str(each.value)
