"""tfrec.torch over indexed files: DataLoader workers and ranks split one file's records, each once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

import tfrec  # noqa: E402
from tfrec.torch import TFRecordIterableDataset  # noqa: E402

SPEC = {"id": tfrec.FixedLenFeature([], tfrec.int64)}


@pytest.fixture(scope="module")
def one_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("torch-ranges") / "only.tfrecord"
    tfrec.write_records(path, [tfrec.encode_example({"id": i}) for i in range(100)])
    tfrec.build_index(path)
    return path


def epoch_ids(loader: DataLoader) -> list[int]:
    return [int(i) for batch in loader for i in batch["id"]]


def test_dataloader_workers_split_one_indexed_file(one_file: Path) -> None:
    ds = TFRecordIterableDataset(one_file, spec=SPEC, shuffle_files=True, batch_size=8, seed=0)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    first = epoch_ids(loader)
    assert sorted(first) == list(range(100))
    ds.set_epoch(1)
    second = epoch_ids(loader)
    assert sorted(second) == list(range(100)) and second != first


def test_ranks_times_dataloader_workers_split_one_indexed_file(one_file: Path) -> None:
    seen: Counter[int] = Counter()
    per_rank = []
    for rank in range(2):
        ds = TFRecordIterableDataset(one_file, spec=SPEC, batch_size=5, shard=(rank, 2))
        ids = epoch_ids(DataLoader(ds, batch_size=None, num_workers=2))
        per_rank.append(len(ids))
        seen.update(ids)
    assert sorted(seen) == list(range(100)) and set(seen.values()) == {1}
    assert per_rank == [50, 50]


def test_without_an_index_too_many_workers_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "only.tfrecord"
    tfrec.write_records(path, [tfrec.encode_example({"id": i}) for i in range(10)])
    ds = TFRecordIterableDataset(path, spec=SPEC, batch_size=4)
    with pytest.raises(tfrec.ShardingError, match=r"has no index .*only\.tfrecord\.idx does not exist"):
        list(DataLoader(ds, batch_size=None, num_workers=2))
