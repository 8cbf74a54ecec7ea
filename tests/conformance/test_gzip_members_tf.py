"""Gzip shards written as a series of members (indexed gzip shards) read by real TensorFlow.

TensorFlow reads concatenated gzip members as one stream: every record of a
shard tfrec writes with ``compression="gzip", index=True`` comes back from
``tf.data.TFRecordDataset(compression_type="GZIP")``, in order, and equals
what tfrec reads at random through the gzip index. Run with
``pytest -m conformance tests/conformance``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

import tfrec

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.conformance


def _tf_records(path: str) -> list[bytes]:
    return [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type="GZIP")]


@pytest.mark.parametrize("member_bytes", [1, 777, 1 << 16, None])  # None: the default, 1 MiB
def test_tensorflow_reads_every_record_of_indexed_gzip_shards(
    tmp_path: Path, member_bytes: int | None
) -> None:
    rng = random.Random(member_bytes)
    records = [b""] + [os.urandom(rng.randrange(0, 5000)) + b"x" * rng.randrange(0, 5000) for _ in range(700)]
    summary = tfrec.write_dataset(
        records, tmp_path / "t", num_shards=3, compression="gzip", index=True, gzip_member_bytes=member_bytes
    )
    for number, path in enumerate(summary.paths):
        expected = records[number::3]
        assert _tf_records(path) == expected
        source = tfrec.RecordFileSource(path)
        order = list(range(len(expected)))
        rng.shuffle(order)
        assert [source[i] for i in order] == [expected[i] for i in order]


def test_tensorflow_reads_gzip_members_of_examples_it_can_parse(tmp_path: Path) -> None:
    samples = [{"id": i, "text": f"row {i}"} for i in range(3000)]
    records = [tfrec.encode_example(s) for s in samples]
    path = tmp_path / "x.tfrecord.gz"
    with tfrec.RecordWriter(path, gzip_member_bytes=4096) as writer:
        writer.write_many(records)
    assert writer.gzip_members is not None and len(writer.gzip_members) > 10
    spec = {"id": tf.io.FixedLenFeature([], tf.int64)}
    ids = [int(tf.io.parse_single_example(r, spec)["id"]) for r in _tf_records(str(path))]
    assert ids == list(range(3000))
