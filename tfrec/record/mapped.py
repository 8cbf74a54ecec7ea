"""Frames gathered from memory-mapped files, checked together (record layer).

Random access to many small records pays per record for what it does per
record: a system call, a bytes object, a CRC call. With each file mapped once
(:func:`map_file`), the frames a batch asks for are gathered from the maps with
numpy into one buffer, back to back (:func:`gather_frames`: no system call and
no Python work per record; frames of a few lengths are one void item each, a
fancy index per length and file; others are gathered byte by byte), and
checked as a block (:func:`frames_ok`: the headers in numpy, the data CRCs with
one CRC pass over the block, see :mod:`.block_crc`).

A map must never be read past the end of its file (that is a SIGBUS, not an
exception): callers check the file's size (:func:`mapped_size`) against the
index before each gather, and read with ``os.pread`` when it differs. The check
cannot cover a file truncated by another process while a gather runs: like
every reader of memory-mapped files (numpy.memmap, Arrow), that ends the
process. ``TFREC_MAP_FILES=0`` in the environment maps nothing.

Example:
    >>> fd = os.open("train.tfrecord", os.O_RDONLY)
    >>> view = map_file(fd, os.fstat(fd).st_size)
    >>> buf, ends = gather_frames([view], np.array([0, 0]), np.array([21, 0]), np.array([21, 21]))
    >>> frames_ok(buf, ends), frame.slice_records(buf, 0, ends)
    (True, (b'world', b'hello'))
"""

from __future__ import annotations

import itertools
import mmap
import os
import threading
from collections.abc import Sequence

import numpy as np

from .batch import PAD
from .block_crc import data_crcs_match
from .crc import crc_function, mask_array
from .frame import FEW_LENGTHS, FOOTER, FRAMING, HEADER, length_crcs, stored_crcs

__all__ = ["MAP_FILES_ENV", "frames_ok", "gather_frames", "map_file", "mapped_size"]

# Set to "0", no file is mapped (reads use os.pread): for who would rather lose the speed than risk the
# SIGBUS of a file truncated by another process during a gather (see the module docstring).
MAP_FILES_ENV = "TFREC_MAP_FILES"

_LENGTH_BYTES = np.arange(8)
_CRC_BYTES = np.arange(8, HEADER)
# Frames of at least this many bytes on average are copied one slice each: their index arrays (8 bytes
# per byte copied) would cost more than a slice per frame. Measured equal near 2 KiB.
_SLICE_FRAME = 2048
_PIECE = 1 << 18  # bytes gathered with one index array (2 MiB of it, kept per thread that gathers)


def map_file(fd: int, size: int) -> np.ndarray | None:
    """A read-only map of the first ``size`` bytes of an open file, as a ``uint8`` array; ``None`` when
    the file cannot be mapped (empty, not a regular file, a file system without ``mmap``).

    The map lives as long as the array (and arrays made from it) does: no explicit close, so a
    reader still gathering from it is never left with an unmapped range.

    Example:
        >>> view = map_file(fd, os.fstat(fd).st_size)
        >>> view[:8].view("<u8")  # the first frame's length
        array([5], dtype=uint64)
    """
    if size <= 0 or os.environ.get(MAP_FILES_ENV) == "0":
        return None
    try:
        mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    except (OSError, ValueError, OverflowError):
        return None
    return np.frombuffer(mapped, np.uint8)


def mapped_size(view: np.ndarray) -> int:
    """The size the mapped file has now (not the map's), from the map's own descriptor: no race with
    a reader closing its descriptors. Gather only while it is at least the map's size."""
    mapped = view.base.obj if isinstance(view.base, memoryview) else view.base
    assert isinstance(mapped, mmap.mmap), "a view made by map_file"
    try:
        return mapped.size()
    except OSError:  # no longer answerable (a closed map): treat as changed
        return -1


def gather_frames(
    views: Sequence[np.ndarray], files: np.ndarray, offsets: np.ndarray, frame_lengths: np.ndarray
) -> tuple[bytes, np.ndarray, np.ndarray | None] | None:
    """Frame ``i`` of ``views[files[i]]`` at ``offsets[i]`` (``frame_lengths[i]`` bytes), for every ``i``:
    sorted by (file, offset), back to back in one buffer followed by :data:`~tfrec.record.batch.PAD`
    zero bytes.

    Returns the buffer, where each frame ends in it, and ``order``: the ``k``-th frame of the buffer
    is the one asked ``order[k]``-th (``None``: they were asked in that order). A frame asked twice
    is copied twice. ``None`` when an index gives a frame shorter than its framing. The caller has
    checked that every frame lies inside its map.

    Sorted, the frames of one file are one fancy index into its map (its bytes read in address
    order); putting them back in the order asked is cheaper on the records or decoded rows than on
    their bytes.

    Example:
        >>> buf, ends, order = gather_frames([view], np.array([0, 0]), np.array([21, 0]), np.array([21, 21]))
        >>> ends.tolist(), order.tolist()
        ([21, 42], [1, 0])
    """
    order: np.ndarray | None = None
    one_file = files[0] == files[-1] and bool((files == files[0]).all())
    if one_file:
        if (np.diff(offsets) < 0).any():
            order = np.argsort(offsets, kind="stable")
    elif (np.diff(files) < 0).any() or ((np.diff(offsets) < 0) & (np.diff(files) == 0)).any():
        order = np.lexsort((offsets, files))
    if order is not None:
        files, offsets, frame_lengths = files[order], offsets[order], frame_lengths[order]
    if int(frame_lengths.min()) < FRAMING:
        return None
    ends = np.cumsum(frame_lengths)
    total = int(ends[-1])
    out = np.empty(total + PAD, np.uint8)
    out[total:] = 0
    starts = ends - frame_lengths
    if total >= _SLICE_FRAME * len(ends):  # large frames: a slice each, copied by numpy
        rows = zip(files.tolist(), offsets.tolist(), starts.tolist(), ends.tolist(), strict=True)
        for file, at, place, end in rows:
            out[place:end] = views[file][at : at + end - place]
        return out.tobytes(), ends, order
    if _gather_by_length(out, views, files, offsets, frame_lengths, starts):
        return out.tobytes(), ends, order
    # Pieces of at most _PIECE bytes: the index arrays (8 bytes per byte gathered) stay small.
    cuts = np.searchsorted(ends, np.arange(_PIECE, total, _PIECE), side="right").tolist()
    for a, b in zip([0, *cuts], [*cuts, len(ends)], strict=True):
        if a < b:
            _gather_piece(out, views, files[a:b], offsets[a:b], frame_lengths[a:b], int(starts[a]))
    return out.tobytes(), ends, order


