"""Pulls handed from a reading process to the consumer through shared memory (data layer).

A pull of a reading process (after ``batch``: a dict of arrays, ~4 MB for
image-like records) is pickled with protocol 5. Its large buffers do not go
into the pickle: numeric arrays of at least :data:`OUT_OF_BAND` bytes, and
arrays or lists of ``bytes`` (strings, raw records) whose values add up to
that much, are copied into a shared-memory slot of the process; only the
small in-band pickle and where each buffer lies in the slot travel over the
pipe. (Decoding straight into the slot spared that copy but cost the
decoder more than it saved: its gathers then copied twice, and the bytes
values a third time, out of the slot.) The pool's consumer unpickles
numeric arrays as views of the slot, without a copy: the slot stays lent
to the consumer until every array of the pull is gone (:class:`SlotReader`),
and is then given back to its process. Values of ``bytes`` are rebuilt as
Python ``bytes`` (an object array needs them); strings of one length that the
decoder left packed (:class:`~tfrec.example.columns.PackedStrings`) travel
as one numeric buffer and become ``bytes`` as they are unpickled. Past :data:`LEND_LIMIT`
slots lent per process (a consumer that keeps every batch), the pull is
copied out and its slot given back at once. Lent arrays outlive the
segment's name: a segment unlinked while mapped stays readable until its
last view goes.

Each process owns :data:`~tfrec.data.parallel.worker.SLOTS` slots, for the
pulls it may have in flight and those lent, takes a free one for each pull
(a pull that finds none goes through the pipe), and replaces a free slot by
a larger one when a pull does not fit. A slot's segment is named ``tfrec_shm_<pool>_<process>_<slot>``
(:func:`segment_name`), so whoever holds the pool's id can find every segment
the pool may have left: a process unlinks its own when it stops (also when
the consumer was killed: its command pipe ends), and the consumer, after
stopping the processes, unlinks whatever is left (:func:`unlink_segments`:
a process that was killed). If both are killed, multiprocessing's resource
tracker unlinks the segments when the last of them is gone.

The resource tracker: the process that creates a segment registers it with
the tracker, and so does every process that attaches it (Python 3.11 has no
``track=False``). The consumer and its processes share one tracker
(multiprocessing hands children its pipe), which keeps a set of names:
registering a name twice is harmless, and the one ``unlink`` of a segment
(by its process, or by the consumer's cleanup) unregisters it. Attaching
happens only after the creator registered, and the creator unlinks only
after the consumer attached (it received the pull), so the set ends empty
and the tracker warns of nothing. (The usual workaround, unregistering right
after attaching, would empty the shared set early: the later unlink's
unregister would then be an error in the tracker, and a crash would leak.)

Example:
    >>> writer = SlotWriter(pool, worker=0, slots=3)           # in reading process 0
    >>> header, inband = writer.pack(items, slot=0)
    >>> reader = SlotReader(pool)                              # in the consumer
    >>> items = reader.unpack(0, header, inband)
"""

from __future__ import annotations

import collections
import contextlib
import io
import itertools
import os
import pickle
import secrets
import warnings
import weakref
from collections.abc import Sequence
from multiprocessing import shared_memory
from typing import Any, TypeAlias

import numpy as np

__all__ = [
    "LEND_LIMIT",
    "OUT_OF_BAND",
    "PREFIX",
    "SlotReader",
    "SlotWriter",
    "new_pool_id",
    "segment_name",
    "unlink_segments",
]

PREFIX = "tfrec_shm_"  # every segment's name starts with it
OUT_OF_BAND = 64 * 1024  # bytes from which a buffer goes through shared memory
LEND_LIMIT = 2  # slots of one process lent to the consumer at most (its arrays view them)
ALIGN = 64  # buffers start on cache-line boundaries
_SHM_DIR = "/dev/shm"  # where Linux keeps POSIX shared memory (to reserve it: see _reserve)

Header: TypeAlias = "tuple[int, int, list[tuple[int, int]]] | None"  # (slot, generation, [(offset, size)])

# A numeric array's bytes (uint8), or byte strings with their lengths.
_Piece: TypeAlias = "np.ndarray | tuple[list[bytes], np.ndarray]"


def new_pool_id() -> str:
    """A fresh id for the segments of one pool of reading processes."""
    return secrets.token_hex(4)


def segment_name(pool: str, worker: int, slot: int) -> str:
    """The name of slot ``slot`` of process ``worker`` (short: macOS allows 31 characters)."""
    return f"{PREFIX}{pool}_{worker}_{slot}"


# -- what the consumer's unpickler calls ------------------------------------------------------------


