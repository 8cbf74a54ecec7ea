"""The split loader against real tensorflow_datasets (skipped without TF or tfds).

1. tfds' split syntax: ``select`` gives the record ranges tfds' own
   ``AbstractSplit.from_spec(...).to_absolute(...)`` gives, spec by spec.
2. A dataset prepared by ``tfds.dataset_builders.store_as_tfds_dataset``
   (several shards per split, two versions): ``load_tfds`` picks the newest
   version (or the one asked for) and reads, for each spec, the records
   ``builder.as_dataset(split=spec)`` gives, through ``records()``,
   ``source()`` and ``dataset()``.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.data.tfds import load_tfds, select

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")
from tensorflow_datasets.core import splits as tfds_splits  # noqa: E402

pytestmark = pytest.mark.conformance

LENGTHS = {"train": [13, 20, 0, 7], "test": [3, 4], "validation": [250]}
SPECS = [
    "train",
    "test",
    "train+test",
    "all",
    "train[:10%]",
    "train[10%:]",
    "train[12.5%:37.5%]",
    "train[-10%:]",
    "train[:-25%]",
    "train[5:17]",
    "train[-7:]",
    "train[:-1]",
    "train[40:]",
    "train[1shard]",
    "train[:2shard]",
    "train[1shard:3shard]",
    "train[-1shard:]",
    "train[:50%]+test[50%:]",
    "validation[1%:3%]",
    "validation[33%:67%]",
    "test[:50%]",
    "test[15%:85%]",
    "train[10%:20]",
]


def theirs(spec: str, rounding: str = "closest") -> list[tuple[str, int, int]]:
    infos = {
        name: tfds_splits.SplitInfo(name=name, shard_lengths=lengths, num_bytes=0)
        for name, lengths in LENGTHS.items()
    }
    split = tfds_splits.AbstractSplit.from_spec(spec)
    if rounding != "closest":
        split = tfds_splits.ReadInstruction(
            split.split_name, from_=split.from_, to=split.to, unit=split.unit, rounding=rounding
        )
    out = []
    for instruction in split.to_absolute(infos):
        total = sum(LENGTHS[instruction.splitname])
        start = instruction.from_ or 0
        stop = total if instruction.to is None else instruction.to
        out.append((instruction.splitname, start, max(start, stop)))
    return out


@pytest.mark.parametrize("spec", SPECS)
def test_select_matches_tfds(spec: str) -> None:
    assert [tuple(r) for r in select(spec, LENGTHS)] == theirs(spec)


@pytest.mark.parametrize("spec", ["validation[:10%]", "validation[3%:50%]", "validation[-5%:]"])
def test_pct1_dropremainder_matches_tfds(spec: str) -> None:
    assert [tuple(r) for r in select(spec, LENGTHS, "pct1_dropremainder")] == theirs(
        spec, "pct1_dropremainder"
    )


@pytest.mark.parametrize("spec", ["train[", "train[a:b]", "nope", "train[1:2:3]", "train[:200%]", "train[5]"])
def test_bad_specs_are_refused_as_tfds_refuses_them(spec: str) -> None:
    with pytest.raises((ValueError, NotImplementedError)):
        theirs(spec)
    with pytest.raises(tfrec.InvalidArgumentError):
        select(spec, LENGTHS)


# -- a dataset prepared by tfds ---------------------------------------------------------------------

COUNTS = {"train": 23, "test": 9}
SHARDS = 4


def rows(split: str) -> list[dict[str, Any]]:
    base = 0 if split == "train" else 1000
    return [
        {"id": base + i, "text": f"{split} {i}", "vec": np.arange(i % 4, dtype=np.float32)}
        for i in range(COUNTS[split])
    ]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tfds_split_data")
    features = tfds.features.FeaturesDict(
        {
            "id": np.int64,
            "text": tfds.features.Text(),
            "vec": tfds.features.Tensor(shape=(None,), dtype=np.float32),
        }
    )
    config = tfds.download.DownloadConfig(num_shards=SHARDS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for version in ("1.0.0", "1.2.0"):
            builder = tfds.dataset_builders.store_as_tfds_dataset(
                name="tfrec_split_toy",
                version=version,
                features=features,
                split_datasets={split: list(enumerate(rows(split))) for split in COUNTS},  # (key, example)
                data_dir=str(root),
                download_config=config,
                disable_shuffling=True,
            )
            builder.download_and_prepare(download_config=config)
    return root


def tfds_ids(root: Path, spec: str, version: str = "1.2.0") -> list[int]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = tfds.builder_from_directory(str(root / "tfrec_split_toy" / version))
        dataset = builder.as_dataset(split=spec, shuffle_files=False)
        return [int(value["id"]) for value in tfds.as_numpy(dataset)]


def test_prepared_with_several_shards(data_dir: Path) -> None:
    loaded = load_tfds("tfrec_split_toy", split="train", data_dir=data_dir)
    assert loaded.directory.endswith(os.path.join("tfrec_split_toy", "1.2.0"))  # the newest version
    assert len(loaded.files) == SHARDS and len(loaded) == COUNTS["train"]
    assert len(load_tfds("tfrec_split_toy:1.0.0", split="test", data_dir=data_dir)) == COUNTS["test"]
    assert load_tfds("tfrec_split_toy", version="1.0.0", data_dir=data_dir).directory.endswith("1.0.0")


LOAD_SPECS = [
    "train",
    "train[:10%]",
    "train[33%:66%]",
    "train[5:17]",
    "train[-3:]",
    "train[1shard:3shard]",
    "test+train[:2]",
    "train[:50%]+test[50%:]",
    "all",
]


@pytest.mark.parametrize("spec", LOAD_SPECS)
def test_load_tfds_reads_what_tfds_reads(data_dir: Path, spec: str) -> None:
    expected = tfds_ids(data_dir, spec)
    loaded = load_tfds("tfrec_split_toy", split=spec, data_dir=data_dir)
    assert len(loaded) == len(expected)
    assert [int(loaded.features.deserialize_example(r)["id"]) for r in loaded.records()] == expected
    source = loaded.source()
    assert [int(source[i]["id"]) for i in range(len(source))] == expected
    try:
        dataset = loaded.dataset()
    except tfrec.InvalidArgumentError:
        assert "+" in spec  # several cut ranges: read through source() or records()
        return
    got = [int(i) for batch in dataset.batch(4) for i in batch["id"]]
    assert got == expected


@pytest.fixture(scope="module")
def dummy_mnist(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """tfds' own testing builder (shuffled by key, in 3 shards per split), prepared with no download."""
    from tensorflow_datasets.testing import test_utils

    root = tmp_path_factory.mktemp("dummy_mnist")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = test_utils.DummyMnist(data_dir=str(root))
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(num_shards=3))
    return root, builder


@pytest.mark.parametrize("spec", ["train", "test[:40%]", "train[7:13]", "train[-1shard:]+test[:3]"])
def test_load_tfds_reads_tfds_testing_builder(dummy_mnist: Any, spec: str) -> None:
    root, builder = dummy_mnist
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = list(tfds.as_numpy(builder.as_dataset(split=spec, shuffle_files=False)))
    loaded = load_tfds("dummy_mnist", split=spec, data_dir=root)
    assert loaded.features["label"].num_classes == 10 and len(loaded.files) >= 1
    source = loaded.source()
    assert len(source) == len(theirs)
    for i, reference in enumerate(theirs):
        ours = source[i]
        assert int(ours["label"]) == int(reference["label"])
        assert np.array_equal(ours["image"], reference["image"]) and ours["image"].shape == (28, 28, 1)
