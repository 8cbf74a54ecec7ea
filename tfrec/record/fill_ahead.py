"""Filling a buffer from a file in a background thread, piece by piece (record layer).

Reading a file into a buffer releases the GIL, and so does the CRC32C of a large record when the
``crc32c`` package sums it (``google-crc32c`` and ``crcmod`` hold the GIL: the thread's reads then
wait while the caller sums). A :class:`Filler` reads the pieces of a target in its thread while
the caller checks the pieces already filled. With :meth:`Filler.fill_shared` (a file read
at positions, ``os.preadv``), the caller reads pieces too whenever none is waiting for its check,
so that on two cores both copy: a span of large records then costs about half the copy plus the
CRC pass, where one thread copying cost the whole copy (two copies ran 1.4-1.6x one here).
:meth:`Filler.fill` serves streams read in order: the thread alone reads.

The thread is started once per filler and stays idle (holding no lock, no file, no buffer)
between fills: starting a thread per batch cost more than the overlap gained on small batches.
It stops when the filler is closed or garbage-collected; a process forked from this one starts
its own. It is a daemon, so that a reader left open at exit does not hold the interpreter: it is
only ever inside a read while a caller waits in a fill. (That lifecycle is
:mod:`~tfrec.record.owned_thread`'s.)

Example:
    >>> filler = Filler()
    >>> for filled in filler.fill_shared(read_at, memoryview(buffer)[at:end], 1 << 20):
    ...     check(buffer, at + filled)  # the next pieces are being read meanwhile
    >>> filler.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Sequence

from .owned_thread import OwnedThread

__all__ = ["AfterPiece", "Filler", "Piece", "ReadAt", "ReadInto", "fill_here"]

ReadInto = Callable[[memoryview], int]  # fills a view; fewer bytes only at the end of the stream
# fills a view with the target's bytes from a position on (its offset in the target); fewer bytes
# only at the end of the file; safe to call from two threads at once
ReadAt = Callable[[memoryview, int], int]
# called by the thread that filled a piece whole, with the piece's start and end in the target, before
# the piece is reported filled: work on the piece while it is in that core's cache (e.g. its CRCs)
AfterPiece = Callable[[int, int], None]
Piece = tuple[memoryview, int]  # a view to fill, and the position of its first byte (read_at's)


class _State:
    """What the filler and its thread share (the thread refers to nothing else)."""

    __slots__ = ("busy", "claimed", "closing", "cond", "error", "got", "job", "last", "serial")

    def __init__(self) -> None:
        self.cond = threading.Condition()
        # (read, the pieces: each a view and its position, the work after a piece)
        self.job: tuple[ReadAt, Sequence[Piece], AfterPiece | None] | None = None
        self.claimed = 0  # pieces of the job taken by a reader so far, in order
        self.last = 0  # pieces of the job worth reading: none after a short one or an error
        self.got: list[int] = []  # bytes read into each piece (-1 while not read)
        self.error: tuple[int, BaseException] | None = None  # the first piece that failed
        self.serial = 0  # jobs started so far: the thread serves each once
        self.busy = False  # the thread is serving the job (it refers to the target)
        self.closing = False

    def begin(self, read_at: ReadAt, pieces: Sequence[Piece], after: AfterPiece | None) -> None:
        self.job, self.claimed, self.last = (read_at, pieces, after), 0, len(pieces)
        self.got, self.error = [-1] * len(pieces), None
        self.serial += 1

    def claim(self) -> int:
        """The next piece to read, or -1 when none is left (called under the lock)."""
        if self.job is None or self.claimed >= self.last:
            return -1
        self.claimed += 1
        return self.claimed - 1

    def read(self, number: int) -> None:
        """Read piece ``number`` of the job (without the lock) and record what it got."""
        job = self.job
        assert job is not None  # (the job ends only once no piece is being read)
        read_at, pieces, after = job
        view, at = pieces[number]
        asked = len(view)
        got, error = 0, None
        try:
            got = read_at(view, at)
            if after is not None and got == asked:
                after(at, at + got)
        except BaseException as exc:  # raised again by the fill, after the pieces before it
            error = exc
        del read_at, pieces, job, after, view
        with self.cond:
            self.got[number] = got
            if error is not None or got < asked:  # the file ends (or fails) here: no piece after it
                self.last = min(self.last, number + 1)
                if error is not None and (self.error is None or number < self.error[0]):
                    self.error = (number, error)
            self.cond.notify_all()


def _serve(state: _State) -> None:
    cond = state.cond
    served = 0
    while True:
        with cond:
            while (state.job is None or state.serial == served) and not state.closing:
                cond.wait()
            if state.job is None or state.serial == served:  # closing, with no job waiting
                return
            served, state.busy = state.serial, True
        while True:
            with cond:
                number = state.claim()
            if number < 0:
                break
            state.read(number)
        # Nothing of the job is kept: its buffer is reused or resized once no one refers to it.
        with cond:
            state.busy = False
            cond.notify_all()


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


def _pieces(target: memoryview, cuts: Sequence[int]) -> list[Piece]:
    """``target`` cut into pieces ending at ``cuts``, each with its position in the target."""
    starts = [0, *cuts[:-1]] if cuts else []
    return [(target[start:end], start) for start, end in zip(starts, cuts, strict=True)]


def _cuts(size: int, piece: int) -> list[int]:
    """The ends of the pieces of ``size`` bytes cut every ``piece`` bytes."""
    return [*range(piece, size, piece), size] if size else []


class Filler(OwnedThread[_State]):
    """A background thread that fills targets piece by piece (see the module's docstring)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_State, _serve, "tfrec-fill")

    def fill(self, read_into: ReadInto, target: memoryview, piece: int) -> Generator[int, None, None]:
        """Fill ``target`` with ``read_into``, ``piece`` bytes at a time, in the thread; yield how
        many bytes are filled each time a piece lands (the next is read while the caller works).

        Fewer than ``len(target)`` only at the end of the stream. An error of ``read_into`` is
        raised after the bytes filled before it are yielded. When the iteration ends, early or not,
        the thread has let go of ``target``.
        """
        if not self.start():
            yield from fill_here(read_into, target, piece)
            return
        # The thread alone reads, so the pieces are read in order, as a stream must be.
        pieces = _pieces(target, _cuts(len(target), piece))
        yield from self._fill(lambda view, _at: read_into(view), pieces, shared=False)

    def fill_shared(
        self,
        read_at: ReadAt,
        target: memoryview,
        piece: int,
        *,
        after: AfterPiece | None = None,
    ) -> Generator[int, None, None]:
        """Fill ``target`` as :meth:`fill` does, with reads at positions: the caller reads pieces
        too, each time it resumes with no piece left to check (without a thread, it reads them all).

        ``after`` is called by whichever thread filled a piece whole, before the piece is yielded
        (see :data:`AfterPiece`).
        """
        pieces = _pieces(target, _cuts(len(target), piece))
        yield from self._fill(read_at, pieces, shared=True, threaded=self.start(), after=after)

    def fill_pieces(
        self, read_at: ReadAt, pieces: Sequence[Piece], *, after: AfterPiece | None = None
    ) -> Generator[int, None, None]:
        """:meth:`fill_shared` of views anywhere (of several buffers, say): ``pieces`` holds each
        view and its position for ``read_at``; the bytes yielded are those of the pieces filled in
        order, and ``after`` gets a piece's positions."""
        yield from self._fill(read_at, pieces, shared=True, threaded=self.start(), after=after)

    def _fill(
        self,
        read_at: ReadAt,
        pieces: Sequence[Piece],
        *,
        shared: bool,
        threaded: bool = True,
        after: AfterPiece | None = None,
    ) -> Generator[int, None, None]:
        state = self.state if threaded else _State()
        cond = state.cond
        with cond:
            state.begin(read_at, pieces, after)
            cond.notify_all()
        del pieces, read_at, after
        seen = done = 0  # bytes yielded; pieces filled in order
        filled = 0
        try:
            while True:
                mine = -1
                with cond:
                    while True:
                        while done < state.last and state.got[done] >= 0:
                            filled += state.got[done]
                            done += 1
                        if filled > seen or done >= state.last:
                            break
                        mine = state.claim() if shared else -1
                        if mine >= 0:
                            break
                        cond.wait()
                    error = state.error
                if mine >= 0:
                    state.read(mine)
                    continue
                if filled > seen:
                    seen = filled
                    yield filled
                if done >= state.last:
                    if error is not None and error[0] == done - 1:
                        raise error[1]
                    return
        finally:
            with cond:
                state.last = 0  # no more pieces are claimed
                while state.busy:
                    cond.wait()
                state.job, state.error = None, None
                cond.notify_all()

    def close(self) -> None:
        """Stop the thread (idempotent); a later fill reads without it."""
        self.stop()
