"""The committed generated proto modules match protos/*.proto, and are wire-compatible."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("generate", ROOT / "protos" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_modules_are_fresh() -> None:
    generate = _generator()
    if generate.grpcio_tools_version() != generate.GRPCIO_TOOLS_VERSION:
        pytest.skip(f"needs grpcio-tools=={generate.GRPCIO_TOOLS_VERSION} (tox -e protos)")
    assert generate.stale_files() == []


def test_proto_package_is_ours_not_tensorflows() -> None:
    from tfrec.proto import example_pb2, feature_pb2

    assert example_pb2.Example.DESCRIPTOR.full_name == "tfrec.Example"
    assert feature_pb2.Feature.DESCRIPTOR.full_name == "tfrec.Feature"


@pytest.mark.parametrize(
    ("message", "fields"),
    [
        ("BytesList", {"value": 1}),
        ("FloatList", {"value": 1}),
        ("Int64List", {"value": 1}),
        ("Feature", {"bytes_list": 1, "float_list": 2, "int64_list": 3}),
        ("Features", {"feature": 1}),
        ("FeatureList", {"feature": 1}),
        ("FeatureLists", {"feature_list": 1}),
        ("Example", {"features": 1}),
        ("SequenceExample", {"context": 1, "feature_lists": 2}),
    ],
)
def test_field_numbers_match_tensorflow(message: str, fields: dict[str, int]) -> None:
    from tfrec.proto import example_pb2, feature_pb2

    module = example_pb2 if message in ("Example", "SequenceExample") else feature_pb2
    descriptor = getattr(module, message).DESCRIPTOR
    assert {f.name: f.number for f in descriptor.fields} == fields


def test_numeric_lists_serialize_packed() -> None:
    from tfrec.proto import feature_pb2

    floats = feature_pb2.FloatList(value=[1.0, 2.0]).SerializeToString()
    ints = feature_pb2.Int64List(value=[1, 2]).SerializeToString()
    # tag 0x0a = field 1, length-delimited: one packed run, as TensorFlow writes it
    assert floats == b"\x0a\x08\x00\x00\x80\x3f\x00\x00\x00\x40"
    assert ints == b"\x0a\x02\x01\x02"
