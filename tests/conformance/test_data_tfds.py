"""Conformance of tfrec's dataset directories with real tensorflow_datasets (skipped without TF or tfds).

tfrec writes a dataset directory with ``write_tfds_dir`` (several shards per
split, rolled over by record count); ``tfds.builder_from_directory`` reads it
with TensorFlow to the values written, and tfrec reads the same directory back
through ``from_tfds_dir`` + ``RecordFileSource`` to the same values.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.data import RecordFileSource
from tfrec.data.tfds.directory import from_tfds_dir, write_tfds_dir
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")

pytestmark = pytest.mark.conformance

SPLITS = {"train": range(0, 11), "test": range(11, 14)}


def features() -> FeaturesDict:
    return FeaturesDict(
        {
            "id": Tensor(shape=(), dtype=np.int64),
            "label": ClassLabel(names=["cat", "dog", "bird"]),
            "text": Text(),
            "emb": Tensor(shape=(3,), dtype=np.float32),
            "tokens": Tensor(shape=(None,), dtype=np.int64),
            "meta": {"score": Tensor(shape=(), dtype=np.float32), "flag": Tensor(shape=(), dtype=np.bool_)},
        }
    )


def sample(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "label": i % 3,
        "text": f"sample {i} é",
        "emb": np.array([i, -i, 0.5], np.float32),
        "tokens": np.arange(i % 5, dtype=np.int64),
        "meta": {"score": np.float32(i / 4), "flag": bool(i % 2)},
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tfds") / "tfrec_toy" / "1.0.0"
    splits = {split: (sample(i) for i in ids) for split, ids in SPLITS.items()}
    write_tfds_dir(directory, splits, features(), name="tfrec_toy", max_records=4)
    return directory


def check(value: dict[str, Any], i: int) -> None:
    expected = sample(i)
    assert int(value["id"]) == i and int(value["label"]) == expected["label"]
    text = value["text"]
    assert (text.decode() if isinstance(text, bytes) else text) == expected["text"]
    assert np.array_equal(value["emb"], expected["emb"]) and value["emb"].dtype == np.float32
    assert np.array_equal(value["tokens"], expected["tokens"]) and value["tokens"].dtype == np.int64
    assert float(value["meta"]["score"]) == float(expected["meta"]["score"])
    assert bool(value["meta"]["flag"]) == expected["meta"]["flag"]


@pytest.mark.parametrize("split", list(SPLITS))
def test_tfds_reads_a_written_directory(written: Path, split: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tfds' and TF's own deprecation notices are not ours
        builder = tfds.builder_from_directory(str(written))
        assert builder.info.splits[split].num_examples == len(SPLITS[split])
        assert builder.info.splits[split].num_shards == -(-len(SPLITS[split]) // 4)
        values = list(tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)))
    assert len(values) == len(SPLITS[split])
    by_id = {int(value["id"]): value for value in values}
    assert sorted(by_id) == list(SPLITS[split])
    for i, value in by_id.items():
        check(value, i)
    assert builder.info.features["label"].names == ["cat", "dog", "bird"]


@pytest.mark.parametrize("split", list(SPLITS))
def test_tfrec_reads_the_same_directory(written: Path, split: str) -> None:
    paths, loaded = from_tfds_dir(written, split)
    assert loaded == features()
    source = RecordFileSource(paths, features=loaded)
    values = source.__getitems__(range(len(source)))
    assert [int(v["id"]) for v in values] == list(SPLITS[split])  # shards of consecutive records, in order
    for value in values:
        check(value, int(value["id"]))
    assert sum(1 for path in paths for _ in tfrec.read_records(path)) == len(SPLITS[split])
