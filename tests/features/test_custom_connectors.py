"""tfds-style custom connectors (tests/features/custom_connectors.py) on tfrec's connectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from custom_connectors import Pair, Point, Temperature

import tfrec
from tfrec.features import Documentation, FeatureConnector, FeaturesDict, TensorInfo


def schema() -> FeaturesDict:
    return FeaturesDict(
        {
            "t": Temperature(doc=Documentation(desc="air", value_range="0-400")),
            "t_k": Temperature(unit="K"),
            "p": Point(scale=2.0),
            "pair": Pair(),
            "seq": tfrec.features.Sequence(Point()),
        }
    )


def value(i: int) -> dict[str, Any]:
    return {
        "t": 300.5 + i,
        "t_k": 10.0 * i,
        "p": {"x": i, "y": -1.5},
        "pair": (f"n{i}", i),
        "seq": [{"x": k, "y": k + 0.5} for k in range(i)],
    }


def test_stored_as_the_serialized_info_says() -> None:
    flat = tfrec.decode_example(schema().serialize_example(value(1)))
    assert flat["t/degrees"].tolist() == [28.5] and flat["t/offset"].tolist() == [273.0]
    assert flat["t_k/offset"].tolist() == [0.0]
    assert flat["p"].tolist() == [1.0, -1.5]
    assert flat["pair/name"] == [b"n1"] and flat["pair/count"].tolist() == [1]
    assert schema().flat_infos()["t/degrees"] == TensorInfo((), np.dtype(np.float32))


def test_round_trip_one_record_and_a_batch() -> None:
    features = schema()
    records = [features.serialize_example(value(i)) for i in range(3)]
    for i, record in enumerate(records):
        out = features.deserialize_example(record)
        assert abs(float(out["t"]) - (300.5 + i)) < 1e-4
        assert np.array_equal(out["p"], np.array([2.0 * i, -3.0], np.float32))  # decode_example scales
        assert out["pair"] == {"name": f"n{i}", "count": i}
        assert out["seq"].shape == (i, 2)
    batch = features.deserialize_batch(records)
    assert np.allclose(batch["t"], [300.5, 301.5, 302.5])
    assert batch["p"].shape == (3, 2) and batch["p"][2].tolist() == [4.0, -3.0]
    assert batch["pair"]["count"].tolist() == [0, 1, 2] and batch["pair"]["name"].tolist() == [
        "n0",
        "n1",
        "n2",
    ]


def test_features_json_names_the_module_and_loads_it_back(tmp_path: Path) -> None:
    features = schema()
    features.save(tmp_path)
    document = json.loads((tmp_path / "features.json").read_text(encoding="utf-8"))
    written = document["featuresDict"]["features"]
    assert written["t"] == {
        "pythonClassName": "custom_connectors.Temperature",
        "jsonFeature": {"json": '{"unit": "C"}'},
        "description": "air",
        "valueRange": "0-400",
    }
    assert written["p"]["jsonFeature"] == {"json": '{"scale": 2.0}'}
    assert written["pair"] == {"pythonClassName": "custom_connectors.Pair", "jsonFeature": {"json": "{}"}}
    loaded = FeaturesDict.load(tmp_path)
    assert loaded == features
    assert isinstance(loaded["t_k"], Temperature) and loaded["t_k"].unit == "K"
    assert loaded["p"].scale == 2.0 and loaded["t"].value_range == "0-400"
    blob = features.serialize_example(value(2))
    assert loaded.deserialize_example(blob)["pair"] == {"name": "n2", "count": 2}


def test_a_connector_whose_module_does_not_import_is_a_schema_error() -> None:
    document = {"pythonClassName": "no_such_module_here.Thing", "jsonFeature": {"json": "{}"}}
    with pytest.raises(tfrec.SchemaError, match="does not import"):
        FeatureConnector.from_json(document)


class Pairs(FeatureConnector):
    """The smallest tfds-style connector: two int64 values, no metadata."""

    def get_tensor_info(self) -> Any:
        return TensorInfo(shape=(2,), dtype=np.int64)


def test_encode_example_values_are_checked_against_the_serialized_info() -> None:
    features = FeaturesDict({"b": Pairs()})
    assert features.deserialize_example(features.serialize_example({"b": [1, 2]}))["b"].tolist() == [1, 2]
    with pytest.raises(tfrec.EncodeError, match=r"b \(Pairs\): expected shape \(2,\)"):
        features.serialize_example({"b": [1, 2, 3]})
    assert Pairs().to_json() == {
        "pythonClassName": "test_custom_connectors.Pairs",
        "jsonFeature": {"json": "{}"},
    }


class Doubled(FeaturesDict):
    """A FeaturesDict subclass with its own decode_example (tfrec calls it, nested or not)."""

    def __init__(self) -> None:
        super().__init__({"n": np.int64})

    def decode_example(self, tfexample_data: Any) -> Any:
        return {"n": super().decode_example(tfexample_data)["n"] * 2}


def test_a_dict_subclass_decode_example_runs_per_record() -> None:
    features = FeaturesDict({"d": Doubled()})
    records = [features.serialize_example({"d": {"n": n}}) for n in (1, 5)]
    assert int(features.deserialize_example(records[1])["d"]["n"]) == 10
    assert features.deserialize_batch(records)["d"]["n"].tolist() == [2, 10]