def _gather_by_length(
    out: np.ndarray,
    views: Sequence[np.ndarray],
    files: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    starts: np.ndarray,
) -> bool:
    """Gather frames of at most :data:`~.frame.FEW_LENGTHS` lengths (sorted by file) into ``out`` at
    ``starts``, a length at a time: each frame one void item, read from a view of its map with an item
    at every offset and written to such a view of ``out``. False (nothing done) for more lengths.

    No index per byte: small records of a few lengths (varints of a few sizes) gathered at random,
    by index arrays, spent more building the indexes than copying.
    """
    sizes = np.unique(lengths)
    if sizes.size > FEW_LENGTHS:
        return False
    heads = [*np.flatnonzero(np.append(True, files[1:] != files[:-1])).tolist(), len(files)]
    for size in sizes.tolist():
        target = np.ndarray((out.size - size + 1,), f"V{size}", out, 0, (1,))
        chosen = lengths == size
        for a, b in itertools.pairwise(heads):
            rows = np.flatnonzero(chosen[a:b]) + a
            if rows.size:
                view = views[int(files[a])]
                source = np.ndarray((view.size - size + 1,), f"V{size}", view, 0, (1,))
                target[starts[rows]] = source[offsets[rows]]
    return True


def _gather_piece(
    out: np.ndarray,
    views: Sequence[np.ndarray],
    files: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    at: int,
) -> None:
    """Gather frames (sorted by file) into ``out`` from ``at`` on, back to back."""
    ends = np.cumsum(lengths)
    total = int(ends[-1])
    # Each byte's place in its map: runs of +1, jumping at each frame's start (a cumulative sum, in
    # a scratch array: a fresh one each call would cost a page fault per 4 KiB).
    places = _scratch(total)
    places.fill(1)
    places[0] = offsets[0]
    places[ends[:-1]] = offsets[1:] - (offsets[:-1] + lengths[:-1]) + 1
    np.cumsum(places, out=places)
    if files[0] == files[-1]:  # sorted: one file
        np.take(views[int(files[0])], places, out=out[at : at + total])
        return
    heads = np.flatnonzero(np.append(True, files[1:] != files[:-1]))
    cuts = [*(ends[heads] - lengths[heads]).tolist(), total]
    for run, file in enumerate(files[heads].tolist()):
        a, b = cuts[run], cuts[run + 1]
        np.take(views[file], places[a:b], out=out[at + a : at + b])


_local = threading.local()


def _scratch(size: int) -> np.ndarray:
    """An int64 array of ``size`` elements, this thread's, reused from call to call."""
    held: np.ndarray | None = getattr(_local, "scratch", None)
    if held is None:
        held = _local.scratch = np.empty(_PIECE, np.int64)
    return held[:size] if size <= len(held) else np.empty(size, np.int64)  # a frame larger than a piece


def frames_ok(buf: bytes, ends: np.ndarray, frame_lengths: np.ndarray | None = None) -> bool:
    """Whether the frames back to back in ``buf`` (ending at ``ends``) are whole and sound: each header's
    length matches its frame's size (``frame_lengths``, from the index), each length CRC and each data
    CRC matches. ``False`` says only that one does not: read those frames one by one to name it.

    Example:
        >>> buf, ends = gather_frames([view], np.array([0]), np.array([0]), np.array([21]))
        >>> frames_ok(buf, ends)
        True
    """
    if not ends.size:
        return True
    if frame_lengths is None:
        frame_lengths = np.diff(ends, prepend=0)
    starts = ends - frame_lengths
    u8 = np.frombuffer(buf, np.uint8)
    data_lengths = u8[starts[:, None] + _LENGTH_BYTES].view("<i8").ravel()  # signed: exact int64 arithmetic
    if not np.array_equal(data_lengths, frame_lengths - FRAMING):
        return False
    stored = u8[starts[:, None] + _CRC_BYTES].view("<u4").ravel()
    if not np.array_equal(stored, mask_array(length_crcs(data_lengths))):
        return False
    matched = data_crcs_match(buf, 0, ends)
    if matched is not None:
        return matched
    # Large frames: a CRC call per record (each on a view of the buffer, no copy) costs less.
    crc = crc_function()
    data = [u8[a:b] for a, b in zip((starts + HEADER).tolist(), (ends - FOOTER).tolist(), strict=True)]
    computed = mask_array(np.fromiter(map(crc, data), np.uint32, len(data)))
    return bool(np.array_equal(computed, stored_crcs(buf, ends)))
