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
a thread of its own if it hands over a job. (That lifecycle is :mod:`~tfrec.record.owned_thread`'s;
the jobs in flight, waited for, are this module's.)

A record writer copies frames into :class:`Pages` and hands each full page over.

Example:
    >>> behind = WriteBehind()
    >>> behind.submit(functools.partial(file.write, block))  # returns at once
    >>> block = fill_next()                                   # meanwhile
    >>> behind.wait()  # raises what the job raised
    >>> behind.close()
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from typing import IO

from .compression import GzipMembersWriter
from .frame import FOOTER, FRAMING, HEADER
from .owned_thread import OwnedThread, on_fork_and_exit

__all__ = ["Job", "Pages", "WriteBehind"]

Job = Callable[[], object]
Bytes = bytes | bytearray | memoryview

_lock = threading.Lock()
_BUSY: set[_State] = set()  # states with a job in flight, waited for at exit and before a fork


def _finish_jobs() -> None:
    with _lock:
        busy = list(_BUSY)
    for state in busy:
        state.finish()


on_fork_and_exit(before_fork=_finish_jobs, at_exit=_finish_jobs)


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


class WriteBehind(OwnedThread[_State]):
    """Run jobs one at a time in a background thread (see the module's docstring).

    Not thread-safe: one owner hands over jobs. When no thread can be started (a process limit),
    a job runs in the caller's thread.
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_State, _serve, "tfrec-write")

    def submit(self, job: Job) -> None:
        """Run ``job`` in the thread once the job before it is done; returns at once.

        Raises:
            BaseException: whatever the job before raised (``job`` is then not run).
        """
        self.wait()
        if not self.start():
            job()
            return
        state = self.state
        with state.cond:
            state.job = job
            with _lock:
                _BUSY.add(state)
            state.cond.notify_all()

    def wait(self) -> None:
        """Wait for the job in flight; raise what a job raised since the last wait (once)."""
        if self.pid != os.getpid():  # no thread of ours here (none started, or a forked child's)
            return
        state = self.state
        with state.cond:
            while state.job is not None:
                state.cond.wait()
            error, state.error = state.error, None
        if error is not None:
            raise error

    def close(self) -> None:
        """Wait for the job in flight and stop the thread (idempotent); later jobs run in the caller.

        Raises:
            BaseException: what a job raised since the last wait (the thread is stopped all the same).
        """
        try:
            self.wait()
        finally:
            self.stop()


class Pages:
    """Frames copied into a page of about ``page_bytes``, handed over to be written when full.

    With ``behind``, a :class:`WriteBehind` thread writes a full page while the caller fills the
    other one; else the page is written at once. ``lend``: ``stream`` copies what it is given (or
    writes it at once), so a page is lent to it as a view; else it gets bytes. A writer of gzip
    ``members`` ends members between frames: the pages keep their records' lengths for it.
    Errors of the writes are raised by :meth:`drain` (a later one, with a thread), the calls that
    hand over frames, and :meth:`settle`.

    Example:
        >>> pages = Pages(file, None, behind=True, lend=True, page_bytes=1 << 20)
        >>> pages.put(frame_bytes); pages.added(len(frame_bytes), [])
        >>> pages.settle()  # everything handed over is written
    """

    def __init__(
        self,
        stream: IO[bytes],
        members: GzipMembersWriter | None,
        *,
        behind: bool,
        lend: bool,
        page_bytes: int,
    ) -> None:
        self.page = io.BytesIO()
        self.put = self.page.write  # the writer copies frames with it, then counts them (added)
        self.at = 0  # bytes in the page
        self.lengths: list[int] | None = [] if members is not None else None  # of the page's records
        self._spare: io.BytesIO | None = None  # the other page, once the thread writes
        self._stream, self._members, self._lend, self._size = stream, members, lend, page_bytes
        self._behind = WriteBehind() if behind else None

    def added(self, size: int, lengths: list[int]) -> None:
        """Count frames just copied into the page (of records of ``lengths``); hand it over once full."""
        if self.lengths is not None:
            self.lengths += lengths
        self.at += size
        if self.at >= self._size:
            self.drain()

    def write_block(self, block: bytes | bytearray, lengths: list[int]) -> None:
        """Write frames made together from where they are (``block`` is never changed afterwards)."""
        self.drain()
        self._hand_over(_frames_job(self._stream, self._members, block, lengths, lend=True))

    def write_parts(self, parts: list[bytes], inline: bool = False) -> None:
        """Write frames given as header, data, footer, ... from where they are, after the page
        (``inline``: in the caller's thread, as :meth:`drain`)."""
        self.drain(inline)
        stream, members = self._stream, self._members
        if members is not None:
            self._hand_over(lambda: members.write_frames(parts), inline)
        else:
            self._hand_over(lambda: stream.writelines(parts), inline)

    def drain(self, inline: bool = False) -> None:
        """Hand the page over to be written; go on in the other one. ``inline``: write it in the
        caller's thread, once the job before is done (records written one at a time: there a hand-over
        per page cost more than the overlap gave, measured on 4 KiB to 100 KiB records and on
        ``encode_example`` + ``write``)."""
        at = self.at
        if not at:
            return
        page, lengths = self.page, self.lengths
        with page.getbuffer() as whole:
            block = whole[:at]
        page.seek(0)
        self.at = 0
        if lengths is not None:
            self.lengths = []
        if self._behind is not None:
            self._behind.wait()  # the other page is free once the job before is done
            if not inline:
                self.page, self._spare = self._spare or io.BytesIO(), page
                self.put = self.page.write
        self._hand_over(_frames_job(self._stream, self._members, block, lengths, lend=self._lend), inline)

    def _hand_over(self, job: Job, inline: bool = False) -> None:
        if self._behind is None or inline:
            if self._behind is not None:
                self._behind.wait()  # in order: after the job before
            job()
        else:
            self._behind.submit(job)

    def settle(self) -> None:
        """Wait until whatever was handed over is written."""
        if self._behind is not None:
            self._behind.wait()

    def close(self) -> None:
        """Stop the thread (raising what its last job raised) and let the pages' memory go."""
        self.at = 0
        self.page = self._spare = io.BytesIO()
        if self._behind is not None:
            self._behind.close()


def _frames_job(
    stream: IO[bytes], members: GzipMembersWriter | None, block: Bytes, lengths: list[int] | None, lend: bool
) -> Job:
    """A job writing ``block``, frames back to back (of records of ``lengths``, for a writer of
    gzip members); a view of a page is released once written, so the page can be filled again."""

    def job() -> None:
        try:
            if members is not None:
                members.write_frames(_frame_parts(block, lengths or []))  # type: ignore[arg-type]
            else:
                stream.write(block if lend else bytes(block))  # a stream that may keep it gets bytes
        finally:
            if isinstance(block, memoryview):
                block.release()

    return job


def _frame_parts(block: Bytes, lengths: list[int]) -> list[Bytes]:
    """Header, data and footer of each frame of ``block``, as views (no copy)."""
    view = memoryview(block)
    parts: list[Bytes] = []
    at = 0
    for length in lengths:
        end = at + length + FRAMING
        parts += (view[at : at + HEADER], view[at + HEADER : end - FOOTER], view[end - FOOTER : end])
        at = end
    return parts
