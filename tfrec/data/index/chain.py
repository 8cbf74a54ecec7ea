"""Whether an index follows its file's chain of frames (data layer).

A TFRecord file is a chain: the first frame at byte 0, each next one where the
previous ends (its offset, plus the 16 bytes of framing, plus the data length
its header gives), the last ending where the file ends. An index is only a copy
of that chain. One that covers the file and has no gaps can still point inside
a record's data, where a frame embedded in the payload passes every CRC: so the
header at every offset of the index is read and must give the index's length.
With the first frame at 0 and the lines back to back, that proves each line is
the chain's.

Headers are read a window at a time (1 MiB, or one 12-byte read where frames
are larger), so checking costs a small part of reading the file once.

Example:
    >>> fd = os.open("a.tfrecord", os.O_RDONLY)
    >>> offsets, lengths = read_index("a.tfrecord.idx")
    >>> check_frame_chain(fd, offsets, lengths, index_path="a.tfrecord.idx", path="a.tfrecord")
"""

from __future__ import annotations

import os

import numpy as np

from ...errors import RecordError
from ...record.frame import FRAMING, HEADER

__all__ = ["check_frame_chain", "chain_mismatch"]

_WINDOW = 1 << 20  # bytes of headers (and the small frames between them) read at once
_LENGTH_BYTES = np.arange(8)


def chain_mismatch(fd: int, offsets: np.ndarray, lengths: np.ndarray) -> tuple[int, int | None] | None:
    """The first line (from 0) whose frame length differs from its header's, with the header's
    data length (``None`` when the file ends first); ``None`` when every line agrees.

    ``offsets`` must start at 0 and run back to back (``offsets[k + 1] == offsets[k] + lengths[k]``).
    ``fd`` must not be shared with readers yet (see :func:`_read_at`).
    """
    count = len(offsets)
    line = 0
    while line < count:
        base = int(offsets[line])
        # The headers that fit in a window from this one (at least this one).
        stop = max(line + 1, int(np.searchsorted(offsets, base + _WINDOW - HEADER, side="right")))
        span = int(offsets[stop - 1]) + HEADER - base
        buf = _read_at(fd, span, base)
        positions = offsets[line:stop] - base
        if len(buf) < span:  # the file shrank: the first header it lacks
            short = line + int(np.flatnonzero(positions + HEADER > len(buf))[0])
            if short > line:
                stop = short
                positions = positions[: stop - line]
            else:
                return line, None
        u8 = np.frombuffer(buf, np.uint8)
        found = u8[positions[:, None] + _LENGTH_BYTES].copy().view("<u8").ravel()
        wrong = np.flatnonzero(found != (lengths[line:stop] - FRAMING).astype(np.uint64))
        if wrong.size:
            return line + int(wrong[0]), int(found[wrong[0]])
        if len(buf) < span:
            return stop, None
        line = stop
    return None


def _read_at(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` (fewer at the end of the file). The descriptor is not shared yet
    (it is checked before readers get it), so where there is no pread, moving its position is safe."""
    pieces, have = [], 0
    while have < size:
        if hasattr(os, "pread"):
            piece = os.pread(fd, size - have, offset + have)
        else:  # pragma: no cover (Windows)
            os.lseek(fd, offset + have, os.SEEK_SET)
            piece = os.read(fd, size - have)
        if not piece:
            break
        pieces.append(piece)
        have += len(piece)
    return b"".join(pieces)


def check_frame_chain(
    fd: int, offsets: np.ndarray, lengths: np.ndarray, *, index_path: str, path: str
) -> None:
    """Raise a RecordError naming the index file and line where the index leaves the file's chain.

    Raises:
        RecordError: a header disagrees with its index line (``index`` and ``offset`` name
            that record; the message names ``index_path`` and the line).
    """
    mismatch = chain_mismatch(fd, offsets, lengths)
    if mismatch is None:
        return
    line, found = mismatch
    said = "the file ends inside its header" if found is None else (
        f"the record header says {found + FRAMING} ({found} bytes of data)"
    )
    raise RecordError(
        f"{index_path}, line {line + 1}: the index gives a frame of {int(lengths[line])} bytes but {said}: "
        "the index does not follow the file's chain of frames (it may point inside another record's "
        f"data); rebuild it with tfrec.build_index({path!r})",
        path=path,
        index=line,
        offset=int(offsets[line]),
    )
