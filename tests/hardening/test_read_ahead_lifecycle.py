"""The read-ahead thread of batched reading neither aborts the interpreter at exit nor hangs a fork."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from childrun import run_child

import tfrec


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("ahead") / "x.tfrecord"
    tfrec.write_records(path, [rng.bytes(int(n)) for n in rng.integers(2500, 3500, 8000)])  # 24 MB
    return str(path)


def test_a_reader_left_open_at_exit_lets_the_interpreter_exit_cleanly(big_file: str) -> None:
    # A daemon thread stopped inside a read held the file's lock: finalising the file then
    # aborted the interpreter (exit code 134) in most runs.
    code = f"""
        import tfrec
        batches = tfrec.RecordReader({big_file!r}).batches(1000)
        for _ in range(3):
            next(batches)  # a block is being read ahead; nothing is closed
        report("done")
    """
    for _ in range(3):
        child = run_child(code, timeout=60)
        assert (child.returncode, child.result) == (0, "done"), child.describe()


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_process_forked_while_a_block_is_read_ahead_reads_on_in_the_child(big_file: str) -> None:
    # The read in flight ends before the fork: else the child inherits the file's lock held by a
    # thread that does not exist there, and its next read hangs.
    code = f"""
        import os, tfrec
        batches = tfrec.RecordReader({big_file!r}).batches(1000)
        first = sum(len(next(batches)) for _ in range(3))  # the blocks read ahead are MiBs long by now
        pid = os.fork()
        if pid == 0:
            os._exit(0 if first + sum(map(len, batches)) == 8000 else 3)
        report(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """
    for _ in range(4):
        child = run_child(code, timeout=60)
        assert child.result == 0, child.describe()


@pytest.mark.parametrize("kept", [0, 1, 1_500_000, 2_999_999, 3_000_003])
def test_a_file_that_ends_inside_a_large_record_says_how_many_bytes_are_left(
    tmp_path: Path, kept: int
) -> None:
    # Whatever part of the record the first block read holds (1 MiB here).
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"a" * 100, bytes(3_000_000)])
    path.write_bytes(path.read_bytes()[: 116 + 12 + kept])
    expected = f"the record claims 3000000 bytes of data but the stream ends {kept} bytes after its header"
    with pytest.raises(tfrec.TruncatedRecordError, match=expected) as caught:
        list(tfrec.read_records(path))
    assert (caught.value.index, caught.value.offset) == (1, 116)
    with pytest.raises(tfrec.TruncatedRecordError, match=expected):
        list(tfrec.read_batches(path, 7))


@pytest.fixture(scope="module")
def large_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(6)
    path = tmp_path_factory.mktemp("fill") / "x.tfrecord"
    tfrec.write_records(path, [rng.bytes(100 * 1024) for _ in range(200)])  # 20 MB
    return str(path)


def test_a_reader_of_large_records_left_open_at_exit_lets_the_interpreter_exit(large_file: str) -> None:
    # Spans of 64 records (6.4 MB) are filled in the filler's thread, idle between batches.
    code = f"""
        import threading, tfrec
        batches = tfrec.RecordReader({large_file!r}).batches(64)
        next(batches)
        report([t.name for t in threading.enumerate() if t.name == "tfrec-fill"])
    """
    child = run_child(code, timeout=60)
    assert (child.returncode, child.result) == (0, ["tfrec-fill"]), child.describe()


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_process_forked_between_spans_reads_on_in_the_child(large_file: str) -> None:
    # The child has no copy of the filler's thread: it starts its own. (Only the child reads on: the
    # two processes share the file's offset.)
    code = f"""
        import os, tfrec
        batches = tfrec.RecordReader({large_file!r}).batches(64)
        first = len(next(batches))
        pid = os.fork()
        if pid == 0:
            os._exit(0 if first + sum(map(len, batches)) == 200 else 3)
        report(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """
    child = run_child(code, timeout=60)
    assert child.result == 0, child.describe()


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_process_forked_while_spans_are_read_ahead_reads_on_in_the_child(large_file: str) -> None:
    # Batches of 8 (0.8 MB) are read with the spans of the batches after them, a fill that goes on
    # while a batch is handed out: the fork waits for it to end, the child takes the spans the
    # parent read ahead, then starts a thread of its own for the next fill.
    code = f"""
        import os, tfrec
        batches = tfrec.RecordReader({large_file!r}).batches(8)
        first = sum(len(next(batches)) for _ in range(6))  # past the blocks read ahead at the start
        pid = os.fork()
        if pid == 0:
            os._exit(0 if first + sum(map(len, batches)) == 200 else 3)
        report(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """
    child = run_child(code, timeout=60)
    assert child.result == 0, child.describe()


def test_a_reader_with_spans_read_ahead_left_open_at_exit_lets_the_interpreter_exit(large_file: str) -> None:
    code = f"""
        import tfrec
        batches = tfrec.RecordReader({large_file!r}).batches(8)
        for _ in range(6):
            next(batches)  # a fill of the spans ahead is in flight; nothing is closed
        report("done")
    """
    child = run_child(code, timeout=60)
    assert (child.returncode, child.result) == (0, "done"), child.describe()
