"""CRC32C of many short records at once, a byte column at a time in numpy (record layer).

A CRC32C is affine in its data: the CRC of ``L`` bytes is the CRC of ``L`` zero bytes XOR, for each
byte, a table entry chosen by its value and by how many bytes follow it in the record. Short
records laid out as rows of one array (a writer's batch of small records, their padding bytes
zero) are thus checksummed with one table lookup per byte column over every record at once,
where the CRC backend costs a call, and a slice to call it on, per record.

Example:
    >>> rows = np.frombuffer(b"abcxyz", np.uint8).reshape(2, 3)
    >>> crcs = RowCrcs(np.array([3, 3]))
    >>> crcs.add_block(rows, 2)  # byte j of each row has 2 - j bytes after it
    >>> crcs.crcs().tolist() == [crc32c(b"abc"), crc32c(b"xyz")]
    True
"""

from __future__ import annotations

import functools

import numpy as np

from .crc import BYTE_TABLE

__all__ = ["MAX_ROW_CRC", "RowCrcs"]

MAX_ROW_CRC = 256  # records up to this long are checksummed by columns (the tables' size)


@functools.cache
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """``after[k, b]``: the CRC register, from zero, after byte ``b`` then ``k`` zero bytes (flat, by
    ``k * 256 + b``); ``zeros[n]``: the CRC32C of ``n`` zero bytes."""
    after = np.empty((MAX_ROW_CRC, 256), np.uint32)
    after[0] = BYTE_TABLE
    low, eight = np.uint32(0xFF), np.uint32(8)
    for k in range(1, MAX_ROW_CRC):
        previous = after[k - 1]
        after[k] = BYTE_TABLE[previous & low] ^ (previous >> eight)
    zeros = np.empty(MAX_ROW_CRC + 1, np.uint32)
    register = 0xFFFFFFFF
    for n in range(MAX_ROW_CRC + 1):
        zeros[n] = register ^ 0xFFFFFFFF
        register = int(BYTE_TABLE[register & 0xFF]) ^ (register >> 8)
    return after.ravel(), zeros


class RowCrcs:
    """The CRC32C of ``len(lengths)`` records (each at most :data:`MAX_ROW_CRC` bytes), given their
    bytes a column at a time: :meth:`add_block` for columns, :meth:`add_constant` for bytes every
    record has, each with the number of record bytes that follow them.

    Example:
        >>> crcs = RowCrcs(np.array([2]))
        >>> crcs.add_constant(b"ab", 0)
        >>> crcs.crcs().tolist() == [crc32c(b"ab")]
        True
    """

    def __init__(self, lengths: np.ndarray) -> None:
        after, zeros = _tables()
        self._after = after
        self._register = zeros[lengths]  # the zero-initial part of each; the bytes' parts XORed in

    def add_block(self, block: np.ndarray, last: int | np.ndarray) -> None:
        """XOR in the bytes of ``block`` (uint8, a row per record): byte ``j`` of row ``i`` has
        ``last - j`` (or ``last[i] - j``) record bytes after it. Padding bytes must be zero (a zero
        byte adds nothing wherever it is)."""
        register, after = self._register, self._after
        if isinstance(last, int):
            for j in range(block.shape[1]):
                register ^= after[(last - j) << 8 : (last - j + 1) << 8][block[:, j]]
            return
        base = np.maximum(last, 0) << 8  # a padding byte's count may go below zero
        for j in range(block.shape[1]):
            if j:
                base = np.maximum(base - 256, 0)
            register ^= after[base + block[:, j]]

    def add_constant(self, data: bytes, last: int | np.ndarray) -> None:
        """XOR in ``data``, the same bytes in every record, the last of them with ``last`` (or
        ``last[i]``) record bytes after it."""
        if isinstance(last, int):
            self._register ^= _constant_part(data, last)
            return
        rows = np.broadcast_to(np.frombuffer(data, np.uint8), (len(last), len(data)))
        self.add_block(rows, last + len(data) - 1)

    def crcs(self) -> np.ndarray:
        """The records' CRC32C (uint32, unmasked)."""
        return self._register


@functools.lru_cache(maxsize=1024)
def _constant_part(data: bytes, last: int) -> np.uint32:
    after, _ = _tables()
    part = np.uint32(0)
    for j, byte in enumerate(data):
        part ^= after[((last + len(data) - 1 - j) << 8) + byte]
    return part
