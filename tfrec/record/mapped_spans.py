"""Batches of large records handed out as spans of the file itself, mapped (record layer).

A span read into a buffer of its own (:mod:`~tfrec.record.spans`) costs a copy of every byte on
top of the CRC pass, and the copy was the larger part: 100 KiB records in batches were read at
5-6 GB/s, where two threads summing the same bytes in memory ran at 11. A span of a plain file is
therefore mapped instead (:func:`map_span`): the frames' headers are read with ``os.pread``, the
file's pages from the first frame to :data:`~tfrec.record.batch.PAD` bytes past the last are
mapped read-only, and two threads take the CRC32C of the map piece by piece, checked against the
frames together (:mod:`~tfrec.record.block_crc`). Records are slices of the map, so they read as
``bytes``, as those of a read span do; the map lives as long as a batch, a record view or an array
decoded from one refers to it.

Each span costs a map, an unmap and a hand-over to the other thread, so a span maps
:data:`MAP_SPAN_BYTES` at least, however small the batch (the reader hands out the batches of a
span in turn), and ends where a batch does. Measured on 100 KiB records in batches of 16: spans
of 64 MiB 9.3-9.6 GB/s, 128 MiB 9.9-10.4, the whole 300 MB file 11.9-12.4. Records of one length
are found by the first frame's length alone (:func:`_repeated_frames`: a header read per record
was an eighth of the time), their headers checked in the map once summed.

Mapping has the risk :mod:`~tfrec.record.mapped` describes, for longer. The file's size is checked
before each span is mapped and before each batch of it is handed out (``Frames`` in
:mod:`~tfrec.record.block_loop`): a file cut under the reader is reported as ``read_records`` would.
But a file cut while a span's CRC pass runs (about 10 ms per 128 MiB here), or a batch (the map)
read after another process cut the file under it, ends the process with SIGBUS. A live map also
holds a descriptor of its file (Python's ``mmap`` duplicates it), released with the last batch of
the span. ``TFREC_MAP_FILES=0`` in the environment maps nothing (spans are then read into buffers,
at the speed of before).

Example:
    >>> span = map_span(fd, share, at=offset, end=size, wanted=16, batch_size=16, verify_lengths=True,
    ...                 digest=crc32c)
    >>> span.buffer[span.first + 12 : span.ends[0] - 4]  # the first record, a slice of the map
"""

from __future__ import annotations

import itertools
import mmap
import os
from collections.abc import Callable, Generator, Sequence

import numpy as np

from . import frame
from .batch import PAD
from .block_crc import Piece
from .mapped import MAP_FILES_ENV
from .spans import Span

__all__ = ["MAP_SPAN_BYTES", "SUM_PIECE", "map_span", "may_map"]

MAP_SPAN_BYTES = 128 << 20  # a span maps at least this much of the file (or to its end)
SUM_PIECE = 4 << 20  # bytes summed in one CRC call; the two threads take pieces in turn
_NO_CRCS = np.empty(0, np.uint32)
# Frames whose headers are read before a span is taken to repeat the first: one record length. Its
# frames are then found by their length alone, and their headers checked in the map once summed.
_PROBE = 4

# Hands the pieces (a view of the map, its position) to two threads; each calls the second
# argument on the positions of each piece it takes; yields as pieces are done.
Share = Callable[[Sequence[tuple[memoryview, int]], Callable[[int, int], None]], Generator[int, None, None]]


def may_map() -> bool:
    """Whether spans may be mapped (``TFREC_MAP_FILES`` is not ``"0"``)."""
    return os.environ.get(MAP_FILES_ENV) != "0"


def map_span(
    fd: int,
    share: Share,
    *,
    at: int,
    end: int,
    wanted: int,
    batch_size: int,
    verify_lengths: bool,
    digest: Callable[[np.ndarray], int] | None,
) -> Span | None:
    """The frames of the file ``fd`` from offset ``at`` on, as a span of a read-only map of the
    file (``end`` is the file's size when it was opened): the ``wanted`` frames that complete the
    batch being gathered, then whole batches of ``batch_size`` until the span holds
    :data:`MAP_SPAN_BYTES` (a batch cut by the span's end would be joined from two maps: a copy).

    The span ends before a frame whose length CRC fails (``verify_lengths``) or that the file
    cuts; ``None`` when no whole frame starts at ``at``, the file is shorter now than ``end``
    says, or it cannot be mapped: the caller reads instead, and reports what is wrong.
    With ``digest`` (a CRC32C), its pieces are summed by ``share``'s two threads.
    """
    # Unchecked, the span's pages are not touched here: its headers are read with os.pread.
    repeated = None if digest is None else _repeated_frames(fd, at, end, wanted, batch_size, verify_lengths)
    summed: list[Piece] = []
    if repeated is not None:  # mapped and summed as if every frame were as long as the first
        header, count = repeated
        size = frame.unpack_length(header)[0] + frame.FRAMING
        span = _map(fd, share, at, end, at + size * np.arange(1, count + 1, dtype=np.int64), digest)
        if span is None or _headers_repeat(span, header, size):
            return span
        summed = span.pieces or []  # sums of the file's bytes, not of frames: they hold still
    ends = _frame_ends(fd, at, end, wanted, batch_size, verify_lengths)
    return _map(fd, share, at, end, np.array(ends, np.int64), digest, summed) if ends else None


