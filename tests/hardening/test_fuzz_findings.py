"""Breaks the fuzzing harness (tests/fuzz) found, kept as plain regression tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tfrec
from tfrec.features import FeaturesDict, Scalar, Sequence, Tensor, Text


def _ld(number: int, body: bytes) -> bytes:
    assert len(body) < 128
    return bytes([number << 3 | 2, len(body)]) + body


def test_a_malformed_context_list_of_a_sequence_example_is_a_decode_error() -> None:
    bad_list = _ld(3, bytes([0 << 3 | 2, 1]) + b"\x00")  # Int64List with a field number 0
    record = _ld(1, _ld(1, _ld(1, b"id") + _ld(2, bad_list)))  # SequenceExample.context.feature["id"]
    spec = {"id": tfrec.VarLenFeature(tfrec.int64)}
    with pytest.raises(tfrec.DecodeError, match="Index: 1"):
        tfrec.parse_sequence_example([tfrec.encode_sequence_example({"id": 1}, {}), record], spec)
    features = FeaturesDict({"id": Scalar(np.int64), "steps": Sequence(Text())})
    with pytest.raises(tfrec.DecodeError):
        features.deserialize_example(record, sequence_example=True)


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\x80\x81",
        b"[]",
        json.dumps(
            {
                "pythonClassName": "tensorflow_datasets.core.features.tensor_feature.Tensor",
                "tensor": {"shape": {"dimensions": ["x"]}, "dtype": "int64"},
            }
        ).encode(),
    ],
    ids=["not-json", "not-utf8", "a-list", "bad-dimension"],
)
def test_a_damaged_features_json_is_a_schema_error(tmp_path: Path, content: bytes) -> None:
    FeaturesDict({"x": Tensor(shape=(2,), dtype=np.int64)}).save(tmp_path)
    (tmp_path / "features.json").write_bytes(content)
    with pytest.raises(tfrec.SchemaError, match=r"features\.json"):
        FeaturesDict.load(tmp_path)


def test_a_key_that_is_not_utf8_is_a_schema_error_in_a_spec() -> None:
    record = _ld(1, _ld(1, _ld(1, b"\xe9") + _ld(2, _ld(3, _ld(1, b"\x07")))))
    (key,) = tfrec.decode_example(record)  # surrogate-escaped, as os.fsdecode does
    with pytest.raises(tfrec.SchemaError, match="UTF-8"):
        tfrec.parse_single_example(record, {key: tfrec.VarLenFeature(tfrec.int64)})
    inferred = tfrec.infer_features([record])
    with pytest.raises(tfrec.SchemaError, match="UTF-8"):
        inferred.deserialize_example(record)


# A 4x4 PNG whose IDAT chunk claims 0 bytes: Pillow raises SyntaxError("broken PNG file").
BROKEN_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000004000000040802000000269309290000000049444154789c636460"
    "64628601161e1e1e22380016aa00e928d7a4190000000049454e44ae426082"
)


def test_a_damaged_png_is_a_decode_error() -> None:
    pytest.importorskip("PIL")
    from tfrec.features import Image

    features = FeaturesDict({"image": Image(shape=(None, None, 3))})
    with pytest.raises(tfrec.DecodeError, match="image"):
        features.deserialize_example(tfrec.encode_example({"image": BROKEN_PNG}))


def test_an_image_larger_than_its_declared_shape_is_refused_before_decoding() -> None:
    pytest.importorskip("PIL")
    from tfrec.features import Image

    big = FeaturesDict({"image": Image(shape=(None, None, 3))})
    record = big.serialize_example({"image": np.zeros((64, 32, 3), np.uint8)})
    small = FeaturesDict({"image": Image(shape=(4, 4, 3))})
    with pytest.raises(tfrec.DecodeError, match=r"\(64, 32, 3\)"):
        small.deserialize_example(record)
