"""The batched encoder against TensorFlow 2.21's own serialization (skipped when TensorFlow is absent).

Each record of a batch must be the bytes ``tf.train.Example(...).SerializeToString(deterministic=True)``
gives (deterministic: map entries sorted by key, so the columns are given in key order).
Run with ``pytest -m conformance tests/conformance``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.conformance


def tf_feature(value: Any) -> Any:
    values = np.asarray(value).ravel() if not isinstance(value, (bytes, str)) else [value]
    if isinstance(value, (bytes, str)) or (isinstance(value, list) and value and isinstance(value[0], bytes)):
        items = [
            v.encode() if isinstance(v, str) else v for v in (value if isinstance(value, list) else [value])
        ]
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=items))
    if values.dtype.kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values.astype(np.float32)))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values.astype(np.int64)))


def tf_example(row: dict[str, Any]) -> bytes:
    features = tf.train.Features(feature={key: tf_feature(value) for key, value in row.items()})
    return tf.train.Example(features=features).SerializeToString(deterministic=True)


def test_numpy_columns_encode_as_tensorflow() -> None:
    rng = np.random.default_rng(7)
    rows = 300
    edges = np.array([0, 1, 127, 128, 16_383, 16_384, 2**35, 2**63 - 1, -1, -(2**63)])
    columns = {  # in key order
        "a_int": rng.integers(0, 1 << 40, rows) >> rng.integers(0, 40, rows),
        "b_float": rng.standard_normal(rows),
        "c_emb": rng.standard_normal((rows, 32)).astype(np.float32),
        "d_edges": rng.choice(edges, (rows, 3)),
        "e_bytes": [rng.bytes(int(n)) for n in rng.integers(0, 300, rows)],
        "f_bool": rng.random((rows, 2)) > 0.5,
        "g_odd": np.array([np.nan, np.inf, -0.0, 1e-40] * (rows // 4), np.float32),
        "h_empty": np.zeros((rows, 0), np.int64),
    }
    records = tfrec.example.encode_examples(columns)
    for row, record in enumerate(records):
        assert record == tf_example({key: values[row] for key, values in columns.items()}), row


def test_serialize_batch_encodes_as_tensorflow() -> None:
    features = FeaturesDict(
        {
            "embedding": Tensor(shape=(16,), dtype=np.float32),
            "image": Tensor(shape=(), dtype=str),
            "label": ClassLabel(num_classes=1000),
            "text": Text(),
            "tokens": Tensor(shape=(8,), dtype=np.int64),
        }
    )
    rng = np.random.default_rng(8)
    samples = [
        {
            "embedding": rng.standard_normal(16).astype(np.float32),
            "image": rng.bytes(int(rng.integers(0, 3000))),
            "label": int(rng.integers(0, 1000)),
            "text": f"caption {i} é",
            "tokens": rng.integers(0, 50_000, 8),
        }
        for i in range(200)
    ]
    records = features.serialize_batch(samples)
    for sample, record in zip(samples, records, strict=True):
        assert record == tf_example(sample)
    parsed = tf.io.parse_example(records, {"label": tf.io.FixedLenFeature([], tf.int64)})
    assert parsed["label"].numpy().tolist() == [s["label"] for s in samples]


def test_samples_encode_as_tensorflow_and_tensorflow_reads_their_frames(tmp_path: Any) -> None:
    rng = np.random.default_rng(9)
    samples = [  # in key order
        {
            "a_id": int(rng.integers(0, 10**6)) >> int(rng.integers(0, 20)),
            "b_score": float(rng.standard_normal()),
            "c_tag": rng.bytes(8),
            "d_tokens": rng.integers(0, 50_000, 32),
            "e_text": f"caption {i} é",
        }
        for i in range(300)
    ]
    records = tfrec.example.encode_examples(samples)
    assert records == [tf_example(sample) for sample in samples]
    features = FeaturesDict(
        {
            "a_id": np.int64,
            "b_score": np.float32,
            "c_tag": Tensor(shape=(), dtype=str),
            "d_tokens": Tensor(shape=(32,), dtype=np.int64),
            "e_text": Text(),
        }
    )
    summary = tfrec.write_dataset(samples, str(tmp_path / "s"), features, num_shards=1, progress=False)
    read = [r.numpy() for r in tf.data.TFRecordDataset(summary.paths)]  # TF checks every frame's CRCs
    assert read == [features.serialize_example(sample) for sample in samples]
    assert read == [tf_example(sample) for sample in samples]


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_large_samples_joined_into_their_frames_are_read_by_tensorflow(
    tmp_path: Any, compression: Any
) -> None:
    # Records of 1 KiB or more are joined straight into their frames and their CRCs filled in place.
    features = FeaturesDict(
        {
            "embedding": Tensor(shape=(128,), dtype=np.float32),
            "image": Tensor(shape=(), dtype=str),
            "label": ClassLabel(num_classes=1000),
            "text": Text(),
            "tokens": Tensor(shape=(32,), dtype=np.int64),
        }
    )
    rng = np.random.default_rng(10)
    samples = [
        {
            "embedding": rng.standard_normal(128).astype(np.float32),
            "image": rng.bytes(3072 + int(rng.integers(0, 100))),
            "label": int(rng.integers(0, 1000)),
            "text": f"caption {i} é",
            "tokens": rng.integers(0, 50_000, 32),
        }
        for i in range(1500)
    ]
    summary = tfrec.write_dataset(
        samples,
        str(tmp_path / "s"),
        features,
        num_shards=2,
        compression=compression,
        index=True,
        progress=False,
    )
    for shard, path in enumerate(summary.paths):
        read = [
            r.numpy() for r in tf.data.TFRecordDataset(path, compression_type=(compression or "").upper())
        ]
        assert read == [tf_example(sample) for sample in samples[shard::2]]


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_short_samples_framed_in_numpy_are_read_by_tensorflow(tmp_path: Any, compression: Any) -> None:
    # Records up to 128 bytes are laid out in one buffer from their columns and their CRCs taken a
    # byte column at a time: TF checks every frame's CRCs.
    features = FeaturesDict({"id": np.int64, "score": np.float32, "tag": Tensor(shape=(), dtype=str)})
    rng = np.random.default_rng(11)
    ids = [0, 1, -1, 127, 128, 16384, 2**63 - 1, -(2**63)]
    samples = [
        {
            "id": ids[i % len(ids)] if i % 3 else int(rng.integers(0, 10**6)),
            "score": float(rng.standard_normal()),
            "tag": rng.bytes(int(rng.integers(0, 12))),
        }
        for i in range(2000)
    ]
    summary = tfrec.write_dataset(
        samples,
        str(tmp_path / "s"),
        features,
        num_shards=3,
        compression=compression,
        index=True,
        progress=False,
    )
    for shard, path in enumerate(summary.paths):
        read = [
            r.numpy() for r in tf.data.TFRecordDataset(path, compression_type=(compression or "").upper())
        ]
        assert read == [tf_example(sample) for sample in samples[shard::3]]
