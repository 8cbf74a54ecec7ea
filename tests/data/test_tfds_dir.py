"""tensorflow_datasets directories: read a tfds-prepared one by split; write one."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.data.tfds.directory import TfdsSplit, from_tfds_dir, write_tfds_dir
from tfrec.errors import InvalidArgumentError, MissingFileError
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

SAMPLE = Path(__file__).parent.parent / "features" / "tfds_sample"


def toy_features() -> FeaturesDict:
    return FeaturesDict(
        {
            "id": Tensor(shape=(), dtype=np.int64),
            "label": ClassLabel(names=["cat", "dog"]),
            "text": Text(),
            "emb": Tensor(shape=(None,), dtype=np.float32),
        }
    )


def toy_sample(i: int) -> dict[str, Any]:
    return {"id": i, "label": i % 2, "text": f"sample {i} é", "emb": np.arange(i % 4, dtype=np.float32)}


@pytest.mark.parametrize(("split", "count"), [("train", 4), ("test", 2)])
def test_from_tfds_dir_reads_a_tfds_prepared_directory(split: str, count: int) -> None:
    found = from_tfds_dir(SAMPLE, split=split)
    assert isinstance(found, TfdsSplit)
    paths, features = found
    assert paths == [str(SAMPLE / f"tfrec_research_ordered-{split}.tfrecord-00000-of-00001")]
    assert features == FeaturesDict.load(SAMPLE)
    assert features["label_names"].names == ["cat", "dog", "bird"]  # type: ignore[attr-defined]
    assert len(list(tfrec.read_records(paths[0]))) == count


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    directory = tmp_path / "toy" / "1.0.0"
    splits = {"train": [toy_sample(i) for i in range(10)], "test": (toy_sample(i) for i in range(10, 13))}
    summaries = write_tfds_dir(
        directory, splits, toy_features(), name="toy", max_records=4, description="A toy."
    )
    assert summaries["train"].shard_lengths == [4, 4, 2] and summaries["test"].shard_lengths == [3]
    names = sorted(os.listdir(directory))
    assert names == [
        "dataset_info.json",
        "features.json",
        "label.labels.txt",
        "toy-test.tfrecord-00000-of-00001",
        "toy-train.tfrecord-00000-of-00003",
        "toy-train.tfrecord-00001-of-00003",
        "toy-train.tfrecord-00002-of-00003",
    ]
    info = json.loads((directory / "dataset_info.json").read_text())
    assert info["splits"][0] == {
        "name": "train",
        "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
        "numBytes": str(summaries["train"].data_bytes),
        "shardLengths": ["4", "4", "2"],
    }
    assert (info["name"], info["version"], info["fileFormat"], info["description"]) == (
        "toy",
        "1.0.0",
        "tfrecord",
        "A toy.",
    )
    paths, features = from_tfds_dir(directory, "train")
    assert features == toy_features() and paths == summaries["train"].paths
    source = tfrec.data.RecordFileSource(paths, features=features)
    ids = sorted(int(sample["id"]) for sample in source.__getitems__(range(len(source))))
    assert ids == list(range(10))
    assert source[0]["text"] == "sample 0 é"


def test_num_bytes_is_counted_as_tfds_counts_it() -> None:
    # tfds' numBytes is the sum of the serialized examples, without framing: the sample's own figures.
    info = json.loads((SAMPLE / "dataset_info.json").read_text())
    train = next(s for s in info["splits"] if s["name"] == "train")
    records = list(tfrec.read_records(SAMPLE / "tfrec_research_ordered-train.tfrecord-00000-of-00001"))
    assert int(train["numBytes"]) == sum(map(len, records))


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda d: os.remove(d / "dataset_info.json"), MissingFileError, "dataset_info.json: no such file"),
        (
            lambda d: os.remove(d / "tfrec_research_ordered-train.tfrecord-00000-of-00001"),
            MissingFileError,
            "no such shard (1 of the 1 shards of split 'train' are missing)",
        ),
        (
            lambda d: edit_info(d, fileFormat="array_record"),
            InvalidArgumentError,
            "the shards are array_record, not tfrecord",
        ),
        (
            lambda d: edit_info(
                d, splits=[{"name": "train", "filepathTemplate": "{NOPE}", "shardLengths": ["1"]}]
            ),
            InvalidArgumentError,
            "the file name template '{NOPE}' of split 'train' cannot be filled",
        ),
    ],
)
def test_from_tfds_dir_errors(tmp_path: Path, change: Any, error: type[Exception], message: str) -> None:
    directory = tmp_path / "sample"
    shutil.copytree(SAMPLE, directory)
    change(directory)
    with pytest.raises(error) as caught:
        from_tfds_dir(directory, "train")
    assert message in str(caught.value)


def edit_info(directory: Path, **fields: Any) -> None:
    info = json.loads((directory / "dataset_info.json").read_text())
    info.update(fields)
    (directory / "dataset_info.json").write_text(json.dumps(info))


def test_from_tfds_dir_names_the_splits_there_are() -> None:
    with pytest.raises(
        InvalidArgumentError, match=r"no split 'validation'; the dataset has \['test', 'train'\]"
    ):
        from_tfds_dir(SAMPLE, "validation")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "Toy"}, "name 'Toy' is not a tfds dataset name"),
        ({"name": "toy", "version": "1.0"}, "version '1.0' is not 'MAJOR.MINOR.PATCH'"),
        ({"name": "toy", "splits": {"train-1": []}}, "split name 'train-1' is not one tfds accepts"),
        ({"name": "toy", "features": {"x": int}}, "features must be a FeaturesDict"),
    ],
)
def test_write_tfds_dir_checks_its_arguments(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"splits": {"train": []}, "features": toy_features(), **options}
    with pytest.raises(InvalidArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        write_tfds_dir(tmp_path / "d", **arguments)
    assert not (tmp_path / "d").exists()


def test_a_failing_split_leaves_no_dataset_info(tmp_path: Path) -> None:
    def samples() -> Any:
        yield toy_sample(0)
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="the source broke"):
        write_tfds_dir(tmp_path, {"train": samples()}, toy_features(), name="toy")
    assert "dataset_info.json" not in os.listdir(tmp_path)
    assert not [name for name in os.listdir(tmp_path) if "tfrecord" in name]
