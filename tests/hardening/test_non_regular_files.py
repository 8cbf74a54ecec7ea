"""Paths that name FIFOs, devices or symbolic link loops fail fast, never hang (Hardening 2, item 7).

Opening a FIFO blocks until a writer comes, and a device never ends: a FIFO given to read_records,
build_index, read_index or as an index path hung in ``open()``; ``/dev/zero`` as an index was read whole
(gigabytes, then MemoryError); ``tfrec salvage`` on ``/dev/urandom`` or a FIFO never returned; a symlink
loop in a data directory raised a bare OSError. Each case runs in a child process with a time limit.

What was chosen: a *path* must name a regular file wherever records are read by path, indexed, read at
random or salvaged, and wherever an index file is read (it is then also bounded by its data file's size);
a pipe handed over as a stream object is read as before, since the caller chose to wait on it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from childrun import run_child

import tfrec

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or sys.platform == "win32", reason="POSIX only")

_CALLS = """
import tfrec
from tfrec.cli import main
results = {}
for name, call in CALLS.items():
    try:
        value = eval(call)
        results[name] = "returned " + repr(value)[:60]
    except tfrec.TfrecError as exc:
        results[name] = "TfrecError " + type(exc).__name__ + ": " + str(exc)
    except BaseException as exc:
        results[name] = "OTHER " + type(exc).__name__ + ": " + str(exc)[:200]
report(results)
"""


def _run(calls: dict[str, str], **names: str) -> dict[str, str]:
    preamble = "".join(f"{key} = {value!r}\n" for key, value in names.items()) + f"CALLS = {calls!r}\n"
    child = run_child(preamble + _CALLS, timeout=30, memory=1 << 30)
    assert not child.timed_out and child.returncode == 0, child.describe()
    return child.result  # type: ignore[no-any-return]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    data = tmp_path / "data.tfrecord"
    tfrec.write_records(data, [b"a", b"bc"])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return {"DATA": str(data), "FIFO": str(fifo), "OUT": str(tmp_path / "out.tfrecord")}


def test_a_fifo_path_is_refused_at_once(files: dict[str, str]) -> None:
    results = _run(
        {
            "read_records": "list(tfrec.read_records(FIFO))",
            "build_index": "tfrec.build_index(FIFO)",
            "read_index": "tfrec.read_index(FIFO)",
            "index_path": "tfrec.RecordFileSource(DATA, index_paths=[FIFO])",
            "salvage": "main(['salvage', '-q', FIFO, OUT])",
        },
        **files,
    )
    for name in ("read_records", "build_index", "read_index", "index_path"):
        assert results[name].startswith("TfrecError InvalidArgumentError"), (name, results[name])
        assert f"{files['FIFO']}: " in results[name] and "a FIFO (named pipe)" in results[name], results[name]
    assert "open it and pass the stream" in results["read_records"]
    assert results["salvage"] == "returned 2", results
    assert not os.path.exists(files["OUT"])


def test_devices_are_refused_not_read_whole(files: dict[str, str]) -> None:
    results = _run(
        {
            "read_index": "tfrec.read_index('/dev/zero')",
            "index_path": "tfrec.RecordFileSource(DATA, index_paths=['/dev/zero'])",
            "read_records": "list(tfrec.read_records('/dev/urandom', on_error='skip'))",
            "build_index": "tfrec.build_index('/dev/zero')",
            "salvage": "main(['salvage', '-q', '/dev/urandom', OUT])",
        },
        **files,
    )
    for name in ("read_index", "index_path", "read_records", "build_index"):
        assert results[name].startswith("TfrecError InvalidArgumentError"), (name, results[name])
        assert "a character device" in results[name], results[name]
    assert results["salvage"] == "returned 2", results


def test_an_index_far_larger_than_its_file_is_refused_unread(files: dict[str, str], tmp_path: Path) -> None:
    index = tmp_path / "huge.idx"
    with open(index, "wb") as file:
        file.truncate(4 << 30)  # sparse: 4 GiB of NUL bytes, more than the child may allocate
    results = _run(
        {"index_path": "tfrec.RecordFileSource(DATA, index_paths=[INDEX])"}, INDEX=str(index), **files
    )
    assert results["index_path"].startswith("TfrecError InvalidArgumentError"), results
    assert "more than an index of a" in results["index_path"], results


def test_record_ranges_refuse_a_fifo_or_device_as_index(files: dict[str, str]) -> None:
    split = "tfrec.ShardOptions(shard=(0, 2), shard_by='records', index_paths=[{}])"
    results = _run(
        {
            "fifo": f"list(tfrec.TFRecordDataset([DATA], shard_options={split.format('FIFO')}))",
            "device": f"list(tfrec.TFRecordDataset([DATA], shard_options={split.format(repr('/dev/zero'))}))",
        },
        **files,
    )
    assert results["fifo"].startswith("TfrecError InvalidArgumentError"), results
    assert "a FIFO (named pipe)" in results["fifo"], results
    assert results["device"].startswith("TfrecError InvalidArgumentError"), results
    assert "a character device" in results["device"], results


def test_a_pipe_given_as_a_stream_is_read(files: dict[str, str]) -> None:
    code = """
import threading, tfrec
records = [b"x" * n for n in range(50)]
def write():
    with open(FIFO, "wb") as pipe:
        tfrec.write_records(pipe, records)
writer = threading.Thread(target=write)
writer.start()
with open(FIFO, "rb") as pipe:
    got = list(tfrec.read_records(pipe))
writer.join()
report(got == records)
"""
    child = run_child(f"FIFO = {files['FIFO']!r}\n" + code, timeout=30)
    assert not child.timed_out and child.result is True, child.describe()


def test_a_symlink_loop_in_a_data_directory_is_skipped(tmp_path: Path) -> None:
    directory = tmp_path / "data"
    directory.mkdir()
    tfrec.write_records(directory / "a.tfrecord", [b"a"])
    os.symlink(directory / "loop1", directory / "loop2")
    os.symlink(directory / "loop2", directory / "loop1")
    os.mkfifo(directory / "pipe")
    assert tfrec.data.expand_paths(directory) == [str(directory / "a.tfrecord")]
    assert list(tfrec.TFRecordDataset(directory)) == [b"a"]
    with pytest.raises(tfrec.InvalidArgumentError, match=r"loop1: a loop of symbolic links"):
        list(tfrec.read_records(directory / "loop1"))
