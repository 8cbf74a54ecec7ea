"""TensorFlow reads back what write_dataset wrote from tables: numpy columns, a DataFrame, an Arrow table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tfrec

tf = pytest.importorskip("tensorflow")
pa = pytest.importorskip("pyarrow")

pytestmark = [
    pytest.mark.conformance,
    pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning"),
]


def _parsed(pattern: Path, spec: dict[str, object]) -> list[dict[str, object]]:
    files = sorted(str(p) for p in pattern.parent.glob(pattern.name))
    return [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(files)]


def test_tensorflow_reads_numpy_columns(tmp_path: Path) -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    text = np.array([f"chiffre {t} — 数字" for t in digits.target])
    tfrec.write_dataset(
        {"image": digits.images, "label": digits.target, "text": text}, tmp_path / "d", num_shards=1
    )
    spec = {
        "image": tf.io.FixedLenFeature([8, 8], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "text": tf.io.FixedLenFeature([], tf.string),
    }
    rows = _parsed(tmp_path / "d-*.tfrecord", spec)
    assert len(rows) == len(digits.target)
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(row["image"].numpy(), digits.images[i].astype(np.float32))
        assert row["label"].numpy() == digits.target[i]
        assert row["text"].numpy().decode() == text[i]


def test_tensorflow_reads_the_wine_frame(tmp_path: Path) -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    pytest.importorskip("pandas")
    frame = datasets.load_wine(as_frame=True).frame
    tfrec.write_dataset(frame, tmp_path / "w", num_shards=1)
    spec = {
        name: tf.io.FixedLenFeature([], tf.int64 if name == "target" else tf.float32)
        for name in frame.columns
    }  # the stored keys are the names as written, "od280/od315_of_diluted_wines" too
    rows = _parsed(tmp_path / "w-*.tfrecord", spec)
    for i, row in enumerate(rows):
        for name in frame.columns:
            assert row[name].numpy() == np.float32(frame[name].iloc[i]), (i, name)


def test_tensorflow_reads_lists_and_nulls(tmp_path: Path) -> None:
    table = pa.table(
        {
            "tokens": pa.array([[1, 2], [], None, [3]], pa.list_(pa.int64())),
            "score": pa.array([0.25, None, 1.0, None], pa.float32()),
            "name": pa.array(["x", None, "z", "é"], pa.string()),
            "emb": pa.array([[1.0, 2.0]] * 4, pa.list_(pa.float32(), 2)),
        }
    )
    tfrec.write_dataset(table, tmp_path / "t", num_shards=1)
    spec = {
        "tokens": tf.io.VarLenFeature(tf.int64),
        "score": tf.io.VarLenFeature(tf.float32),
        "name": tf.io.VarLenFeature(tf.string),
        "emb": tf.io.FixedLenFeature([2], tf.float32),
    }
    rows = _parsed(tmp_path / "t-*.tfrecord", spec)
    assert [r["tokens"].values.numpy().tolist() for r in rows] == [[1, 2], [], [], [3]]
    assert [r["score"].values.numpy().tolist() for r in rows] == [[0.25], [], [1.0], []]
    assert [[v.decode() for v in r["name"].values.numpy()] for r in rows] == [["x"], [], ["z"], ["é"]]
    assert all(r["emb"].numpy().tolist() == [1.0, 2.0] for r in rows)
