"""Reading the spans of the next few batches with this one's, in one fill (record layer).

A batch of 16 large records (1.6 MB) is too small a fill to share between two threads: waking the
fill thread and handing pieces over cost about what the second core gained. So when a batch's
span is small, :class:`SpansAhead` reads the spans that the next batches would read, guessing
that their frames are as long as this batch's first one, into buffers of their own, in the same
fill: each batch keeps a buffer of its own that starts at the page of its first frame, as
:mod:`~tfrec.record.spans` reads it. Each buffer also holds the :data:`~tfrec.record.batch.PAD`
bytes after its frames (read twice: they are the next buffer's first bytes). The thread that
fills a piece takes the data CRCs of the frames in it. A span read ahead is used only by the
batch that starts where it starts and with the bytes it starts with (what the batch before left
over); any other read drops them all, so a guess that misses costs a read, never a record.

The fill goes on while this batch is handed out (the thread reads the spans ahead while the
caller decodes), and the batch that takes a span waits for the rest of it, reading pieces
itself. The stream does not move meanwhile (spans are read at positions): a batch that takes a
span moves it past the span's bytes. A fork waits for the fills in flight to end.

Example:
    >>> ahead = SpansAhead()
    >>> got = ahead.fill(stream, POOL.take, view, at=base, pieces=pieces, guess=guess, end=end, ...)
    >>> early = ahead.take(stream, next_at, leftover)  # the next batch's span, or None
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import sys
import weakref
from collections.abc import Callable, Generator

import numpy as np

from . import frame
from .batch import PAD
from .fill_ahead import AfterPiece, Piece
from .owned_thread import on_fork_and_exit, snapshot
from .stream import RecordStream

__all__ = ["AHEAD_BYTES", "MAX_WAIT", "PIECE", "Early", "SpansAhead", "digest_frames"]

PIECE = 1 << 20  # bytes read at once: each piece's frames are checked while the next is read
AHEAD_BYTES = 8 << 20  # a fill reads spans up to about this many bytes (this batch's and those after)
MAX_WAIT = 256  # batches read without reading ahead, at most, after guesses that missed
Digest = Callable[[np.ndarray], int]
Summed = dict[int, tuple[int, int]]  # frame position -> (the position past it, its data CRC)


def digest_frames(
    view: memoryview, guess: tuple[int, int, int], begin: int, end: int, digest: Digest, summed: Summed
) -> None:
    """Put in ``summed`` the data CRCs of the guessed frames that end in ``view[begin:end]``:
    ``guess`` is (the position of the first frame, the length of each with its framing, how many)."""
    pos, size, count = guess
    first = max(0, (begin - pos) // size)  # the first frame ending after begin
    last = min((end - pos) // size, count)  # after the last ending at or before end
    if last <= first:
        return
    u8 = np.frombuffer(view, np.uint8, last * size, pos)
    head, foot = frame.HEADER, frame.FOOTER
    for k in range(first, last):
        at = k * size
        summed[pos + at] = (pos + at + size, digest(u8[at + head : at + size - foot]))


class Early:
    """A span read ahead: ``buffer[first:filled]`` holds the stream from offset ``at`` on, once
    the fill has yielded ``ready`` bytes."""

    __slots__ = ("__weakref__", "at", "buffer", "filled", "first", "ready", "summed")

    def __init__(self, buffer: mmap.mmap, first: int, at: int, filled: int, ready: int) -> None:
        self.buffer = buffer
        self.first = first
        self.at = at
        self.filled = filled
        self.ready = ready
        self.summed: Summed = {}  # the data CRCs of its frames, taken by the threads that read them


# Readers with a fill in flight. A fork waits for their fills to end (a thread that is not in the
# child would never finish the pieces it took), and so does the exit, while the thread still runs:
# a fill ended later would wait for ever for the daemon thread stopped mid-piece.
_FILLING: weakref.WeakSet[SpansAhead] = weakref.WeakSet()


def _finish_fills() -> None:
    for ahead in snapshot(_FILLING):
        ahead.finish()


def _stop_fills() -> None:
    for ahead in snapshot(_FILLING):
        with contextlib.suppress(ValueError):  # (ended by the thread that runs it)
            ahead.clear()


on_fork_and_exit(before_fork=_finish_fills, at_exit=_stop_fills)


class SpansAhead:
    """The spans read ahead of a reader's batches (see the module's docstring).

    The fill goes on after this batch's pieces are in: the thread reads the spans ahead while the
    caller hands this batch out, and the batch that takes one waits for what is left of it (or
    reads it itself). The batch that takes the last one starts the next fill, of spans alone, so
    the thread reads on while that batch is handed out. Not thread-safe: one reader at a time, as
    the record reader's lock ensures.
    """

    __slots__ = ("__weakref__", "filled", "job", "misses", "plan", "spans", "waiting")

    def __init__(self) -> None:
        self.spans: list[Early] = []
        self.job: Generator[int, None, None] | None = None  # the fill in flight
        self.filled = 0  # the bytes it has yielded
        # (buffer maker, frame length, frames a batch, end of the stream, CRC) of the spans ahead
        self.plan: tuple[Callable[[int], mmap.mmap], int, int, int, Digest | None] | None = None
        # Guesses that missed in a row (frames of other lengths): each one doubles the batches
        # read without reading ahead (up to MAX_WAIT), so records of varying sizes are read once.
        self.misses = 0
        self.waiting = 0  # batches still to be read without reading ahead

    def wants_fill(self) -> bool:
        """Whether to read spans ahead with this batch's (counts the batches read without)."""
        if self.waiting:
            self.waiting -= 1
            return False
        return True

    def take(self, stream: RecordStream, at: int, leftover: bytes | memoryview) -> Early | None:
        """The span read ahead from stream offset ``at`` on, if it starts with ``leftover`` (the
        stream is then moved past its bytes); else ``None``, and none is kept."""
        if not self.spans:
            self._end()  # (a fill of this batch's pieces alone may not have ended)
            return None
        if self.spans[0].at != at:
            self.missed()
            return None
        early = self.spans.pop(0)
        self._advance(early.ready)
        size = len(leftover)
        if (
            self.filled < early.ready
            or early.filled - early.first < size
            or early.buffer[early.first : early.first + size] != leftover
        ):
            self.clear()  # (the read failed or ended short: the file changed meanwhile)
            return None
        stream.skip(early.filled - early.first - size)
        if not self.spans and self.plan is not None:  # read on while this one is handed out
            self._end()
            self._start(stream, [], 0, None, early.at + self.plan[1] * self.plan[2])
        return early

    def hit(self) -> None:
        """A span read ahead held its batch whole: the guesses are right again."""
        self.misses = 0

    def missed(self) -> None:
        """The spans read ahead were not where the frames are: drop them, and wait longer before
        reading ahead again."""
        self.clear()
        self.misses = min(self.misses + 1, MAX_WAIT.bit_length())
        self.waiting = min(MAX_WAIT, 1 << self.misses)

    def _advance(self, ready: int) -> None:
        """Go on with the fill until ``ready`` bytes are in (or it ends); an error ends it."""
        job = self.job
        try:
            while job is not None and self.filled < ready:
                self.filled = next(job)
        except StopIteration:
            self._end()
        except Exception:  # (the batch reads its span again, and meets the error there)
            self._end()

    def _end(self) -> None:
        job, self.job = self.job, None
        _FILLING.discard(self)
        if job is not None:
            job.close()  # (the thread lets go of the buffers)

    def finish(self) -> None:
        """Wait for the fill in flight to end, keeping what it read."""
        with contextlib.suppress(ValueError):  # (advanced by another thread: it is waiting for it)
            self._advance(sys.maxsize)

    def clear(self) -> None:
        """Stop the fill in flight; drop the spans read ahead: their buffers go back to the pool."""
        self._end()
        self.spans = []

    def fill(
        self,
        stream: RecordStream,
        take: Callable[[int], mmap.mmap],
        current: memoryview,
        *,
        at: int,
        pieces: list[Piece],
        guess: tuple[int, int, int],
        end: int,
        digest: Digest | None,
        summed: Summed,
    ) -> int:
        """Fill this batch's ``pieces`` of ``current`` (positioned at their stream offsets; the
        buffer's position ``p`` is offset ``p + at``) and start filling spans ahead for the
        batches after it, in the same fill; returns the bytes of this batch's pieces filled, and
        moves the stream past them.

        ``guess`` is that of this batch's frames (buffer positions); the spans ahead follow its
        last frame up to ``end`` (the end of the stream). ``take`` gives a buffer of a size.
        """
        self.clear()
        pos, size, count = guess
        self.plan = (take, size, count, end, digest)
        mine = sum(len(view) for view, _ in pieces)

        def after_mine(begin: int, stop: int) -> None:
            if digest is not None:
                digest_frames(current, guess, begin - at, stop - at, digest, summed)

        self._start(stream, pieces, mine, after_mine, at + pos + count * size)
        del pieces  # (the fill holds them as long as it goes on)
        job = self.job
        assert job is not None
        try:
            while self.filled < mine:
                self.filled = next(job)
        except StopIteration:
            self._end()
        except BaseException:
            self.clear()
            stream.skip(min(self.filled, mine))
            raise
        if self.filled < mine:
            self.clear()  # (the file ends sooner than its size said)
        stream.skip(min(self.filled, mine))
        return min(self.filled, mine)

    def _start(
        self,
        stream: RecordStream,
        pieces: list[Piece],
        mine: int,
        after_mine: AfterPiece | None,
        next_at: int,
    ) -> None:
        """Start a fill of ``pieces`` (``mine`` bytes, ``after_mine`` taking their CRCs) and of the
        spans ahead from stream offset ``next_at`` on, as :attr:`plan` says."""
        assert self.plan is not None
        take, size, count, end, digest = self.plan
        region = count * size + PAD
        views: list[tuple[int, memoryview, Early]] = []  # by stream offset: where each span starts
        step = max(1, PIECE // size) * size  # pieces of whole frames, as this batch's
        total = mine
        while total + region <= AHEAD_BYTES and next_at + frame.HEADER < end:
            length = min(region, end - next_at)
            first = next_at % mmap.PAGESIZE
            early = Early(take(first + length), first, next_at, first + length, total + length)
            view = memoryview(early.buffer)
            views.append((next_at, view, early))
            for cut in range(0, length, step):
                pieces.append((view[first + cut : first + min(length, cut + step)], next_at + cut))
            total += length
            next_at += count * size
        starts = [start for start, _, _ in views]
        self.spans = [early for _, _, early in views]
        if not pieces:
            return

        def after(begin: int, stop: int) -> None:
            if not starts or begin < starts[0]:  # this batch's
                if after_mine is not None:
                    after_mine(begin, stop)
                return
            start, view, early = views[bisect.bisect_right(starts, begin) - 1]
            shift = early.first - start
            assert digest is not None
            digest_frames(view, (early.first, size, count), begin + shift, stop + shift, digest, early.summed)

        self.job, self.filled = stream.fill_at(pieces, after=None if digest is None else after), 0
        _FILLING.add(self)
