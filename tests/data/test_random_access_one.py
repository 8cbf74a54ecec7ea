"""RecordFileSource[i] with a spec or features: a decoder chosen and validated once, not per call."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.data import RecordFileSource
from tfrec.example.parse import examples
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text


def _write(path: Path, records: list[bytes]) -> str:
    with tfrec.RecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def test_getitem_with_a_spec_validates_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [tfrec.encode_example({"id": i, "v": np.full(3, i, np.float32)}) for i in range(5)]
    spec = {"id": tfrec.FixedLenFeature([], tfrec.int64), "v": tfrec.FixedLenFeature([3], tfrec.float32)}
    expected = [tfrec.parse_single_example(record, spec) for record in records]
    source = RecordFileSource(_write(tmp_path / "a.tfrecord", records), spec=spec)
    validated = []
    real = examples.plan_of
    monkeypatch.setattr(examples, "plan_of", lambda *a, **k: validated.append(1) or real(*a, **k))
    for copy in (source, pickle.loads(pickle.dumps(source))):  # a copy chooses its decoder again
        for i in (4, 0, 2, -1):
            got = copy[i]
            want = expected[i]
            assert list(got) == list(want)
            assert all(np.array_equal(got[k], want[k]) and got[k].dtype == want[k].dtype for k in want)
    assert len(validated) == 2


def test_getitem_with_features_is_deserialize_example(tmp_path: Path) -> None:
    features = FeaturesDict(
        {"image": Tensor(shape=(), dtype=str), "label": ClassLabel(num_classes=3), "text": Text()}
    )
    samples: list[dict[str, Any]] = [
        {"image": bytes([i]) * i, "label": i % 3, "text": f"t{i}"} for i in range(4)
    ]
    records = [features.serialize_example(sample) for sample in samples]
    source = RecordFileSource(_write(tmp_path / "b.tfrecord", records), features=features)
    for i, sample in enumerate(samples):
        got = source[i]
        assert got["image"] == sample["image"] and got["text"] == sample["text"]
        assert got["label"].dtype == np.int64 and got["label"].shape == () and got["label"] == sample["label"]
