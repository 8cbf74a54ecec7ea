"""Reading a run of large frames into one buffer, for batches of large records (record layer).

When ``RecordReader.batches`` meets records of 64 KiB or more in a file whose size is known, each
batch is read with one copy from the file into a buffer of its own, sized by the frames' headers:
the records the batch still wants, then :data:`~tfrec.record.batch.PAD` bytes more for the batched
decoders. The block loop hands the batch out as spans of that buffer, so no record is copied or
joined after the read.

Buffers are anonymous memory maps: a map slices into ``bytes``, so records stay ``bytes``, and it
can be reused. A fresh 100 MB buffer per batch cost more in page faults than the read itself (the
kernel maps every page of a new allocation on first touch), so a reader keeps a few maps
(:class:`SpanPool`) and reuses one once nothing else refers to it: the batch, a record view, an
array decoded from the batch all hold a reference to the map, and its reference count tells.
The data land at the same offset within a page as in the file: a copy whose source and target
sit a few bytes apart within pages ran at a third of the speed here (the processor takes the
stores for aliases of the loads that follow them).

Example:
    >>> span = read_span(stream, pool, leftover, at=offset, end=stream.end, wanted=1024, index=index)
    >>> span.buffer[span.first : span.first + 12] == leftover[:12]  # the frame at `offset`
    True
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import sys
import threading
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from . import frame
from .batch import PAD
from .block_crc import Piece
from .spans_ahead import PIECE, SpansAhead
from .stream import RecordStream

__all__ = ["FILL_AHEAD_MIN", "PAGE", "PIECE", "POOL", "SPAN_LIMIT", "Span", "SpanPool", "read_span"]

PAGE = mmap.PAGESIZE
SPAN_LIMIT = 256 << 20  # a span grows no further once it holds a frame (larger batches are joined)
# Spans read from this size on are filled by a background thread and this one together, each thread
# summing the pieces it reads (fill_ahead). Below it the two pieces or so gained less than handing
# them over cost: 1.6 MB spans of 100 KiB records filled so ran at 2.4 GB/s, against 5.2 GB/s read
# with the spans ahead of them (spans_ahead).
FILL_AHEAD_MIN = 4 << 20
# A fill shared by two threads reads pieces this many times PIECE long (2 MiB: a core's L2 here).
# Measured on 100 KiB records in batches of 256, pieces of 1 MiB: 6,036 MB/s, 2 MiB: 6,528, 4 MiB:
# 6,744, 8 MiB: 5,320 (too few to share evenly); in batches of 1024, 5.5-5.7 GB/s from 1 to 8 MiB.
SHARED_PIECES = 2
PIECE_FRAMES_MAX = 4 * PIECE  # longer frames are not pieces of a fill: read in PIECE bytes at a time
_KEEP = 10  # maps a pool keeps: the batch a consumer holds, the one being read, those read ahead, slack
# Maps release() leaves as they are, the last taken: a reader reads on in the map it took last and
# the one before (its consumer holds one batch while the next is read). Filled again after
# MADV_FREE, a map filled at 4.2-4.4 GB/s instead of 6 (no page faults counted: the kernel keeps
# the pages, but writing them again costs): batches of 1024 x 100 KiB read after read_records ran
# at 4.5 GB/s with every free map released, 5.6 with these two kept.
_RESIDENT = 2


def _holders(maps: list[mmap.mmap] | list[object], i: int) -> int:
    return sys.getrefcount(maps[i])


_ALONE = _holders([object()], 0)  # the count of a map that only its pool refers to


class SpanPool:
    """Memory maps that spans are read into, reused once nothing else refers to them.

    One pool serves every reader of a process (:data:`POOL`): a reader's first batch then finds
    the maps faulted in by the one before. It keeps at most :data:`_KEEP` maps, the last taken
    last; :meth:`release` lets the kernel take back the pages of the free ones but the last
    :data:`_RESIDENT` when it needs memory (``MADV_FREE``: until then they stay, and reuse costs
    no page fault).
    """

    __slots__ = ("_lock", "_maps")

    def __init__(self) -> None:
        self._maps: list[mmap.mmap] = []
        self._lock = threading.Lock()

    def take(self, size: int) -> mmap.mmap:
        """A map of exactly ``size`` bytes (contents undefined), the caller's alone: a free one
        resized, else a new one."""
        with self._lock:
            free = [i for i in range(len(self._maps)) if _holders(self._maps, i) == _ALONE]
            if free:  # the nearest in size: resizing maps or unmaps the difference
                nearest = min(free, key=lambda i: abs(len(self._maps[i]) - size))
                buffer = self._maps.pop(nearest)
                self._maps.append(buffer)  # (the last taken last)
                return self.resize(buffer, size)
            buffer = _new_map(size)
            if len(self._maps) < _KEEP:
                self._maps.append(buffer)
            return buffer

    def resize(self, buffer: mmap.mmap, size: int) -> mmap.mmap:
        """``buffer`` (the caller's alone, no view of it alive) resized to ``size``, its bytes
        kept; a copy where maps cannot be resized."""
        try:
            buffer.resize(size)
            return buffer
        except (OSError, SystemError, ValueError, BufferError):  # mremap is Linux's
            larger = _new_map(size)
            kept = min(size, len(buffer))
            larger[:kept] = buffer[:kept]
            self._maps = [larger if m is buffer else m for m in self._maps]
            return larger

    def release(self) -> None:
        """Let the kernel take back the pages of the free maps, but the last :data:`_RESIDENT`
        taken, when memory runs short."""
        if not hasattr(mmap, "MADV_FREE"):
            return
        with self._lock:
            for i in range(len(self._maps) - _RESIDENT):
                if _holders(self._maps, i) == _ALONE:
                    _free(self._maps[i])


def _free(buffer: mmap.mmap) -> None:
    with contextlib.suppress(OSError):
        buffer.madvise(mmap.MADV_FREE)


# Private: a shared anonymous map is a file of fixed size underneath, which resizing cannot grow.
_PRIVATE = {"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS} if hasattr(mmap, "MAP_ANONYMOUS") else {}


def _new_map(size: int) -> mmap.mmap:
    return mmap.mmap(-1, size, **_PRIVATE)


POOL = SpanPool()


class Span(NamedTuple):
    """A buffer read by :func:`read_span` (or mapped, :mod:`~tfrec.record.mapped_spans`): the
    stream from the frame at position ``first`` on."""

    buffer: mmap.mmap
    first: int
    end_of_stream: bool  # the read reached the end of the stream
    frames: int  # the wanted frames it holds whole (fewer only at the end, at SPAN_LIMIT or damage)
    crcs: np.ndarray  # uint32: the (unmasked) data CRC32C of the first frames, when asked for
    ends: np.ndarray  # int64: the buffer position just past each of the first frames
    # The CRC32Cs of pieces of the buffer, (crc, start, stop), taken instead of ``crcs`` as it was read
    pieces: list[Piece] | None
    mapped: bool = False  # the buffer is a map of the file (mapped_spans), not read into


def read_span(
    stream: RecordStream,
    pool: SpanPool,
    leftover: bytes | memoryview,
    *,
    at: int,
    end: int,
    wanted: int,
    index: int,
    digest: Callable[[np.ndarray], int] | None = None,
    verify_lengths: bool = False,
    ahead: SpansAhead | None = None,
) -> Span:
    """Read the stream on from the frame at offset ``at`` until ``wanted`` whole frames and
    :data:`PAD` bytes after them are in one buffer, or the stream ends (at offset ``end``).

    ``leftover`` holds the start of that frame (its header at least), already read; the next
    bytes of the stream follow it. Reads are sized by the frames' lengths, guessed first from the
    frame at ``at``. The buffer is exactly as long as what was read. ``digest`` (a CRC32C) is
    taken of each wanted frame's data as soon as it is read, while it is still in the cache; of a
    span filled by two threads, each takes it of every piece it reads (:attr:`Span.pieces`), and
    the frames are checked against those sums together (:mod:`~tfrec.record.block_crc`).
    With ``ahead``, a span too small to share its fill between two threads is read with the
    spans of the next batches (:mod:`~tfrec.record.spans_ahead`), and a span read so is used.
    """
    first = at % PAGE  # the frame's offset within a page, in the buffer as in the file
    stop = first + end - at  # where the stream ends, as a buffer position
    size = frame.unpack_length(leftover, 0)[0] + frame.FRAMING
    limit = first + max(SPAN_LIMIT, size + PAD)
    goal = min(stop, limit, first + max(1, wanted) * size + PAD)
    walk = _Walk(first, wanted, digest, verify_lengths)
    early = ahead.take(stream, at, leftover) if ahead is not None else None
    if early is not None:
        buffer, filled, walk.summed = early.buffer, early.filled, early.summed
    else:
        buffer = pool.take(max(goal, first + len(leftover)))
        buffer[first : first + len(leftover)] = leftover
        filled = first + len(leftover)
    read_ahead = early is not None
    del early  # (the span is the buffer: the pool sees who holds it)
    while True:
        walk.over(buffer, filled)
        if goal > filled:  # in pieces, each checked while the next is read
            if ahead is not None:  # (the spans read ahead follow frames this read finds elsewhere)
                ahead.missed() if ahead.spans or read_ahead else ahead.clear()
            read_ahead = False
            if goal > len(buffer):
                buffer = pool.resize(buffer, goal)
            filled = _fill(stream, pool, ahead, buffer, walk, at - first, filled, goal, index, end)
            if filled < goal:  # the stream ended sooner than its size said
                stop = filled
                buffer = pool.resize(buffer, filled)
        pos, count = walk.pos, walk.count
        if filled >= stop or walk.damaged or (count >= wanted and filled >= pos + PAD):
            if read_ahead and ahead is not None:  # (read ahead, and nothing more needed)
                ahead.hit()
            return walk.span(buffer, first, filled >= stop)
        if count >= wanted:
            goal = min(stop, pos + PAD)
            continue
        # The frames are longer than guessed: read on for the rest, at their mean size so far,
        # and at least to the end of the frame the read cut.
        mean = (pos - first) // count if count else size
        goal = pos + (wanted - count) * mean + PAD
        if pos + frame.HEADER <= filled:
            goal = max(goal, pos + frame.unpack_length(buffer, pos)[0] + frame.FRAMING + frame.HEADER)
        if goal > limit and count:  # enough for one span: the next one reads on
            return walk.span(buffer, first, False)
        goal = min(stop, limit, goal)


def _fill(
    stream: RecordStream,
    pool: SpanPool,
    ahead: SpansAhead | None,
    buffer: mmap.mmap,
    walk: _Walk,
    base: int,
    start: int,
    goal: int,
    index: int,
    end: int,
) -> int:
    """Fill ``buffer[start:goal]`` from the stream (``buffer[0]`` is at stream offset ``base``),
    walking the frames as pieces land; the position filled to (``goal`` unless the stream ends)."""
    shared = goal - start >= FILL_AHEAD_MIN  # by two threads
    cuts = walk.cuts(buffer, start, goal) if not shared and ahead is not None else None
    if cuts is not None and ahead is not None and stream.reads_at() and ahead.wants_fill():
        start += _fill_with_spans_ahead(stream, pool, ahead, buffer, walk, base, start, cuts, end)
        walk.over(buffer, start)
        if start == goal:
            return start
    # Each thread sums the pieces it reads (one CRC call a piece, while the piece is in its cache);
    # the frames are checked against the sums together (block_crc), not one by one.
    by_pieces = shared and walk.digest is not None and stream.fills_at()
    walk.by_pieces = walk.by_pieces or by_pieces
    filled = start
    with (
        memoryview(buffer) as view,
        contextlib.closing(
            stream.fill(
                view[start:goal],
                base + start,
                index,
                PIECE * SHARED_PIECES if shared else PIECE,
                ahead=shared,
                after=functools.partial(walk.sum_piece, view, start) if by_pieces else None,
            )
        ) as pieces,
    ):
        for got in pieces:
            filled = start + got
            walk.over(buffer, filled)
    return filled


def _fill_with_spans_ahead(
    stream: RecordStream,
    pool: SpanPool,
    ahead: SpansAhead,
    buffer: mmap.mmap,
    walk: _Walk,
    at: int,
    start: int,
    cuts: list[int],
    end: int,
) -> int:
    """Fill ``buffer[start:]`` in pieces ending at ``cuts`` (``buffer[0]`` is at stream offset
    ``at``) with the spans ahead of it; the bytes filled."""
    with memoryview(buffer) as view:
        pieces = [
            (view[start + a : start + b], at + start + a) for a, b in zip([0, *cuts[:-1]], cuts, strict=True)
        ]
        got = ahead.fill(
            stream,
            pool.take,
            view,
            at=at,
            pieces=pieces,
            guess=walk.guess,
            end=end,
            digest=walk.digest,
            summed=walk.summed,
        )
        del pieces
    return got


class _Walk:
    """The whole frames of a span so far (up to ``wanted``), each digested as it is found, unless
    the threads that filled the span summed the pieces they read (:attr:`by_pieces`)."""

    __slots__ = (
        "by_pieces",
        "checked",
        "count",
        "crcs",
        "damaged",
        "digest",
        "ends",
        "guess",
        "pieces",
        "pos",
        "summed",
        "verify",
        "wanted",
    )

    def __init__(
        self, pos: int, wanted: int, digest: Callable[[np.ndarray], int] | None, verify: bool
    ) -> None:
        self.pos = pos  # just past the last whole frame
        self.count = 0
        self.wanted = wanted
        self.digest = digest
        self.verify = verify
        self.damaged = False  # the frame at pos has a bad length CRC: the span ends before it
        self.checked: tuple[int, int] = (-1, 0)  # the last header whose length CRC matched
        self.crcs: list[int] = []
        self.ends: list[int] = []
        # Data CRCs taken by the threads that filled the frames of spans read ahead (spans_ahead), by
        # the buffer position of the frame: (the position past it, its CRC). A frame whose bounds differ (the
        # frames were not as long as the guess) is summed by the walk.
        self.summed: dict[int, tuple[int, int]] = {}
        # The frames of the fill being read, as guessed: (the position of the first, the length of
        # each with its framing, how many are wanted). The walk moves on meanwhile: the threads'
        # sums follow this.
        self.guess = (0, 1, 0)
        # Filled by threads that sum what they read (see _fill): the frames are not digested one by
        # one, and pieces holds the sums, (CRC32C, start, stop) by buffer position.
        self.by_pieces = False
        self.pieces: list[Piece] = []

    def cuts(self, buffer: mmap.mmap, start: int, goal: int) -> list[int] | None:
        """Where to cut ``buffer[start:goal]`` into pieces for the spans read ahead: at the ends
        of whole frames, each as long as the frame at :attr:`pos` (whose header is read), about
        :data:`PIECE` bytes a piece (``None``: the frames are too long to be pieces)."""
        pos = self.pos
        if pos + frame.HEADER > start:
            return None
        size = frame.unpack_length(buffer, pos)[0] + frame.FRAMING
        if size > PIECE_FRAMES_MAX:
            return None
        self.guess = (pos, size, self.wanted - self.count)
        step = max(1, PIECE // size) * size
        return [end - start for end in range(pos + step, goal, step) if end > start] + [goal - start]

    def sum_piece(self, view: memoryview, start: int, begin: int, end: int) -> None:
        """Take the CRC32C of ``view[start + begin:start + end]`` (called by the thread that filled
        it, while the bytes are in its cache)."""
        assert self.digest is not None
        with view[start + begin : start + end] as piece:
            self.pieces.append((self.digest(np.frombuffer(piece, np.uint8)), start + begin, start + end))

    def over(self, buffer: mmap.mmap, filled: int) -> None:
        """Go on over the frames that are whole in ``buffer[:filled]``."""
        if self.damaged:
            return
        pos, count, wanted, digest, verify = self.pos, self.count, self.wanted, self.digest, self.verify
        crcs, ends, checked, summed = self.crcs, self.ends, self.checked, self.summed
        head, foot, unpack_header = frame.HEADER, frame.FOOTER, frame.unpack_header
        # One array over what is filled, sliced per frame (dropped on return: a map with a view
        # alive cannot be resized).
        u8 = np.frombuffer(buffer, np.uint8, filled) if digest is not None and not self.by_pieces else None
        while count < wanted and pos + head <= filled:
            header = unpack_header(buffer, pos)
            # (Records of one size repeat their header: it is checked once.)
            if verify and header != checked:
                if frame.length_crc(header[0]) != header[1]:
                    self.damaged = True
                    break
                checked = header
            after = pos + header[0] + frame.FRAMING
            if after > filled:
                break
            if u8 is not None and digest is not None:
                known = summed.get(pos)
                if known is not None and known[0] == after:
                    crcs.append(known[1])
                else:
                    crcs.append(digest(u8[pos + head : after - foot]))
            ends.append(after)
            pos, count = after, count + 1
        self.pos, self.count, self.checked = pos, count, checked

    def span(self, buffer: mmap.mmap, first: int, end_of_stream: bool) -> Span:
        return Span(
            buffer,
            first,
            end_of_stream,
            self.count,
            np.array(self.crcs, np.uint32),
            np.array(self.ends, np.int64),
            self.pieces if self.by_pieces else None,
        )