def rebuild_array(
    buffer: memoryview | np.ndarray, dtype: np.dtype[Any], shape: tuple[int, ...], order: str
) -> np.ndarray:
    """A numeric array of ``buffer``'s bytes (in ``order``).

    A lent slot's region arrives as a uint8 array (see :class:`SlotReader`): the
    result is a view of it, no copy. A memoryview is copied out: the result owns its memory.
    """
    if isinstance(buffer, np.ndarray):
        return buffer.view(dtype).reshape(shape, order="F" if order == "F" else "C")
    flat = np.frombuffer(buffer, dtype)
    return flat.reshape(shape, order="F" if order == "F" else "C").copy(order="K")


def rebuild_bytes_array(
    buffer: memoryview | np.ndarray, lengths: np.ndarray, shape: tuple[int, ...], order: str
) -> np.ndarray:
    """An object array of ``bytes`` cut out of ``buffer`` by ``lengths``."""
    out = np.empty(len(lengths), object)
    out[:] = _cut(buffer, lengths)
    return out.reshape(shape, order="F" if order == "F" else "C")


def rebuild_bytes_list(buffer: memoryview | np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """A list of ``bytes`` cut out of ``buffer`` by ``lengths``."""
    return _cut(buffer, lengths)


def _cut(buffer: memoryview | np.ndarray, lengths: np.ndarray) -> list[bytes]:
    view = memoryview(buffer)  # type: ignore[arg-type]  # (an ndarray is a buffer)
    if len(lengths) > 1 and lengths[0] > 0 and (lengths == lengths[0]).all():
        # Values of one length (fixed-size images, hashes): numpy builds the bytes in one C loop,
        # 2-3x faster than a slice and a copy each ("V" items come out as bytes, zeros kept).
        return list(np.frombuffer(view, f"V{int(lengths[0])}").tolist())
    bounds = [0, *np.cumsum(lengths).tolist()]
    return [view[a:b].tobytes() for a, b in itertools.pairwise(bounds)]


# -- the reading process's side ---------------------------------------------------------------------


class _ByteStrings:
    """A list of ``bytes`` to be sent out of band (pickle does not ask about plain lists)."""

    __slots__ = ("items",)

    def __init__(self, items: list[bytes]) -> None:
        self.items = items


def _all_bytes(values: Sequence[Any]) -> bool:
    return set(map(type, values)) == {bytes}  # (a loop in C: 1024 values in ~15 us)


def _order(array: np.ndarray) -> str:
    return "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"


class _Pieces:
    """The pickler's buffer callback: collects the pieces that ``mark`` stood in for, in order.

    Apart from the pickler on purpose: a pickler whose callback is its own bound method is a
    reference cycle, which kept each pull (its arrays, its bytes, views of its slot) alive until
    the garbage collector ran, and made each collection walk them first.
    """

    __slots__ = ("marked", "pieces")

    def __init__(self) -> None:
        self.pieces: list[_Piece] = []
        self.marked: dict[int, tuple[pickle.PickleBuffer, _Piece]] = {}

    def mark(self, piece: _Piece) -> pickle.PickleBuffer:
        """A PickleBuffer the callback recognises: it stands for ``piece`` in the pickle."""
        marker = pickle.PickleBuffer(bytearray())  # writable: the consumer's buffer arrives as it is
        self.marked[id(marker)] = (marker, piece)
        return marker

    def __call__(self, buffer: pickle.PickleBuffer) -> bool:
        marked = self.marked.pop(id(buffer), None)
        if marked is None:
            return True  # another library's buffer: in band, as pickle would do
        self.pieces.append(marked[1])
        return False


class _Pickler(pickle.Pickler):
    """Protocol 5, with the large buffers of arrays and byte strings collected as ``pieces``."""

    def __init__(self, file: io.BytesIO) -> None:
        found = _Pieces()
        super().__init__(file, protocol=5, buffer_callback=found)
        self._mark = found.mark
        self.pieces = found.pieces

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is np.ndarray:
            if not obj.dtype.hasobject:
                if obj.nbytes < OUT_OF_BAND:
                    if obj.flags.c_contiguous or obj.flags.f_contiguous:
                        return NotImplemented
                    # numpy pickles a strided array with its byte order lost: contiguous keeps it
                    return np.ascontiguousarray(obj).__reduce_ex__(5)
                order = _order(obj)
                contiguous = obj if order == "F" else np.ascontiguousarray(obj)
                marker = self._mark(contiguous.reshape(-1, order="A").view(np.uint8))
                return rebuild_array, (marker, obj.dtype, obj.shape, order)
            if obj.dtype == object:
                order = _order(obj)
                values = obj.ravel(order="F" if order == "F" else "C").tolist()
                if _all_bytes(values):
                    lengths = np.fromiter(map(len, values), np.int64, len(values))
                    if int(lengths.sum()) >= OUT_OF_BAND:
                        return rebuild_bytes_array, (self._mark((values, lengths)), lengths, obj.shape, order)
            return NotImplemented
        if type(obj) is _ByteStrings:
            lengths = np.fromiter(map(len, obj.items), np.int64, len(obj.items))
            if int(lengths.sum()) >= OUT_OF_BAND:
                return rebuild_bytes_list, (self._mark((obj.items, lengths)), lengths)
            return list, (obj.items,)
        return NotImplemented


def _wrap(items: list[Any]) -> Any:
    """``items`` with lists of bytes (raw records) marked to go out of band."""
    if _all_bytes(items):
        return _ByteStrings(items)
    return [_ByteStrings(item) if type(item) is list and _all_bytes(item) else item for item in items]


def _put_bytes(view: memoryview, offset: int, values: list[bytes], lengths: np.ndarray) -> None:
    """Copy ``values`` back to back into ``view`` from ``offset``."""
    if len(lengths) > 1 and lengths[0] > 0 and (lengths == lengths[0]).all():
        # Values of one length (fixed-size images): one numpy call copies them all as "V" items,
        # twice as fast as a slice assignment each (NULs are kept: "V" is raw bytes).
        np.frombuffer(view, f"V{int(lengths[0])}", len(values), offset)[:] = values
        return
    for value in values:
        end = offset + len(value)
        view[offset:end] = value
        offset = end


def _layout(pieces: list[_Piece]) -> tuple[list[tuple[int, int]], int]:
    """Where each piece lies in the slot, back to back from its start, and the end of the last."""
    spans, end = [], 0
    for piece in pieces:
        size = piece.nbytes if isinstance(piece, np.ndarray) else int(piece[1].sum())
        spans.append((end, size))
        end += -(-size // ALIGN) * ALIGN
    return spans, end


def _buffer(segment: shared_memory.SharedMemory) -> memoryview:
    view = segment.buf
    if view is None:  # only once closed, which the pool does last
        raise ValueError(f"shared memory {segment.name} is closed")
    return view


def _reserve(name: str, size: int) -> None:
    """Allocate the segment's memory now: a full /dev/shm is an OSError here, not a SIGBUS later."""
    path = os.path.join(_SHM_DIR, name)
    if not hasattr(os, "posix_fallocate") or not os.path.exists(path):
        return
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)


class SlotWriter:
    """The shared-memory slots of one reading process: packs pulls into them (see the module)."""

    def __init__(self, pool: str, worker: int, slots: int) -> None:
        self.names = [segment_name(pool, worker, slot) for slot in range(slots)]
        self.segments: list[shared_memory.SharedMemory | None] = [None] * slots
        self.generations = [0] * slots
        self.warned = False  # about a pull that found no shared memory

    def pack(self, items: list[Any], slot: int | None) -> tuple[Header, bytes]:
        """``items`` as (where its large buffers lie in ``slot``, the in-band pickle).

        ``slot`` None (every slot is still lent to the consumer): everything in band.
        """
        if slot is None:
            return None, pickle.dumps(items, protocol=5)
        file = io.BytesIO()
        pickler = _Pickler(file)
        pickler.dump(_wrap(items))
        if not pickler.pieces:
            return None, file.getvalue()
        spans, size = _layout(pickler.pieces)
        try:
            segment = self._segment(slot, size)
        except OSError as exc:  # no shared memory (full, or none here): everything in band
            if not self.warned:
                self.warned = True
                warnings.warn(
                    f"reading process: no shared memory for a pull of {size} bytes ({exc}); pulls "
                    "that do not fit go through the pipe, which is slower. Hint: give /dev/shm "
                    "more room (docker run --shm-size=1g) or use fewer reading processes",
                    RuntimeWarning,
                    stacklevel=2,
                )
            return None, pickle.dumps(items, protocol=5)
        view = _buffer(segment)
        for (offset, nbytes), piece in zip(spans, pickler.pieces, strict=True):
            if isinstance(piece, np.ndarray):
                np.frombuffer(view, np.uint8, nbytes, offset)[:] = piece
            else:
                _put_bytes(view, offset, *piece)
        return (slot, self.generations[slot], spans), file.getvalue()

    def _segment(self, slot: int, size: int) -> shared_memory.SharedMemory:
        segment = self.segments[slot]
        if segment is not None and segment.size >= size:
            return segment
        self.segments[slot] = None
        if segment is not None:  # too small: the consumer is done with it, replace it
            segment.close()
            with contextlib.suppress(FileNotFoundError):
                segment.unlink()
        capacity = max(size + size // 4, 1 << 20)  # room for a little growth
        segment = shared_memory.SharedMemory(self.names[slot], create=True, size=capacity)
        try:
            _reserve(segment.name, capacity)
        except OSError:
            segment.close()
            segment.unlink()
            raise
        self.generations[slot] += 1
        self.segments[slot] = segment
        return segment

    def close(self) -> None:
        """Unmap and unlink every slot (the process is stopping)."""
        for slot, segment in enumerate(self.segments):
            if segment is not None:
                self.segments[slot] = None
                segment.close()
                with contextlib.suppress(FileNotFoundError):
                    segment.unlink()


# -- the consumer's side ----------------------------------------------------------------------------


class _Attached(shared_memory.SharedMemory):
    """A segment the consumer maps; closing it while lent arrays still map it leaves them the mapping.

    The mmap stays alive as long as a view of it does (each array handed out holds
    one) and is unmapped when the last goes, so closing never fails nor waits.
    """

    def close(self) -> None:
        try:
            super().close()
        except BufferError:  # arrays still view the mapping: they own it now
            self._mmap = None
            super().close()  # the file descriptor


def _returned(freed: collections.deque[tuple[int, int, bool]], worker: int, slot: int) -> None:
    freed.append((worker, slot, True))  # (any thread, from the garbage collector: an append is atomic)


class SlotReader:
    """The consumer's view of every process's slots: unpacks pulls, lending or copying their buffers.

    With ``lend`` (the pool's reader), numeric arrays of a pull are views of the
    slot, without a copy: the slot is lent to the consumer until every array of
    the pull is gone (a ``weakref.finalize`` on the uint8 array they all view),
    and :meth:`returned` says which slots are free again, for the pool to tell
    their processes. A process with :data:`LEND_LIMIT` slots lent gets its next
    pulls copied out (a consumer that keeps every batch, ``list(ds)`` say, holds
    no more shared memory than that). Without ``lend`` every buffer is copied
    out and the slot is free once the pull is unpacked.
    """

    def __init__(self, pool: str, lend: bool = False) -> None:
        self.pool = pool
        self.lend = lend
        self.attached: dict[tuple[int, int], tuple[int, shared_memory.SharedMemory]] = {}
        self.freed: collections.deque[tuple[int, int, bool]] = collections.deque()  # (.., was lent)
        self.lent: collections.Counter[int] = collections.Counter()  # per process; the consumer's thread only

    def unpack(self, worker: int, header: Header, inband: bytes | memoryview) -> list[Any]:
        """The pull that process ``worker`` packed as ``header`` and ``inband``."""
        if header is None:
            return list(pickle.loads(inband))
        slot, generation, spans = header
        view = _buffer(self._segment(worker, slot, generation))
        if self.lend and self.lent[worker] < LEND_LIMIT:
            end = max(offset + size for offset, size in spans)
            base = np.frombuffer(view[:end], np.uint8)  # what every array of the pull views
            items = list(pickle.loads(inband, buffers=[base[a : a + n] for a, n in spans]))
            self.lent[worker] += 1
            weakref.finalize(base, _returned, self.freed, worker, slot)
            return items
        regions = [view[offset : offset + size] for offset, size in spans]
        try:
            return list(pickle.loads(inband, buffers=regions))
        finally:
            for region in regions:  # nothing refers to them (all copied): the slot can be unmapped
                with contextlib.suppress(BufferError):
                    region.release()
            if self.lend:  # (only the pool's reader has slots to give back)
                self.freed.append((worker, slot, False))

    def returned(self) -> list[tuple[int, int]]:
        """The (process, slot) pairs free again since the last call: their arrays are gone or copied."""
        out = []
        while self.freed:
            worker, slot, lent = self.freed.popleft()
            out.append((worker, slot))
            self.lent[worker] -= lent
        return out

    def _segment(self, worker: int, slot: int, generation: int) -> shared_memory.SharedMemory:
        attached = self.attached.get((worker, slot))
        if attached is not None and attached[0] == generation:
            return attached[1]
        if attached is not None:
            attached[1].close()
        segment = _Attached(segment_name(self.pool, worker, slot))
        self.attached[worker, slot] = (generation, segment)
        return segment

    def close(self) -> None:
        """Unmap every slot (arrays still lent keep their mapping; unlinking is the processes' business)."""
        attached, self.attached = self.attached, {}
        for _, segment in attached.values():
            segment.close()


def unlink_segments(pool: str, workers: int, slots: int) -> int:
    """Unlink every segment of ``pool`` still there (its processes have stopped); how many were left."""
    left = 0
    for worker in range(workers):
        for slot in range(slots):
            name = segment_name(pool, worker, slot)
            try:
                segment = shared_memory.SharedMemory(name)
            except FileNotFoundError:
                continue
            except ValueError:  # created but not sized yet: its process was killed in between
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(_SHM_DIR, name))  # never mapped, so never tracked either
                left += 1
                continue
            segment.close()
            with contextlib.suppress(FileNotFoundError):
                segment.unlink()
            left += 1
    return left
