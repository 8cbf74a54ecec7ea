"""Positioned frame reads: a frame read at a known offset, both CRCs verified (record layer).

Random access knows where each frame starts and how long it is (from an index),
so it reads a frame with one positioned read (``os.pread``: no shared file
position, so threads may share one descriptor) instead of walking the stream.
Errors name the file, the record's index and its byte offset, as the stream
reader's do. Many frames at once (:func:`read_frames`) take one read per run of
nearby frames, the bytes between them skipped.

Example:
    >>> fd = os.open("train.tfrecord", os.O_RDONLY)
    >>> read_frame(fd, 0, 21, path="train.tfrecord", index=0)  # a frame of 5 data bytes
    b'hello'
    >>> read_frames([fd, fd], [0, 21], [21, 21])
    [b'hello', b'world']
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from ..errors import RecordError
from . import frame
from .crc import crc_function, mask, mask_array

__all__ = ["GAP_BUDGET", "GAP_BYTES", "pread", "read_frame", "read_frames", "read_fully"]

# Frames of one file at most GAP_BYTES apart are read together, the gap read and skipped: copying a few
# KiB from the page cache costs less than the system call (and the bytes object) a read of its own would.
# The gap is not checked, so damage there fails no read that does not ask for it. Sorted random picks
# of small records (a global shuffle) are KiB apart: most join a neighbour's read.
GAP_BYTES = 8 << 10
# At most this many gap bytes per read_frames call (smallest gaps first): bounds the memory and the
# copying a call spends on bytes nobody asked for, whatever the number of frames. Not a share of the
# frames' bytes: a small record's gap is many times its size, and that is the case that gains.
GAP_BUDGET = 16 << 20


def read_frame(fd: int, offset: int, frame_length: int, *, path: str, index: int) -> bytes:
    """Read the frame of ``frame_length`` bytes at ``offset`` of an open file and verify both CRCs.

    One positioned read. ``frame_length`` comes from an index; a header that
    disagrees with it means the index does not belong to this file.

    Raises:
        ChecksumError: a CRC does not match (``part`` says which).
        TruncatedRecordError: the file ends inside the frame.
        RecordError: the header's length disagrees with the index.

    Example:
        >>> read_frame(fd, 0, 21, path="train.tfrecord", index=0)
        b'hello'
    """
    data = pread(fd, frame_length, offset)
    if len(data) != frame_length:  # at the end of the file, or a read beyond 2 GiB
        data = read_fully(fd, frame_length, offset)
    if len(data) < frame.HEADER:
        raise frame.truncation_error(None, len(data), path=path, index=index, offset=offset)
    length, stored = frame.unpack_header(data)
    if frame.length_crc(length) != stored:
        raise frame.length_error(
            length, stored, "the length field is damaged", path=path, index=index, offset=offset
        )
    if length + frame.FRAMING != frame_length:
        if len(data) < frame_length:  # the file ends before the frame the index promised
            raise frame.truncation_error(
                length, len(data) - frame.HEADER, path=path, index=index, offset=offset
            )
        raise RecordError(
            f"the index gives a frame of {frame_length} bytes but the record header says "
            f"{length + frame.FRAMING} ({length} bytes of data): the index does not match the file; "
            "rebuild it",
            path=path,
            index=index,
            offset=offset,
        )
    if len(data) < frame_length:
        raise frame.truncation_error(length, len(data) - frame.HEADER, path=path, index=index, offset=offset)
    stored = frame.unpack_crc(data, frame.HEADER + length)[0]
    data = data[frame.HEADER : -frame.FOOTER]
    computed = mask(crc_function()(data))
    if computed != stored:
        raise frame.data_error(length, stored, computed, path=path, index=index, offset=offset)
    return data


def read_frames(
    fds: Sequence[int] | np.ndarray,
    offsets: Sequence[int] | np.ndarray,
    frame_lengths: Sequence[int] | np.ndarray,
) -> list[bytes] | None:
    """Read many frames and verify them together; the records in the order asked.

    The checks of :func:`read_frame`, vectorised. Frames of one file that lie
    at most ``GAP_BYTES`` apart are read with one positioned read, the bytes
    between them read and skipped unchecked, so consecutive records (a loader
    that does not shuffle) and the sorted records of a global shuffle cost few
    system calls; a frame asked for twice is read once. Returns ``None`` when
    any frame fails a check: the caller then reads them one by one with
    :func:`read_frame`, which raises the error that names the first damaged
    record.

    Example:
        >>> read_frames([fd, fd], [21, 0], [21, 21])
        [b'world', b'hello']
    """
    count = len(offsets)
    if not count:
        return []
    # The distinct frames, sorted by (file, offset); `chosen` maps each request to its frame.
    files, starts = np.asarray(fds, np.int64), np.asarray(offsets, np.int64)
    one_file = files[0] == files[-1] and (files == files[0]).all()
    order = np.argsort(starts, kind="stable") if one_file else np.lexsort((starts, files))
    files, starts, lengths = files[order], starts[order], np.asarray(frame_lengths, np.int64)[order]
    distinct = np.ones(count, bool)
    distinct[1:] = (files[1:] != files[:-1]) | (starts[1:] != starts[:-1])
    chosen = np.empty(count, np.int64)
    chosen[order] = np.cumsum(distinct) - 1
    files, starts, lengths = files[distinct], starts[distinct], lengths[distinct]
    ends = starts + lengths
    # Runs of nearby frames, one read each, joined into one buffer; `positions` are the frames' places in it.
    first = _run_heads(files, starts, ends)
    heads = np.flatnonzero(first)
    tails = np.append(heads[1:], len(starts)) - 1
    run_starts, run_sizes = starts[heads], ends[tails] - starts[heads]
    pieces = list(map(pread, files[heads].tolist(), run_sizes.tolist(), run_starts.tolist()))
    if list(map(len, pieces)) != run_sizes.tolist():
        return None  # the end of a file: read_frame tells the truncation
    buf = b"".join(pieces)
    run_of = np.cumsum(first) - 1
    positions = starts + (np.cumsum(run_sizes) - run_sizes - run_starts)[run_of]
    u8 = np.frombuffer(buf, np.uint8)
    headers = u8[positions[:, None] + _HEADER_BYTES]
    data_lengths = headers[:, :8].copy().view("<i8").ravel()  # signed: int64 arithmetic stays exact
    if not np.array_equal(data_lengths, lengths - frame.FRAMING):
        return None
    unique = np.unique(data_lengths)
    expected = dict(zip(unique.tolist(), map(frame.length_crc, unique.tolist()), strict=True))
    stored = headers[:, 8:].copy().view("<u4").ravel()
    if len(unique) == 1:
        length_ok = bool((stored == expected[int(unique[0])]).all())
    else:
        length_ok = stored.tolist() == list(map(expected.__getitem__, data_lengths.tolist()))
    if not length_ok:
        return None
    if len(buf) == int(lengths.sum()):  # no gap: the frames lie back to back, cut out together
        records: Sequence[bytes] = frame.slice_records(buf, 0, np.cumsum(lengths))
    else:  # a slice each, made in C by map
        cuts = map(slice, (positions + frame.HEADER).tolist(), (positions + lengths - frame.FOOTER).tolist())
        records = list(map(buf.__getitem__, cuts))
    computed = mask_array(np.fromiter(map(crc_function(), records), np.uint32, len(records)))
    footers = u8[(positions + lengths - frame.FOOTER)[:, None] + _FOOTER_BYTES].copy().view("<u4").ravel()
    if not np.array_equal(computed, footers):
        return None
    return list(map(records.__getitem__, chosen.tolist()))


def _run_heads(files: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which of the sorted distinct frames start a new read: the rest join the read before them.

    A frame joins when it follows the previous one in the same file within
    ``GAP_BYTES``, while the gaps joined stay within ``GAP_BUDGET`` (the
    smallest first). Overlapping frames (an index that does not match its file)
    never join: each is read on its own, as before gaps were read.

    Example:
        >>> _run_heads(np.array([3, 3, 3, 4]), np.array([0, 21, 9000, 0]), np.array([21, 42, 9021, 21]))
        array([ True, False,  True,  True])
    """
    gaps = np.full(len(starts), -1, np.int64)
    gaps[1:] = np.where(files[1:] == files[:-1], starts[1:] - ends[:-1], -1)
    joined = (gaps >= 0) & (gaps <= GAP_BYTES)
    skipped = np.sort(gaps[joined])
    if skipped.size and skipped[-1] and int(skipped.sum()) > GAP_BUDGET:
        joined &= gaps < skipped[np.cumsum(skipped) > GAP_BUDGET][0]  # the largest gaps are read over no more
    return ~joined


_HEADER_BYTES = np.arange(frame.HEADER)
_FOOTER_BYTES = np.arange(frame.FOOTER)


if hasattr(os, "pread"):
    pread = os.pread
else:  # Windows: no pread; one lock keeps seek and read together
    _seek_lock = threading.Lock()

    def pread(fd: int, size: int, offset: int) -> bytes:
        """Up to ``size`` bytes at ``offset`` of ``fd``, without moving a position other readers share."""
        with _seek_lock:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size)


def read_fully(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` (fewer only at the end of the file): pread may return short.

    Example:
        >>> len(read_fully(fd, 1 << 20, 0)) == min(1 << 20, os.fstat(fd).st_size)
        True
    """
    data = pread(fd, size, offset)
    if len(data) == size or not data:
        return data
    pieces = [data]
    have = len(data)
    while have < size:
        more = pread(fd, size - have, offset + have)
        if not more:
            break
        pieces.append(more)
        have += len(more)
    return b"".join(pieces)
