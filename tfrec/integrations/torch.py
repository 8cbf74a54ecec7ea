"""PyTorch integration: TFRecord files as a torch ``IterableDataset`` (optional ``torch`` extra).

Each DataLoader worker of each rank reads its own share of the files (worker
info and rank are read when iteration starts, in the worker), so every record
comes once per epoch however many workers and ranks there are. With fewer
files than readers, indexed files (``{file}.idx``, :func:`tfrec.build_index`)
are split by records instead (``shard_by=`` of :class:`tfrec.ShardOptions`,
which also evens out unequal files with ``shard_by="records"``). Batching and
parsing happen inside tfrec (whole batches through the fast parser): use
``batch_size=None`` in the DataLoader and ``batch_size=`` here.

Over ``TFRecordDataset(..., seed=...).global_shuffle().batch(n)``, the count of
batches the DataLoader handed out is the rank's position in the epoch:
:meth:`TFRecordIterableDataset.state_after` makes it a state, and
:meth:`TFRecordIterableDataset.with_state` resumes it with any number of
DataLoader workers (and reading processes).

Example:
    >>> from torch.utils.data import DataLoader
    >>> from tfrec.torch import TFRecordIterableDataset
    >>> ds = TFRecordIterableDataset("data/train-*.tfrecord", features=feats, shuffle_files=True,
    ...                              shuffle_buffer=10_000, batch_size=256, seed=0, output="torch")
    >>> loader = DataLoader(ds, batch_size=None, num_workers=4)
    >>> for epoch in range(3):
    ...     ds.set_epoch(epoch)
    ...     for batch in loader:
    ...         train(batch)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ..arguments import check_choice
from ..data import TFRecordDataset
from ..errors import InvalidArgumentError, OptionalDependencyError

try:
    import torch
    from torch.utils.data import IterableDataset
except ImportError:  # pragma: no cover - exercised only without torch
    raise OptionalDependencyError("torch", "torch", "tfrec.torch") from None

__all__ = ["TFRecordIterableDataset", "to_torch"]


def to_torch(value: Any) -> Any:
    """Numeric numpy arrays (in nested dicts, lists, tuples) as torch tensors; anything else as it is."""
    if isinstance(value, Mapping):
        return {key: to_torch(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(to_torch(item) for item in value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return torch.tensor(value.item(), dtype=torch.from_numpy(np.asarray(value)).dtype)
    return value


class TFRecordIterableDataset(IterableDataset):  # type: ignore[type-arg]
    """TFRecord files as a torch ``IterableDataset``, split by DataLoader worker and rank.

    Args:
        source: a :class:`tfrec.TFRecordDataset` (with its shuffle / batch /
            map already chained), or paths, with the dataset's keyword
            arguments (``features=``, ``spec=``, ``shuffle_files=``,
            ``cycle_length=``, ``seed=``, ``read_options=``, ``shard_options=``, ...).
        shuffle_buffer: with paths: ``.shuffle(shuffle_buffer)``.
        batch_size: with paths: ``.batch(batch_size, drop_remainder=drop_last, pad=pad)``.
        drop_last: see ``batch_size``.
        pad: see :meth:`tfrec.TFRecordDataset.batch`.
        output: ``"numpy"`` or ``"torch"`` (numeric arrays become tensors; bytes stay bytes).

    :meth:`set_epoch` changes the file order and shuffle of the next pass (give
    the seed for the shuffles to agree across runs). DataLoader workers receive
    a copy of the dataset each epoch (unless ``persistent_workers=True``, when
    they keep the epoch they started with, as torch's own samplers do).
    """

    def __init__(
        self,
        source: TFRecordDataset | str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        shuffle_buffer: int | None = None,
        batch_size: int | None = None,
        drop_last: bool = False,
        pad: Any = False,
        output: str = "numpy",
        **dataset_options: Any,
    ) -> None:
        super().__init__()
        check_choice("output", output, ("numpy", "torch"))
        if isinstance(source, TFRecordDataset):
            if dataset_options or shuffle_buffer or batch_size:
                raise InvalidArgumentError(
                    "a TFRecordDataset is already configured: chain .shuffle()/.batch() on it "
                    "instead of passing dataset options here"
                )
            dataset = source
        else:
            dataset = TFRecordDataset(source, **dataset_options)
            if shuffle_buffer:
                dataset = dataset.shuffle(shuffle_buffer)
            if batch_size:
                dataset = dataset.batch(batch_size, drop_remainder=drop_last, pad=pad)
        self.dataset = dataset
        self.output = output
        self.epoch = 0
        self.resumed: TFRecordDataset | None = None  # the dataset at a position state, for its epoch
        self.resumed_epoch = -1

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch``'s file order and shuffles on the next iteration."""
        self.epoch = int(epoch)

    def state_after(self, batches: int) -> dict[str, Any]:
        """The loader's state once it has handed out ``batches`` batches of this epoch (global shuffle).

        Each DataLoader worker holds its own iterator, but with
        ``TFRecordDataset(...).global_shuffle().batch(n)`` (and ``map`` / ``prefetch``)
        the workers take the rank's chunks in turn and the DataLoader yields their
        batches in turn (``in_order=True``, its default): the batches received are
        the rank's first chunks, whatever the workers. The state resumes with any
        number of DataLoader workers and reading processes (:meth:`with_state`).
        Counted from where this dataset starts (a resumed state's position).

        Example:
            >>> for step, batch in enumerate(loader, 1): ...
            >>> torch.save({"data": ds.state_after(step)}, "ckpt.pt")
        """
        self.dataset.set_epoch(self.epoch)
        return self._current().state_after(batches)

    def with_state(self, state: Mapping[str, Any]) -> TFRecordIterableDataset:
        """This dataset, set to the epoch of a :meth:`state_after` state and starting there.

        Its DataLoader workers (any number) each derive their share of the rest of
        the epoch from the state; later epochs (:meth:`set_epoch`) start afresh.

        Example:
            >>> ds = TFRecordIterableDataset(tfrec.TFRecordDataset(..., seed=0).global_shuffle().batch(256))
            >>> ds = ds.with_state(torch.load("ckpt.pt")["data"])
            >>> for batch in DataLoader(ds, batch_size=None, num_workers=3): ...   # the rest of the epoch
        """
        resumed = self.dataset.with_state(state)
        resumed.state_after(0)  # checks the state against the dataset now, in this process
        copy = TFRecordIterableDataset(self.dataset, output=self.output)
        copy.resumed, copy.resumed_epoch = resumed, int(state["epoch"])
        copy.epoch = copy.resumed_epoch
        return copy

    def _current(self) -> TFRecordDataset:
        """The dataset of this epoch: at the resumed position in its epoch, else from the start."""
        return self.resumed if self.resumed is not None and self.epoch == self.resumed_epoch else self.dataset

    def __iter__(self) -> Iterator[Any]:
        self.dataset.set_epoch(self.epoch)
        iterator = iter(self._current())
        try:
            if self.output == "torch":
                for element in iterator:
                    yield to_torch(element)
            else:
                yield from iterator
        finally:
            iterator.close()

    def __repr__(self) -> str:
        return f"TFRecordIterableDataset({self.dataset!r}, output={self.output!r}, epoch={self.epoch})"