def _map(
    fd: int,
    share: Share,
    at: int,
    end: int,
    ends: np.ndarray,
    digest: Callable[[np.ndarray], int] | None,
    summed: list[Piece] | None = None,
) -> Span | None:
    """The span of the frames from ``at`` to ``ends`` (file offsets), mapped, and summed with
    ``digest`` (but for the ``summed`` pieces, of a map made from ``at`` before); ``None`` when the
    file cannot be mapped or shrank."""
    base = at - at % mmap.ALLOCATIONGRANULARITY  # a map starts on such a boundary
    stop = min(end, int(ends[-1]) + PAD)
    try:
        if os.fstat(fd).st_size < stop:  # shrunk since it was opened: read, and report it
            return None
        buffer = mmap.mmap(fd, stop - base, offset=base, access=mmap.ACCESS_READ)
    except (OSError, ValueError, OverflowError):
        return None
    first = at - base
    frame_ends = ends - base
    pieces = None if digest is None else _sum(buffer, share, first, int(frame_ends[-1]), digest, summed or [])
    return Span(buffer, first, stop == end, len(frame_ends), _NO_CRCS, frame_ends, pieces, mapped=True)


def _repeated_frames(
    fd: int, at: int, end: int, wanted: int, batch_size: int, verify: bool
) -> tuple[bytes, int] | None:
    """When the first :data:`_PROBE` frames from ``at`` share one header (records of one length):
    that header, and how many frames the span takes if all the others repeat it too."""
    probe = os.pread(fd, frame.HEADER, at)
    if len(probe) < frame.HEADER:
        return None
    length, stored = frame.unpack_header(probe, 0)
    if verify and frame.length_crc(length) != stored:
        return None
    size = length + frame.FRAMING
    batches = max(0, -(-(MAP_SPAN_BYTES - wanted * size) // (batch_size * size)))
    count = min(wanted + batches * batch_size, (end - at) // size)
    if count < _PROBE or any(os.pread(fd, frame.HEADER, at + k * size) != probe for k in range(1, _PROBE)):
        return None
    return probe, count


def _headers_repeat(span: Span, header: bytes, size: int) -> bool:
    """Whether every frame of ``span`` has ``header`` (checked once the span is summed: its pages
    are mapped by then, by both threads)."""
    first = span.first
    return (
        span.buffer[first : first + frame.HEADER] == header
        and frame.count_equal_headers(span.buffer, first, size) >= span.frames  # type: ignore[arg-type]
    )


def _frame_ends(fd: int, at: int, end: int, wanted: int, batch_size: int, verify: bool) -> list[int]:
    """The file offsets just past the frames from ``at`` on that the span takes. (Headers are read
    with ``os.pread``: read through the map, each would fault its pages in here, before the two
    threads that sum the span can share that work: 8% slower.)"""
    ends: list[int] = []
    checked = (-1, 0)  # the last header whose length CRC matched (records of one size repeat it)
    pos = at
    while len(ends) < wanted or pos - at < MAP_SPAN_BYTES or (len(ends) - wanted) % batch_size:
        header = os.pread(fd, frame.HEADER, pos) if pos + frame.HEADER <= end else b""
        if len(header) < frame.HEADER:
            break
        length_and_crc = frame.unpack_header(header, 0)
        if verify and length_and_crc != checked:
            if frame.length_crc(length_and_crc[0]) != length_and_crc[1]:
                break
            checked = length_and_crc
        after = pos + length_and_crc[0] + frame.FRAMING
        if after > end:
            break
        ends.append(after)
        pos = after
    return ends


def _sum(
    buffer: mmap.mmap,
    share: Share,
    first: int,
    last: int,
    digest: Callable[[np.ndarray], int],
    summed: list[Piece],
) -> list[Piece]:
    """The CRC32Cs of ``buffer[first:last]`` in :data:`SUM_PIECE` pieces, taken by two threads;
    ``summed`` are pieces from ``first`` on already summed (those within are kept)."""
    sums = [piece for piece in summed if piece[2] <= last]  # (they tile a run from first on)
    first = max((piece[2] for piece in sums), default=first)
    if first >= last:
        return sums
    with memoryview(buffer) as view:

        def sum_piece(start: int, stop: int) -> None:
            with view[start:stop] as piece:
                sums.append((digest(np.frombuffer(piece, np.uint8)), start, stop))

        cuts = [*range(first, last, SUM_PIECE), last]
        pieces = [(view[a:b], a) for a, b in itertools.pairwise(cuts)]
        done = share(pieces, sum_piece)
        try:
            for _ in done:
                pass
        finally:
            done.close()
        for piece, _ in pieces:
            piece.release()
        del pieces
    return sums
