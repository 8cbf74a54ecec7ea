"""Whether an index follows its file's chain of frames (data layer).

A TFRecord file is a chain: the first frame at byte 0, each next one where the
previous ends (its offset, plus the 16 bytes of framing, plus the data length
its header gives), the last ending where the file ends. An index is only a copy
of that chain. One that covers the file and has no gaps can still point inside
a record's data, where a frame embedded in the payload passes every CRC and
would be returned as a record: so the header at every offset of the index is
read, and must give the index's length.

A header whose own CRC fails is damage, not a disagreement: the record is left
to the reader, which reports it (file, record, offset) when it is read, and the
other records stay readable.

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

from ...errors import InvalidArgumentError, RecordError
from ...record import frame
from ...record.frame import FRAMING, HEADER

__all__ = ["chain_mismatch", "check_frame_chain", "check_offsets_on_chain"]

_WINDOW = 1 << 20  # bytes of headers (and the small frames between them) read at once
_HEADER_BYTES = np.arange(HEADER)


def chain_mismatch(fd: int, offsets: np.ndarray, lengths: np.ndarray) -> tuple[int, int | None] | None:
    """The first line (from 0) whose intact header gives another frame length, with that header's data
    length (``None`` when the file ends inside the header); ``None`` when every line agrees.

    ``offsets`` must start at 0 and run back to back (``offsets[k + 1] == offsets[k] + lengths[k]``);
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
        whole = int(np.searchsorted(positions + HEADER, len(buf), side="right"))  # headers read whole
        if whole:
            u8 = np.frombuffer(buf, np.uint8)
            headers = u8[positions[:whole, None] + _HEADER_BYTES]
            found = headers[:, :8].copy().view("<u8").ravel()
            for wrong in np.flatnonzero(found != (lengths[line : line + whole] - FRAMING).astype(np.uint64)):
                length, stored = frame.unpack_header(headers[wrong].tobytes())
                if frame.length_crc(length) == stored:  # an intact header: the index is wrong here
                    return line + int(wrong), length
        if whole < stop - line:
            return line + whole, None
        line = stop
    return None


def check_frame_chain(
    fd: int, offsets: np.ndarray, lengths: np.ndarray, *, index_path: str, path: str
) -> None:
    """Raise a RecordError naming the index file and line where the index leaves the file's chain.

    ``offsets`` start at 0 and run back to back, as :func:`chain_mismatch` needs.

    Raises:
        RecordError: an intact header disagrees with its index line (``index`` and ``offset``
            name that record; the message names ``index_path`` and the line).
    """
    mismatch = chain_mismatch(fd, offsets, lengths)
    if mismatch is None:
        return
    line, found = mismatch
    said = (
        "the file ends inside its header"
        if found is None
        else f"the record header says {found + FRAMING} ({found} bytes of data)"
    )
    raise RecordError(
        f"{index_path}, line {line + 1}: the index gives a frame of {int(lengths[line])} bytes but {said}: "
        "the index does not follow the file's chain of frames (it may point inside another record's "
        f"data); rebuild it with tfrec.build_index({path!r})",
        path=path,
        index=line,
        offset=int(offsets[line]),
    )


def check_offsets_on_chain(fd: int, offsets: np.ndarray, *, index_path: str, path: str) -> None:
    """Raise unless every offset whose header is intact starts a frame of the file's chain.

    For readers that start at an index's offsets and then follow the chain
    themselves (record ranges): there, only where they start matters. An
    offset inside a frame whose bytes there fail the length CRC is left to
    the reader, which reports a ChecksumError at that offset; an intact
    header inside a frame is a frame embedded in a record's data, and is
    refused. The chain is walked header by header up to the last offset, or
    up to the first damaged header (past it the chain is unknown, and the
    reader reports the damage).

    Raises:
        InvalidArgumentError: an offset holds an intact header inside another frame
            (the message names ``index_path`` and the line).
    """
    chain = 0  # the start of the chain's next frame
    for line, offset in enumerate(offsets.tolist()):
        while chain < offset:
            length = _intact_length(fd, chain)
            if length is None:
                return  # damage: the reader reports it where it is
            chain += length + FRAMING
        if chain != offset and _intact_length(fd, offset) is not None:
            raise InvalidArgumentError(
                f"{index_path}, line {line + 1}: offset {offset} lies inside the frame ending at byte "
                f"{chain} of {path}, yet holds a valid record header (a frame inside another record's "
                f"data); the index does not follow the file's frames; rebuild it with "
                f"tfrec.build_index({path!r})"
            )


def _intact_length(fd: int, offset: int) -> int | None:
    """The data length in the header at ``offset``, or ``None`` when it is cut short or fails its CRC."""
    data = _read_at(fd, HEADER, offset)
    if len(data) < HEADER:
        return None
    length, stored = frame.unpack_header(data)
    return length if frame.length_crc(length) == stored else None


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
