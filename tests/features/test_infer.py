"""infer_features proposes a FeaturesDict from a sample of Example records; describe_features prints it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec import infer_features
from tfrec.features import (
    ClassLabel,
    FeatureConnector,
    FeaturesDict,
    Image,
    Scalar,
    Sequence,
    Tensor,
    Text,
    describe_features,
)

HERE = Path(__file__).parent
TFDS_TRAIN = HERE / "tfds_sample" / "tfrec_research_ordered-train.tfrecord-00000-of-00001"
MIXED = HERE.parent / "golden" / "mixed.tfrecord"


def doc(n: int, what: str, missing: int = 0) -> str:
    return f"inferred from {n} records: {what}" + (
        f", missing in {missing} record{'s' * (missing != 1)}" if missing else ""
    )


def write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "data.tfrecord"
    tfrec.write_records(path, [tfrec.encode_example(r) for r in rows])
    return path


def check(path: Path, expected: FeaturesDict) -> FeaturesDict:
    """Infer from ``path``: equal to ``expected``, printable as code, and it reads the records."""
    features = infer_features(path)
    assert features == expected
    assert rebuilt(describe_features(features)) == features
    assert FeatureConnector.from_json(features.to_json()) == features
    features.deserialize_batch(list(tfrec.read_records(path)))
    return features


def rebuilt(source: str) -> Any:
    namespace: dict[str, Any] = {}
    exec("import numpy as np\nfrom tfrec.features import *", namespace)
    return eval(source, namespace)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([{"x": 1}, {"x": 2}], Tensor(shape=(), dtype=np.int64, doc=doc(2, "1 value each"))),
        ([{"x": [1, 2]}, {"x": [3, 4]}], Tensor(shape=(2,), dtype=np.int64, doc=doc(2, "2 values each"))),
        ([{"x": [1]}, {"x": [2, 3, 4]}], Tensor(shape=(None,), dtype=np.int64, doc=doc(2, "1 to 3 values"))),
        ([{"x": 1}, {"y": 0}], Tensor(shape=(None,), dtype=np.int64, doc=doc(2, "1 value each", 1))),
        ([{"x": 0.5}, {"x": 1.5}], Tensor(shape=(), dtype=np.float32, doc=doc(2, "1 value each"))),
        (
            [{"x": np.zeros(3, np.float32)}] * 2,
            Tensor(shape=(3,), dtype=np.float32, doc=doc(2, "3 values each")),
        ),
        (
            [{"x": [0.5]}, {"x": []}, {"x": [1.0, 2.0]}],  # an empty list has no kind: missing
            Tensor(shape=(None,), dtype=np.float32, doc=doc(3, "1 to 2 values", 1)),
        ),
        ([{"x": "héllo"}, {"x": b"plain"}], Text(doc=doc(2, "1 value each"))),
        ([{"x": b"\xff\x00"}, {"x": "text"}], Tensor(shape=(), dtype=str, doc=doc(2, "1 value each"))),
        ([{"x": ["a", "b"]}] * 2, Tensor(shape=(2,), dtype=str, doc=doc(2, "2 values each"))),
        ([{"x": "a"}, {"x": ["b", "c"]}], Tensor(shape=(None,), dtype=str, doc=doc(2, "1 to 2 values"))),
        ([{"x": "a"}, {"y": 1}], Tensor(shape=(None,), dtype=str, doc=doc(2, "1 value each", 1))),
    ],
    ids=[
        "int-scalar",
        "int-fixed",
        "int-var",
        "int-missing",
        "float-scalar",
        "float-fixed",
        "float-var-missing",
        "text",
        "binary",
        "bytes-fixed",
        "bytes-var",
        "text-missing",
    ],
)
def test_infer_proposes_by_kind_and_count(
    tmp_path: Path, rows: list[dict[str, Any]], expected: FeatureConnector
) -> None:
    features = infer_features(write(tmp_path, rows))
    assert features["x"] == expected
    check(tmp_path / "data.tfrecord", features)


def pixels_png(mode: str, size: tuple[int, int] = (3, 2)) -> bytes:
    pil = pytest.importorskip("PIL.Image")
    out = io.BytesIO()
    pil.new(mode, size).save(out, format="PNG")
    return out.getvalue()


def pixels_jpeg(size: tuple[int, int]) -> bytes:
    pil = pytest.importorskip("PIL.Image")
    out = io.BytesIO()
    pil.new("RGB", size, (10, 20, 30)).save(out, format="JPEG")
    return out.getvalue()


def test_infer_png_and_jpeg_images_with_header_channels(tmp_path: Path) -> None:
    rows = [
        {
            "grey": pixels_png("L"),
            "rgba": pixels_png("RGBA"),
            "photo": pixels_jpeg((4, 4)),
            "u16": pixels_png("I;16"),
        },
        {
            "grey": pixels_png("L", (5, 5)),
            "rgba": pixels_png("RGBA"),
            "photo": pixels_jpeg((8, 2)),
            "u16": pixels_png("I;16"),
        },
    ]
    each = doc(2, "1 value each")
    expected = FeaturesDict(
        {
            "grey": Image(shape=(None, None, 1), encoding_format="png", doc=each + ", png images"),
            "photo": Image(shape=(None, None, 3), encoding_format="jpeg", doc=each + ", jpeg images"),
            "rgba": Image(shape=(None, None, 4), encoding_format="png", doc=each + ", png images"),
            "u16": Image(
                shape=(None, None, 1), encoding_format="png", dtype=np.uint16, doc=each + ", png images"
            ),
        }
    )
    batch = check(write(tmp_path, rows), expected).deserialize_batch(
        list(tfrec.read_records(tmp_path / "data.tfrecord"))
    )
    assert batch["photo"][1].shape == (2, 8, 3)


def test_infer_refuses_a_key_with_two_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, [{"x": 1}, {"x": 1.5}])
    with pytest.raises(tfrec.SchemaError, match=r"'x'.*\['float_list', 'int64_list'\].*record 1"):
        infer_features(path)


def test_infer_nests_slash_keys_and_merges_ragged_pairs(tmp_path: Path) -> None:
    written = FeaturesDict(
        {
            "meta": {"id": np.int64, "lang": Text()},
            "tokens": Sequence(Sequence(np.int64)),
            "words": Sequence(Sequence(Text())),
        }
    )
    path = tmp_path / "data.tfrecord"
    tfrec.write_records(
        path,
        [
            written.serialize_example(
                {"meta": {"id": 1, "lang": "en"}, "tokens": [[1, 2], [3]], "words": [["a"]]}
            ),
            written.serialize_example(
                {"meta": {"id": 2, "lang": "fr"}, "tokens": [], "words": [[], ["b", "c"]]}
            ),
        ],
    )
    each = doc(2, "1 value each")
    expected = FeaturesDict(
        {
            "meta": {"id": Tensor(shape=(), dtype=np.int64, doc=each), "lang": Text(doc=each)},
            "tokens": Sequence(Sequence(np.int64), doc=doc(2, "ragged rows of int64_list values")),
            "words": Sequence(
                Sequence(Tensor(shape=(), dtype=str)), doc=doc(2, "ragged rows of bytes_list values")
            ),
        }
    )
    features = check(path, expected)
    batch = features.deserialize_batch(list(tfrec.read_records(path)))
    assert batch["tokens"].to_list() == [[[1, 2], [3]], []]


def test_infer_nests_one_sequence_per_row_length_list(tmp_path: Path) -> None:
    written = FeaturesDict({"cube": Sequence(Sequence(Sequence(np.int64)))})
    values = [[[[1, 2], []], [[3]]], [], [[[4, 5, 6]]]]
    path = tmp_path / "data.tfrecord"
    tfrec.write_records(path, [written.serialize_example({"cube": v}) for v in values])
    inner = Sequence(Sequence(Sequence(np.int64)), doc=doc(3, "ragged rows of int64_list values"))
    features = check(path, FeaturesDict({"cube": inner}))
    batch = features.deserialize_batch(list(tfrec.read_records(path)))
    assert batch["cube"].to_list() == values


def test_infer_leaves_a_lone_ragged_key_and_shape_value_pairs_as_tensors(tmp_path: Path) -> None:
    rows = [{"r/ragged_flat_values": [1, 2], "t/shape": [2, 3], "t/value": b"\xff\x01"}] * 2
    features = infer_features(write(tmp_path, rows))
    assert features["r"] == FeaturesDict(
        {"ragged_flat_values": Tensor(shape=(2,), dtype=np.int64, doc=doc(2, "2 values each"))}
    )
    assert features["t"] == FeaturesDict(
        {
            "shape": Tensor(shape=(2,), dtype=np.int64, doc=doc(2, "2 values each")),
            "value": Tensor(shape=(), dtype=str, doc=doc(2, "1 value each")),
        }
    )


def test_infer_refuses_a_key_that_is_both_a_leaf_and_a_parent(tmp_path: Path) -> None:
    with pytest.raises(tfrec.SchemaError, match="'a/b'"):
        infer_features(write(tmp_path, [{"a": 1, "a/b": 2}]))


def test_infer_reads_only_the_sample(tmp_path: Path) -> None:
    path = write(tmp_path, [{"x": 1}, {"x": 2}, {"x": [3, 4]}, {"x": 1.5}])  # 3 and 4 differ
    assert infer_features(path, sample=2) == FeaturesDict(
        {"x": Tensor(shape=(), dtype=np.int64, doc=doc(2, "1 value each"))}
    )
    assert infer_features(path, sample=3).flat_infos()["x"].shape == (None,)
    with pytest.raises(ValueError, match="sample"):
        infer_features(path, sample=0)


def test_infer_from_an_iterable_of_records() -> None:
    records = (tfrec.encode_example({"id": i, "name": f"n{i}"}) for i in range(3))
    each = doc(3, "1 value each")
    assert infer_features(records) == FeaturesDict(
        {"id": Tensor(shape=(), dtype=np.int64, doc=each), "name": Text(doc=each)}
    )
    with pytest.raises(tfrec.InvalidArgumentError, match=r"not one record \(bytes\); .* pass \[record\]"):
        infer_features(tfrec.encode_example({"id": 1}))  # type: ignore[arg-type]
    with pytest.raises(tfrec.InvalidArgumentError, match="not int"):
        infer_features(5)  # type: ignore[arg-type]
    one = tfrec.encode_example({"id": 1})
    with pytest.raises(tfrec.InvalidArgumentError, match=r"<records>, record 1: expected .* found str"):
        infer_features([one, "train.tfrecord"])  # type: ignore[list-item]
    assert infer_features([one], sample=np.int64(1)).flat_infos()["id"].shape == ()
    with pytest.raises(tfrec.InvalidArgumentError, match="sample must be an int"):
        infer_features([one], sample=1.5)  # type: ignore[arg-type]


def test_infer_skips_keys_without_a_kind_and_reads_gzip(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord.gz"
    tfrec.write_records(path, [tfrec.encode_example({"x": 1, "empty": []})])
    assert infer_features(path) == FeaturesDict(
        {"x": Tensor(shape=(), dtype=np.int64, doc=doc(1, "1 value each"))}
    )
    assert infer_features(path, compression="gzip") == infer_features(path)
    assert infer_features([]) == FeaturesDict({})


def test_infer_on_the_tfds_sample_reads_every_record() -> None:
    features = infer_features(TFDS_TRAIN)
    each = doc(4, "1 value each")
    assert rebuilt(describe_features(features)) == features
    pytest.importorskip("PIL")
    batch = features.deserialize_batch(list(tfrec.read_records(TFDS_TRAIN)))
    assert batch["text"][0] == "example 0 é"
    assert isinstance(features["img_jpeg"], Image) and features["img_jpeg"].encoding_format == "jpeg"
    assert features.flat_infos()["nested/inner/s"].dtype == object
    assert features["nested"] == FeaturesDict(
        {
            "inner": {"lbl": Tensor(shape=(), dtype=np.int64, doc=each), "s": Text(doc=each)},
            "x": Tensor(shape=(), dtype=np.float32, doc=each),
        }
    )
    assert features["seq_seq"] == Sequence(Sequence(np.int64), doc=doc(4, "ragged rows of int64_list values"))


def test_infer_names_the_record_that_is_not_an_example() -> None:
    with pytest.raises(tfrec.DecodeError, match=r"mixed\.tfrecord, record 1: not a valid Example"):
        infer_features(MIXED)
    with pytest.raises(tfrec.DecodeError, match=r"<records>, record 1: "):
        infer_features([b"", b"\xff" * 12])


def test_describe_features_rebuilds_every_connector() -> None:
    features = FeaturesDict(
        {
            "label": ClassLabel(names=["no", "yes"], doc='the "answer"'),
            "n": ClassLabel(num_classes=3),
            "age": Scalar(np.int32, doc="years", value_range="0-150"),
            "flag": Tensor(shape=(2,), dtype=np.bool_),
            "blob": Tensor(shape=(None, None), dtype=np.float64, encoding="zlib"),
            "img": Image(shape=(28, 28, 1)),
            "steps": Sequence({"w": Text(), "t": np.uint8}, length=4),
            "meta": FeaturesDict({"k": Text()}, doc="nested"),
        }
    )
    source = describe_features(features)
    assert source.startswith(
        'FeaturesDict({\n    "label": ClassLabel(names=["no", "yes"], doc="the \\"answer\\""),'
    )
    assert rebuilt(source) == features
    bounded = Tensor.from_json(FeaturesDict({"x": np.int64}).to_json()["featuresDict"]["features"]["x"])
    assert isinstance(bounded, Tensor)
    bounded.minimum = "0"
    assert rebuilt(describe_features(FeaturesDict({"x": bounded})))["x"].to_json() == bounded.to_json()


def test_sequence_of_string_tensors_serializes() -> None:
    features = FeaturesDict({"w": Sequence(Tensor(shape=(), dtype=str))})
    assert list(features.deserialize_example(features.serialize_example({"w": ["a"]}))["w"]) == [b"a"]


def test_infer_finds_the_size_of_ragged_items(tmp_path: Path) -> None:
    written = FeaturesDict({"s": Sequence(Sequence(Tensor(shape=(2,), dtype=np.float32)))})
    values = [[[[1, 2], [3, 4]], []], [[[5, 6]]]]
    path = tmp_path / "data.tfrecord"
    tfrec.write_records(path, [written.serialize_example({"s": v}) for v in values])
    inner = Sequence(
        Sequence(Tensor(shape=(2,), dtype=np.float32)), doc=doc(2, "ragged rows of float_list values")
    )
    features = check(path, FeaturesDict({"s": inner}))
    batch = features.deserialize_batch(list(tfrec.read_records(path)))
    assert batch["s"].to_list() == values


def test_infer_leaves_ragged_keys_whose_values_do_not_divide_into_items(tmp_path: Path) -> None:
    rows = [{"s/ragged_row_lengths_0": [2], "s/ragged_flat_values": [1, 2, 3]}] * 2
    features = infer_features(write(tmp_path, rows))
    assert sorted(features["s"].features) == ["ragged_flat_values", "ragged_row_lengths_0"]
