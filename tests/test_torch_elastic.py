"""Elastic resume through a DataLoader: a global shuffle's state from the count of batches it handed out."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

import tfrec  # noqa: E402
from tfrec.data import ShardOptions, TFRecordDataset  # noqa: E402
from tfrec.errors import DatasetStateError, InvalidArgumentError  # noqa: E402
from tfrec.torch import TFRecordIterableDataset  # noqa: E402

SPEC = {"id": tfrec.FixedLenFeature([], tfrec.int64)}
FILES, PER_FILE, BATCH = 6, 50, 16  # 300 records: 19 batches, the last of 12
BATCHES = -(-FILES * PER_FILE // BATCH)
ALL = sorted(f * 1000 + n for f in range(FILES) for n in range(PER_FILE))

# torch warns when a DataLoader has more workers than the machine has cores.
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    directory = tmp_path_factory.mktemp("elastic")
    paths = []
    for f in range(FILES):
        path = directory / f"train-{f:05d}-of-{FILES:05d}.tfrecord"
        tfrec.write_records(path, [tfrec.encode_example({"id": f * 1000 + n}) for n in range(PER_FILE)])
        tfrec.build_index(path)
        paths.append(str(path))
    return paths


def dataset(shards: list[str], **options: Any) -> TFRecordDataset:
    seed = options.pop("seed", 3)
    return TFRecordDataset(shards, spec=SPEC, seed=seed, **options).global_shuffle().batch(BATCH)


def loader_ids(ds: TFRecordIterableDataset, workers: int, batches: int | None = None) -> list[int]:
    """The ids of the first ``batches`` batches (all: None) a DataLoader with ``workers`` hands out."""
    got: list[int] = []
    for n, batch in enumerate(DataLoader(ds, batch_size=None, num_workers=workers)):
        if n == batches:
            break
        got += [int(i) for i in batch["id"]]
    return got


@pytest.fixture(scope="module")
def whole(shards: list[str]) -> list[int]:
    order = loader_ids(TFRecordIterableDataset(dataset(shards)), 0)
    assert sorted(order) == ALL
    return order


# 5: mid-round (worker 1 would give the next batch); 18: the last full round; 19: after the last batch.
@pytest.mark.parametrize("taken", [0, 1, 5, 18, BATCHES])
@pytest.mark.parametrize(("loader_workers", "num_workers"), [(0, 0), (1, 0), (3, 0), (0, 2)])
def test_a_loader_state_resumes_with_any_number_of_loader_workers_and_processes(
    shards: list[str], whole: list[int], taken: int, loader_workers: int, num_workers: int
) -> None:
    ds = TFRecordIterableDataset(dataset(shards))
    head = loader_ids(ds, 2, taken)  # 2 DataLoader workers, stopped after `taken` batches
    assert head == whole[: len(head)]
    state = pickle.loads(pickle.dumps(ds.state_after(taken)))
    resumed = TFRecordIterableDataset(dataset(shards, num_workers=num_workers)).with_state(state)
    rest = loader_ids(resumed, loader_workers)
    assert head + rest == whole  # every record of the epoch once, in the uninterrupted run's order


def test_a_resumed_loader_counts_its_batches_from_where_it_started(
    shards: list[str], whole: list[int]
) -> None:
    first = TFRecordIterableDataset(dataset(shards))
    head = loader_ids(first, 2, 4)
    second = TFRecordIterableDataset(dataset(shards)).with_state(first.state_after(4))
    middle = loader_ids(second, 3, 7)
    third = TFRecordIterableDataset(dataset(shards)).with_state(second.state_after(7))
    assert head + middle + loader_ids(third, 1) == whole


def test_the_next_epoch_after_a_resumed_one_starts_afresh(shards: list[str], whole: list[int]) -> None:
    ds = TFRecordIterableDataset(dataset(shards))
    ds.set_epoch(2)
    epoch2 = loader_ids(ds, 2)
    head = loader_ids(ds, 2, 3)
    resumed = TFRecordIterableDataset(dataset(shards)).with_state(ds.state_after(3))
    assert resumed.epoch == 2
    assert head + loader_ids(resumed, 1) == epoch2
    resumed.set_epoch(3)
    epoch3 = loader_ids(resumed, 2)
    assert sorted(epoch3) == ALL and epoch3 not in (epoch2, whole)


def test_ranks_resume_each_from_its_own_count(shards: list[str]) -> None:
    seen: list[int] = []
    for rank in range(2):
        ranks = ShardOptions(shard=(rank, 2))
        ds = TFRecordIterableDataset(dataset(shards, shard_options=ranks))
        head = loader_ids(ds, 2, 3)
        resumed = TFRecordIterableDataset(dataset(shards, shard_options=ranks)).with_state(ds.state_after(3))
        seen += head + loader_ids(resumed, 3)
    assert sorted(seen) == ALL


@pytest.mark.parametrize(
    ("other", "message"),
    [
        ({"seed": 4}, "seed 3 and this dataset has seed 4"),
        ({"shard_options": ShardOptions(shard=(0, 2))}, "1 rank"),
    ],
)
def test_a_state_for_another_seed_or_rank_count_is_refused(
    shards: list[str], other: dict[str, Any], message: str
) -> None:
    state = TFRecordIterableDataset(dataset(shards)).state_after(3)
    with pytest.raises(DatasetStateError, match=message):
        TFRecordIterableDataset(dataset(shards, **other)).with_state(state)


def test_a_state_of_another_dataset_is_refused(shards: list[str]) -> None:
    state = TFRecordIterableDataset(dataset(shards)).state_after(3)
    with pytest.raises(DatasetStateError, match="another dataset: its files"):
        TFRecordIterableDataset(dataset(shards[:-1])).with_state(state)
    other_batch = TFRecordDataset(shards, spec=SPEC, seed=3).global_shuffle().batch(8)
    with pytest.raises(DatasetStateError, match="another dataset: its reading options, ops"):
        TFRecordIterableDataset(other_batch).with_state(state)
    plain = TFRecordDataset(shards, spec=SPEC, seed=3).batch(BATCH)
    with pytest.raises(DatasetStateError, match="global shuffle's position"):
        TFRecordIterableDataset(plain).with_state(state)


def test_batches_beyond_the_epoch_are_refused(shards: list[str]) -> None:
    ds = TFRecordIterableDataset(dataset(shards))
    with pytest.raises(DatasetStateError, match=f"beyond the epoch: rank 0 of 1 has {BATCHES} batches"):
        ds.state_after(BATCHES + 1)
    resumed = TFRecordIterableDataset(dataset(shards)).with_state(ds.state_after(10))
    with pytest.raises(
        DatasetStateError, match="10 batches after the 10 this dataset starts from go beyond the epoch"
    ):
        resumed.state_after(10)
    state = ds.state_after(10)
    state["batches"] = BATCHES + 1
    with pytest.raises(DatasetStateError, match=r"state\.batches \(batches of rank 0, whose epoch has 19\)"):
        TFRecordIterableDataset(dataset(shards)).with_state(state)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.update(batches=-1), r"state\.batches"),
        (lambda s: s.update(seed="3"), r"state\.seed"),
        (lambda s: s.update(extra=1), "unknown extra"),
        (lambda s: s.pop("ranks"), "missing ranks"),
    ],
)
def test_tampered_loader_states_are_refused_naming_the_field(
    shards: list[str], edit: Any, message: str
) -> None:
    state = TFRecordIterableDataset(dataset(shards)).state_after(2)
    edit(state)
    with pytest.raises(DatasetStateError, match=message):
        TFRecordIterableDataset(dataset(shards)).with_state(state)


def test_a_loader_state_needs_one_batch_and_resumes_only_with_its_seed(shards: list[str]) -> None:
    unbatched = TFRecordDataset(shards, spec=SPEC, seed=3).global_shuffle()
    shuffled = dataset(shards).shuffle(10)
    for ds in (unbatched, shuffled, TFRecordDataset(shards, seed=3).batch(4)):
        with pytest.raises(InvalidArgumentError, match="one batch"):
            TFRecordIterableDataset(ds).state_after(1)
    no_seed = TFRecordDataset(shards, spec=SPEC).global_shuffle().batch(BATCH)  # a seed is drawn for it
    state = TFRecordIterableDataset(no_seed).state_after(1)
    redrawn = TFRecordDataset(shards, spec=SPEC).global_shuffle().batch(BATCH)
    with pytest.raises(DatasetStateError, match="seed"):  # another draw: give a seed to resume elsewhere
        TFRecordIterableDataset(redrawn).with_state(state)
    saved = iter(dataset(shards))
    next(saved)
    with pytest.raises(DatasetStateError, match="iterator's state"):
        TFRecordIterableDataset(dataset(shards).with_state(saved.state())).state_after(1)
    saved.close()
