"""Where batched decoding puts its output: glibc's heap tuned for it, or an arena (base layer).

Decoding a batch makes and drops thousands of objects above Python's small-object size (a 3 KB
``bytes`` value per record, say), then the next batch makes as many again. By default glibc gives
the free top of its heap back to the operating system once it exceeds 128 KiB, so every batch
faults the same pages in again; on a virtual machine that can cost as much as the decoding. Once
per process, when batched reading starts, tfrec raises glibc's trim threshold to 64 MiB and serves
allocations below 32 MiB from the heap: the state glibc itself moves to after a program frees a
32 MiB buffer (see ``mallopt(3)``, dynamic mmap threshold). A process keeps up to 64 MiB more of
freed memory for reuse. Other C libraries are left alone, and ``TFREC_MALLOC_TUNING=0`` leaves
glibc alone too.

An :class:`Arena` is a buffer that decoders may write their output columns into instead of
fresh arrays: a reading process lends the shared-memory slot its next batch goes to, so the
columns are there already and are not copied again to hand them over. Decoders ask
:func:`current_arena` (set by :func:`use_arena` for the duration of one decode); without one, or
when it is full, they allocate as they always do.

Example:
    >>> keep_freed_memory()  # idempotent; called by read_batches, datasets and reading processes
    True
    >>> with use_arena(Arena(memoryview(bytearray(1 << 20)))):
    ...     out = current_arena().empty(1024, np.float32)   # None once the arena is full
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .forking import renew_in_child

__all__ = ["Arena", "current_arena", "keep_freed_memory", "use_arena"]

_ENV_VAR = "TFREC_MALLOC_TUNING"
_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3
_TRIM_THRESHOLD = 64 << 20
_MMAP_THRESHOLD = 32 << 20  # glibc's own upper bound for the dynamic threshold on 64-bit systems

_lock = threading.Lock()
renew_in_child(sys.modules[__name__], "_lock")
_tuned: bool | None = None  # None: not tried yet in this process


def keep_freed_memory() -> bool:
    """Raise glibc's trim and mmap thresholds once per process (nothing elsewhere, or when disabled).

    Returns whether they are raised: then buffers below 32 MiB come from the heap and are reused,
    so reading in blocks of several MiB costs no more than in 1 MiB blocks.
    """
    global _tuned
    if _tuned is None:
        with _lock:
            if _tuned is None:
                _tuned = _tune()
    return _tuned


def _tune() -> bool:
    if os.environ.get(_ENV_VAR, "1") == "0" or not _glibc():
        return False
    import ctypes  # here, not at import: most programs that import tfrec never call this

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mmap = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)  # 1 on success
    trim = mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    return bool(mmap and trim)


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # not a POSIX system, or no such name here
        return False


ALIGN = 64  # arena allocations start on cache-line boundaries


class Arena:
    """A writable buffer handed out front to back to one decode's output arrays.

    Byte strings of one length written into it are recorded (:meth:`bytes_values`) with the list
    of ``bytes`` made from them, so that whoever ships the output can send the region instead
    of the values. The arena never frees: it serves one batch, then is dropped.
    """

    def __init__(self, buffer: memoryview) -> None:
        self.memory = np.frombuffer(buffer, np.uint8)
        self.used = 0
        self.strings: list[tuple[list[bytes], int, int]] = []  # (values, offset, size of each)

    def empty(self, count: int, dtype: Any) -> np.ndarray | None:
        """A 1-D array of ``count`` items of ``dtype`` in the arena, or None when it has no room."""
        dtype = np.dtype(dtype)
        start = -(-self.used // ALIGN) * ALIGN
        end = start + count * dtype.itemsize
        if end > self.memory.size:
            return None
        self.used = end
        return self.memory[start:end].view(dtype)

    def offset(self, array: np.ndarray) -> int | None:
        """Where ``array``'s memory starts in the arena, if it lies there whole and contiguous."""
        if not (array.flags.c_contiguous or array.flags.f_contiguous):
            return None
        start = array.__array_interface__["data"][0] - self.memory.__array_interface__["data"][0]
        return start if start >= 0 and start + array.nbytes <= self.used else None

    def copy(self, block: np.ndarray) -> np.ndarray | None:
        """``block`` copied into the arena (same shape and dtype), or None when it has no room."""
        out = self.empty(block.size, block.dtype)
        if out is None:
            return None
        out = out.reshape(block.shape)
        out[...] = block
        return out

    def strings_of(self, region: np.ndarray) -> list[bytes]:
        """The ``bytes`` of ``region`` (an arena array of "V" items), recorded with the region."""
        values: list[bytes] = region.tolist()
        offset = self.offset(region)
        if offset is not None:
            self.strings.append((values, offset, region.dtype.itemsize))
        return values

    def bytes_values(self, values: list[bytes]) -> tuple[int, int] | None:
        """(offset, size of each) of a region recorded holding ``values``, else None."""
        for recorded, offset, size in self.strings:
            if len(recorded) == len(values) and recorded == values:  # identity first: a C loop
                return offset, size
        return None


_ARENA: contextvars.ContextVar[Arena | None] = contextvars.ContextVar("tfrec_arena", default=None)


def current_arena() -> Arena | None:
    """The arena output columns go to now (None: allocate as usual)."""
    return _ARENA.get()


@contextlib.contextmanager
def use_arena(arena: Arena | None) -> Iterator[Arena | None]:
    """Decoders in this block write their output columns into ``arena`` while it has room."""
    token = _ARENA.set(arena)
    try:
        yield arena
    finally:
        _ARENA.reset(token)
