"""A dataset prepared by tensorflow-datasets 4.9.10 (tests/features/tfds_sample/) read and rewritten by tfrec.

golden.json holds, for train records 0 and 1, the exact record bytes, each
key's Feature bytes and the values tfds decoded. The sample's generator made
record ``i`` as variant ``i % 2`` with ``label_num = i % 5``, ``t_i32 = i`` and
``text = f"example {i} é"`` (research SPEC §3), so the expected values of all
six records (train 0-3, test 4-5) follow from the two golden entries.
Images are compared by pixels: tfds' PNG/JPEG bytes come from TF's encoders.
"""

from __future__ import annotations

import base64
import filecmp
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from featurecheck import assert_same, example, feature_entries, ragged, row

import tfrec
from tfrec.features import ClassLabel, FeaturesDict, Image, Scalar, Sequence, Tensor, Text

SAMPLE = Path(__file__).parent / "tfds_sample"
GOLDEN = json.loads((SAMPLE / "golden.json").read_text(encoding="utf-8"))
SHARDS = {
    "train": (SAMPLE / "tfrec_research_ordered-train.tfrecord-00000-of-00001", range(0, 4)),
    "test": (SAMPLE / "tfrec_research_ordered-test.tfrecord-00000-of-00001", range(4, 6)),
}
TEXT_KEYS = {"text", "nested/inner/s", "seq_d/a"}  # Text connectors: tfds gives bytes, tfrec str
IMAGE_KEYS = {"img_fixed", "img_jpeg", "img_u16", "seq_img"}
LABEL_FILES = ["label_names.labels.txt", "nested-inner-lbl.labels.txt", "seq_d-b.labels.txt"]


def sample_schema() -> FeaturesDict:
    """The sample's features, written as its author wrote them with tfds (definition order)."""
    return FeaturesDict(
        {
            "img_fixed": Image(shape=(28, 28, 1)),
            "img_jpeg": Image(shape=(None, None, 3), encoding_format="jpeg"),
            "img_u16": Image(shape=(4, 5, 1), dtype=np.uint16, encoding_format="png"),
            "label_names": ClassLabel(names=["cat", "dog", "bird"]),
            "label_num": ClassLabel(num_classes=5),
            "text": Text(),
            "t_f32_3": Tensor(shape=(3,), dtype=np.float32),
            "t_i64_var": Tensor(shape=(None,), dtype=np.int64),
            "t_zlib": Tensor(shape=(None, None), dtype=np.float32, encoding="zlib"),
            "t_bytes": Tensor(shape=(None, None), dtype=np.float32, encoding="bytes"),
            "t_bytes_static": Tensor(shape=(2, 2), dtype=np.int16, encoding="bytes"),
            "flag": Scalar(np.bool_, doc="Is it a flag?"),
            "age": Scalar(np.int32, doc="Age of the person", value_range="0-150"),
            "t_bool": Tensor(shape=(), dtype=np.bool_),
            "t_f64": Tensor(shape=(2,), dtype=np.float64),
            "t_i32": Tensor(shape=(), dtype=np.int32),
            "t_u8": Tensor(shape=(3,), dtype=np.uint8),
            "t_str": Tensor(shape=(), dtype=str),  # tfds' source says np.str_ (see test_features_dict)
            "nested": {"x": np.float32, "inner": {"lbl": ClassLabel(names=["no", "yes"]), "s": Text()}},
            "seq_t": Sequence(Tensor(shape=(2,), dtype=np.int64)),
            "seq_d": Sequence({"a": Text(), "b": ClassLabel(names=["x", "y", "z"])}),
            "seq_seq": Sequence(Sequence(Tensor(shape=(), dtype=np.int64))),
            "seq_img": Sequence(Image(shape=(2, 2, 3)), length=3),
        }
    )


# -- golden values -------------------------------------------------------------------------------------


def _number(x: Any) -> Any:
    return float(x) if isinstance(x, str) else x  # "nan", "inf", "-0.0"


