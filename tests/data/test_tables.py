"""Tables in and out: write_dataset from DataFrames, Arrow tables, numpy columns and Hugging Face
datasets, read back with tfrec.read_arrow."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.data.writing.tables import check_column_names, numpy_features, table_records
from tfrec.features import FeaturesDict, Sequence, Tensor, Text
from tfrec.record.framing_batch import frame_records

pa = pytest.importorskip("pyarrow")


def _numpy(column: Any) -> np.ndarray:
    """An Arrow column of (nested) fixed-size lists as one numpy array."""
    array = column.combine_chunks()
    dims = []
    while pa.types.is_fixed_size_list(array.type):
        dims.append(array.type.list_size)
        array = array.flatten()
    return array.to_numpy(zero_copy_only=False).reshape(len(column), *dims)


# -- numpy columns (no pyarrow needed to write them) -------------------------------------------------


def test_numpy_digits_come_back_equal(tmp_path: Path) -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    count = len(digits.target)
    text = np.array([f"chiffre {t} — цифра {t} — 数字" for t in digits.target])
    columns = {"image": digits.images, "label": digits.target, "text": text}
    summary = tfrec.write_dataset(columns, tmp_path / "digits", num_shards=1)
    assert summary.records == count
    assert FeaturesDict.load(tmp_path) == FeaturesDict(
        {
            "image": Tensor(shape=(8, 8), dtype=np.float64),
            "label": Tensor(shape=(), dtype=np.int64),
            "text": Text(),
        }
    )
    table = tfrec.read_arrow(tmp_path / "digits-*.tfrecord")
    np.testing.assert_array_equal(_numpy(table["image"]), digits.images)
    np.testing.assert_array_equal(table["label"].to_numpy(), digits.target)
    assert table["text"].to_pylist() == text.tolist()


def test_numpy_columns_write_what_samples_write(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    columns = {
        "id": np.arange(3000),
        "score": rng.random(3000),  # float64: rounded to float32 as one sample would be
        "emb": rng.random((3000, 32), dtype=np.float32),
        "meta/lang": np.array(["en", "fr", "ja"] * 1000, dtype=object),
        "raw": np.array([bytes([i % 256]) * (i % 5) for i in range(3000)], dtype=object),
    }
    table = table_records(columns, None)
    assert table is not None
    features, records = table.features, [record for chunk in table.chunks for record in chunk]
    samples = [
        {
            "id": int(columns["id"][i]),
            "score": float(columns["score"][i]),
            "emb": columns["emb"][i],
            "meta": {"lang": columns["meta/lang"][i]},
            "raw": columns["raw"][i],
        }
        for i in range(3000)
    ]
    assert records == [features.serialize_example(sample) for sample in samples]


def test_numpy_features_are_inferred_from_dtype_and_shape() -> None:
    features = numpy_features(
        {"x": np.zeros((2, 3), np.int32), "t": np.array(["a", "b"]), "b": np.array([b"x", b""])}
    )
    assert features == FeaturesDict(
        {"x": Tensor(shape=(3,), dtype=np.int32), "t": Text(), "b": Tensor(shape=(), dtype=str)}
    )


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"a": np.arange(3), "b": np.arange(4)}, "differ in length"),
        ({"a": np.array([[object()]] * 2, dtype=object)}, "no feature is inferred"),
        ({"a": np.arange(2), "a/b": np.arange(2)}, "is a value and also a group"),
        ({"a//b": np.arange(2)}, "empty name"),
    ],
)
def test_bad_numpy_columns_raise_schema_error(tmp_path: Path, columns: dict[str, Any], message: str) -> None:
    with pytest.raises(tfrec.SchemaError, match=message):
        tfrec.write_dataset(columns, tmp_path / "x", num_shards=1)


def test_a_column_without_feature_is_an_error(tmp_path: Path) -> None:
    features = FeaturesDict({"a": np.int64})
    with pytest.raises(tfrec.SchemaError, match=r"columns \['b'\] have no feature"):
        tfrec.write_dataset({"a": np.arange(2), "b": np.arange(2)}, tmp_path / "x", features, num_shards=1)
    assert not list(tmp_path.glob("x-*"))  # nothing published


def test_given_features_store_the_columns(tmp_path: Path) -> None:
    features = FeaturesDict(
        {"a": Tensor(shape=(), dtype=np.float32), "b": Tensor(shape=(2,), dtype=np.int64)}
    )
    columns = {"a": np.array([1.5, 2.5]), "b": np.array([[1, 2], [3, 4]], np.int32)}
    tfrec.write_dataset(columns, tmp_path / "x", features, num_shards=1)
    records = list(tfrec.read_records(tmp_path / "x-00000-of-00001.tfrecord"))
    assert records == [
        features.serialize_example({"a": 1.5, "b": [1, 2]}),
        features.serialize_example({"a": 2.5, "b": [3, 4]}),
    ]


def test_column_names_follow_the_convert_rule() -> None:
    check_column_names(["sepal length (cm)", "od280/od315_of_diluted_wines", "a.b"])
    with pytest.raises(tfrec.SchemaError, match="given twice"):
        check_column_names(["a", "a"])
    with pytest.raises(tfrec.SchemaError, match="name columns with strings"):
        check_column_names([0, 1])


def test_samples_are_not_tables() -> None:
    assert table_records([{"a": 1}], None) is None
    assert table_records({"a": 1}, None) is None  # one sample, not columns


# -- Arrow-backed tables -----------------------------------------------------------------------------


def test_wine_frame_comes_back_equal(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    datasets = pytest.importorskip("sklearn.datasets")
    frame = datasets.load_wine(as_frame=True).frame
    assert "od280/od315_of_diluted_wines" in frame.columns
    tfrec.write_dataset(frame, tmp_path / "wine", num_shards=1)
    assert isinstance(FeaturesDict.load(tmp_path)["od280"], FeaturesDict)  # "/" nests
    back = tfrec.read_arrow(tmp_path / "wine-00000-of-00001.tfrecord").to_pandas()
    expected = frame.astype({name: np.float32 for name in frame.columns if name != "target"})
    assert sorted(back.columns) == sorted(frame.columns)
    # floats are stored as float32, as TensorFlow stores them; the frame's dtypes come back
    assert (back[frame.columns].dtypes == frame.dtypes).all()
    assert (back[frame.columns].astype(expected.dtypes) == expected).all().all()


def test_arrow_table_with_lists_and_nulls_comes_back(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "tokens": pa.array([[1, 2], [], None, [3]], pa.list_(pa.int64())),
            "emb": pa.array([[0.5, 1.0], [1.5, 2.0], [2.5, 3.0], [3.5, 4.0]], pa.list_(pa.float32(), 2)),
            "words": pa.array([["a"], ["b", "c"], [], None], pa.list_(pa.string())),
            "score": pa.array([0.25, None, 1.0, None], pa.float32()),
            "name": pa.array(["x", None, "z", "é"], pa.string()),
            "blob": pa.array([b"\x00", b"", b"\x01\x02", b"z"], pa.binary()),
            "meta": pa.array([{"lang": "en"}, {"lang": "fr"}, {"lang": "ja"}, {"lang": "de"}]),
        }
    )
    tfrec.write_dataset(table, tmp_path / "t", num_shards=1)
    assert FeaturesDict.load(tmp_path) == FeaturesDict(
        {
            "id": Tensor(shape=(), dtype=np.int64),
            "tokens": Tensor(shape=(None,), dtype=np.int64),
            "emb": Tensor(shape=(2,), dtype=np.float32),
            "words": Sequence(Text()),
            "score": Tensor(shape=(None,), dtype=np.float32),  # it holds nulls: 0 or 1 values
            "name": Sequence(Text()),
            "blob": Tensor(shape=(), dtype=str),
            "meta": {"lang": Text()},  # a struct nests
        }
    )
    back = tfrec.read_arrow(tmp_path / "t-*.tfrecord")
    for name in ["id", "emb", "blob"]:
        assert back[name].to_pylist() == table[name].to_pylist(), name
    assert back["meta/lang"].to_pylist() == ["en", "fr", "ja", "de"]
    # a null is stored as no value: it reads back as an empty list, a value as a list of one
    assert back["tokens"].to_pylist() == [[1, 2], [], [], [3]]
    assert back["words"].to_pylist() == [["a"], ["b", "c"], [], []]
    assert back["score"].to_pylist() == [[0.25], [], [1.0], []]
    assert back["name"].to_pylist() == [["x"], [], ["z"], ["é"]]
    assert tfrec.read_arrow(tmp_path / "t-*.tfrecord", columns=["id"]).column_names == ["id"]


def test_list_columns_without_nulls_come_back_equal(tmp_path: Path) -> None:
    table = pa.table(
        {
            "tokens": pa.array([[1, 2], [], [3, 4, 5]] * 100, pa.list_(pa.int64())),
            "words": pa.array([["a"], ["b", "c"], []] * 100, pa.list_(pa.string())),
            "grid": pa.array([[[1, 2], [3, 4]]] * 300, pa.list_(pa.list_(pa.int32(), 2), 2)),
        }
    )
    tfrec.write_dataset(table, tmp_path / "t", num_shards=1)
    back = tfrec.read_arrow(tmp_path / "t-*.tfrecord")
    assert back.column_names == sorted(table.column_names)  # features.json keeps the names sorted
    assert back.select(table.column_names).equals(table)


def test_a_stream_of_record_batches_is_written(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    batches = [
        pa.record_batch([pa.array(range(i, i + 10)), pa.array([str(j) for j in range(10)])], schema=schema)
        for i in (0, 10, 20)
    ]
    reader = pa.RecordBatchReader.from_batches(schema, iter(batches))
    summary = tfrec.write_dataset(reader, tmp_path / "s", num_shards=2)
    assert summary.records == 30
    back = tfrec.read_arrow(tmp_path / "s-*.tfrecord")
    assert sorted(back["id"].to_pylist()) == list(range(30))
    tfrec.write_dataset(batches, tmp_path / "list", num_shards=1)  # a list of RecordBatches too
    assert tfrec.read_arrow(tmp_path / "list-*.tfrecord").equals(pa.Table.from_batches(batches))


def test_a_null_after_the_first_batch_of_a_stream_names_the_row(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64())])
    batches = [
        pa.record_batch([pa.array([1, 2])], schema=schema),
        pa.record_batch([pa.array([3, None])], schema=schema),
    ]
    reader = pa.RecordBatchReader.from_batches(schema, iter(batches))
    with pytest.raises(tfrec.SchemaError, match=r"column 'id', row 3: null"):
        tfrec.write_dataset(reader, tmp_path / "s", num_shards=1)


def test_categorical_frame_columns_are_written_as_their_values(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"kind": pd.Categorical(["a", "b", "a"]), "n": [1, 2, 3]}, index=[10, 11, 12])
    tfrec.write_dataset(frame, tmp_path / "c", num_shards=1)
    back = tfrec.read_arrow(tmp_path / "c-*.tfrecord").to_pandas()
    assert back["kind"].tolist() == ["a", "b", "a"]
    assert back["n"].tolist() == [1, 2, 3]  # the index is not written


def test_hugging_face_dataset_comes_back_equal(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_dict(
        {
            "text": ["un", "deux", "trois", "quatre"],
            "label": [0, 1, 0, 1],
            "ids": [[1], [2, 3], [], [4, 5, 6]],
            "score": [0.5, 1.5, 2.5, 3.5],
        }
    )
    tfrec.write_dataset(dataset, tmp_path / "hf", num_shards=1)
    back = datasets.Dataset(tfrec.read_arrow(tmp_path / "hf-*.tfrecord"))
    assert back.to_dict() == dataset.to_dict()
    picked = dataset.select([3, 1])  # an indices mapping: the selected rows, in its order
    tfrec.write_dataset(picked, tmp_path / "picked", num_shards=1)
    assert tfrec.read_arrow(tmp_path / "picked-*.tfrecord")["text"].to_pylist() == ["quatre", "deux"]


def test_read_arrow_without_features_json_infers_them(tmp_path: Path) -> None:
    tfrec.write_records(
        tmp_path / "x.tfrecord", [tfrec.encode_example({"id": i, "t": "é"}) for i in range(3)]
    )
    back = tfrec.read_arrow(tmp_path / "x.tfrecord")
    assert back["id"].to_pylist() == [0, 1, 2]


def test_read_arrow_of_no_records_is_an_empty_table_of_the_schema(tmp_path: Path) -> None:
    tfrec.write_dataset({"id": np.arange(0)}, tmp_path / "e", num_shards=1)
    back = tfrec.read_arrow(tmp_path / "e-*.tfrecord")
    assert back.num_rows == 0
    assert back.schema == pa.schema([("id", pa.int64())])


def test_arrow_columns_write_what_samples_write() -> None:
    rows = 5000  # several batches of the column encoder
    rng = np.random.default_rng(1)
    emb = rng.random((rows, 3), dtype=np.float32)
    scores = [None if i % 7 == 0 else float(i) / 4 for i in range(rows)]
    table = pa.table(
        {
            "emb": pa.array(list(emb), pa.list_(pa.float32())),  # every row 3 long: encoded whole
            "tokens": pa.array([list(range(i % 4)) for i in range(rows)], pa.list_(pa.int64())),
            "score": pa.array(scores, pa.float64()),  # nulls: 0 or 1 values
            "flag": pa.array([i % 2 == 0 for i in range(rows)]),
        }
    )
    found = table_records(table, None)
    assert found is not None
    features = found.features
    assert features["score"] == Tensor(shape=(None,), dtype=np.float64)
    samples = [
        {
            "emb": emb[i],
            "tokens": np.arange(i % 4),
            "score": [] if scores[i] is None else [scores[i]],
            "flag": i % 2 == 0,
        }
        for i in range(rows)
    ]
    assert [r for chunk in found.chunks for r in chunk] == [features.serialize_example(s) for s in samples]


def test_a_frame_of_embedding_arrays_is_written_whole(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    emb = np.arange(30, dtype=np.float32).reshape(10, 3)
    frame = pd.DataFrame({"id": np.arange(10), "emb": list(emb)})
    tfrec.write_dataset(frame, tmp_path / "f", num_shards=1)
    back = tfrec.read_arrow(tmp_path / "f-*.tfrecord")
    assert back["emb"].to_pylist() == emb.tolist()


def test_without_pyarrow_a_frame_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": [1, 2]})
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow fails
    with pytest.raises(tfrec.OptionalDependencyError, match=r"pip install 'tfrec\[pandas\]'"):
        tfrec.write_dataset(frame, tmp_path / "x", num_shards=1)


class _Stream:
    """Any table that speaks the Arrow PyCapsule stream protocol."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.table.__arrow_c_stream__(requested_schema)


