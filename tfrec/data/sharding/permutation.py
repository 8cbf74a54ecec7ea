"""A keyed pseudo-random permutation of ``[0, N)``, and how a global order is shared (data layer).

Global shuffling needs, for each epoch, a permutation of every record of every
file. Holding one (8 bytes a record) or shuffling an index is what makes
pre-shuffling big datasets cost memory; a *keyed* permutation costs nothing
per record: :class:`KeyedPermutation` maps a position ``p`` to a record number
with a Feistel network over the smallest even power of two covering ``N``,
walking the cycle (applying it again) while the result is ``>= N``. A Feistel
network is a bijection whatever its round function, and walking the cycle
keeps it one on ``[0, N)``; the expected walk is under 4 steps, since the
domain is under ``4 N``. It is vectorised: numpy maps a whole chunk of
positions at once.

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
    says exactly where an iterator stands.
    """

    index_paths: tuple[str, ...] | None = None
    chunk: int = DEFAULT_CHUNK


class KeyedPermutation:
    """A permutation of ``[0, size)`` keyed by a few integers (seed, epoch...): a pure function, no table.

    Args:
        size: how many numbers are permuted.
        key: the integers that choose the permutation (any number of them, each >= 0).

    Example:
        >>> KeyedPermutation(5, key=(7,))(np.arange(5))
        array([2, 1, 3, 4, 0])
    """

    def __init__(self, size: int, key: Sequence[int]) -> None:
        self.size = int(size)
        bits = max(2, (self.size - 1).bit_length())
        self.half = (bits + 1) // 2
        self.mask = np.uint64((1 << self.half) - 1)
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
        half, mask = np.uint64(self.half), self.mask
        left, right = values >> half, values & mask
        with np.errstate(over="ignore"):
            for key in self.keys:
                left, right = right, left ^ (_mix(right ^ key) & mask)
        return (left << half) | right


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every output bit depends on every input bit (multiplications wrap)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
