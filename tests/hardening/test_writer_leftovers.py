"""Writers' leftovers and refusals (hardening 2, item 12): one pattern, ``.*.tmp``, for every temporary
file a killed writer leaves; none left after a failure; a TfrecError saying why for a prefix under a
regular file or more shards than open files."""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path

import pytest
from childrun import run_child

import tfrec
from tfrec.data import ShardedWriter, write_dataset, write_tfds_dir
from tfrec.errors import TfrecError
from tfrec.features import FeaturesDict

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits and signals")

LEFTOVERS = ".*.tmp"  # the clean-up pattern README.md documents


@pytest.mark.parametrize("under", ["blocker", "blocker/deeper"])
def test_a_prefix_under_a_regular_file_is_a_tfrec_error(tmp_path: Path, under: str) -> None:
    (tmp_path / "blocker").write_bytes(b"a file, not a directory")
    prefix = tmp_path / under / "train"
    for write in (
        lambda: ShardedWriter(prefix, num_shards=2),
        lambda: write_dataset([b"a"], prefix, max_records=1),
        lambda: write_tfds_dir(
            tmp_path / under / "toy", {"train": [{"id": 1}]}, FeaturesDict({"id": tfrec.int64}), name="toy"
        ),
    ):
        with pytest.raises(TfrecError, match="blocker is a file, not a directory"):
            write()
    assert sorted(os.listdir(tmp_path)) == ["blocker"]


_TOO_MANY_SHARDS = """
import resource, tfrec
resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
try:
    tfrec.ShardedWriter("out/train", num_shards=100_000)
    report({"raised": None})
except tfrec.TfrecError as exc:
    report({"raised": type(exc).__name__, "message": str(exc), "files": os.listdir("out")})
"""


@posix
def test_more_shards_than_open_files_is_a_tfrec_error_that_says_why(tmp_path: Path) -> None:
    child = run_child(_TOO_MANY_SHARDS, cwd=tmp_path)
    assert child.returncode == 0, child.describe()
    outcome = child.result
    assert outcome["raised"] == "InvalidArgumentError", outcome
    assert "num_shards=100000 keeps 100000 files open" in outcome["message"]
    assert "max_records=" in outcome["message"] and "ulimit -n" in outcome["message"]
    assert outcome["files"] == []


# The child writes and is killed: while writing (every shard open), or inside close() once every shard
# and index is complete under its temporary name (at the first rename).
_KILLED = """
import signal, tfrec
writer = tfrec.ShardedWriter("out/train", index=True, **OPTIONS)
writer.write_many(b"%d" % i * 50 for i in range(3000))
if WHEN == "writing":
    os.kill(os.getpid(), signal.SIGKILL)
real_replace = os.replace
def replace(source, target):
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
writer.close()
"""


@posix
@pytest.mark.parametrize("when", ["writing", "closing"])
@pytest.mark.parametrize("options", [{"num_shards": 4}, {"max_records": 1000}])
def test_a_killed_writer_leaves_only_files_the_documented_pattern_matches(
    tmp_path: Path, when: str, options: dict[str, int]
) -> None:
    child = run_child(f"OPTIONS, WHEN = {options!r}, {when!r}\n" + _KILLED, cwd=tmp_path)
    assert child.returncode == -9, child.describe()
    names = os.listdir(tmp_path / "out")
    assert names, "the killed writer left nothing to test"
    assert [name for name in names if not fnmatch.fnmatch(name, LEFTOVERS)] == [], names
    if when == "closing":  # indexes too
        assert any(".idx." in name for name in names), names


# num_shards=4 under a 100 KB file size limit: every shard holds ~190 KB, and the writer's buffers reach
# the files only at close(), so close() fails on the first shard, and abort() on the others.
_DISK_FULL_AT_CLOSE = """
import random, tfrec
rng = random.Random(0)
records = [rng.randbytes(240) for i in range(3000)]  # incompressible: zlib shards are as large
outcome = {}
try:
    if HOW == "writer":
        with tfrec.ShardedWriter("out/train", num_shards=4, compression=COMPRESSION) as writer:
            writer.write_many(records)
    else:
        tfrec.write_dataset(records, "out/train", num_shards=4, compression=COMPRESSION)
    outcome["raised"] = None
except OSError as exc:
    outcome["raised"] = type(exc).__name__
outcome["files"] = sorted(os.listdir("out"))
report(outcome)
"""


@posix
@pytest.mark.parametrize("how", ["writer", "write_dataset"])
@pytest.mark.parametrize("compression", [None, "zlib"])
def test_disk_full_while_closing_leaves_no_temporary_file(
    tmp_path: Path, how: str, compression: str | None
) -> None:
    code = f"HOW, COMPRESSION = {how!r}, {compression!r}\n" + _DISK_FULL_AT_CLOSE
    child = run_child(code, cwd=tmp_path, file_size=100_000)
    assert child.returncode == 0, child.describe()
    assert child.result == {"raised": "OSError", "files": []}


def test_abort_removes_every_temporary_file_even_when_one_removal_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = ShardedWriter(tmp_path / "x", num_shards=3)
    writer.write_many([b"a" * 10] * 9)
    real_remove = os.remove
    refused: list[str] = []

    def remove(path: str) -> None:
        if not refused:
            refused.append(path)
            raise PermissionError(13, "Permission denied (injected)")
        real_remove(path)

    monkeypatch.setattr(os, "remove", remove)
    with pytest.raises(TfrecError, match="could not remove 1 temporary files") as caught:
        writer.abort()
    monkeypatch.undo()
    assert refused[0] in str(caught.value)
    assert os.listdir(tmp_path) == [os.path.basename(refused[0])]
