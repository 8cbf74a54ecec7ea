"""Per-channel storage of rank-2 tensors: one list per named channel, recomposed on read."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import tfrec
from tfrec.features import FeatureConnector, FeaturesDict, Tensor, describe_features

XYZ = Tensor(shape=(None, 3), dtype=np.float32, channel_names=["x", "y", "z"])
FIRST = Tensor(shape=(2, None), dtype=np.int64, channel_names=["lo", "hi"], data_format="channels_first")
FEATURES = FeaturesDict({"points": XYZ, "range": FIRST})


def _value(n: int) -> dict[str, np.ndarray]:
    points = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    return {"points": points, "range": np.stack([np.arange(n), np.arange(n) + 100])}


def test_each_channel_is_stored_under_its_own_key() -> None:
    stored = tfrec.decode_example(FEATURES.serialize_example(_value(2)))
    assert sorted(stored) == ["points/x", "points/y", "points/z", "range/hi", "range/lo"]
    np.testing.assert_array_equal(stored["points/y"], np.array([1, 4], np.float32))
    np.testing.assert_array_equal(stored["range/hi"], [100, 101])


def test_channels_are_recomposed_on_read() -> None:
    value = _value(3)
    decoded = FEATURES.deserialize_example(FEATURES.serialize_example(value))
    np.testing.assert_array_equal(decoded["points"], value["points"])
    np.testing.assert_array_equal(decoded["range"], value["range"])
    assert decoded["points"].dtype == np.float32 and decoded["range"].dtype == np.int64


def test_batches_of_equal_and_different_lengths() -> None:
    even = FEATURES.deserialize_batch([FEATURES.serialize_example(_value(2))] * 3)
    assert even["points"].shape == (3, 2, 3) and even["range"].shape == (3, 2, 2)
    mixed = FEATURES.deserialize_batch([FEATURES.serialize_example(_value(n)) for n in (1, 3)])
    assert isinstance(mixed["points"], tfrec.RaggedArray)
    assert mixed["points"].row_splits.tolist() == [0, 1, 4]
    np.testing.assert_array_equal(mixed["points"].values[1:], _value(3)["points"])
    np.testing.assert_array_equal(mixed["range"][1], _value(3)["range"])  # channels first: one array per row


def test_json_repr_pickle_and_printed_code_round_trip() -> None:
    assert FeatureConnector.from_json(FEATURES.to_json()) == FEATURES
    assert FEATURES.to_json()["featuresDict"]["features"]["points"]["tensor"]["channelNames"] == [
        "x",
        "y",
        "z",
    ]
    assert pickle.loads(pickle.dumps(FEATURES)) == FEATURES
    assert "channel_names=['x', 'y', 'z']" in repr(XYZ)
    namespace = {"np": np, "FeaturesDict": FeaturesDict, "Tensor": Tensor}
    assert eval(describe_features(FEATURES), namespace) == FEATURES
    assert Tensor(shape=(None, 3), dtype=np.float32) != XYZ


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"shape": (None, 2), "channel_names": ["x", "y", "z"]}, "3 entries"),
        ({"shape": (None,), "channel_names": ["x"]}, "rank-2"),
        ({"shape": (None, 2), "channel_names": ["x", "x"]}, "distinct"),
        ({"shape": (None, 2), "channel_names": ["x", "a/b"]}, "without '/'"),
        ({"shape": (None, 2), "channel_names": ["x", "y"], "encoding": "zlib"}, "stored as lists"),
        ({"shape": (None, 2), "channel_names": ["x", "y"], "data_format": "nhwc"}, "channels_first"),
    ],
)
def test_invalid_channel_definitions_are_schema_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(tfrec.SchemaError, match=message):
        Tensor(dtype=np.float32, **kwargs)  # type: ignore[arg-type]


def test_a_value_of_the_wrong_shape_names_the_key() -> None:
    with pytest.raises(tfrec.EncodeError, match="points") as info:
        FEATURES.serialize_example({"points": np.zeros((2, 4), np.float32), "range": _value(1)["range"]})
    assert "(None, 3)" in str(info.value) and "(2, 4)" in str(info.value)
