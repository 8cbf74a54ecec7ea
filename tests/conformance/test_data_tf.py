"""Conformance of tfrec.data with tf.data (skipped when TensorFlow is absent).

TFRecordDataset(cycle_length=c, read_options=ReadOptions(block_length=b)) reads the records in the order of
``Dataset.from_tensor_slices(files).interleave(TFRecordDataset, cycle_length=c, block_length=b)``,
and batches parse to what ``tf.io.parse_example`` returns.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data import ReadOptions, TFRecordDataset

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.conformance


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=1, max_size=6), st.integers(1, 4), st.integers(1, 5))
def test_interleave_order_is_tf_datas(sizes: list[int], cycle: int, block: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for n, size in enumerate(sizes):
            path = str(Path(tmp) / f"part-{n:05d}.tfrecord")
            tfrec.write_records(path, [f"{n}:{i}".encode() for i in range(size)])
            paths.append(path)
        theirs = tf.data.Dataset.from_tensor_slices(paths).interleave(
            tf.data.TFRecordDataset, cycle_length=cycle, block_length=block
        )
        expected = [bytes(r) for r in theirs.as_numpy_iterator()]
        assert (
            list(TFRecordDataset(paths, cycle_length=cycle, read_options=ReadOptions(block_length=block)))
            == expected
        )


def test_batches_parse_as_tf_does(tmp_path: Path) -> None:
    records = [
        tfrec.encode_example({"id": i, "emb": np.full(3, i, np.float32), "tags": [b"a"] * (i % 3)})
        for i in range(50)
    ]
    tfrec.write_records(tmp_path / "x.tfrecord", records)
    ours = {"id": tfrec.FixedLenFeature([], tfrec.int64), "emb": tfrec.FixedLenFeature([3], tfrec.float32)}
    theirs = {"id": tf.io.FixedLenFeature([], tf.int64), "emb": tf.io.FixedLenFeature([3], tf.float32)}
    mine = list(TFRecordDataset(tmp_path, spec=ours).batch(16))
    expected = list(tf.data.TFRecordDataset(str(tmp_path / "x.tfrecord")).batch(16).map(
        lambda x: tf.io.parse_example(x, theirs)).as_numpy_iterator())  # fmt: skip
    assert len(mine) == len(expected) == 4
    for a, b in zip(mine, expected, strict=True):
        for key in ours:
            assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key])
