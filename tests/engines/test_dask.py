"""tfrec.dask on a distributed.LocalCluster (2 workers, 1 thread each), TensorFlow absent."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import tfrec
import tfrec.data
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
import tfrec.dask as tfrec_dask  # noqa: E402

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
        "meta": {"text": Text(), "raw": Tensor(shape=(), dtype=str)},
    }
)


def sample(i: int) -> dict[str, object]:
    return {
        "image": np.full((2, 3), i, np.float32),
        "label": i % 3,
        "tokens": np.arange(i % 5, dtype=np.int64),
        "meta": {"text": f"s{i}", "raw": b"r" * (i % 3)},
    }


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dask")
    samples = [sample(i) for i in range(50)]
    tfrec.data.write_dataset(samples, root / "train", FEATURES, num_shards=3, index=True)
    FEATURES.save(root)
    return root


def test_read_gives_meta_from_the_features_and_every_row(client: object, shards: Path) -> None:
    ddf = tfrec_dask.read_tfrecords(shards)  # a directory with features.json
    assert ddf.npartitions == 3
    assert sorted(ddf.columns) == ["image", "label", "meta/raw", "meta/text", "tokens"]
    assert ddf.dtypes["label"] == np.int64
    assert ddf.dtypes["meta/raw"] == pd.ArrowDtype(pa.binary())
    assert ddf.dtypes["tokens"] == pd.ArrowDtype(pa.list_(pa.int64()))
    frame = ddf.compute()
    assert (frame.dtypes == ddf.dtypes).all()
    frame = frame.sort_values("meta/text", key=lambda s: s.str.slice(1).astype(int)).reset_index(drop=True)
    assert len(frame) == 50
    for i in (0, 7, 49):
        want = sample(i)
        np.testing.assert_array_equal(np.array(frame["image"][i]), want["image"])
        np.testing.assert_array_equal(frame["tokens"][i], want["tokens"])
        assert frame["meta/raw"][i] == want["meta"]["raw"]
        assert frame["label"][i] == want["label"]


def test_projection_and_index_ranges(client: object, shards: Path) -> None:
    ddf = tfrec_dask.read_tfrecords(
        shards / "train-*.tfrecord", FEATURES, columns=["label"], records_per_partition=5
    )
    assert ddf.npartitions == sum(-(-n // 5) for n in (17, 17, 16))
    frame = ddf.compute()
    assert list(frame.columns) == ["label"]
    assert sorted(frame["label"].tolist()) == sorted(i % 3 for i in range(50))


def test_spec_and_a_damaged_shard(client: object, tmp_path: Path) -> None:
    path = tmp_path / "bad.tfrecord"
    records = [tfrec.encode_example({"id": i}) for i in range(4)]
    tfrec.write_records(path, records)
    data = bytearray(path.read_bytes())
    data[-3] ^= 1  # the data CRC of the last record
    path.write_bytes(bytes(data))
    spec = {"id": tfrec.FixedLenFeature([], tfrec.int64)}
    with pytest.raises(tfrec.ChecksumError, match="record 3"):
        tfrec_dask.read_tfrecords(path, spec).compute()
    unchecked = tfrec_dask.read_tfrecords(path, spec, verify_checksums=False).compute()
    assert unchecked["id"].tolist() == [0, 1, 2, 3]


def test_to_tfrecords_one_shard_per_partition(client: object, shards: Path, tmp_path: Path) -> None:
    ddf = tfrec_dask.read_tfrecords(shards)
    paths = tfrec_dask.to_tfrecords(ddf, tmp_path / "out" / "train", FEATURES, compression="gzip")
    assert [os.path.basename(p) for p in paths] == [f"train-{i:05d}-of-00003.tfrecord.gz" for i in range(3)]
    assert sorted(os.listdir(tmp_path / "out")) == sorted(["features.json", *map(os.path.basename, paths)])
    got = [FEATURES.deserialize_example(r) for p in paths for r in tfrec.read_records(p)]
    got.sort(key=lambda row: int(row["meta"]["text"][1:]))
    assert len(got) == 50
    for i, row in enumerate(got):
        np.testing.assert_array_equal(row["image"], sample(i)["image"])
        np.testing.assert_array_equal(row["tokens"], sample(i)["tokens"])
        assert row["meta"]["raw"] == sample(i)["meta"]["raw"]


def test_to_tfrecords_infers_features_from_arrow_backed_meta(client: object, tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "id": np.arange(6, dtype=np.int64),
            "name": pd.array([f"n{i}" for i in range(6)], dtype=pd.ArrowDtype(pa.string())),
        }
    )
    paths = tfrec_dask.to_tfrecords(dd.from_pandas(frame, npartitions=2), tmp_path / "x")
    back = tfrec_dask.read_tfrecords(paths).compute().sort_values("id")
    assert back["id"].tolist() == list(range(6))
    assert back["name"].tolist() == [f"n{i}" for i in range(6)]


def test_a_failed_write_leaves_no_shard(client: object, tmp_path: Path) -> None:
    frame = pd.DataFrame({"label": [1, 2, 9, 0]})
    features = FeaturesDict({"label": ClassLabel(num_classes=3)})
    with pytest.raises(tfrec.EncodeError):
        tfrec_dask.to_tfrecords(dd.from_pandas(frame, npartitions=2), tmp_path / "fail", features)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_records_per_partition_must_be_a_count(shards: Path, bad: object) -> None:
    with pytest.raises(tfrec.InvalidArgumentError, match="records_per_partition"):
        tfrec_dask.read_tfrecords(shards / "train-*.tfrecord", FEATURES, records_per_partition=bad)


def test_to_tfrecords_refuses_an_earlier_set_then_replaces_it_whole(client: object, tmp_path: Path) -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    wine = datasets.load_wine(as_frame=True).frame[["alcohol", "target"]]
    prefix = tmp_path / "wine"
    tfrec_dask.to_tfrecords(dd.from_pandas(wine, npartitions=4), prefix)
    with pytest.raises(tfrec.OutputExistsError, match=r"wine-00000-of-00004\.tfrecord.*overwrite=True"):
        tfrec_dask.to_tfrecords(dd.from_pandas(wine, npartitions=2), prefix)
    paths = tfrec_dask.to_tfrecords(dd.from_pandas(wine, npartitions=2), prefix, overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["features.json", *sorted(map(os.path.basename, paths))]
    assert sum(1 for p in paths for _ in tfrec.read_records(p)) == len(wine)