def from_golden(entry: dict[str, Any], path: str = "") -> Any:
    """A golden "decoded" entry as tfrec's value (Text as str, ragged as RaggedArray)."""
    text = path in TEXT_KEYS
    if "ragged" in entry:
        return ragged(entry["ragged"], np.int64)
    if "b64" in entry and "dtype" not in entry:  # a scalar string
        raw = base64.b64decode(entry["b64"])
        return raw.decode() if text else raw
    if "dtype" in entry and "b64" in entry:  # an array of strings
        items = [base64.b64decode(v) for v in entry["b64"]]
        array = np.empty(len(items), object)
        array[:] = [v.decode() for v in items] if text else items
        return array.reshape(entry["shape"])
    if "dtype" in entry:
        array = np.array([_number(v) for v in entry["flat"]], dtype=entry["dtype"]).reshape(entry["shape"])
        return array[()] if array.ndim == 0 else array
    return {key: from_golden(value, f"{path}/{key}" if path else key) for key, value in entry.items()}


def expected_record(i: int) -> dict[str, Any]:
    value = from_golden(GOLDEN["examples"][i % 2]["decoded"])
    value["label_num"] = np.int64(i % 5)
    value["t_i32"] = np.int32(i)
    value["text"] = f"example {i} é"
    return value


@pytest.fixture
def pillow() -> None:
    """Skip without Pillow: every record holds PNG and JPEG images."""
    pytest.importorskip("PIL")


def records(split: str) -> list[bytes]:
    path, _ = SHARDS[split]
    return list(tfrec.read_records(path))


def test_golden_entries_follow_the_generator_rule() -> None:
    # records 0 and 1 are decoded by tfds; the rule that derives records 2-5 must reproduce them
    for i in (0, 1):
        assert_same(from_golden(GOLDEN["examples"][i]["decoded"]), expected_record(i), f"record {i}")


def test_golden_record_bytes_are_the_shard_bytes() -> None:
    train = records("train")
    assert [len(r) for r in train[:2]] == [e["record_len"] for e in GOLDEN["examples"]]
    for record, entry in zip(train, GOLDEN["examples"], strict=False):
        assert record.hex() == entry["record_hex"]
        assert {k: v.hex() for k, v in feature_entries(record)} == entry["features_hex"]


# -- reading -------------------------------------------------------------------------------------------


def test_load_reads_features_json_and_labels() -> None:
    loaded, schema = FeaturesDict.load(SAMPLE), sample_schema()
    assert list(loaded.keys()) == sorted(schema.keys())  # features.json is sorted
    for key in schema.features:
        assert loaded[key] == schema[key], key
    assert loaded["label_names"].names == ["cat", "dog", "bird"]
    assert loaded["nested"]["inner"]["lbl"].names == ["no", "yes"]
    assert loaded["seq_d"].feature["b"].names == ["x", "y", "z"]
    assert loaded["label_num"].names == ["0", "1", "2", "3", "4"]
    assert (loaded["age"].doc, loaded["age"].value_range) == ("Age of the person", "0-150")
    assert loaded.flat_infos() == {k: schema.flat_infos()[k] for k in loaded.flat_infos()}
    assert sorted(loaded.flat_infos()) == sorted(GOLDEN["flat_key_definition_order"])


@pytest.mark.parametrize(("split", "i"), [(s, i) for s, (_, ids) in SHARDS.items() for i in ids])
def test_every_record_reads_as_tfds_decoded_it(split: str, i: int, pillow: None) -> None:
    features = FeaturesDict.load(SAMPLE)
    shard = records(split)
    assert len(shard) == len(SHARDS[split][1])
    record = shard[i - SHARDS[split][1][0]]
    assert_same(features.deserialize_example(record), expected_record(i), f"{split} record {i}")


