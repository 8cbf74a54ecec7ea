"""Global shuffle: a keyed permutation of every record per epoch, shared exactly, resumed elastically."""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data import ShardOptions, TFRecordDataset
from tfrec.data.sharding.permutation import KeyedPermutation
from tfrec.errors import DatasetStateError, InvalidArgumentError

SPEC = {"id": tfrec.FixedLenFeature([], tfrec.int64)}
FILES, PER_FILE = 12, 250  # 3000 records; record n of file f has id f * 1000 + n


def ids(batches: list[Any]) -> list[int]:
    return [int(i) for b in batches for i in np.atleast_1d(b["id"])]


def halve_id(example: dict[str, Any]) -> dict[str, Any]:
    return {"id": example["id"] // 2}


def write_shards(
    directory: Path, files: int = FILES, per_file: int = PER_FILE, index: bool = True
) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in range(files):
        path = directory / f"train-{f:05d}-of-{files:05d}.tfrecord"
        tfrec.write_records(path, [tfrec.encode_example({"id": f * 1000 + n}) for n in range(per_file)])
        if index:
            tfrec.build_index(path)
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return write_shards(tmp_path_factory.mktemp("global"))


ALL = sorted(f * 1000 + n for f in range(FILES) for n in range(PER_FILE))


def dataset(shards: list[str], **options: Any) -> TFRecordDataset:
    return TFRecordDataset(shards, spec=SPEC, seed=options.pop("seed", 7), **options).global_shuffle()


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


# -- the permutation ------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 5000), seed=st.integers(0, 2**63 - 1), epoch=st.integers(0, 1000))
def test_keyed_permutation_is_a_permutation_of_every_size(size: int, seed: int, epoch: int) -> None:
    values = KeyedPermutation(size, (seed, epoch))(np.arange(size))
    assert sorted(values.tolist()) == list(range(size))


def test_keyed_permutation_is_a_pure_function_of_its_key() -> None:
    positions = np.array([5, 0, 999, 17])
    assert (
        KeyedPermutation(1000, (1, 2))(positions).tolist()
        == KeyedPermutation(1000, (1, 2))(np.arange(1000))[positions].tolist()
    )
    assert not np.array_equal(
        KeyedPermutation(1000, (1, 2))(np.arange(1000)), KeyedPermutation(1000, (1, 3))(np.arange(1000))
    )


# -- an epoch -------------------------------------------------------------------------------------------


def test_an_epoch_is_a_record_level_permutation_of_every_shard(shards: list[str]) -> None:
    order = ids(list(dataset(shards).batch(100)))
    assert sorted(order) == ALL  # every record, once
    files = np.array(order) // 1000
    assert len(set(files[: len(order) // 10].tolist())) >= FILES - 1  # the first tenth draws from all
    assert abs(spearman(np.arange(len(order)), files)) < 0.1  # no correlation with file order
    assert abs(spearman(np.arange(len(order)), np.array(order) % 1000)) < 0.1  # nor with record order


def test_each_epoch_has_its_own_order_and_a_seed_repeats_it(shards: list[str]) -> None:
    ds = dataset(shards).batch(64)
    first = ids(list(ds))
    assert ids(list(ds)) == first  # the same epoch again
    ds.set_epoch(1)
    second = ids(list(ds))
    assert sorted(second) == ALL and second != first
    assert ids(list(dataset(shards, seed=8).batch(64))) != first


def test_repeat_makes_new_epochs(shards: list[str]) -> None:
    both = ids(list(dataset(shards).batch(500).repeat(2)))
    assert sorted(both[: len(ALL)]) == ALL and sorted(both[len(ALL) :]) == ALL
    assert both[: len(ALL)] != both[len(ALL) :]


def test_without_batch_records_come_one_by_one_in_the_same_order(shards: list[str]) -> None:
    assert ids(list(dataset(shards))) == ids(list(dataset(shards).batch(10)))


def test_groups_read_ahead_in_a_thread_only_once_a_read_waited(
    shards: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A group read that did not wait (wall time within WAITED times its CPU time; here, any) keeps the
    # epoch reading where the records are used; one that waited (any, with WAITED 0) turns the thread on.
    from tfrec.data.pipeline import global_order

    seen: list[bool] = []
    pull = global_order.GlobalOrderRecords.pull

    def spy(self: global_order.GlobalOrderRecords) -> list[bytes]:
        out = pull(self)
        seen.append(self.executor is not None)
        return out

    monkeypatch.setattr(global_order, "READ_AHEAD_RECORDS", 300)  # several groups an epoch
    monkeypatch.setattr(global_order.GlobalOrderRecords, "pull", spy)
    monkeypatch.setattr(global_order, "WAITED", float("inf"))
    here = ids(list(dataset(shards).batch(100)))
    assert sorted(here) == ALL and seen and not any(seen)
    monkeypatch.setattr(global_order, "WAITED", 0.0)
    seen.clear()
    assert ids(list(dataset(shards).batch(100))) == here  # the very same order
    assert all(seen)


def test_reading_processes_give_the_very_same_order(shards: list[str]) -> None:
    alone = ids(list(dataset(shards).batch(32)))
    assert ids(list(dataset(shards, num_workers=2).batch(32))) == alone
    assert ids(list(dataset(shards, num_workers=3).map(halve_id).batch(32))) == [i // 2 for i in alone]


def test_ranks_share_the_epoch_each_record_once(shards: list[str]) -> None:
    seen: Counter[int] = Counter()
    for rank in range(3):
        got = ids(list(dataset(shards, num_workers=2, shard_options=ShardOptions(shard=(rank, 3))).batch(50)))
        assert len(got) == len(ALL) // 3
        seen.update(got)
    assert sorted(seen) == ALL and set(seen.values()) == {1}


def test_existing_steps_work_over_a_global_order(shards: list[str]) -> None:
    got = ids(list(dataset(shards).shuffle(100).map(halve_id).filter(lambda x: x["id"] % 2 == 0).batch(16)))
    assert sorted(got) == sorted(i // 2 for i in ALL if (i // 2) % 2 == 0)
    assert len(ids(list(dataset(shards).batch(1000, drop_remainder=True)))) == 3000
    assert len(ids(list(dataset(shards).batch(7, drop_remainder=True)))) == 3000 // 7 * 7
    assert ids(list(dataset(shards).take(5))) == ids(list(dataset(shards)))[:5]


def test_persistent_workers_read_each_epoch_once(shards: list[str]) -> None:
    ds = dataset(shards, num_workers=2, persistent_workers=True).batch(100)
    first = ids(list(ds))
    ds.set_epoch(1)
    second = ids(list(ds))
    assert sorted(first) == ALL and sorted(second) == ALL and first != second


def test_files_without_an_index_are_scanned(tmp_path: Path) -> None:
    paths = write_shards(tmp_path, files=3, per_file=40, index=False)
    got = ids(list(TFRecordDataset(paths, spec=SPEC, seed=0).global_shuffle().batch(8)))
    assert sorted(got) == [f * 1000 + n for f in range(3) for n in range(40)]


def test_given_index_paths_are_used(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "d", files=2, per_file=30)
    moved = []
    for path in paths:
        target = tmp_path / (Path(path).name + ".index")
        Path(path + ".idx").rename(target)
        moved.append(str(target))
    sharding = ShardOptions(index_paths=moved)
    got = ids(list(TFRecordDataset(paths, spec=SPEC, shard_options=sharding).global_shuffle()))
    assert sorted(got) == [f * 1000 + n for f in range(2) for n in range(30)]


@pytest.mark.parametrize(
    "options",
    [{"shuffle_files": True}, {"cycle_length": 2}, {"shard_options": ShardOptions(shard_by="files")}],
)
def test_options_about_files_are_refused_with_a_global_order(shards: list[str], options: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=r"global_shuffle\(\) reads records at random, not files"):
        TFRecordDataset(shards, **options).global_shuffle()


def test_a_global_shuffle_comes_first_and_skips_nothing(shards: list[str]) -> None:
    with pytest.raises(InvalidArgumentError, match=r"global_shuffle\(\) comes first"):
        TFRecordDataset(shards).batch(2).global_shuffle()
    with pytest.raises(InvalidArgumentError, match="on_error='skip'"):
        TFRecordDataset(shards, read_options=tfrec.ReadOptions(on_error="skip")).global_shuffle()
    assert repr(dataset(shards).batch(2)).endswith(
        ".global_shuffle().batch(2, drop_remainder=False, pad=False)"
    )


def test_remote_files_are_refused_with_a_global_order() -> None:
    fsspec = pytest.importorskip("fsspec")
    fsspec.filesystem("memory").pipe("/global-bucket/a.tfrecord", b"")
    with pytest.raises(InvalidArgumentError, match="is a URL"):
        TFRecordDataset(["memory://global-bucket/a.tfrecord"]).global_shuffle()


def test_file_urls_are_local_files(tmp_path: Path) -> None:
    paths = write_shards(tmp_path, files=2, per_file=10)
    got = ids(list(TFRecordDataset([f"file://{p}" for p in paths], spec=SPEC).global_shuffle()))
    assert sorted(got) == [f * 1000 + n for f in range(2) for n in range(10)]


def test_a_compressed_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord.gz"
    tfrec.write_records(path, [b"x"], compression="gzip")
    with pytest.raises(tfrec.TfrecError, match="compress"):
        list(TFRecordDataset(path).global_shuffle())


# -- resuming -------------------------------------------------------------------------------------------


def stopped(ds: TFRecordDataset, batches: int) -> tuple[list[int], dict[str, Any]]:
    it = iter(ds)
    head = ids([next(it) for _ in range(batches)])
    state = pickle.loads(pickle.dumps(it.state()))
    it.close()
    return head, state


@pytest.mark.parametrize("cut", [0, 5, 94])
@pytest.mark.parametrize("resumed_workers", [0, 4])
def test_a_state_of_two_processes_resumes_with_any_number(
    shards: list[str], cut: int, resumed_workers: int
) -> None:
    whole = ids(list(dataset(shards).batch(32)))
    head, state = stopped(dataset(shards, num_workers=2).batch(32), cut)
    assert head == whole[: len(head)]
    rest = ids(list(dataset(shards, num_workers=resumed_workers).batch(32).resume(state)))
    assert head + rest == whole  # every remaining record once, none seen again, in the epoch's order


@pytest.mark.parametrize("saved_workers", [0, 3])
def test_states_move_between_process_counts_also_with_map_and_prefetch(
    shards: list[str], saved_workers: int
) -> None:
    def make(workers: int) -> TFRecordDataset:
        return dataset(shards, num_workers=workers).map(halve_id).batch(20).prefetch(2)

    whole = ids(list(make(0)))
    head, state = stopped(make(saved_workers), 17)
    for workers in (0, 1, 2, 4):
        assert head + ids(list(make(workers).with_state(state))) == whole


def test_a_state_after_the_last_batch_resumes_to_nothing(shards: list[str]) -> None:
    ds = dataset(shards, num_workers=2).batch(1000)
    head, state = stopped(ds, 3)
    assert sorted(head) == ALL
    assert list(dataset(shards, num_workers=4).batch(1000).resume(state)) == []
    assert list(dataset(shards).batch(1000).resume(state)) == []


def test_records_pending_in_the_iterator_move_too(shards: list[str]) -> None:
    whole = ids(list(dataset(shards)))
    head, state = stopped(dataset(shards, num_workers=2), 300)  # mid-chunk: the rest of it is pending
    assert head + ids(list(dataset(shards, num_workers=3).resume(state))) == whole


def test_steps_that_hold_elements_resume_only_with_the_same_processes(shards: list[str]) -> None:
    def make(workers: int) -> TFRecordDataset:
        return dataset(shards, num_workers=workers).shuffle(50).batch(10)

    whole = ids(list(make(2)))
    head, state = stopped(make(2), 33)
    assert head + ids(list(make(2).resume(state))) == whole
    with pytest.raises(DatasetStateError, match="num_workers"):
        make(0).resume(state)


def test_a_state_from_another_rank_count_or_seed_is_refused(shards: list[str]) -> None:
    _, state = stopped(dataset(shards).batch(10), 3)
    ranks = ShardOptions(shard=(0, 2))
    with pytest.raises(DatasetStateError, match="global"):
        dataset(shards, shard_options=ranks).batch(10).resume(state)
    with pytest.raises(DatasetStateError, match="ops"):
        dataset(shards).batch(11).resume(state)
    plain = TFRecordDataset(shards, spec=SPEC, seed=7).batch(10)  # no global shuffle
    with pytest.raises(DatasetStateError):
        plain.resume(state)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["pipeline"]["up"].update(next=10**6), r"pipeline\.up\.next \(reading in global order\)"),
        (lambda s: s["pipeline"]["up"].update(next=-1), r"pipeline\.up\.next"),
        (lambda s: s["pipeline"]["up"].update(extra=1), "unknown extra"),
        (lambda s: s["pipeline"].update(pending=[1]), r"pipeline\.pending"),
        (lambda s: s["fingerprint"].__setitem__(4, "two"), r"fingerprint\[4\]"),
    ],
)
def test_tampered_states_are_refused_naming_the_field(shards: list[str], edit: Any, message: str) -> None:
    _, state = stopped(dataset(shards).batch(10), 3)
    edit(state)
    with pytest.raises(DatasetStateError, match=message):
        dataset(shards, num_workers=2).batch(10).resume(state)


def test_tampered_process_states_are_refused_before_they_move(shards: list[str]) -> None:
    _, state = stopped(dataset(shards, num_workers=2).batch(10), 5)
    state["pipeline"]["workers"][0]["up"]["next"] = 10**6
    with pytest.raises(DatasetStateError, match=r"workers\[0\]\.up\.next"):
        dataset(shards).batch(10).resume(state)


def test_process_states_that_disagree_with_their_pull_counts_are_refused(shards: list[str]) -> None:
    _, state = stopped(dataset(shards, num_workers=2).batch(10), 5)
    state["pipeline"]["pulls"][1] += 1
    with pytest.raises(DatasetStateError, match="pulls"):
        dataset(shards, num_workers=3).batch(10).resume(state)


def test_two_ranks_times_two_dataloader_workers_read_every_record_once(shards: list[str]) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from tfrec.torch import TFRecordIterableDataset

    seen: Counter[int] = Counter()
    for rank in range(2):
        ds = TFRecordIterableDataset(dataset(shards, shard_options=ShardOptions(shard=(rank, 2))).batch(25))
        got = [int(i) for batch in DataLoader(ds, batch_size=None, num_workers=2) for i in batch["id"]]
        assert len(got) == len(ALL) // 2
        seen.update(got)
    assert sorted(seen) == ALL and set(seen.values()) == {1}


def test_dataloader_workers_hand_out_the_ranks_order(shards: list[str]) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from tfrec.torch import TFRecordIterableDataset

    ds = TFRecordIterableDataset(dataset(shards).batch(40))
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    got = [int(i) for batch in loader for i in batch["id"]]
    assert got == ids(list(dataset(shards).batch(40)))  # chunks alternate between the workers, in order
    assert [int(i) for batch in loader for i in batch["id"]] == got


# -- a state from a count of batches (what a DataLoader knows) ------------------------------------------


@pytest.mark.parametrize("taken", [0, 7, 30])
@pytest.mark.parametrize("resumed_workers", [0, 3])
def test_a_state_after_some_batches_resumes_with_any_number_of_processes(
    shards: list[str], taken: int, resumed_workers: int
) -> None:
    whole = ids(list(dataset(shards).batch(100)))
    state = pickle.loads(pickle.dumps(dataset(shards, num_workers=2).batch(100).state_after(taken)))
    rest = ids(list(dataset(shards, num_workers=resumed_workers).batch(100).with_state(state)))
    assert whole[: taken * 100] + rest == whole


def test_a_state_after_some_batches_keeps_its_epoch_and_moves_on_from_where_it_starts(
    shards: list[str],
) -> None:
    ds = dataset(shards).map(halve_id).batch(64).prefetch(2)
    ds.set_epoch(4)
    whole = ids(list(ds))
    resumed = dataset(shards).map(halve_id).batch(64).prefetch(2).with_state(ds.state_after(10))
    assert resumed.state_after(5)["batches"] == 15 and resumed.state_after(5)["epoch"] == 4
    assert ids(list(resumed)) == whole[640:]
    with pytest.raises(DatasetStateError, match="go beyond the epoch"):
        resumed.state_after(len(ALL))


@pytest.mark.parametrize("resumed_workers", [0, 2])
def test_a_readers_state_of_a_run_started_after_some_batches_resumes_there(
    shards: list[str], resumed_workers: int
) -> None:
    whole = ids(list(dataset(shards).batch(100)))
    started = dataset(shards, num_workers=2).batch(100).with_state(dataset(shards).batch(100).state_after(4))
    head, state = stopped(started, 5)
    assert head == whole[400:900]
    rest = ids(list(dataset(shards, num_workers=resumed_workers).batch(100).resume(state)))
    assert head + rest == whole[400:]
    state["fingerprint"][1][6] = 10**6
    with pytest.raises(
        DatasetStateError, match=r"fingerprint\[1\]\[6\] \(the rank's chunks before the run\)"
    ):
        dataset(shards).batch(100).resume(state)


def test_without_a_seed_every_dataloader_worker_shares_one_permutation(shards: list[str]) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from tfrec.torch import TFRecordIterableDataset

    unseeded = TFRecordDataset(shards, spec=SPEC).global_shuffle()  # the seed is drawn once, here
    got = [
        int(i)
        for batch in DataLoader(TFRecordIterableDataset(unseeded.batch(25)), batch_size=None, num_workers=2)
        for i in batch["id"]
    ]
    assert sorted(got) == ALL  # each record once: the two workers' copies share the drawn seed
    again = [
        int(i) for batch in TFRecordDataset(shards, spec=SPEC).global_shuffle().batch(25) for i in batch["id"]
    ]
    assert sorted(again) == ALL and again != got  # another dataset, another draw
