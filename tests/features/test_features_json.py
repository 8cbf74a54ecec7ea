"""features.json: the proto-JSON each connector writes, and the layouts from_json reads (SPEC §1.2-1.4)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from tfrec import SchemaError
from tfrec.features import (
    ClassLabel,
    FeatureConnector,
    FeaturesDict,
    Image,
    Scalar,
    Sequence,
    Tensor,
    Text,
)

P = "tensorflow_datasets.core.features."
TENSOR, SCALAR, TEXT = P + "tensor_feature.Tensor", P + "scalar.Scalar", P + "text_feature.Text"
IMAGE, LABEL = P + "image_feature.Image", P + "class_label_feature.ClassLabel"
SEQUENCE, DICT = P + "sequence_feature.Sequence", P + "features_dict.FeaturesDict"


def tensor_json(dtype: str, dims: list[str] | None = None, encoding: str = "none") -> dict[str, Any]:
    shape = {"dimensions": dims} if dims else {}
    return {"pythonClassName": TENSOR, "tensor": {"dtype": dtype, "encoding": encoding, "shape": shape}}


# What tfds 4.9.10 writes for each connector (SPEC §1.3; keys as in its sorted features.json).
WRITTEN = [
    (
        Image(shape=(28, 28, 1)),
        {"image": {"dtype": "uint8", "shape": {"dimensions": ["28", "28", "1"]}}, "pythonClassName": IMAGE},
    ),
    (
        Image(shape=(None, None, 3), encoding_format="jpeg"),
        {
            "image": {"dtype": "uint8", "encodingFormat": "jpeg", "shape": {"dimensions": ["-1", "-1", "3"]}},
            "pythonClassName": IMAGE,
        },
    ),
    (
        Image(shape=(4, 5, 1), dtype=np.uint16, encoding_format="png"),
        {
            "image": {"dtype": "uint16", "encodingFormat": "png", "shape": {"dimensions": ["4", "5", "1"]}},
            "pythonClassName": IMAGE,
        },
    ),
    (ClassLabel(names=["cat", "dog", "bird"]), {"classLabel": {"numClasses": "3"}, "pythonClassName": LABEL}),
    (ClassLabel(num_classes=5), {"classLabel": {"numClasses": "5"}, "pythonClassName": LABEL}),
    (Text(), {"pythonClassName": TEXT, "text": {}}),
    (Tensor(shape=(3,), dtype=np.float32), tensor_json("float32", ["3"])),
    (Tensor(shape=(None,), dtype=np.int64), tensor_json("int64", ["-1"])),
    (
        Tensor(shape=(None, None), dtype=np.float32, encoding="zlib"),
        tensor_json("float32", ["-1", "-1"], "zlib"),
    ),
    (
        Tensor(shape=(None, None), dtype=np.float32, encoding="bytes"),
        tensor_json("float32", ["-1", "-1"], "bytes"),
    ),
    (Tensor(shape=(), dtype=str), tensor_json("string")),
    (Tensor(shape=(), dtype=np.bool_), tensor_json("bool")),
    (Tensor(shape=(2,), dtype=np.float64), tensor_json("float64", ["2"])),
    (Tensor(shape=(3,), dtype=np.uint8), tensor_json("uint8", ["3"])),
    (
        Scalar(np.bool_, doc="Is it a flag?"),
        {
            "description": "Is it a flag?",
            "pythonClassName": SCALAR,
            "tensor": {"dtype": "bool", "encoding": "none", "shape": {}},
        },
    ),
    (
        Scalar(np.int32, doc="Age of the person", value_range="0-150"),
        {
            "description": "Age of the person",
            "pythonClassName": SCALAR,
            "tensor": {"dtype": "int32", "encoding": "none", "shape": {}},
            "valueRange": "0-150",
        },
    ),
    (
        Sequence(Tensor(shape=(2,), dtype=np.int64)),
        {"pythonClassName": SEQUENCE, "sequence": {"feature": tensor_json("int64", ["2"]), "length": "-1"}},
    ),
    (
        Sequence(Sequence(Tensor(shape=(), dtype=np.int64))),
        {
            "pythonClassName": SEQUENCE,
            "sequence": {
                "feature": {
                    "pythonClassName": SEQUENCE,
                    "sequence": {"feature": tensor_json("int64"), "length": "-1"},
                },
                "length": "-1",
            },
        },
    ),
    (
        Sequence(Image(shape=(2, 2, 3)), length=3),
        {
            "pythonClassName": SEQUENCE,
            "sequence": {
                "feature": {
                    "image": {"dtype": "uint8", "shape": {"dimensions": ["2", "2", "3"]}},
                    "pythonClassName": IMAGE,
                },
                "length": "3",
            },
        },
    ),
    (
        FeaturesDict({"x": np.float32, "s": Text()}),
        {
            "featuresDict": {
                "features": {"s": {"pythonClassName": TEXT, "text": {}}, "x": tensor_json("float32")}
            },
            "pythonClassName": DICT,
        },
    ),
]


@pytest.mark.parametrize(("feature", "written"), WRITTEN, ids=[repr(f)[:40] for f, _ in WRITTEN])
def test_to_json_is_what_tfds_writes(feature: FeatureConnector, written: dict[str, Any]) -> None:
    assert json.dumps(feature.to_json(), sort_keys=True) == json.dumps(written, sort_keys=True)
    loaded = FeatureConnector.from_json(written)
    assert loaded.to_json() == feature.to_json()
    assert type(loaded) is type(feature)


def test_docs_round_trip() -> None:
    loaded = FeatureConnector.from_json(Scalar(np.int32, doc="Age", value_range="0-150").to_json())
    assert (loaded.doc, loaded.value_range) == ("Age", "0-150")
    inner = Sequence(Text(doc="a word"), doc="the words")
    back = FeatureConnector.from_json(inner.to_json())
    assert back.doc == "the words" and back.feature.doc == "a word"
    assert FeatureConnector.from_json(Text().to_json()).doc is None


def test_non_ascii_docs_are_escaped_like_tfds() -> None:
    text = json.dumps(Text(doc="café").to_json(), indent=4, sort_keys=True)
    assert "caf\\u00e9" in text


def test_plain_json_numbers_are_accepted() -> None:
    # ParseDict takes 3 as well as "3"
    assert FeatureConnector.from_json(
        {"pythonClassName": LABEL, "classLabel": {"numClasses": 3}}
    ) == ClassLabel(num_classes=3)
    loaded = FeatureConnector.from_json(
        {"pythonClassName": TENSOR, "tensor": {"dtype": "int64", "shape": {"dimensions": [-1, 2]}}}
    )
    assert loaded == Tensor(shape=(None, 2), dtype=np.int64)  # a missing encoding means "none"
    seq = FeatureConnector.from_json(
        {"pythonClassName": SEQUENCE, "sequence": {"feature": tensor_json("int64"), "length": 2}}
    )
    assert seq == Sequence(np.int64, length=2)


def test_old_tensor_class_name_is_accepted() -> None:
    old = {
        "pythonClassName": P + "feature.Tensor",
        "tensor": {"dtype": "int64", "encoding": "none", "shape": {}},
    }
    assert FeatureConnector.from_json(old) == Tensor(shape=(), dtype=np.int64)


def test_unknown_connector_is_a_schema_error() -> None:
    # (this named Video until tfrec read Video: the check is the same with a class tfds does not have)
    with pytest.raises(SchemaError, match="Mystery"):
        FeatureConnector.from_json({"pythonClassName": P + "mystery_feature.Mystery", "video": {}})
    with pytest.raises(SchemaError):
        FeatureConnector.from_json({"type": "my.module.Mystery", "content": {}})


def test_from_json_reads_a_string() -> None:
    source = json.dumps(FeaturesDict({"a": Image(), "b": Sequence(np.int8, length=2)}).to_json())
    assert FeatureConnector.from_json(source) == FeaturesDict(
        {"a": Image(), "b": Sequence(np.int8, length=2)}
    )


# -- tfds' older layouts: {"type", "content"} ----------------------------------------------------------

# legacy v1 (old tfds features.json: plain JSON content), from tfds' own to_json docstring and SPEC §1.4
LEGACY_V1 = {
    "type": DICT,
    "content": {
        "image": {
            "type": IMAGE,
            "content": {"shape": [None, None, 3], "dtype": "uint8", "encoding_format": "png"},
        },
        "label": {"type": LABEL, "content": {"num_classes": 10}},
        "t": {"type": P + "feature.Tensor", "content": {"shape": [None], "dtype": "float32"}},
        "txt": {"type": TEXT, "content": {}},
        "seq": {
            "type": SEQUENCE,
            "content": {
                "feature": {"type": P + "feature.Tensor", "content": {"shape": [], "dtype": "int64"}},
                "length": None,
            },
        },
        "fixed": {"type": SEQUENCE, "content": {"feature": {"type": TEXT, "content": {}}, "length": 4}},
    },
}


def test_legacy_v1_layout() -> None:
    assert FeatureConnector.from_json(LEGACY_V1) == FeaturesDict(
        {
            "image": Image(shape=(None, None, 3), encoding_format="png"),
            "label": ClassLabel(num_classes=10),
            "t": Tensor(shape=(None,), dtype=np.float32),
            "txt": Text(),
            "seq": Sequence(Tensor(shape=(), dtype=np.int64)),
            "fixed": Sequence(Text(), length=4),
        }
    )
    assert FeatureConnector.from_json(json.dumps(LEGACY_V1))["label"].num_classes == 10


ONE_PIXEL_PNG = bytes.fromhex(  # a 1x1 RGB image
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c49444154789c63606060000000"
    "040001f61738550000000049454e44ae426082"
)

# tfds 4.9.10 FeatureConnector.to_json() output (printed by tfds itself): content is proto-JSON

TO_JSON_LAYOUTS = [
    (
        {
            "type": DICT,
            "content": {
                "features": {
                    "a": {
                        "pythonClassName": IMAGE,
                        "image": {
                            "shape": {"dimensions": ["-1", "-1", "3"]},
                            "dtype": "uint8",
                            "encodingFormat": "jpeg",
                        },
                    },
                    "b": {
                        "pythonClassName": SEQUENCE,
                        "sequence": {
                            "feature": {"pythonClassName": LABEL, "classLabel": {"numClasses": "3"}},
                            "length": "2",
                        },
                    },
                }
            },
            "proto_cls": "tensorflow_datasets.FeaturesDict",
        },
        FeaturesDict(
            {"a": Image(encoding_format="jpeg"), "b": Sequence(ClassLabel(num_classes=3), length=2)}
        ),
        {"a": ONE_PIXEL_PNG, "b": [0, 2]},
    ),
    (
        {"type": LABEL, "content": {"numClasses": "4"}, "proto_cls": "tensorflow_datasets.ClassLabel"},
        ClassLabel(num_classes=4),
        3,
    ),
    (
        {
            "type": TENSOR,
            "content": {"shape": {"dimensions": ["-1", "2"]}, "dtype": "float32", "encoding": "zlib"},
            "proto_cls": "tensorflow_datasets.TensorFeature",
        },
        Tensor(shape=(None, 2), dtype=np.float32, encoding="zlib"),
        np.ones((3, 2), np.float32),
    ),
    (
        {
            "type": IMAGE,
            "content": {
                "shape": {"dimensions": ["-1", "-1", "3"]},
                "dtype": "uint8",
                "encodingFormat": "jpeg",
            },
            "proto_cls": "tensorflow_datasets.ImageFeature",
        },
        Image(encoding_format="jpeg"),
        ONE_PIXEL_PNG,  # encoded bytes are stored as given once their header fits the shape
    ),
    (
        {
            "type": SEQUENCE,
            "content": {"feature": tensor_json("int64"), "length": "-1"},
            "proto_cls": "tensorflow_datasets.Sequence",
        },
        Sequence(np.int64),
        [1, 2, 3],
    ),
    (
        {
            "type": SCALAR,
            "content": {"shape": {}, "dtype": "int32", "encoding": "none"},
            "proto_cls": "tensorflow_datasets.TensorFeature",
        },
        Scalar(np.int32),
        7,
    ),
]


@pytest.mark.parametrize("as_string", [False, True], ids=["dict", "string"])
@pytest.mark.parametrize(
    ("layout", "expected", "sample"),
    TO_JSON_LAYOUTS,
    ids=["dict", "label", "tensor", "image", "sequence", "scalar"],
)
def test_tfds_to_json_layout(
    layout: dict[str, Any], expected: FeatureConnector, sample: Any, as_string: bool
) -> None:
    if as_string:  # older tfds stored the content as a JSON string
        layout = dict(layout, content=json.dumps(layout["content"]))
    loaded = FeatureConnector.from_json(layout)
    assert loaded == expected
    assert loaded.to_json() == expected.to_json()
    # and it stores values as the expected connector does
    mine = FeaturesDict({"k": loaded}).serialize_example({"k": sample})
    assert mine == FeaturesDict({"k": expected}).serialize_example({"k": sample})


def test_tfds_to_json_layout_of_text() -> None:
    text = {"type": TEXT, "content": {}, "proto_cls": "tensorflow_datasets.TextFeature"}
    assert FeatureConnector.from_json(text) == Text()
    assert FeatureConnector.from_json(dict(text, content="{}")) == Text()


def test_tensor_bounds_round_trip() -> None:
    # tfds' Tensor(minimum=, maximum=) are documentation: kept so features.json reads and writes back
    written = {
        "pythonClassName": TENSOR,
        "tensor": {
            "dtype": "int32",
            "encoding": "none",
            "maximum": "10",
            "minimum": "0",
            "shape": {"dimensions": ["2"]},
        },
    }
    loaded = FeatureConnector.from_json(written)
    assert loaded.to_json() == written
    assert FeaturesDict({"k": loaded}).serialize_example({"k": [0, 99]})  # not enforced


@pytest.mark.parametrize(
    "written",
    [
        {
            "pythonClassName": TENSOR,
            "tensor": {"dtype": "int64", "encoding": "none", "optional": True, "shape": {}},
        },
    ],
    ids=["optional"],
)
def test_unsupported_options_are_refused(written: dict[str, Any]) -> None:
    with pytest.raises(SchemaError, match="not supported"):
        FeatureConnector.from_json(written)


def test_image_colormap_round_trips() -> None:
    # Supported since tfds parity (catalog datasets such as cityscapes use it); it was refused before.
    written = {
        "pythonClassName": IMAGE,
        "image": {"dtype": "uint8", "shape": {"dimensions": ["8", "8", "1"]}, "useColormap": True},
    }
    loaded = FeatureConnector.from_json(written)
    assert loaded.to_json() == written
    assert loaded == Image(shape=(8, 8, 1), use_colormap=True)
