"""RecordWriter's write-behind thread neither hangs a fork nor the interpreter's exit."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest
from childrun import run_child

# In the child: files opened by RecordWriter write slowly, so that a page is being written (the
# thread holding the file's lock) when the process forks or exits.
_SLOW_FILES = """
import io, os, sys, time, threading, tfrec
class SlowRaw(io.RawIOBase):  # under a BufferedWriter, whose lock is held while it writes
    def __init__(self, fd):
        self.file = io.FileIO(fd, "wb")
    def writable(self):
        return True
    def write(self, data):
        time.sleep(0.05)
        return self.file.write(data)
    def fileno(self):
        return self.file.fileno()
    def close(self):
        self.file.close()
        super().close()
os.fdopen = lambda fd, *a, **k: io.BufferedWriter(SlowRaw(fd))
records = [bytes([i % 256]) * 1000 for i in range(5000)]
def writing():
    return [t for t in threading.enumerate() if t.name == "tfrec-write"]
"""


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_process_forked_while_a_page_is_written_behind_writes_on_in_both(tmp_path: object) -> None:
    # The page in flight is written before the fork: the child inherits no thread holding a lock.
    code = _SLOW_FILES + textwrap.dedent(f"""
        directory = {str(tmp_path)!r}
        writer = tfrec.RecordWriter(os.path.join(directory, "parent.tfrecord"))
        writer.write_many(records[:2500])  # pages handed over; one is being written
        pid = os.fork()
        if pid == 0:
            ok = not writing()
            with tfrec.RecordWriter(os.path.join(directory, "child.tfrecord")) as own:
                own.write_many(records)
            ok = ok and list(tfrec.read_records(os.path.join(directory, "child.tfrecord"))) == records
            sys.exit(0 if ok else 3)  # the interpreter ends: the inherited file is finalised
        child = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        writer.write_many(records[2500:])
        writer.close()
        report([child, list(tfrec.read_records(os.path.join(directory, "parent.tfrecord"))) == records])
        """)
    for _ in range(3):
        child = run_child(code, timeout=60)
        assert child.result == [0, True], child.describe()


def test_a_writer_left_open_while_a_page_is_written_lets_the_interpreter_exit(tmp_path: object) -> None:
    # A daemon thread stopped inside a write would hold the file's lock: finalising the file then
    # aborts the interpreter. The write in flight is waited for at exit.
    code = _SLOW_FILES + textwrap.dedent(f"""
        writer = tfrec.RecordWriter(os.path.join({str(tmp_path)!r}, "left.tfrecord"))
        writer.write_many(records)
        report(len(writing()))
        """)
    for _ in range(3):
        child = run_child(code, timeout=60)
        assert (child.returncode, child.result) == (0, 1), child.describe()
    names = os.listdir(str(tmp_path))
    assert "left.tfrecord" not in names  # never published
    assert all(name.startswith(".left.tfrecord.") and name.endswith(".tmp") for name in names)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_job_in_flight_ends_before_a_fork_so_the_child_inherits_no_held_lock() -> None:
    # The job holds a lock as a write holds its file's; the child takes the lock after the fork.
    code = """
        import os, threading, time
        from tfrec.record.write_behind import WriteBehind
        lock, started = threading.Lock(), threading.Event()
        def job():
            with lock:
                started.set()
                time.sleep(0.3)
        behind = WriteBehind()
        behind.submit(job)
        started.wait()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if lock.acquire(timeout=5) else 3)
        report(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """
    child = run_child(code, timeout=60)
    assert child.result == 0, child.describe()


def test_a_job_in_flight_at_exit_is_finished(tmp_path: object) -> None:
    marker = os.path.join(str(tmp_path), "done")
    code = f"""
        import threading, time
        from tfrec.record.write_behind import WriteBehind
        started = threading.Event()
        def job():
            started.set()
            time.sleep(0.3)
            open({marker!r}, "w").close()
        behind = WriteBehind()
        behind.submit(job)
        started.wait()
        report("exiting")
    """
    child = run_child(code, timeout=60)
    assert (child.returncode, child.result) == (0, "exiting"), child.describe()
    assert os.path.exists(marker)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_forked_child_runs_an_inherited_owners_work_in_a_thread_of_its_own() -> None:
    # The parent's threads are not in the child: the write-behind and the filler it inherits each
    # start one there, with a state of their own, and close without joining the parent's.
    code = """
        import io, os, threading
        from tfrec.record.fill_ahead import Filler
        from tfrec.record.write_behind import WriteBehind
        def here():
            return threading.current_thread().name
        def read_into(names):
            data = io.BytesIO(bytes(range(100)))
            def read(view):
                names.append(here())
                return data.readinto(view)
            return read
        behind, filler, names = WriteBehind(), Filler(), []
        behind.submit(lambda: names.append(here()))
        behind.wait()
        list(filler.fill(read_into(names), memoryview(bytearray(100)), 50))
        pid = os.fork()
        if pid == 0:
            got, target = [], bytearray(100)
            behind.submit(lambda: got.append(here()))
            behind.wait()
            filled = list(filler.fill(read_into(got), memoryview(target), 50))
            behind.close()
            filler.close()
            left = [t.name for t in threading.enumerate() if t.name.startswith("tfrec-")]
            ok = got == ["tfrec-write", "tfrec-fill", "tfrec-fill"] and filled[-1] == 100 and not left
            os._exit(0 if ok and bytes(target) == bytes(range(100)) else 3)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        behind.close()
        filler.close()
        report([code, names])
    """
    child = run_child(code, timeout=60)
    assert child.result == [0, ["tfrec-write", "tfrec-fill", "tfrec-fill"]], child.describe()
