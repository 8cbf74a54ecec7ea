"""encode_example, one record at a time, against TensorFlow 2.21's own serialization (skipped when
TensorFlow is absent): the values its inline paths take and their edges.

Each record must be the bytes ``tf.train.Example(...).SerializeToString(deterministic=True)`` gives
(deterministic: map entries sorted by key, so the samples are given in key order).
Run with ``pytest -m conformance tests/conformance``.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np
import pytest

import tfrec

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.conformance

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def tf_feature(value: Any) -> Any:
    if isinstance(value, (bytes, str)):
        data = value.encode() if isinstance(value, str) else value
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))
    flat = np.ravel(value)
    if flat.dtype.kind == "f":
        # TF's FloatList takes Python floats: give it the float32 values, bit for bit.
        values = flat.astype("<f4")
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=flat.astype(np.int64).tolist()))


def tf_example(sample: dict[str, Any]) -> bytes:
    features = tf.train.Features(feature={key: tf_feature(value) for key, value in sample.items()})
    return tf.train.Example(features=features).SerializeToString(deterministic=True)


def test_image_like_samples_encode_as_tensorflow() -> None:
    rng = np.random.default_rng(25)
    for i in range(300):
        sample = {  # in key order
            "embedding": rng.standard_normal(int(rng.integers(0, 200))).astype(np.float32),
            "image": rng.bytes(int(rng.integers(0, 5000))),
            "label": int(rng.integers(-(1 << 40), 1 << 40)) >> int(rng.integers(0, 40)),
            "text": f"caption {i} é 漢字",
            "tokens": rng.integers(0, 1 << int(rng.integers(1, 63)), int(rng.integers(0, 5000))),
        }
        assert tfrec.encode_example(sample) == tf_example(sample), i


@pytest.mark.parametrize(
    "value",
    [
        np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, 3.4028235e38], np.float32),
        np.frombuffer(struct.pack("<2I", 0x7FC00001, 0xFFC00123), np.float32),  # quiet NaN payloads
        np.arange(12, dtype=np.float32).reshape(3, 4).T,  # not contiguous
        np.arange(6, dtype=">f4"),
        np.array([INT64_MIN, -1, 0, 1, 127, 128, 16_383, 16_384, (1 << 21) - 1, 1 << 21, INT64_MAX]),
        np.arange(24, dtype=np.int64).reshape(2, 3, 4)[:, ::2, 1:],
        np.arange(6, dtype=">i8") - 3,
        np.array([True, False, True]),
        np.arange(4097, dtype=np.int64) * 977,
        -0.0,
        float("inf"),
        0.1,
        1e-46,
        INT64_MIN,
        INT64_MAX,
        -1,
        True,
        "",
        "é 漢字 \U0001f600",
        b"\xff\xfe\x00",
    ],
    ids=lambda v: repr(v)[:40],
)
def test_edge_values_encode_as_tensorflow(value: Any) -> None:
    assert tfrec.encode_example({"k": value}) == tf_example({"k": value})
