"""A set of shards is published whole or visibly incomplete, and readers notice an incomplete ``-of-N`` set
(hardening 2, item 2).

A writer killed inside ``close()`` (SIGKILL at every rename and removal of the publishing step, in a child
process) leaves either the earlier set or the new one whole, or a set with shards missing that
``TFRecordDataset`` / ``expand_paths`` refuse with an error naming them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from childrun import run_child

import tfrec
from tfrec.data import expand_paths, from_tfds_dir, write_dataset, write_tfds_dir
from tfrec.errors import InvalidArgumentError, MissingFileError
from tfrec.features import FeaturesDict

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

# One child forks once per kill point: in the fork, the KILL_AT-th os.replace or os.remove of a published
# name (not a hidden temporary one), counted together, kills the process before it acts.
_KILLS = """
import signal
import tfrec

def _killing(real, target, kill_at, calls):
    def call(*args, **kwargs):
        if not os.path.basename(os.fspath(args[target])).startswith("."):
            calls[0] += 1
            if calls[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return call

outcomes = {}
for kill_at, directory in PLAN:
    pid = os.fork()
    if pid == 0:
        os.chdir(directory)
        calls = [0]
        os.replace = _killing(os.replace, 1, kill_at, calls)
        os.remove = _killing(os.remove, 0, kill_at, calls)
        try:
            work()
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    outcomes[kill_at] = "killed" if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
report(outcomes)
"""


def _records(version: int, count: int) -> list[bytes]:
    return [f"v{version} record {i}".encode() for i in range(count)]


def _run_kills(plan: dict[int, Path], work: str) -> dict[int, bool]:
    """For each ``kill_at: directory``, run ``work`` there, killed at that call; whether it finished."""
    code = f"PLAN = {[(k, str(d)) for k, d in plan.items()]!r}\n{work}\n{_KILLS}"
    child = run_child(code, timeout=120)
    assert child.returncode == 0, child.describe()
    outcomes = {int(k): v for k, v in child.result.items()}
    assert set(outcomes.values()) <= {"killed", 0}, (outcomes, child.describe())
    return {kill_at: outcome == 0 for kill_at, outcome in outcomes.items()}


def _read_all(pattern: str) -> list[bytes]:
    return list(tfrec.TFRecordDataset(pattern))


def test_a_writer_killed_after_some_renames_is_refused_by_readers(tmp_path: Path) -> None:
    # The finding: 10 shards, killed after 2 renames; reading "prefix-*" gave 1,000 of 5,000 records.
    work = (
        "def work():\n    tfrec.write_dataset([b'%d' % i for i in range(5000)], 'out/train', num_shards=10)\n"
    )
    assert _run_kills({3: tmp_path}, work) == {3: False}
    pattern = str(tmp_path / "out" / "train-*")
    with pytest.raises(MissingFileError) as caught:
        _read_all(pattern)
    message = str(caught.value)
    assert "8 of its 10 shards are missing" in message
    assert "train-00002-of-00010.tfrecord" in message and "check_shards=False" in message
    present = expand_paths(pattern, check_shards=False)  # the documented way to read what is there
    assert [os.path.basename(p) for p in present] == [f"train-0000{i}-of-00010.tfrecord" for i in range(2)]
    assert len(list(tfrec.TFRecordDataset(present))) == 1000


@pytest.mark.parametrize("old_shards", [0, 3, 4])
def test_killed_at_every_step_of_close_the_set_is_whole_or_refused(tmp_path: Path, old_shards: int) -> None:
    """An old set of ``old_shards`` (0: none), a new one of 4: each kill reads old, new, or fails."""
    old, new = _records(1, 90), _records(2, 100)
    plan = {kill_at: tmp_path / f"kill{kill_at}" for kill_at in range(1, 20)}
    for directory in plan.values():
        (directory / "out").mkdir(parents=True)
        if old_shards:
            write_dataset(old, directory / "out" / "train", num_shards=old_shards, index=True)
    work = (
        f"def work():\n    tfrec.write_dataset({new!r}, 'out/train', num_shards=4, index=True,"
        " overwrite=True)\n"
    )
    finished = _run_kills(plan, work)
    assert finished[19], "the writer never finished"
    for kill_at, directory in plan.items():
        pattern = str(directory / "out" / "train-*.tfrecord")
        try:
            got = sorted(_read_all(pattern))
        except MissingFileError as exc:
            assert "shards are missing" in str(exc) or "matched no file" in str(exc), exc
            assert not finished[kill_at], kill_at
            continue
        assert got in (sorted(old), sorted(new)), kill_at
        if finished[kill_at]:
            assert got == sorted(new)
            names = sorted(os.listdir(directory / "out"))
            assert names == sorted(
                f"train-0000{i}-of-00004.tfrecord{e}" for i in range(4) for e in ("", ".idx")
            )


def test_rewriting_with_another_shard_count_replaces_the_earlier_set(tmp_path: Path) -> None:
    write_dataset(_records(1, 30), tmp_path / "train", num_shards=4, index=True)
    write_dataset(_records(2, 30), tmp_path / "train", num_shards=2, overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]
    assert sorted(_read_all(str(tmp_path / "train-*"))) == sorted(_records(2, 30))


def test_a_killed_tfds_rewrite_is_not_a_dataset(tmp_path: Path) -> None:
    features = FeaturesDict({"id": tfrec.int64})
    plan = {kill_at: tmp_path / f"kill{kill_at}" for kill_at in range(1, 20)}
    for directory in plan.values():
        samples = [{"id": i} for i in range(40)]
        write_tfds_dir(directory / "toy" / "1.0.0", {"train": samples}, features, name="toy", num_shards=4)
    work = """
from tfrec.features import FeaturesDict
def work():
    features = FeaturesDict({"id": tfrec.int64})
    samples = [{"id": 100 + i} for i in range(40)]
    tfrec.data.write_tfds_dir(
        "toy/1.0.0", {"train": samples}, features, name="toy", num_shards=4, overwrite=True
    )
"""
    finished = _run_kills(plan, work)
    assert finished[19], "the writer never finished"
    for kill_at, directory in plan.items():
        try:
            paths, _ = from_tfds_dir(directory / "toy" / "1.0.0", "train")
        except MissingFileError:
            assert not finished[kill_at]
            continue
        ids = sorted(int(features.deserialize_example(r)["id"]) for p in paths for r in tfrec.read_records(p))
        assert ids in (list(range(40)), list(range(100, 140))), kill_at
        assert finished[kill_at] or ids == list(range(40)), kill_at


def test_a_killed_convert_leaves_a_visibly_incomplete_set(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text("id\n" + "".join(f"{i}\n" for i in range(100)))
    work = (
        "from tfrec.convert import read_csv, write_samples\n"
        "def work():\n"
        "    write_samples(read_csv('in.csv'), 'out/rows', num_shards=5)\n"
    )
    assert _run_kills({3: tmp_path}, work) == {3: False}
    with pytest.raises(MissingFileError, match="3 of its 5 shards are missing"):
        _read_all(str(tmp_path / "out"))  # the directory: features.json is skipped, shards are checked


# -- what readers accept and refuse ---------------------------------------------------------------------


def _touch(directory: Path, *names: str) -> None:
    for name in names:
        tfrec.write_records(directory / name, [name.encode()])


def test_two_shard_counts_of_one_name_are_refused(tmp_path: Path) -> None:
    _touch(tmp_path, *(f"t-0000{i}-of-00002.tfrecord" for i in range(2)))
    _touch(tmp_path, *(f"t-0000{i}-of-00003.tfrecord" for i in range(3)))
    with pytest.raises(InvalidArgumentError, match="2 shard counts") as caught:
        expand_paths(str(tmp_path / "t-*"))
    assert "00002" in str(caught.value) and "00003" in str(caught.value)
    assert len(expand_paths(str(tmp_path / "t-*"), check_shards=False)) == 5
    assert len(expand_paths(str(tmp_path / "t-*-of-00003.tfrecord"))) == 3  # one set: fine


@pytest.mark.parametrize(
    ("present", "pattern", "error"),
    [
        (range(4), "t-*", None),  # a whole set without any marker (TF, tfds, older tfrec): reads
        (range(4), "", None),  # the directory
        ([0, 1, 3], "t-*", "1 of its 4 shards are missing (t-00002-of-00004.tfrecord)"),
        ([0, 1, 3], "", "1 of its 4 shards are missing"),
        ([0, 1, 3], "t-0000[0-1]-of-00004.tfrecord", None),  # the pattern does not reach shard 2
        ([0, 1, 3], "t-00003-of-00004.tfrecord", None),  # a file named on its own
        ([0, 1, 3], "t-{00000..00003}-of-00004.tfrecord", "1 of its 4 shards are missing"),
        ([1], "t-*.tfrecord", "3 of its 4 shards are missing"),
    ],
)
def test_readers_notice_missing_shards_the_pattern_reaches(
    tmp_path: Path, present: list[int], pattern: str, error: str | None
) -> None:
    _touch(tmp_path, *(f"t-0000{i}-of-00004.tfrecord" for i in present))
    (tmp_path / "t-00000-of-00004.tfrecord.idx").write_text("0 20\n")  # one index file: a sidecar
    target = str(tmp_path / pattern)
    if error is None:
        assert len(expand_paths(target)) == len([p for p in expand_paths(target, check_shards=False)])
        return
    with pytest.raises(MissingFileError, match=error.replace("(", r"\(").replace(")", r"\)")):
        expand_paths(target)
    for reader in (tfrec.TFRecordDataset, tfrec.RecordFileSource, tfrec.infer_features):
        with pytest.raises(MissingFileError):
            reader(target)
    assert expand_paths(target, check_shards=False)


def test_tfds_and_beam_names_are_checked_too(tmp_path: Path) -> None:
    _touch(tmp_path, "mnist-train.tfrecord-00000-of-00002", "beam-00001-of-00003")
    with pytest.raises(MissingFileError, match=r"mnist-train\.tfrecord-00001-of-00002"):
        expand_paths(str(tmp_path / "mnist-train.tfrecord-*"))
    with pytest.raises(MissingFileError, match="2 of its 3 shards"):
        expand_paths(str(tmp_path / "beam-*"))


def test_the_message_lists_a_few_missing_shards_and_counts_them_all(tmp_path: Path) -> None:
    _touch(tmp_path, "big-000099-of-100000")
    with pytest.raises(MissingFileError) as caught:
        expand_paths(str(tmp_path / "big-*"))
    message = str(caught.value)
    assert "99999 of its 100000 shards are missing" in message
    assert len(message) < 1000, message
    json.dumps(message)  # plain text
