"""tfrec.ray on a local Ray instance (2 CPUs), TensorFlow absent."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import tfrec
import tfrec.data
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pytest.importorskip("ray.data")
import tfrec.ray as tfrec_ray  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning",
    "ignore::FutureWarning",
    "ignore::ResourceWarning",  # the engines' own helper processes, ended at shutdown
    "ignore::pytest.PytestUnraisableExceptionWarning",
)

FEATURES = FeaturesDict(
    {
        "image": Tensor(shape=(2, 3), dtype=np.float32),
        "label": ClassLabel(num_classes=3),
        "tokens": Tensor(shape=(None,), dtype=np.int64),
        "text": Text(),
        "raw": Tensor(shape=(), dtype=str),
    }
)


def sample(i: int) -> dict[str, object]:
    return {
        "image": np.full((2, 3), i, np.float32),
        "label": i % 3,
        "tokens": np.arange(i % 5, dtype=np.int64),
        "text": f"s{i}",
        "raw": bytes([i % 256]) * (i % 3),
    }


@pytest.fixture(scope="module")
def cluster() -> object:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ray")
    tfrec.data.write_dataset([sample(i) for i in range(60)], root / "train", FEATURES, num_shards=3)
    return root


def by_text(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return sorted(rows, key=lambda row: int(str(row["text"])[1:]))


def test_read_with_features_gives_typed_arrow_blocks(cluster: object, shards: Path) -> None:
    ds = tfrec_ray.read_tfrecords(shards / "train-*.tfrecord", features=FEATURES)
    schema = ds.schema().base_schema
    assert "tensor" in type(schema.field("image").type).__name__.lower()
    assert schema.field("tokens").type == pa.list_(pa.int64())
    assert schema.field("raw").type == pa.binary()
    assert schema.field("text").type == pa.string()
    assert schema.field("label").type == pa.int64()
    rows = by_text(ds.take_all())
    assert len(rows) == 60
    for i, row in enumerate(rows):
        want = sample(i)
        np.testing.assert_array_equal(row["image"], want["image"])
        np.testing.assert_array_equal(row["tokens"], want["tokens"])
        assert (row["label"], row["text"], row["raw"]) == (want["label"], f"s{i}", want["raw"])


def test_read_without_features_uses_the_saved_features_json(cluster: object, tmp_path: Path) -> None:
    tfrec.data.write_dataset([sample(i) for i in range(10)], tmp_path / "train", FEATURES, num_shards=2)
    FEATURES.save(tmp_path)
    (tmp_path / "dataset_info.json").write_text("{}")
    ds = tfrec_ray.read_tfrecords(tmp_path)  # a directory: sidecars are not read as records
    assert ds.count() == 10
    row = by_text(ds.take_all())[3]
    assert row["image"].shape == (2, 3)


def test_read_infers_a_schema_from_a_sample(cluster: object, tmp_path: Path) -> None:
    emb = np.ones(4, np.float32)
    records = [tfrec.encode_example({"id": i, "emb": emb * i, "name": b"n"}) for i in range(20)]
    tfrec.write_records(tmp_path / "part.tfrecord-00000-of-00001", records)  # a tfds shard name
    ds = tfrec_ray.read_tfrecords(str(tmp_path / "part.tfrecord-00000-of-00001"))
    schema = ds.schema().base_schema
    assert set(schema.names) == {"id", "emb", "name"}
    rows = sorted(ds.take_all(), key=lambda row: row["id"])
    assert [row["id"] for row in rows] == list(range(20))
    np.testing.assert_array_equal(rows[7]["emb"], emb * 7)


def test_spec_and_column_projection_never_decode_other_features(cluster: object, tmp_path: Path) -> None:
    # "bad" holds floats where the spec says int64: only decoding it fails.
    records = [tfrec.encode_example({"id": i, "bad": np.float32(1.5)}) for i in range(8)]
    tfrec.write_records(tmp_path / "beam-00000-of-00001", records)  # a Beam shard name
    spec = {"id": tfrec.FixedLenFeature([], tfrec.int64), "bad": tfrec.FixedLenFeature([], tfrec.int64)}
    ds = tfrec_ray.read_tfrecords(str(tmp_path / "beam-*"), features=spec, columns=["id"])
    assert ds.schema().names == ["id"]
    assert sorted(row["id"] for row in ds.take_all()) == list(range(8))
    with pytest.raises(tfrec.DecodeError, match="bad"):
        tfrec_ray.read_tfrecords(str(tmp_path / "beam-*"), features=spec).take_all()


def test_unknown_column_is_a_schema_error(cluster: object, shards: Path) -> None:
    with pytest.raises(tfrec.SchemaError, match="nope"):
        tfrec_ray.read_tfrecords(shards, features=FEATURES, columns=["nope"])


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_shards(cluster: object, tmp_path: Path, compression: str) -> None:
    tfrec.data.write_dataset(
        [sample(i) for i in range(12)], tmp_path / "c", FEATURES, num_shards=2, compression=compression
    )
    ds = tfrec_ray.read_tfrecords(tmp_path / "c-*", features=FEATURES, columns=["text"])
    assert sorted(row["text"] for row in ds.take_all()) == sorted(f"s{i}" for i in range(12))


def test_a_damaged_record_reaches_the_driver_with_its_place(cluster: object, tmp_path: Path) -> None:
    path = tmp_path / "bad.tfrecord"
    records = [tfrec.encode_example({"id": i}) for i in range(5)]
    tfrec.write_records(path, records)
    data = bytearray(path.read_bytes())
    offset = sum(16 + len(r) for r in records[:3])
    data[offset + 12] ^= 0xFF  # the data of record 3
    path.write_bytes(bytes(data))
    spec = {"id": tfrec.FixedLenFeature([], tfrec.int64)}
    with pytest.raises(tfrec.ChecksumError) as caught:
        tfrec_ray.read_tfrecords(str(path), features=spec).take_all()
    message = str(caught.value)
    assert str(path) in message and "record 3" in message and f"offset {offset}" in message
    skipped = tfrec_ray.read_tfrecords(str(path), features=spec, on_error="skip").take_all()
    assert sorted(row["id"] for row in skipped) == [0, 1, 2, 4]


def test_decode_errors_name_file_record_and_offset(cluster: object, tmp_path: Path) -> None:
    path = tmp_path / "odd.tfrecord"
    records = [tfrec.encode_example({"id": i}) for i in range(3)] + [tfrec.encode_example({"id": [1, 2]})]
    tfrec.write_records(path, records)
    spec = {"id": tfrec.FixedLenFeature([], tfrec.int64)}
    with pytest.raises(tfrec.DecodeError) as caught:
        tfrec_ray.read_tfrecords(str(path), features=spec).take_all()
    offset = sum(16 + len(r) for r in records[:3])
    assert f"{path}, record 3 (frame at byte offset {offset})" in "\n".join(
        [str(caught.value), *getattr(caught.value, "__notes__", [])]
    )


def test_a_pyarrow_filesystem(cluster: object, shards: Path) -> None:
    fs = pa.fs.SubTreeFileSystem(str(shards), pa.fs.LocalFileSystem())
    ds = tfrec_ray.read_tfrecords("", features=FEATURES, columns=["label"], filesystem=fs)
    assert ds.count() == 60


# -- writing -------------------------------------------------------------------------------------------


def test_write_then_read_back_with_tfrec(cluster: object, shards: Path, tmp_path: Path) -> None:
    ds = tfrec_ray.read_tfrecords(shards, features=FEATURES)
    paths = tfrec_ray.write_tfrecords(ds, tmp_path / "out" / "train", FEATURES, num_shards=4)
    assert [os.path.basename(p) for p in paths] == [f"train-{i:05d}-of-00004.tfrecord" for i in range(4)]
    assert sorted(os.listdir(tmp_path / "out")) == sorted(["features.json", *map(os.path.basename, paths)])
    assert FeaturesDict.load(tmp_path / "out") == FEATURES
    got = [FEATURES.deserialize_example(r) for p in paths for r in tfrec.read_records(p)]
    got.sort(key=lambda row: int(row["text"][1:]))
    assert len(got) == 60
    for i, row in enumerate(got):
        np.testing.assert_array_equal(row["image"], sample(i)["image"])
        np.testing.assert_array_equal(row["tokens"], sample(i)["tokens"])
        assert row["raw"] == sample(i)["raw"]


def test_write_infers_features_from_the_arrow_schema(cluster: object, tmp_path: Path) -> None:
    ds = ray.data.from_items([{"id": i, "emb": np.full(3, i, np.float32), "name": f"n{i}"} for i in range(9)])
    paths = tfrec_ray.write_tfrecords(ds, tmp_path / "x", compression="gzip")
    assert all(p.endswith(".tfrecord.gz") for p in paths)
    saved = FeaturesDict.load(tmp_path)
    rows = [saved.deserialize_example(r) for p in paths for r in tfrec.read_records(p)]
    rows.sort(key=lambda r: r["id"])
    assert [r["id"] for r in rows] == list(range(9))
    np.testing.assert_array_equal(rows[4]["emb"], np.full(3, 4, np.float32))
    assert rows[4]["name"] == "n4"


def test_a_failed_write_leaves_no_shard(cluster: object, tmp_path: Path) -> None:
    ds = ray.data.from_items([{"label": 1}, {"label": 7}])  # 7 is no class of 3
    features = FeaturesDict({"label": ClassLabel(num_classes=3)})
    with pytest.raises(tfrec.EncodeError):
        tfrec_ray.write_tfrecords(ds, tmp_path / "fail", features, num_shards=2)
    assert os.listdir(tmp_path) == []


def test_write_refuses_an_earlier_set_then_replaces_it_whole(cluster: object, tmp_path: Path) -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    wine = datasets.load_wine(as_frame=True).frame[["alcohol", "target"]]
    ds = ray.data.from_items(wine.to_dict("records"))
    prefix = tmp_path / "wine"
    tfrec_ray.write_tfrecords(ds, prefix, num_shards=3)
    with pytest.raises(tfrec.OutputExistsError, match=r"wine-00000-of-00003\.tfrecord.*overwrite=True"):
        tfrec_ray.write_tfrecords(ds, prefix, num_shards=2)
    paths = tfrec_ray.write_tfrecords(ds, prefix, num_shards=2, overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["features.json", *sorted(map(os.path.basename, paths))]
    assert sum(1 for p in paths for _ in tfrec.read_records(p)) == len(wine)
