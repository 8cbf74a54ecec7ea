"""Keeping freed memory for the next batch: glibc's heap tuned for batched decoding (base layer).

Decoding a batch makes and drops thousands of objects above Python's small-object size (a 3 KB
``bytes`` value per record, say), then the next batch makes as many again. By default glibc gives
the free top of its heap back to the operating system once it exceeds 128 KiB, so every batch
faults the same pages in again; on a virtual machine that can cost as much as the decoding. Once
per process, when batched reading starts, tfrec raises glibc's trim threshold to 64 MiB and serves
allocations below 32 MiB from the heap: the state glibc itself moves to after a program frees a
32 MiB buffer (see ``mallopt(3)``, dynamic mmap threshold). A process keeps up to 64 MiB more of
freed memory for reuse. Other C libraries are left alone, and ``TFREC_MALLOC_TUNING=0`` leaves
glibc alone too.

Example:
    >>> keep_freed_memory()  # idempotent; called by read_batches, datasets and reading processes
    True
"""

from __future__ import annotations

import os
import sys
import threading

from .forking import renew_in_child

__all__ = ["keep_freed_memory"]

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
