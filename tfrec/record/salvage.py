"""Salvage after damage: scanning forward to the next frame whose header and data CRCs validate
(record layer).

A reader told to skip damage (``on_error="skip"`` or ``"warn"``) passes a frame whose length
CRC fails by looking, from the next byte on, for a 12-byte header whose length CRC validates
and whose data CRC then validates too.

The work is bounded per byte of input: finding headers costs a few numpy operations per byte
(no loop per byte), and checking the data of the headers found reads and CRCs at most
:data:`SLACK` bytes plus :data:`WORK_PER_BYTE` bytes per byte passed over. Headers whose data
would exceed that are not checked; the caller is told the span it gave up on.

Example:
    >>> header_candidates(b"junk" + frame.header(3) + b"abc" + footer, 0)
    array([4])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import frame
from .crc import mask, unmask_array

__all__ = ["BLOCK", "SLACK", "WORK_PER_BYTE", "header_candidates", "resync"]

BLOCK = 1 << 20  # bytes read at once while looking for the next frame (and while records are small)
SLACK = 32 << 20  # data a resync may check whatever it has passed over ...
WORK_PER_BYTE = 8  # ... plus this many bytes per byte passed over


def header_candidates(buf: bytes, start: int) -> np.ndarray:
    """Positions ``>= start`` in ``buf`` holding a 12-byte header whose length CRC validates.

    Looked for a block at a time, so the temporary arrays stay small whatever ``buf`` holds.
    """
    parts = []
    last = len(buf) - frame.HEADER  # the last position a header fits at
    for first in range(start, last + 1, BLOCK):
        parts.append(_block_candidates(buf, first, min(BLOCK, last + 1 - first)))
    return np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else np.empty(0, np.int64)


def _block_candidates(buf: bytes, start: int, count: int) -> np.ndarray:
    """Of the ``count`` positions from ``start``, those holding a header whose length CRC validates."""
    u8 = np.frombuffer(buf, np.uint8, count=count + frame.HEADER - 1, offset=start)
    # A length below 2**40 has zero top bytes: a cheap filter before the CRC.
    plausible = (u8[5 : 5 + count] == 0) & (u8[6 : 6 + count] == 0) & (u8[7 : 7 + count] == 0)
    if np.count_nonzero(plausible) > count // 64:
        # Runs of zeros: twelve zero bytes are never a header (the CRC of a zero length is not 0).
        nonzero = u8 != 0
        some = nonzero[0:count].copy()
        for column in (1, 2, 3, 4, 8, 9, 10, 11):
            some |= nonzero[column : column + count]
        plausible &= some
    found = np.flatnonzero(plausible)
    if not found.size:
        return found
    # The CRC of a length is the XOR of a table entry per 16 bits (CRCs are affine): no loop per byte.
    lengths = np.ndarray((count,), "<i8", buf, start, (1,))[found]  # signed: indexes without a cast
    stored = np.ndarray((count,), "<u4", buf, start + 8, (1,))[found]
    computed = frame.length_crcs(lengths)
    matches: np.ndarray = found[computed == unmask_array(stored)] + start
    return matches


def resync(
    buf: bytes,
    start: int,
    base: int,
    eof: bool,
    *,
    read: Callable[[int, int], bytes],
    read_exact: Callable[[int, int, int], bytes],
    end_of_stream: int | None,
    crc: Callable[[bytes], int],
    gave_up: Callable[[list[int]], None],
) -> tuple[bytes, int, int, bool]:
    """Find the next position from ``start`` in ``buf`` where a whole frame validates.

    ``buf`` holds the stream from offset ``base``; ``eof`` says whether the stream ends with it.
    ``read(size, at)`` reads the next block (the stream continues at offset ``at``),
    ``read_exact(size, at, frame_offset)`` the rest of a candidate frame; ``end_of_stream`` is
    the stream's size when known, ``crc`` the unmasked CRC32C. ``gave_up(offsets)`` hears of the
    headers left unchecked because of the work bound (stream offsets, none when the list is empty).

    Returns ``(buf, pos, base, eof)`` with ``pos`` at that frame, or ``pos = -1`` when the
    stream ends first.
    """
    origin = base + start
    spent = 0
    skipped: list[int] = []  # stream offsets of the headers not checked
    while True:
        scanned_to = len(buf)
        for candidate in header_candidates(buf, start).tolist():
            length = frame.unpack_header(buf, candidate)[0]
            end = candidate + length + frame.HEADER + frame.FOOTER
            if end_of_stream is not None and base + end > end_of_stream:
                continue
            if spent + length > SLACK + WORK_PER_BYTE * (base + candidate - origin):
                skipped.append(base + candidate)
                continue
            spent += length
            if end > len(buf) and not eof:
                more = read_exact(end - len(buf), base + len(buf), base + candidate)
                buf += more
                eof = len(buf) < end
            if end <= len(buf):
                data = buf[candidate + frame.HEADER : end - frame.FOOTER]
                if mask(crc(data)) == frame.unpack_crc(buf, end - frame.FOOTER)[0]:
                    if skipped:
                        gave_up(skipped)
                    return buf, candidate, base, eof
        if len(buf) > scanned_to:  # grown by a candidate's data: look for headers there too
            start = scanned_to - frame.HEADER + 1
            continue
        if eof:
            if skipped:
                gave_up(skipped)
            return buf, -1, base, eof
        keep = max(start, len(buf) - frame.HEADER + 1)
        chunk = read(BLOCK, base + len(buf))
        if not chunk:
            eof = True
        base += keep
        buf = buf[keep:] + chunk
        start = 0
