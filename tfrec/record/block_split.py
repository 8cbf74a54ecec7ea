"""Finding the whole frames of a block, their length CRCs checked (record layer).

Small records are cut out of blocks of about 1 MiB, so their frames are found a
block at a time: the chain of lengths is walked in Python only as far as it must
be. Runs of equal headers (records of one size) are recognised with one numpy
compare, and blocks of small frames of varying sizes are split with numpy too
(:func:`~tfrec.record.frame.small_frame_chain`). The length CRC depends only on
the length, so a block's are checked in one table lookup.

Example:
    >>> block = b"".join(frame.header(len(r)) + r + footer(r) for r in (b"a", b"bc"))
    >>> split_block(block, 0, verify_checksums=True)
    (array([17, 35]), 35, False)
"""

from __future__ import annotations

import struct

import numpy as np

from . import frame

__all__ = ["NO_ENDS", "split_block"]

NO_ENDS = np.empty(0, np.int64)  # no frame: the ends of an empty run of frames
_WALK = 64  # frames walked in Python before looking for a run of equal headers


def split_block(buf: bytes, pos: int, verify_checksums: bool) -> tuple[np.ndarray, int, bool]:
    """Find every whole frame of ``buf`` from ``pos``, checking length CRCs.

    Returns the position just past each frame, the position of the first
    frame not taken, and whether that frame has a bad length CRC.
    """
    end_of_buffer = len(buf)
    first = pos
    parts: list[list[int] | np.ndarray] = []  # frame ends, walked or found in runs
    unpack = frame.unpack_length
    chained = False  # small frames found with numpy, at most once per block (it reads all the rest)
    while True:
        # Walk the chain of lengths: the only per-record Python loop ...
        walked: list[int] = []
        step = walked.append
        try:
            for _ in range(_WALK):
                end = pos + unpack(buf, pos)[0] + frame.FRAMING
                if end > end_of_buffer:
                    break
                step(end)
                pos = end
        except struct.error:
            pass  # fewer than 8 bytes left: not even a length
        if not walked:
            break
        parts.append(walked)
        # ... and when it went in equal strides, take the run of identical
        # headers that follows with one numpy compare.
        stride = walked[-1] - walked[-2] if len(walked) > 1 else 0
        if (
            len(walked) == _WALK
            and walked[-1] - walked[0] == stride * (_WALK - 1)
            and end_of_buffer - pos >= frame.MIN_RUN * stride
            and unpack(buf, pos)[0] == stride - frame.FRAMING
        ):
            count = frame.count_equal_headers(buf, pos, stride)
            parts.append(np.arange(pos + stride, pos + stride * count + 1, stride, dtype=np.int64))
            pos += stride * count
        elif (
            not chained
            and len(walked) == _WALK
            and walked[-1] - walked[0] < frame.SMALL_FRAME * (_WALK - 1)
            and end_of_buffer - pos >= frame.MIN_RUN * frame.SMALL_FRAME
        ):
            # Small frames of varying sizes: numpy over the rest of the block's bytes beats
            # a Python step per frame.
            chained = True
            chain = frame.small_frame_chain(buf, pos)
            if chain.size:
                parts.append(chain)
                pos = int(chain[-1])
        elif len(walked) < _WALK:
            break
    ends = np.concatenate([np.asarray(part, np.int64) for part in parts]) if parts else NO_ENDS
    bad_length = False
    if verify_checksums:
        bad_start = frame.first_bad_length(buf, first, ends)
        if bad_start is None and pos + frame.HEADER <= end_of_buffer and not frame.length_ok(buf, pos):
            bad_start = pos  # the frame left over: its length decides what to read next
        if bad_start is not None:
            ends = ends[ends <= bad_start]
            pos, bad_length = bad_start, True
    return ends, pos, bad_length
