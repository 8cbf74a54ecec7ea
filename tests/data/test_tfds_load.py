"""load_tfds and tfds' split syntax, on directories write_tfds_dir makes (no TensorFlow).
(tests/conformance/test_split_loader_tfds.py compares both with tensorflow_datasets itself.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tfrec
from tfrec.data.tfds import RangeSource, SplitRange, load_tfds, select, write_tfds_dir
from tfrec.features import FeaturesDict, Text

LENGTHS = {"train": [4, 4, 2], "test": [3]}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("train", [("train", 0, 10)]),
        ("train[:10%]", [("train", 0, 1)]),
        ("train[25%:]", [("train", 2, 10)]),  # round(2.5) == 2: halves round to even, as tfds
        ("train[35%:45%]", [("train", 4, 4)]),  # round(3.5) == 4, round(4.5) == 4
        ("train[-3:]", [("train", 7, 10)]),
        ("train[:-2]", [("train", 0, 8)]),
        ("train[1shard]", [("train", 4, 8)]),
        ("train[1shard:]", [("train", 4, 10)]),
        ("train[:-1shard]", [("train", 0, 8)]),
        ("train + test[1:]", [("train", 0, 10), ("test", 1, 3)]),
        ("all", [("train", 0, 10), ("test", 0, 3)]),
    ],
)
def test_select(spec: str, expected: list[tuple[str, int, int]]) -> None:
    assert select(spec, LENGTHS) == [SplitRange(*e) for e in expected]


@pytest.mark.parametrize(
    "spec", ["", "val", "train[", "train[:x]", "train[1:2:3]", "train[5]", "train[:101%]", "train[:11]"]
)
def test_select_refuses(spec: str) -> None:
    with pytest.raises(tfrec.InvalidArgumentError):
        select(spec, LENGTHS)


def test_pct1_dropremainder() -> None:
    assert select("v[:10%]", {"v": 250}, "pct1_dropremainder") == [SplitRange("v", 0, 20)]
    with pytest.raises(tfrec.InvalidArgumentError, match="fewer than 100"):
        select("train[:10%]", LENGTHS, "pct1_dropremainder")


def features() -> FeaturesDict:
    return FeaturesDict({"id": np.int64, "text": Text()})


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tfds_data")
    for version, offset in (("1.0.0", 100), ("1.10.0", 0), ("1.9.0", 200)):  # 1.10.0 is the newest
        splits = {
            "train": [{"id": offset + i, "text": f"t{i}"} for i in range(10)],
            "test": [{"id": offset + 50 + i, "text": f"s{i}"} for i in range(3)],
        }
        write_tfds_dir(root / "toy" / version, splits, features(), name="toy", version=version, max_records=4)
    return root


def ids(loaded: tfrec.data.LoadedSplit) -> list[int]:
    return [int(loaded.features.deserialize_example(r)["id"]) for r in loaded.records()]


def test_newest_version_or_the_one_asked_for(data_dir: Path) -> None:
    assert ids(load_tfds("toy", split="test", data_dir=data_dir)) == [50, 51, 52]
    assert ids(load_tfds("toy:1.0.0", split="test", data_dir=data_dir)) == [150, 151, 152]
    assert ids(load_tfds("toy", split="test", data_dir=data_dir, version="1.9.0")) == [250, 251, 252]


def test_env_data_dir(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFDS_DATA_DIR", str(data_dir))
    assert len(load_tfds("toy", split="train[:50%]")) == 5


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("train", list(range(10))),
        ("train[3:9]", list(range(3, 9))),
        ("train[:25%]", [0, 1]),
        ("train[2shard]", [8, 9]),
        ("test+train[-2:]", [50, 51, 52, 8, 9]),  # whole shards: any dataset
        ("test+train[-3:]", [50, 51, 52, 7, 8, 9]),
    ],
)
def test_records_source_and_dataset(data_dir: Path, spec: str, expected: list[int]) -> None:
    loaded = load_tfds("toy", split=spec, data_dir=data_dir)
    assert len(loaded) == len(expected) and ids(loaded) == expected
    source = loaded.source()
    assert [int(source[i]["id"]) for i in range(len(source))] == expected
    assert [int(v["id"]) for v in source.__getitems__(list(range(len(source))))] == expected
    if spec == "test+train[-3:]":  # cut shards, in two places
        with pytest.raises(tfrec.InvalidArgumentError, match="source"):
            loaded.dataset()
        return
    assert [int(i) for batch in loaded.dataset().batch(3) for i in batch["id"]] == expected


def test_whole_shards_are_a_plain_source_and_dataset(data_dir: Path) -> None:
    loaded = load_tfds("toy", split="train[:2shard]", data_dir=data_dir)
    assert not isinstance(loaded.source(), RangeSource) and len(loaded.paths) == 2
    shuffled = loaded.dataset(shuffle_files=True, seed=1)
    assert sorted(int(v["id"]) for v in shuffled) == list(range(8))
    assert loaded.info["name"] == "toy" and loaded.features == features()


def test_missing_dataset_version_and_split(data_dir: Path) -> None:
    with pytest.raises(tfrec.MissingFileError, match="no such dataset"):
        load_tfds("nope", data_dir=data_dir)
    with pytest.raises(tfrec.MissingFileError):
        load_tfds("toy", version="9.9.9", data_dir=data_dir)
    with pytest.raises(tfrec.InvalidArgumentError, match="no split 'validation'"):
        load_tfds("toy", split="validation", data_dir=data_dir)
    with pytest.raises(tfrec.InvalidArgumentError):
        load_tfds("toy/../x", data_dir=data_dir)


def test_an_empty_selection(data_dir: Path) -> None:
    loaded = load_tfds("toy", split="train[5:5]", data_dir=data_dir)
    assert len(loaded) == 0 and list(loaded.records()) == []
    with pytest.raises(tfrec.InvalidArgumentError, match="no records"):
        loaded.dataset()
    with pytest.raises(tfrec.InvalidArgumentError, match="no records"):
        loaded.source()
