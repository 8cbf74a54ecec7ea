"""``tfrec inspect``, ``head`` and ``verify`` on a dataset tensorflow_datasets prepared itself
(``tfds.dataset_builders.store_as_tfds_dataset``): nested ``Sequence(Sequence(...))`` features,
Text, ClassLabel and grey images, as tfds lays them out (skipped without TF or tfds)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tfrec.cli import main

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")

pytestmark = pytest.mark.conformance


def _digits() -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits
    except ImportError:  # the same shape of data: 8x8 grey images with a label
        rng = np.random.default_rng(0)
        return rng.integers(0, 17, (12, 8, 8)), rng.integers(0, 10, 12)
    digits = load_digits()
    return digits.images[:12].astype(np.int64), digits.target[:12]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    images, labels = _digits()
    features = tfds.features.FeaturesDict(
        {
            "rows": tfds.features.Sequence(tfds.features.Sequence(tf.int64)),
            "image": tfds.features.Image(shape=(8, 8, 1)),
            "label": tfds.features.ClassLabel(num_classes=10),
            "name": tfds.features.Text(),
        }
    )
    examples = [
        {
            "rows": [[int(v) for v in row if v] for row in image],
            "image": (image[..., None] * 15).astype(np.uint8),
            "label": int(label),
            "name": f"digit {i}",
        }
        for i, (image, label) in enumerate(zip(images, labels, strict=True))
    ]
    data_dir = tmp_path_factory.mktemp("tfds")
    tfds.dataset_builders.store_as_tfds_dataset(
        name="digits_rows",
        version="1.0.0",
        features=features,
        split_datasets={"train": list(enumerate(examples))},  # (key, example) pairs
        data_dir=str(data_dir),
        disable_shuffling=True,
    )
    return next(data_dir.rglob("features.json")).parent


def _shards(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.glob("*.tfrecord*"))


def test_inspect_a_tfds_dataset_with_nested_sequences(prepared: Path, capsys: Any) -> None:
    assert main(["inspect", *_shards(prepared)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("rows/")]
    assert rows and all("Sequence(" in line for line in rows)
    image = next(line for line in out.splitlines() if line.startswith("image "))
    assert "(None, None, 1)" in image


def test_head_and_verify_a_tfds_dataset(prepared: Path, capsys: Any) -> None:
    assert main(["verify", *_shards(prepared)]) == 0
    capsys.readouterr()
    assert main(["head", "-n", "1", "--features", str(prepared), *_shards(prepared)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["name"] == "digit 0" and isinstance(first["rows"], list)
