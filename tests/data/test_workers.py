"""Reading processes (num_workers): every record once, fixed order, exact resume, errors, clean stops."""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from datafiles import every_record, stop_and_resume, write_examples, write_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data import ReadOptions, ShardOptions, TFRecordDataset
from tfrec.data.parallel.slots import LEND_LIMIT, PREFIX
from tfrec.errors import ShardingError, WorkerError

SPEC = {"id": tfrec.FixedLenFeature([], tfrec.int64)}


def ids(batches: list[Any]) -> list[int]:
    return [int(i) for b in batches for i in np.atleast_1d(b["id"])]


def double_id(example: dict[str, Any]) -> dict[str, Any]:
    return {"id": example["id"] * 2}


def fail_on_seven(example: dict[str, Any]) -> dict[str, Any]:
    if example["id"] == 7:
        raise KeyError("seven")
    return example


def with_environment(example: dict[str, Any]) -> dict[str, Any]:
    return {"id": example["id"], "env": os.environ.get("TFREC_TEST_WORKER_ENV", "")}


def no_children() -> bool:
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not multiprocessing.active_children()


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("shards")
    write_files(directory, [150, 90, 200, 60, 120], gzip_every=2)
    return directory


def test_every_record_once_per_epoch_in_a_fixed_order(shards: Path) -> None:
    ds = TFRecordDataset(shards, shuffle_files=True, cycle_length=2, num_workers=2, seed=4)
    ds = ds.shuffle(50).batch(16).repeat(2)
    first = list(ds)
    counts = Counter(r for batch in first for r in batch)
    assert sorted(counts) == every_record([150, 90, 200, 60, 120]) and set(counts.values()) == {2}
    assert list(ds) == first
    assert no_children()


def test_resume_continues_exactly_with_processes(shards: Path) -> None:
    ds = (
        TFRecordDataset(shards, shuffle_files=True, cycle_length=2, num_workers=2, seed=1)
        .shuffle(64)
        .batch(10)
    )
    ds = ds.take(30).repeat(2)
    expected = list(ds)
    for cut in (0, 7, 31):
        assert stop_and_resume(ds, cut)[0] == expected, cut
    assert no_children()


def test_a_state_after_every_batch_resumes_exactly(shards: Path) -> None:
    ds = (
        TFRecordDataset(shards, shuffle_files=True, cycle_length=2, num_workers=2, seed=5)
        .shuffle(30)
        .batch(7)
    )
    expected = list(ds)
    it = iter(ds)
    states = []
    for _ in range(len(expected)):
        next(it)
        states.append(it.state())  # each process keeps only the states the consumer may still ask for
    it.close()
    for taken in (1, 2, 9, len(expected) - 1):
        assert list(ds.resume(states[taken - 1])) == expected[taken:], taken
    assert no_children()


def test_decoding_and_map_run_in_the_processes(tmp_path: Path) -> None:
    write_examples(tmp_path, files=3, per_file=20)
    one = TFRecordDataset(tmp_path, spec=SPEC, cycle_length=3, seed=0).map(double_id).batch(8)
    many = TFRecordDataset(tmp_path, spec=SPEC, cycle_length=3, num_workers=3, seed=0).map(double_id).batch(8)
    assert sorted(ids(list(many))) == sorted(ids(list(one))) == sorted(2 * (n * 1000 + i) for n in range(3)
                                                                       for i in range(20))  # fmt: skip
    unbatched = list(TFRecordDataset(tmp_path, spec=SPEC, num_workers=2).take(5))
    assert [int(e["id"]) for e in unbatched] == [0, 1, 2, 3, 4]  # worker 0 first: its first pull


def test_processes_see_the_environment_of_the_moment_the_iterator_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_examples(tmp_path, files=2, per_file=3)
    ds = TFRecordDataset(tmp_path, spec=SPEC, num_workers=2).map(with_environment)
    for value in ("first", "second"):  # the second iterator's processes come from the same fork server
        monkeypatch.setenv("TFREC_TEST_WORKER_ENV", value)
        assert {e["env"] for e in ds} == {value}
    assert no_children()