@pytest.mark.parametrize("split", list(SHARDS))
def test_every_shard_reads_as_one_batch(split: str, pillow: None) -> None:
    features = FeaturesDict.load(SAMPLE)
    batch = features.deserialize_batch(records(split))
    for r, i in enumerate(SHARDS[split][1]):
        assert_same(row(batch, r), expected_record(i), f"{split} row {r}")
    assert isinstance(batch["t_i64_var"], tfrec.RaggedArray)  # 3 and 0 values: ragged
    assert batch["img_fixed"].shape == (len(SHARDS[split][1]), 28, 28, 1)
    assert all(isinstance(t, str) for t in batch["text"])


def test_batch_of_records_with_equal_sequences(pillow: None) -> None:
    features = FeaturesDict.load(SAMPLE)
    train = records("train")
    batch = features.deserialize_batch([train[0], train[2]])  # both variant 0
    assert_same(row(batch, 1), expected_record(2))


# -- writing -------------------------------------------------------------------------------------------


def _feature_params() -> list[Any]:
    out = []
    for i, entry in enumerate(GOLDEN["examples"]):
        for key in GOLDEN["flat_key_definition_order"]:
            assert key in entry["features_hex"]
            out.append(pytest.param(i, key, id=f"record{i}-{key}"))
    return out


@pytest.fixture(scope="module")
def rewritten() -> list[dict[str, bytes]]:
    """serialize_example of the values tfds decoded, split into (key -> Feature bytes)."""
    pytest.importorskip("PIL")  # the values hold image arrays
    schema = sample_schema()
    out = []
    for i in (0, 1):
        value = from_golden(GOLDEN["examples"][i]["decoded"])
        value["seq_seq"] = value["seq_seq"].to_list()  # lists in, as a user writes them
        out.append(dict(feature_entries(schema.serialize_example(value))))
    return out


@pytest.mark.parametrize(("i", "key"), _feature_params())
def test_serialize_writes_the_feature_bytes_tfds_wrote(
    i: int, key: str, rewritten: list[dict[str, bytes]]
) -> None:
    ours, theirs = rewritten[i][key], bytes.fromhex(GOLDEN["examples"][i]["features_hex"][key])
    if key in IMAGE_KEYS:  # TF's PNG/JPEG encoders differ from Pillow's: compare pixels
        feature = FeaturesDict({key: sample_schema()[key]})
        mine = feature.deserialize_example(example((key, ours)))[key]
        tfds = feature.deserialize_example(example((key, theirs)))[key]
        assert_same(mine, tfds, key)
        assert_same(mine, from_golden(GOLDEN["examples"][i]["decoded"])[key], key)
    else:
        assert ours.hex() == theirs.hex()


def sample_value() -> dict[str, Any]:
    value = from_golden(GOLDEN["examples"][0]["decoded"])
    value["seq_seq"] = value["seq_seq"].to_list()
    return value


def test_serialize_writes_keys_in_definition_order_apart_from_ragged_keys(pillow: None) -> None:
    data = sample_schema().serialize_example(sample_value())
    keys = [key for key, _ in feature_entries(data)]
    assert sorted(keys) == sorted(GOLDEN["flat_key_definition_order"])
    plain = [k for k in GOLDEN["flat_key_definition_order"] if "/ragged_" not in k]
    assert [k for k in keys if "/ragged_" not in k] == plain
    # and it reads back to the same values
    assert_same(sample_schema().deserialize_example(data), from_golden(GOLDEN["examples"][0]["decoded"]))


def test_serialize_writes_keys_in_tfds_definition_order(pillow: None) -> None:
    data = sample_schema().serialize_example(sample_value())
    assert [key for key, _ in feature_entries(data)] == GOLDEN["flat_key_definition_order"]


def test_save_writes_the_sample_files(tmp_path: Path) -> None:
    for source, name in ((sample_schema(), "built"), (FeaturesDict.load(SAMPLE), "loaded")):
        out = tmp_path / name
        source.save(out)
        assert sorted(p.name for p in out.iterdir()) == sorted(["features.json", *LABEL_FILES])
        for file in ["features.json", *LABEL_FILES]:
            assert filecmp.cmp(out / file, SAMPLE / file, shallow=False), f"{name}: {file}"
        assert FeaturesDict.load(out) == FeaturesDict.load(SAMPLE)