def test_an_arrow_c_stream_is_a_table(tmp_path: Path) -> None:
    table = pa.table({"id": [1, 2, 3], "t": ["a", "b", "c"]})
    tfrec.write_dataset(_Stream(table), tmp_path / "c", num_shards=1)
    assert tfrec.read_arrow(tmp_path / "c-*.tfrecord").equals(table)


def test_a_series_is_not_a_table() -> None:
    pd = pytest.importorskip("pandas")
    assert table_records(pd.Series([1, 2]), None) is None


@pytest.mark.parametrize("width", [3, 100])  # short records framed as rows of one array; longer ones
def test_framed_chunks_are_the_frames_of_the_records(width: int) -> None:
    rng = np.random.default_rng(0)
    columns = {
        "id": np.array([0, -1, 2**63 - 1, 300, 7]),
        "score": np.array([np.nan, -0.0, 1e-300, 0.5, -3.0]),
        "emb": rng.standard_normal((5, width)).astype(np.float32),
        "text": np.array(["", "é", "a" * 40, "b", "cc"]),
    }
    plain, framed = table_records(columns, None), table_records(columns, None, framed=True)
    assert plain is not None and framed is not None
    for records, frames in zip(plain.chunks, framed.chunks, strict=True):
        assert frames.data == frame_records(list(records)).data
