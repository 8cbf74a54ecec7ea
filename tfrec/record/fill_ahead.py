"""Filling a buffer from a stream in a background thread, piece by piece (record layer).

Taking the CRC32C of a piece holds the GIL (``google-crc32c`` does not release it), but reading
a file into a buffer releases it. A :class:`Filler` reads the pieces of a target in its thread
while the caller checks the pieces already filled, so that on two cores a span of large records
costs about the slower of the copy and the CRC pass instead of their sum.

The thread is started once per filler and stays idle (holding no lock, no file, no buffer)
between fills: starting a thread per batch cost more than the overlap gained on small batches.
It stops when the filler is closed or garbage-collected; a process forked from this one starts
its own. It is a daemon, so that a reader left open at exit does not hold the interpreter: it is
only ever inside a read while a caller waits in :meth:`Filler.fill`.

Example:
    >>> filler = Filler()
    >>> for filled in filler.fill(stream.readinto, memoryview(buffer)[at:end], 1 << 18):
    ...     check(buffer, at + filled)  # the next piece is being read meanwhile
    >>> filler.close()
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Generator

__all__ = ["Filler", "ReadInto", "fill_here"]

ReadInto = Callable[[memoryview], int]  # fills a view; fewer bytes only at the end of the stream


class _State:
    """What the filler and its thread share (the thread refers to nothing else)."""

    __slots__ = ("closing", "cond", "done", "error", "filled", "job", "stop")

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.job: tuple[ReadInto, memoryview, int] | None = None
        self.filled = 0  # bytes of the job's target filled so far
        self.done = True  # the job is over and its target released
        self.error: BaseException | None = None
        self.stop = False  # the caller wants no more pieces of this job
        self.closing = False


def _serve(state: _State) -> None:
    cond = state.cond
    while True:
        with cond:
            while state.job is None and not state.closing:
                cond.wait()
            if state.job is None:
                return
            read_into, target, piece = state.job
        filled, error = 0, None
        try:
            while filled < len(target) and not state.stop:
                asked = min(piece, len(target) - filled)
                got = read_into(target[filled : filled + asked])
                filled += got
                with cond:
                    state.filled = filled
                    cond.notify_all()
                if got < asked:  # the end of the stream
                    break
        except BaseException as exc:  # raised again by fill(), after the pieces before it
            error = exc
        # Nothing of the job is kept: its buffer is reused or resized once no one refers to it.
        del read_into, target
        with cond:
            state.job, state.error, state.done = None, error, True
            cond.notify_all()


def _close(state: _State) -> None:
    with state.cond:
        state.closing = True
        state.cond.notify_all()


def fill_here(read_into: ReadInto, target: memoryview, piece: int) -> Generator[int, None, None]:
    """:meth:`Filler.fill` without a thread: each piece is read when the one before is checked."""
    filled = 0
    while filled < len(target):
        asked = min(piece, len(target) - filled)
        got = read_into(target[filled : filled + asked])
        filled += got
        if got:
            yield filled
        if got < asked:
            return


class Filler:
    """A background thread that fills targets piece by piece (see the module's docstring)."""

    __slots__ = ("__weakref__", "_finalizer", "_pid", "_state", "_thread")

    def __init__(self) -> None:
        self._state = _State()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._finalizer = weakref.finalize(self, _close, self._state)

    def _started(self) -> bool:
        if self._thread is not None and self._pid == os.getpid() and self._thread.is_alive():
            return True
        if self._state.closing:
            return False
        self._state = _State()  # (a forked child's copy may be mid-job, of a thread that is not there)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _close, self._state)
        thread = threading.Thread(target=_serve, args=(self._state,), name="tfrec-fill", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (a process limit): the caller reads itself
            return False
        self._thread, self._pid = thread, os.getpid()
        return True

    def fill(self, read_into: ReadInto, target: memoryview, piece: int) -> Generator[int, None, None]:
        """Fill ``target`` with ``read_into``, ``piece`` bytes at a time, in the thread; yield how
        many bytes are filled each time a piece lands (the next is read while the caller works).

        Fewer than ``len(target)`` only at the end of the stream. An error of ``read_into`` is
        raised after the bytes filled before it are yielded. When the iteration ends, early or not,
        the thread has let go of ``target``.
        """
        if not self._started():
            yield from fill_here(read_into, target, piece)
            return
        state = self._state
        cond = state.cond
        with cond:
            state.job, state.filled, state.done = (read_into, target, piece), 0, False
            state.error, state.stop = None, False
            cond.notify_all()
        del target, read_into
        seen = 0
        try:
            while True:
                with cond:
                    while state.filled == seen and not state.done:
                        cond.wait()
                    filled, done, error = state.filled, state.done, state.error
                if filled > seen:
                    seen = filled
                    yield filled
                if done:
                    if error is not None:
                        raise error
                    return
        finally:
            with cond:
                state.stop = True
                while not state.done:
                    cond.wait()
                state.error = None

    def close(self) -> None:
        """Stop the thread (idempotent); a later fill reads without it."""
        self._state.closing = True
        self._finalizer()
        thread, self._thread = self._thread, None
        if thread is not None and self._pid == os.getpid() and thread is not threading.current_thread():
            thread.join()
