"""Batches of a record-level shuffle, as a random-access source of batches (data layer).

grain's map datasets handle every element in Python: a shuffle index, statistics,
stacking. Over a :class:`~.source.RecordFileSource` of records that costs more
than reading and decoding them. :class:`ShuffledBatches` makes each *batch* the
element: batch ``i`` of epoch ``e`` is the records at positions
``[i * size, (i + 1) * size)`` of a keyed permutation of all records
(:class:`~tfrec.data.sharding.permutation.KeyedPermutation`, keyed by the seed
and the epoch), read and decoded together by ``source.read_batch``. The shuffle
is of records, over every file; only the order of records inside a batch is
theirs in the files (sorted by record number, which makes the read one pass).

Example:
    >>> batches = source.shuffled_batches(256, seed=0, epochs=10)
    >>> dataset = grain.MapDataset.source(batches)      # one element per batch
    >>> len(batches), batches[0]["label"].shape
    (3910, (256,))
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, Protocol, SupportsIndex

import numpy as np

from ...arguments import check_count
from ...errors import OutOfRangeError
from ..sharding.permutation import KeyedPermutation


class BatchReader(Protocol):
    """What a source of records offers: its length, and a batched read (``RecordFileSource``)."""

    def __len__(self) -> int: ...

    def read_batch(self, record_keys: Sequence[SupportsIndex]) -> Any: ...


__all__ = ["BatchReader", "ShuffledBatches"]


class ShuffledBatches:
    """A random-access source of batches of shuffled records (see the module docstring).

    Args:
        source: the records.
        batch_size: records per batch (the last batch of an epoch may hold fewer).
        seed: chooses the permutations (an integer >= 0).
        epochs: epochs one after another: batch ``i`` belongs to epoch ``i // batches_per_epoch``,
            each with a permutation of its own.
        drop_remainder: leave out each epoch's last batch when it is short.

    Example:
        >>> batches = ShuffledBatches(source, 256, seed=0)
        >>> torch.utils.data.DataLoader(batches, batch_size=None, num_workers=2)  # or grain
    """

    def __init__(
        self,
        source: BatchReader,
        batch_size: int,
        *,
        seed: int,
        epochs: int = 1,
        drop_remainder: bool = False,
    ) -> None:
        self.source = source
        self.batch_size = check_count("ShuffledBatches: batch_size", batch_size)
        self.seed = check_count("ShuffledBatches: seed", seed, allow_zero=True)
        self.epochs = check_count("ShuffledBatches: epochs", epochs)
        records = len(source)
        self.per_epoch = records // self.batch_size if drop_remainder else -(-records // self.batch_size)
        self._permutations: dict[int, KeyedPermutation] = {}

    def __len__(self) -> int:
        return self.per_epoch * self.epochs

    def keys(self, index: SupportsIndex) -> np.ndarray:
        """The record numbers of batch ``index``, sorted (int64)."""
        number = operator.index(index)
        if number < 0:
            number += len(self)
        if not 0 <= number < len(self):
            raise OutOfRangeError(
                f"ShuffledBatches: batch {operator.index(index)} is out of range for {len(self)}"
            )
        epoch, batch = divmod(number, self.per_epoch)
        permutation = self._permutations.get(epoch)
        if permutation is None:
            permutation = KeyedPermutation(len(self.source), (self.seed, epoch))
            self._permutations = {epoch: permutation}  # one epoch at a time is what readers ask for
        start = batch * self.batch_size
        positions = np.arange(start, min(start + self.batch_size, len(self.source)), dtype=np.int64)
        return np.sort(permutation(positions))

    def __getitem__(self, index: SupportsIndex) -> Any:
        """Batch ``index``: ``source.read_batch`` of its records."""
        return self.source.read_batch(self.keys(index).tolist())

    def __repr__(self) -> str:
        return (
            f"ShuffledBatches({self.source!r}, {self.batch_size}, seed={self.seed}, "
            f"epochs={self.epochs}: {len(self)} batches)"
        )