def test_a_workers_record_error_arrives_with_path_index_offset(tmp_path: Path) -> None:
    paths = write_files(tmp_path, [30, 30])
    data = bytearray(Path(paths[1]).read_bytes())
    offset = 10 * 19 + 10 * 20  # frames of 3-byte records, then of 4-byte ones
    data[offset + 12] ^= 1  # a data byte of record 20
    Path(paths[1]).write_bytes(bytes(data))
    seen: list[bytes] = []
    with pytest.raises(tfrec.ChecksumError) as caught:
        for batch in TFRecordDataset(tmp_path, num_workers=2).batch(4):
            seen += batch
    assert (caught.value.path, caught.value.index, caught.value.offset) == (paths[1], 20, offset)
    assert b"1:19" in seen and b"1:20" not in seen
    assert no_children()


def test_an_unpicklable_or_user_error_still_arrives(tmp_path: Path) -> None:
    write_examples(tmp_path, files=2, per_file=10)
    with pytest.raises(KeyError, match="seven"):
        list(TFRecordDataset(tmp_path, spec=SPEC, num_workers=2).map(fail_on_seven))
    assert no_children()


def test_lambdas_cannot_go_to_spawned_processes(tmp_path: Path) -> None:
    write_files(tmp_path, [3, 3])
    with pytest.raises(tfrec.TfrecError, match="picklable"):
        iter(TFRecordDataset(tmp_path, num_workers=2).map(lambda r: r))
    assert no_children()


def test_stopping_early_ends_the_processes(shards: Path) -> None:
    it = iter(TFRecordDataset(shards, num_workers=2).batch(4))
    next(it)
    pool = it._pool
    assert pool is not None and len(multiprocessing.active_children()) == 2
    del it
    assert no_children()
    it = iter(TFRecordDataset(shards, num_workers=2).batch(4))
    next(it)
    it.close()
    assert no_children()


def test_more_processes_than_files_is_an_error(tmp_path: Path) -> None:
    write_files(tmp_path, [3, 3])
    with pytest.raises(ShardingError, match=r"3 reading processes"):
        iter(TFRecordDataset(tmp_path, num_workers=3))
    assert no_children()


