"""Writing in a background thread while the caller goes on (record layer).

Writing a block to a file releases the GIL for the kernel's copy (and for deflating, with gzip
or zlib), so a thread can write one block while the caller encodes records into the next: on two
cores the copy then costs the caller nothing. A :class:`WriteBehind` runs the jobs handed to it
one at a time, in order, in its thread; handing over a job first waits for the one before, so a
caller that fills two buffers in turn never writes into the one being written.

The thread is started by the first job and stays idle (holding no lock, no file, no buffer)
between jobs. It stops when its owner is closed or garbage-collected. It is a daemon, so that a
writer left open at exit does not hold the interpreter; a job in flight is waited for at exit and
before a fork, so that no thread is stopped inside a write holding the file's lock (finalising the
file would then abort the interpreter, and a forked child would hang on it). A forked child starts
a thread of its own if it hands over a job.

Example:
    >>> behind = WriteBehind()
    >>> behind.submit(functools.partial(file.write, block))  # returns at once
    >>> block = fill_next()                                   # meanwhile
    >>> behind.wait()  # raises what the job raised
    >>> behind.close()
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable

__all__ = ["Job", "WriteBehind"]

Job = Callable[[], object]

_lock = threading.Lock()
_BUSY: set[_State] = set()  # states with a job in flight, waited for at exit and before a fork


def _finish_jobs() -> None:
    with _lock:
        busy = list(_BUSY)
    for state in busy:
        state.finish()


atexit.register(_finish_jobs)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_finish_jobs)


class _State:
    """What the owner and its thread share (the thread refers to nothing else)."""

    __slots__ = ("closing", "cond", "error", "job")

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.job: Job | None = None  # handed over, not yet done
        self.error: BaseException | None = None  # raised by a job, not yet raised to the owner
        self.closing = False

    def finish(self) -> None:
        """Wait for the job in flight, if any."""
        with self.cond:
            while self.job is not None:
                self.cond.wait()


def _serve(state: _State) -> None:
    cond = state.cond
    while True:
        with cond:
            while state.job is None and not state.closing:
                cond.wait()
            job = state.job
        if job is None:  # closing, with no job waiting
            return
        error = None
        try:
            job()
        except BaseException as exc:  # raised to the owner by its next wait
            error = exc
        del job  # nothing of a job is kept: its buffer is written again once it is done
        with cond:
            if state.error is None:
                state.error = error
            state.job = None
            with _lock:
                _BUSY.discard(state)
            cond.notify_all()
        del error


def _close(state: _State) -> None:
    with state.cond:
        state.closing = True
        state.cond.notify_all()


class WriteBehind:
    """Run jobs one at a time in a background thread (see the module's docstring).

    Not thread-safe: one owner hands over jobs. When no thread can be started (a process limit),
    a job runs in the caller's thread.
    """

    __slots__ = ("__weakref__", "_finalizer", "_pid", "_state", "_thread")

    def __init__(self) -> None:
        self._state = _State()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._finalizer = weakref.finalize(self, _close, self._state)

    def submit(self, job: Job) -> None:
        """Run ``job`` in the thread once the job before it is done; returns at once.

        Raises:
            BaseException: whatever the job before raised (``job`` is then not run).
        """
        self.wait()
        if not self._start():
            job()
            return
        state = self._state
        with state.cond:
            state.job = job
            with _lock:
                _BUSY.add(state)
            state.cond.notify_all()

    def wait(self) -> None:
        """Wait for the job in flight; raise what a job raised since the last wait (once)."""
        if self._pid != os.getpid():  # no thread of ours here (none started, or a forked child's)
            return
        state = self._state
        with state.cond:
            while state.job is not None:
                state.cond.wait()
            error, state.error = state.error, None
        if error is not None:
            raise error

    def _start(self) -> bool:
        """Start the thread unless it runs; whether it runs."""
        thread = self._thread
        if thread is not None and self._pid == os.getpid() and thread.is_alive():
            return True
        if self._state.closing:
            return False
        # A forked child's copy of the state may have its lock held by a thread that is not there.
        self._state = _State()
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _close, self._state)
        thread = threading.Thread(target=_serve, args=(self._state,), name="tfrec-write", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the caller writes itself
            return False
        self._thread, self._pid = thread, os.getpid()
        return True

    def close(self) -> None:
        """Wait for the job in flight and stop the thread (idempotent); later jobs run in the caller.

        Raises:
            BaseException: what a job raised since the last wait (the thread is stopped all the same).
        """
        try:
            self.wait()
        finally:
            self._state.closing = True
            self._finalizer()
            thread, self._thread = self._thread, None
            if thread is not None and self._pid == os.getpid() and thread is not threading.current_thread():
                thread.join()
