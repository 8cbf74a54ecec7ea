"""A background thread owned by one object, safe across a fork and at exit (record layer).

:class:`OwnedThread` is the lifecycle shared by the thread that writes a writer's pages
(:mod:`~tfrec.record.write_behind`) and the one that fills a reader's spans
(:mod:`~tfrec.record.fill_ahead`): a daemon thread started at first use, idle between jobs, stopped
when its owner is closed or garbage-collected. Two moments shape it:

- a fork: the child has no copy of the thread but a copy of each lock, and one the thread held
  stays held for ever there. A child's owner starts a thread of its own with a fresh state, and
  work in flight is waited for before a fork (:func:`on_fork_and_exit` registers the wait).
- the exit: daemon threads are stopped wherever they are, inside a write holding its file's lock
  too (finalising the file then aborts the interpreter). Work in flight is waited for, or stopped,
  at exit.

Which work is in flight, and what a wait does, stays with each module: a writer's jobs are
finished, spans read ahead are finished before a fork and stopped at exit, a read ahead (by a
thread no daemon) is finished before a fork.

Example:
    >>> class Worker(OwnedThread[State]):
    ...     __slots__ = ()
    ...     def __init__(self) -> None:
    ...         super().__init__(State, serve, "tfrec-work")
    >>> worker = Worker()
    >>> worker.start()  # serve(worker.state) runs in a thread until the worker is closed
    True
    >>> worker.stop()
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

__all__ = ["OwnedThread", "ThreadState", "on_fork_and_exit", "snapshot"]


class ThreadState(Protocol):
    """What an owner and its thread share (the thread refers to nothing else): the thread waits on
    ``cond`` for work, and ends once ``closing`` is set with no work left."""

    cond: threading.Condition
    closing: bool


S = TypeVar("S", bound=ThreadState)


def on_fork_and_exit(*, before_fork: Callable[[], None], at_exit: Callable[[], None] | None = None) -> None:
    """Call ``before_fork`` before each fork (where the system forks) and ``at_exit`` at exit.

    Example:
        >>> on_fork_and_exit(before_fork=finish_jobs, at_exit=finish_jobs)
    """
    if at_exit is not None:
        atexit.register(at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=before_fork)


T = TypeVar("T")


def snapshot(items: Iterable[T]) -> list[T]:
    """A list of what ``items`` (a weak set of work in flight) holds, while other threads may add
    to it or discard from it: a set changed during the listing raises, and is listed again.

    Example:
        >>> for stream in snapshot(READING):
        ...     stream.finish()
    """
    while True:
        try:
            return list(items)
        except RuntimeError:  # (set changed size during iteration)
            continue


def _close(state: ThreadState) -> None:
    with state.cond:
        state.closing = True
        state.cond.notify_all()


class OwnedThread(Generic[S]):
    """One daemon thread running ``serve(state)``, owned by this object (see the module's docstring).

    :attr:`state` is what the owner and its thread share; :attr:`pid` the process whose thread
    serves it (0 before one starts). When no thread can be started (a process limit),
    :meth:`start` says so and the owner does the work in the caller's thread.

    Example:
        >>> owner = OwnedThread(State, serve, "tfrec-work")
        >>> if owner.start():
        ...     hand_over(owner.state)
        >>> owner.stop()
    """

    __slots__ = ("__weakref__", "_finalizer", "_name", "_new_state", "_serve", "_thread", "pid", "state")

    def __init__(self, new_state: Callable[[], S], serve: Callable[[S], None], name: str) -> None:
        self.state = new_state()
        self.pid = 0
        self._thread: threading.Thread | None = None
        self._new_state, self._serve, self._name = new_state, serve, name
        self._finalizer = weakref.finalize(self, _close, self.state)

    def start(self) -> bool:
        """Start the thread unless it runs (handing work over starts it too); whether it runs."""
        thread = self._thread
        if thread is not None and self.pid == os.getpid() and thread.is_alive():
            return True
        if self.state.closing:
            return False
        # A forked child's copy of the state may be mid-job, its lock held, by a thread that is not there.
        self.state = self._new_state()
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _close, self.state)
        thread = threading.Thread(target=self._serve, args=(self.state,), name=self._name, daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (a process limit): the caller works itself
            return False
        self._thread, self.pid = thread, os.getpid()
        return True

    def stop(self) -> None:
        """Stop the thread once it is idle and wait for it to end (idempotent); later work runs in
        the caller."""
        self.state.closing = True
        self._finalizer()
        thread, self._thread = self._thread, None
        # Not joined from itself (a garbage collection in the thread closing its owner), nor in a
        # forked child (whose copy of the thread is not there).
        if thread is not None and self.pid == os.getpid() and thread is not threading.current_thread():
            thread.join()
