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

The stream does not move while the spans ahead are read (they are read at positions): a batch
that takes one moves it past the span's bytes.

Example:
    >>> ahead = SpansAhead()
    >>> filled = ahead.fill(stream, POOL, buffer, at=at, first=first, filled=filled, goal=goal, ...)
    >>> early = ahead.take(stream, next_at, leftover)  # the next batch's span, or None
"""

from __future__ import annotations

import bisect
import mmap
from collections.abc import Callable

import numpy as np

from . import frame
from .batch import PAD
from .fill_ahead import Piece
from .stream import RecordStream

__all__ = ["AHEAD_BYTES", "PIECE", "Early", "SpansAhead", "digest_frames"]

PIECE = 1 << 20  # bytes read at once: each piece's frames are checked while the next is read
AHEAD_BYTES = 8 << 20  # a fill reads spans up to about this many bytes (this batch's and those after)
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
    """A span read ahead: ``buffer[first:filled]`` holds the stream from offset ``at`` on."""

    __slots__ = ("__weakref__", "at", "buffer", "filled", "first", "summed")

    def __init__(self, buffer: mmap.mmap, first: int, at: int, filled: int) -> None:
        self.buffer = buffer
        self.first = first
        self.at = at
        self.filled = filled
        self.summed: Summed = {}  # the data CRCs of its frames, taken by the threads that read them


class SpansAhead:
    """The spans read ahead of a reader's batches (see the module's docstring)."""

    __slots__ = ("spans",)

    def __init__(self) -> None:
        self.spans: list[Early] = []

    def take(self, stream: RecordStream, at: int, leftover: bytes | memoryview) -> Early | None:
        """The span read ahead from stream offset ``at`` on, if it starts with ``leftover`` (the
        stream is then moved past its bytes); else ``None``, and none is kept."""
        if not self.spans or self.spans[0].at != at:
            self.clear()
            return None
        early = self.spans.pop(0)
        size = len(leftover)
        if early.filled - early.first < size or early.buffer[early.first : early.first + size] != leftover:
            self.clear()  # (the file changed meanwhile)
            return None
        stream.skip(early.filled - early.first - size)
        return early

    def clear(self) -> None:
        """Drop the spans read ahead: their buffers go back to the pool."""
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
        buffer's position ``p`` is offset ``p + at``) and spans ahead for the batches after it, in
        one fill; returns the bytes of this batch's pieces filled, and moves the stream past them.

        ``guess`` is that of this batch's frames (buffer positions); the spans ahead follow its
        last frame up to ``end`` (the end of the stream). ``take`` gives a buffer of a size.
        """
        pos, size, count = guess
        next_at = at + pos + count * size  # where the next batch's first frame is guessed to be
        region = count * size + PAD
        mine = sum(len(view) for view, _ in pieces)
        views: list[tuple[int, memoryview, Early]] = []  # by stream offset: where each span starts
        all_pieces = list(pieces)
        step = max(1, PIECE // size) * size  # pieces of whole frames, as this batch's
        total = mine
        while total + region <= AHEAD_BYTES and next_at + frame.HEADER < end:
            length = min(region, end - next_at)
            first = next_at % mmap.PAGESIZE
            early = Early(take(first + length), first, next_at, first + length)
            view = memoryview(early.buffer)
            views.append((next_at, view, early))
            for cut in range(0, length, step):
                all_pieces.append((view[first + cut : first + min(length, cut + step)], next_at + cut))
            total += length
            next_at += count * size
        starts = [start for start, _, _ in views]

        def after(begin: int, stop: int) -> None:
            if digest is None:
                return
            if not starts or begin < starts[0]:  # this batch's
                digest_frames(current, guess, begin - at, stop - at, digest, summed)
                return
            start, view, early = views[bisect.bisect_right(starts, begin) - 1]
            early_guess = (early.first, size, count)
            shift = early.first - start
            digest_frames(view, early_guess, begin + shift, stop + shift, digest, early.summed)

        got = 0
        try:
            for got in stream.fill_at(all_pieces, after=after):  # noqa: B007 (got is used after)
                pass
        except BaseException:
            if got < mine:
                stream.skip(got)
                raise
        finally:
            del all_pieces, pieces
            for _, view, _ in views:
                view.release()
        stream.skip(min(got, mine))
        done = mine  # the spans ahead filled whole are kept
        for _, _, early in views:
            length = early.filled - early.first
            if got < done + length:
                break
            self.spans.append(early)
            done += length
        return min(got, mine)