def test_worker_error_pickles() -> None:
    error = pickle.loads(pickle.dumps(WorkerError("reading process 1: boom", worker=1, details="tb")))
    assert (error.worker, error.details, str(error)) == (1, "tb", "reading process 1: boom")


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.integers(0, 120), min_size=4, max_size=6),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 2),
    st.integers(1, 2),
)
def test_any_layout_reads_every_record_once_with_processes(
    sizes: list[int], cycle: int, block: int, workers: int, shards: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write_files(Path(tmp), sizes, gzip_every=3)
        seen: list[bytes] = []
        for shard in range(shards):
            ds = TFRecordDataset(tmp, cycle_length=cycle, read_options=ReadOptions(block_length=block),
                                 num_workers=workers, seed=shard, shuffle_files=True,
                                 shard_options=ShardOptions(shard=(shard, shards)))  # fmt: skip
            ds = ds.shuffle(30).batch(7)
            seen += [r for batch in ds for r in batch]
        counts = Counter(seen)
        assert sorted(counts) == every_record(sizes) and set(counts.values()) <= {1}
    assert no_children()


# -- the shared-memory handoff: large arrays travel through segments that never outlive the pool ----

SHM = Path("/dev/shm")  # where Linux lists POSIX shared memory
needs_shm_listing = pytest.mark.skipif(not SHM.is_dir(), reason="segments are listed in /dev/shm (Linux)")
WIDE_SPEC = {
    "id": tfrec.FixedLenFeature([], tfrec.int64),
    "vec": tfrec.FixedLenFeature([64], tfrec.float32),  # 64 KiB a batch of 256: through shared memory
    "blob": tfrec.FixedLenFeature([], tfrec.string),  # 75 KiB a batch: through shared memory
}


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("wide")
    rng = np.random.default_rng(0)
    for n in range(4):
        records = [
            tfrec.encode_example(
                {"id": n * 1000 + i, "vec": rng.standard_normal(64, np.float32), "blob": rng.bytes(300)}
            )
            for i in range(700)
        ]
        tfrec.write_records(directory / f"wide-{n}.tfrecord", records)
    return directory


def wide_batches(directory: Path, workers: int) -> TFRecordDataset:
    ds = TFRecordDataset(directory, spec=WIDE_SPEC, num_workers=workers, seed=3, shuffle_files=True,
                         cycle_length=2)  # fmt: skip
    return ds.shuffle(100).batch(256)


def fail_on_1005(batch: dict[str, Any]) -> dict[str, Any]:
    if 1005 in batch["id"]:
        raise KeyError("1005")
    return batch


def segments(pool: str) -> list[str]:
    return sorted(p.name for p in SHM.glob(f"{PREFIX}{pool}_*"))


def pool_id(it: Any) -> str:
    return str(it._pool.slots.pool)


def gone(pool: str) -> bool:
    deadline = time.monotonic() + 10
    while segments(pool) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not segments(pool)


def test_batches_through_shared_memory_are_those_of_one_process(wide: Path) -> None:
    one = list(wide_batches(wide, 0))
    through = list(wide_batches(wide, 1))  # one reading process reads as the consumer would, in order
    assert len(through) == len(one) == 11
    for a, b in zip(one, through, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key
            assert b[key].flags.writeable
    two = list(wide_batches(wide, 2))
    assert sorted(ids(two)) == sorted(ids(one))
    assert no_children()


@needs_shm_listing
def test_segments_go_with_the_pool(wide: Path) -> None:
    it = iter(wide_batches(wide, 2))
    next(it)
    pool = pool_id(it)
    assert segments(pool)  # the batches did go through shared memory
    rest = list(it)  # exhausted: closes itself
    assert len(rest) == 11 and segments(pool) == []
    it = iter(wide_batches(wide, 2))
    next(it)
    pool = pool_id(it)
    it.close()  # closed mid-epoch
    assert segments(pool) == []
    it = iter(wide_batches(wide, 2))
    next(it)
    pool = pool_id(it)
    del it  # dropped mid-epoch
    assert gone(pool) and no_children()


def test_batches_are_lent_from_shared_memory_and_their_slots_come_back(wide: Path) -> None:
    one = list(wide_batches(wide, 0))
    it = iter(wide_batches(wide, 1))
    for n, batch in enumerate(it):  # each batch dropped before the next: every slot comes back
        if n < len(one) - 1:  # (the last, short, batch is small enough for the pipe)
            assert not batch["vec"].flags.owndata and batch["vec"].flags.writeable  # a view, no copy
        assert np.array_equal(batch["vec"], one[n]["vec"]) and list(batch["blob"]) == list(one[n]["blob"])
    assert no_children()


def test_batches_kept_are_copied_past_the_lending_limit(wide: Path) -> None:
    one = list(wide_batches(wide, 0))
    kept = list(wide_batches(wide, 1))  # a consumer that keeps everything holds few slots
    lent = [not batch["vec"].flags.owndata for batch in kept[:-1]]  # (the last came by pipe)
    assert lent[:LEND_LIMIT] == [True] * LEND_LIMIT and not any(lent[LEND_LIMIT:])
    for a, b in zip(one, kept, strict=True):
        assert np.array_equal(a["vec"], b["vec"]) and np.array_equal(a["id"], b["id"])


@needs_shm_listing
def test_lent_batches_outlive_the_processes_and_their_segments(wide: Path) -> None:
    expected = [batch["vec"].copy() for batch in wide_batches(wide, 2)]  # same seed: same batches
    it = iter(wide_batches(wide, 2))
    first, second = next(it), next(it)
    pool = pool_id(it)
    assert not first["vec"].flags.owndata
    it.close()
    assert segments(pool) == [] and no_children()  # unlinked while the consumer still maps them
    assert np.array_equal(first["vec"], expected[0]) and np.array_equal(second["vec"], expected[1])
    first["vec"][:] = 0.0  # still writable: the mapping is the batch's own now
    del first, second
    gc.collect()


@needs_shm_listing
def test_segments_go_after_an_error_in_a_process(wide: Path) -> None:
    it = iter(wide_batches(wide, 2).map(fail_on_1005))
    pool = pool_id(it)
    with pytest.raises(KeyError, match="1005"):
        list(it)
    assert segments(pool) == [] and no_children()


@needs_shm_listing
def test_a_killed_process_is_an_error_and_its_segments_go(wide: Path) -> None:
    it = iter(wide_batches(wide, 2))
    next(it)
    pool = pool_id(it)
    os.kill(it._pool.processes[1].process.pid, signal.SIGKILL)
    with pytest.raises(WorkerError, match=r"reading process 1 exited unexpectedly \(exit code -9\)"):
        list(it)
    assert segments(pool) == [] and no_children()


KILLED_CONSUMER = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from test_workers import wide_batches
from pathlib import Path

if __name__ == "__main__":
    for batch in wide_batches(Path({data!r}), 2):  # a whole epoch: the segments are unlinked cleanly
        pass
    it = iter(wide_batches(Path({data!r}), 2))
    next(it)
    print(it._pool.slots.pool, flush=True)
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)  # the consumer dies mid-epoch: its processes clean up
    os.kill(it._pool.processes[0].process.pid, signal.SIGKILL)  # a process dies: the consumer cleans up
    try:
        list(it)
    except Exception as exc:
        print(type(exc).__name__, flush=True)
"""


@needs_shm_listing
@pytest.mark.parametrize("who", ["kill", "worker"])
def test_nothing_is_left_when_a_process_dies(wide: Path, tmp_path: Path, who: str) -> None:
    script = tmp_path / "consumer.py"
    script.write_text(KILLED_CONSUMER.format(tests=str(Path(__file__).parent), data=str(wide)))
    done = subprocess.run([sys.executable, str(script), who], capture_output=True, text=True, timeout=120)
    lines = done.stdout.split()
    assert gone(lines[0])
    if who == "kill":
        assert done.returncode == -signal.SIGKILL
    else:
        assert done.returncode == 0 and lines[1:] == ["WorkerError"]
    assert done.stderr == ""  # the resource tracker found nothing leaked and nothing unregistered twice


def test_a_script_without_a_main_guard_is_told_to_add_one(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import tfrec\n"
        "tfrec.write_records('x.tfrecord', [b'a', b'b'])\n"
        "print(sum(1 for _ in tfrec.TFRecordDataset('x.tfrecord', num_workers=1)))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "WorkerError: reading process 0 exited unexpectedly (exit code 1)" in done.stderr
    assert 'keep its top level behind if __name__ == "__main__":' in done.stderr


def with_pid(example: dict[str, Any]) -> dict[str, Any]:
    return {"id": example["id"], "pid": os.getpid()}


def test_persistent_workers_serve_the_next_iterators_exactly_as_new_ones_would(tmp_path: Path) -> None:
    write_examples(tmp_path, files=4, per_file=30)

    def dataset(persistent: bool) -> TFRecordDataset:
        ds = TFRecordDataset(
            tmp_path,
            spec=SPEC,
            shuffle_files=True,
            num_workers=2,
            seed=5,
            persistent_workers=persistent,
        )
        return ds.map(with_pid).shuffle(40).batch(8)

    kept, fresh = dataset(True), dataset(False)
    runs: dict[bool, list[tuple[list[int], set[int]]]] = {True: [], False: []}
    for epoch in range(3):
        for ds in (kept, fresh):
            ds.set_epoch(epoch)
            it = iter(ds)
            if epoch == 1:  # stopped early: what the processes had on the way must not leak into the next
                next(it)
                it.close()
                it = iter(ds)
            batches = list(it)
            runs[ds is kept].append((ids(batches), {int(p) for b in batches for p in b["pid"]}))
    assert [order for order, _ in runs[True]] == [order for order, _ in runs[False]]
    assert len({frozenset(pids) for _, pids in runs[True]}) == 1  # the same two processes throughout
    assert len({frozenset(pids) for _, pids in runs[False]}) == 3
    pool = kept._idle.kept[1]  # type: ignore[union-attr,index]
    name = pool.slots.pool
    del kept, pool
    gc.collect()
    assert gone(name)


def test_batches_through_reused_slots_are_those_of_one_process(wide: Path) -> None:
    # Slots are reused from epoch to epoch, and blobs of one length go out packed: every epoch of
    # kept processes must still give one process's batches, byte for byte.
    def epochs(workers: int) -> list[list[dict[str, Any]]]:
        ds = TFRecordDataset(wide, spec=WIDE_SPEC, num_workers=workers, seed=3, shuffle_files=True,
                             cycle_length=2, persistent_workers=workers > 0)  # fmt: skip
        ds = ds.shuffle(100).batch(256)
        return [list(ds) for _ in range(3)]

    for one, through in zip(epochs(0), epochs(1), strict=True):
        assert len(one) == len(through) == 11
        for a, b in zip(one, through, strict=True):
            for key in a:
                assert a[key].dtype == b[key].dtype and a[key].tolist() == b[key].tolist(), key
    assert no_children()
