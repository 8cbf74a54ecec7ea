"""tfrec.torch with a real DataLoader: every record once per epoch, shuffles per epoch and seed, ranks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

import tfrec  # noqa: E402
from tfrec.torch import TFRecordIterableDataset, to_torch  # noqa: E402

SIZES = [37, 50, 23, 61, 44, 30]
SPEC = {"id": tfrec.FixedLenFeature([], tfrec.int64), "raw": tfrec.FixedLenFeature([], tfrec.string)}


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("torch")
    for n, size in enumerate(SIZES):
        records = [tfrec.encode_example({"id": n * 1000 + i, "raw": b"x"}) for i in range(size)]
        tfrec.write_records(directory / f"part-{n:05d}.tfrecord", records)
    return directory


ALL_IDS = sorted(n * 1000 + i for n, size in enumerate(SIZES) for i in range(size))


def epoch_ids(loader: DataLoader) -> list[int]:
    return [int(i) for batch in loader for i in batch["id"]]


def test_dataloader_workers_read_every_record_once(shards: Path) -> None:
    ds = TFRecordIterableDataset(shards, spec=SPEC, shuffle_files=True, shuffle_buffer=64, batch_size=16,
                                 seed=0, output="torch")  # fmt: skip
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    first = epoch_ids(loader)
    assert sorted(first) == ALL_IDS
    batch = next(iter(loader))
    assert isinstance(batch["id"], torch.Tensor) and batch["id"].dtype == torch.int64
    assert batch["raw"].tolist()[:1] == [b"x"]  # bytes stay bytes
    assert epoch_ids(loader) == first  # same epoch, same seed: same order
    ds.set_epoch(1)
    second = epoch_ids(loader)
    assert sorted(second) == ALL_IDS and second != first
    other_seed = TFRecordIterableDataset(shards, spec=SPEC, shuffle_files=True, shuffle_buffer=64,
                                         batch_size=16, seed=1)  # fmt: skip
    assert epoch_ids(DataLoader(other_seed, batch_size=None, num_workers=2)) != first


def test_dataloader_batching_per_example(shards: Path) -> None:
    ds = TFRecordIterableDataset(shards, spec={"id": SPEC["id"]}, seed=0)
    ids = [int(i) for batch in DataLoader(ds, batch_size=10, num_workers=2) for i in batch["id"]]
    assert sorted(ids) == ALL_IDS


@pytest.mark.parametrize("workers", [0, 2])
def test_two_simulated_ranks_split_the_records(shards: Path, workers: int) -> None:
    seen: Counter[int] = Counter()
    for rank in range(2):
        ds = TFRecordIterableDataset(shards, spec=SPEC, shuffle_files=True, shuffle_buffer=32, batch_size=8,
                                     seed=5, shard_options=tfrec.ShardOptions(shard=(rank, 2)))  # fmt: skip
        ds.set_epoch(3)
        seen.update(epoch_ids(DataLoader(ds, batch_size=None, num_workers=workers)))
    assert sorted(seen) == ALL_IDS and set(seen.values()) == {1}


def test_ranks_from_the_environment(shards: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        ds = TFRecordIterableDataset(shards, spec=SPEC, batch_size=8, seed=5)
        seen += epoch_ids(DataLoader(ds, batch_size=None, num_workers=2))
    assert sorted(seen) == ALL_IDS


def test_too_many_readers_is_a_clear_error(shards: Path) -> None:
    ds = TFRecordIterableDataset(
        shards, spec=SPEC, shard_options=tfrec.ShardOptions(shard=(0, 4)), batch_size=8
    )
    with pytest.raises(tfrec.TfrecError, match=r"6 file\(s\) cannot be split among 8 readers"):
        list(DataLoader(ds, batch_size=None, num_workers=2))


def test_a_configured_dataset_and_options_do_not_mix(shards: Path) -> None:
    ds = tfrec.data.TFRecordDataset(shards).batch(4)
    assert sum(len(b) for b in TFRecordIterableDataset(ds)) == sum(SIZES)
    with pytest.raises(tfrec.TfrecError, match="already configured"):
        TFRecordIterableDataset(ds, batch_size=3)
    with pytest.raises(tfrec.TfrecError, match="output"):
        TFRecordIterableDataset(shards, output="jax")


def test_to_torch_converts_numbers_only() -> None:
    out = to_torch({"a": np.arange(3), "b": np.array([b"x"], dtype=object), "c": (np.float32(2.5),)})
    assert torch.equal(out["a"], torch.arange(3))
    assert out["b"].tolist() == [b"x"]
    assert out["c"][0].dtype == torch.float32 and float(out["c"][0]) == 2.5


def test_a_checksum_error_in_a_worker_reaches_the_user_as_a_checksum_error(tmp_path: Path) -> None:
    for name in ("a", "b"):  # a file per worker
        tfrec.write_records(tmp_path / f"{name}.tfrecord", [tfrec.encode_example({"id": i, "raw": b"x"})
                                                            for i in range(20)])  # fmt: skip
    path = tmp_path / "b.tfrecord"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    ds = TFRecordIterableDataset(tmp_path, spec={"id": SPEC["id"]}, seed=0)
    with pytest.raises(tfrec.ChecksumError) as info:
        list(DataLoader(ds, batch_size=4, num_workers=2))
    assert str(path) in str(info.value) and "record" in str(info.value)
    assert info.value.path == str(path) and info.value.offset is not None
