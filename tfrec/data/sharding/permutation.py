"""A keyed pseudo-random permutation of ``[0, N)``, and how a global order is shared (data layer).

Global shuffling needs, for each epoch, a permutation of every record of every
file. Holding one (8 bytes a record) or shuffling an index is what makes
pre-shuffling big datasets cost memory; a *keyed* permutation costs nothing
per record: :class:`KeyedPermutation` maps a position ``p`` to a record number
with a Feistel network over the smallest power of two covering ``N``, walking
the cycle (applying it again) while the result is ``>= N``. The network cuts a
number into a high and a low half (of unequal widths for an odd number of
bits) and in turn changes each half by xoring in a keyed hash of the other:
each round can be undone, so the network is a bijection whatever the hash,
and walking the cycle keeps it one on ``[0, N)``. The domain is under ``2 N``,
so a walk takes under 2 steps on average. It is vectorised: numpy maps a
whole group of positions at once.

:class:`GlobalOrder` is the dataset's setting for it (where the indexes are,
how many positions make a chunk), carried by the pipeline's recipe.

Example:
    >>> perm = KeyedPermutation(10, key=(0, 1))     # seed 0, epoch 1
    >>> sorted(perm(np.arange(10)).tolist()) == list(range(10))
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_CHUNK", "GlobalOrder", "KeyedPermutation"]

ROUNDS = 6  # Feistel rounds: 4 make a pseudo-random permutation in theory; 2 more for a cheap round function
DEFAULT_CHUNK = 256  # positions per chunk when no batch() sets it


@dataclass(frozen=True)
class GlobalOrder:
    """A global shuffle's setting: each file's index (``None``: ``{file}.idx`` or a scan) and the chunk.

    A *chunk* is ``chunk`` consecutive positions of the permutation: readers take
    whole chunks in turn, and each chunk is one pull of the pipeline (one batch
    when ``batch(chunk)`` comes first), so that the number of chunks handed out
    says exactly where an iterator stands. ``start``: the rank's chunks already
    handed out before this run (a resumed position state): readers share the rest.
    """

    index_paths: tuple[str, ...] | None = None
    chunk: int = DEFAULT_CHUNK
    start: int = 0


class KeyedPermutation:
    """A permutation of ``[0, size)`` keyed by a few integers (seed, epoch...): a pure function, no table.

    Args:
        size: how many numbers are permuted.
        key: the integers that choose the permutation (any number of them, each >= 0).

    Example:
        >>> KeyedPermutation(8, key=(1,))(np.arange(8))
        array([6, 1, 0, 4, 7, 2, 3, 5])
    """

    def __init__(self, size: int, key: Sequence[int]) -> None:
        self.size = int(size)
        bits = max(2, (self.size - 1).bit_length())
        self.low = np.uint64(bits // 2)  # the width of the low half; the high half has the rest
        self.low_mask = np.uint64((1 << (bits // 2)) - 1)
        self.high_mask = np.uint64((1 << (bits - bits // 2)) - 1)
        self.keys = np.random.SeedSequence([int(k) for k in key]).generate_state(ROUNDS, dtype=np.uint64)

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """The numbers at ``positions`` (int64 array, each in ``[0, size)``), as int64."""
        values = self._encrypt(np.asarray(positions, dtype=np.uint64))
        outside = np.flatnonzero(values >= self.size)
        while outside.size:  # cycle walking: outside [0, size), apply the network again
            values[outside] = self._encrypt(values[outside])
            outside = outside[values[outside] >= self.size]
        return values.astype(np.int64)

    def _encrypt(self, values: np.ndarray) -> np.ndarray:
        high, low = values >> self.low, values & self.low_mask
        with np.errstate(over="ignore"):
            for n, key in enumerate(self.keys):
                if n % 2:
                    low ^= _mix(high ^ key) & self.low_mask
                else:
                    high ^= _mix(low ^ key) & self.high_mask
        return (high << self.low) | low


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every output bit depends on every input bit (multiplications wrap)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
