"""A child forked while another thread holds one of tfrec's locks does not hang on that lock."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest
from childrun import run_child

import tfrec

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")

# In the child: hold(lock) keeps the lock taken by a thread of its own; forked(work) then forks, and
# the forked process runs work() (its result is its exit code), given 10 s before it counts as hung.
_FORK_WHILE_HELD = """
import os, threading, time
def hold(lock):
    taken, end = threading.Event(), threading.Event()
    def holder():
        with lock:
            taken.set()
            end.wait()
    threading.Thread(target=holder, daemon=True).start()
    taken.wait()
def forked(work):
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(work())
        except BaseException:
            os._exit(2)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"
"""


def _run(code: str) -> object:
    child = run_child(_FORK_WHILE_HELD + textwrap.dedent(code), timeout=60)
    assert child.returncode == 0, child.describe()
    return child.result


def test_a_source_opens_its_files_in_a_child_forked_while_another_thread_opened_one(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "a.tfrecord")
    tfrec.write_records(path, [b"first", b"second"])
    code = f"""
        import tfrec
        source = tfrec.data.RecordFileSource([{path!r}])
        hold(source._files._open_lock)  # as a thread opening or mapping a file holds it
        report(forked(lambda: 0 if source[1] == b"second" else 1))
    """
    assert _run(code) == 0


def test_a_memo_takes_entries_in_a_child_forked_while_another_thread_put_one() -> None:
    code = """
        from tfrec.cache import BoundedCache
        squares = BoundedCache(4, compute=lambda n: n * n)
        hold(squares._lock)
        report(forked(lambda: 0 if squares[7] == 49 else 1))
    """
    assert _run(code) == 0


def test_a_global_lock_is_new_in_a_child_forked_while_another_thread_held_it(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "a.tfrecord")
    tfrec.write_records(path, [b"only"])
    code = f"""
        from tfrec.data.pipeline import global_order
        hold(global_order._sources_lock)  # as a thread making a source (reading its index) holds it
        report(forked(lambda: 0 if global_order.record_source([{path!r}], None)[0] == b"only" else 1))
    """
    assert _run(code) == 0


def test_locks_are_renewed_for_every_owner_registered_and_forgotten_with_it() -> None:
    code = """
        import gc, threading
        from tfrec import forking
        class Owner:
            pass
        kept, dropped = Owner(), Owner()
        kept.a = kept.b = threading.Lock()
        forking.renew_in_child(kept, "a")
        forking.renew_in_child(kept, "b")  # a second call adds its names to the first's
        forking.renew_in_child(dropped, "a")
        dropped_id = id(dropped)
        known = dropped_id in forking._OWNERS
        del dropped
        gc.collect()
        forgotten = dropped_id not in forking._OWNERS
        hold(kept.a)
        def work():
            return 0 if kept.a.acquire(timeout=1) and kept.b.acquire(timeout=1) else 1
        report([known, forgotten, forked(work)])
    """
    assert _run(code) == [True, True, 0]
