"""``TFRecordDataset``: many TFRecord files as one shuffled, batched, resumable stream (data layer).

The pipeline of TensorFlow's "reading data" guide without TensorFlow: the file
list (globs, directories, URLs), per-epoch file shuffling, interleaved readers,
a shuffle buffer, batching with the fast batched parser, several reading
processes, and sharding among ranks and DataLoader workers. Each method
returns a new dataset; nothing is read until it is iterated (by a
:class:`~tfrec.data.pipeline.iterator.DatasetIterator`).

Example:
    >>> ds = (tfrec.TFRecordDataset("data/train-*.tfrecord.gz", features=feats, shuffle_files=True,
    ...                             cycle_length=4, num_workers=2, seed=0)
    ...       .shuffle(10_000).batch(1024))
    >>> for batch in ds:
    ...     train(batch["image"], batch["label"])
    >>> it = iter(ds); next(it); state = it.state()
    >>> rest = ds.resume(state)      # continues exactly after the first batch
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from ...arguments import check_count
from ...errors import DatasetStateError, InvalidArgumentError
from ...features import FeaturesDict
from ..parallel.pool import IdlePool
from ..paths import expand_paths, local_path
from ..sharding.consumers import ShardOptions
from ..sharding.permutation import GlobalOrder
from .batch import BatchOp, pad_ok
from .decode import Decoder
from .elements import FilterOp, MapOp
from .interleave import ReadOptions
from .iterator import DatasetIterator, fingerprint, position_state
from .prefetch import PrefetchOp
from .repeat import RepeatOp
from .shuffle import ShuffleOp
from .stage import Op, PipelineRecipe
from .take import SkipOp, TakeOp

__all__ = ["TFRecordDataset"]

T = TypeVar("T")


class TFRecordDataset:
    """Records of many TFRecord files: shuffled, decoded, batched, in parallel, resumable.

    Args:
        paths: a path, glob, brace pattern (``{00000..00015}``), directory or
            URL, or a list of them (see :func:`tfrec.data.expand_paths`).
        features: a :class:`~tfrec.features.FeaturesDict` (or a dict of
            connectors): elements are nested dicts of numpy.
        spec: a tf.io-style parse spec instead: elements as ``parse_example`` returns them.
            Neither: elements are the raw record bytes.
        shuffle_files: read each consumer's files in a new order every epoch.
        cycle_length: files read at once, interleaved (as tf.data's ``interleave``;
            its ``block_length`` is in ``read_options``).
        num_workers: reading processes (0: read in this process). They run the
            ops up to the first ``take``/``skip``/``repeat``/``prefetch``.
        seed: the seed of every random choice (file order, shuffle buffers);
            ``None`` draws one per iterator (it is saved in the state).
        persistent_workers: keep the reading processes (``num_workers``) when an
            iterator ends, for the next iterator of this same dataset object (the
            next epoch of ``for epoch ...: for batch in ds:``): they start warm, with
            their memory already in place. They stop when the dataset is garbage
            collected (as torch's DataLoader ``persistent_workers``).
        read_options: how each file is read (:class:`~tfrec.ReadOptions`:
            compression, checksums, ``on_error``, fsspec ``storage_options``,
            ``block_length``).
        shard_options: how the files are shared among ranks, DataLoader workers
            and reading processes (:class:`~tfrec.ShardOptions`: ``shard``,
            ``shard_by``, ``index_paths``).

    Example:
        >>> ds = tfrec.TFRecordDataset(
        ...     "data/", spec={"label": tfrec.FixedLenFeature([], tfrec.int64)}, seed=0,
        ...     read_options=tfrec.ReadOptions(on_error="skip", verify_checksums=False),
        ...     shard_options=tfrec.ShardOptions(shard=(rank, world_size), shard_by="records"),
        ... )
        >>> next(iter(ds.batch(2)))
        {'label': array([3, 1])}
    """

    def __init__(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        features: FeaturesDict | Mapping[str, Any] | None = None,
        spec: Mapping[str, Any] | None = None,
        shuffle_files: bool = False,
        cycle_length: int = 1,
        num_workers: int = 0,
        seed: int | None = None,
        persistent_workers: bool = False,
        read_options: ReadOptions | None = None,
        shard_options: ShardOptions | None = None,
    ) -> None:
        if seed is not None:
            seed = check_count("seed", seed, allow_zero=True)
        options = _options("read_options", read_options, ReadOptions)
        self._shard_options = _options("shard_options", shard_options, ShardOptions)
        self._recipe = PipelineRecipe(
            files=tuple(expand_paths(paths, storage_options=options.storage_options)),
            options=options,
            decoder=Decoder(features, spec),
            cycle_length=check_count("cycle_length", cycle_length),
            shuffle_files=bool(shuffle_files),
        )
        _check_index_count(self._shard_options, len(self._recipe.files))
        self._num_workers = check_count("num_workers", num_workers, allow_zero=True)
        self._seed = seed
        self._epoch = 0
        self._state: dict[str, Any] | None = None
        self._idle = IdlePool() if persistent_workers else None  # reading processes between iterators
        self.start_method: str | None = None  # multiprocessing start method of the reading processes

    # -- building -----------------------------------------------------------------------------------

    @property
    def files(self) -> list[str]:
        """Every file of the dataset, in order (before sharding and shuffling)."""
        return list(self._recipe.files)

    def _with(self, op: Op) -> TFRecordDataset:
        copy = self._copy()
        copy._recipe = replace(self._recipe, ops=(*self._recipe.ops, op))
        copy._state = None
        return copy

    def _copy(self) -> TFRecordDataset:
        copy = object.__new__(TFRecordDataset)
        copy.__dict__.update(self.__dict__)
        copy._idle = IdlePool() if self._idle is not None else None  # its own processes
        return copy

    def global_shuffle(self) -> TFRecordDataset:
        """Read every record of every file in a new seeded order each epoch; the first step.

        Not a buffer: a keyed permutation of all records (no table, nothing per
        record), shared by chunks among ranks, DataLoader workers and reading
        processes, read at random (positioned reads). It replaces how records are
        read, so it comes before every other step, and the files must be local and
        uncompressed, each with its index (``{file}.idx`` or ``ShardOptions(index_paths=...)``;
        a file without one has its headers scanned once). A state resumes exactly,
        also with another ``num_workers`` when the other steps are ``map``, one
        ``batch`` and ``prefetch``; :meth:`state_after` makes one from a count of
        batches (a DataLoader's), which also resumes with another number of DataLoader
        workers. Without a ``seed`` one is drawn by this call, so that every reader of the
        returned dataset shares one permutation (give a seed to resume in a new process).
        See :mod:`tfrec.data.pipeline.global_order`.

        Example:
            >>> ds = tfrec.TFRecordDataset("data/*.tfrecord", spec=spec, seed=0).global_shuffle().batch(1024)
            >>> ds.set_epoch(1)   # another permutation of every record
        """
        recipe = self._recipe
        if recipe.ops:
            raise InvalidArgumentError(
                f"global_shuffle() comes first: it changes how records are read, and {self!r} has "
                "steps already; call it on the TFRecordDataset itself"
            )
        remote = [f for f in recipe.files if local_path(f) is None]
        if remote:
            raise InvalidArgumentError(
                f"global_shuffle() reads records at random from local files, and {remote[0]} is a URL: "
                "copy the shards (and their .idx files) to a local disk first"
            )
        sharding = self._shard_options
        if recipe.shuffle_files or recipe.cycle_length != 1 or sharding.shard_by != "auto":
            raise InvalidArgumentError(
                "global_shuffle() reads records at random, not files: the dataset takes no shuffle_files, "
                "cycle_length or shard_by then"
            )
        if recipe.options.on_error != "raise":
            raise InvalidArgumentError(
                "global_shuffle() checks both CRCs of every record and raises on damage: "
                f"ReadOptions(on_error={recipe.options.on_error!r}) does not apply"
            )
        copy = self._copy()
        copy._recipe = replace(recipe, global_order=GlobalOrder(sharding.index_paths))  # type: ignore[arg-type]
        if copy._seed is None:  # drawn once here: every reader (a pickled copy) must share the permutation
            copy._seed = secrets.randbits(63)
        copy._state = None
        return copy

    def shuffle(self, buffer_size: int) -> TFRecordDataset:
        """Shuffle elements through a buffer of ``buffer_size`` (tf.data's algorithm, own Generator)."""
        return self._with(ShuffleOp(check_count("buffer_size", buffer_size)))

    def repeat(self, epochs: int | None = None) -> TFRecordDataset:
        """Run everything before this ``epochs`` times (``None``: forever), a new epoch each time.

        Each epoch has its own file order and shuffle; put ``repeat`` after
        ``shuffle``/``batch`` so that epochs do not mix (as tf.data advises).
        """
        return self._with(
            RepeatOp(None if epochs is None else check_count("epochs", epochs, allow_zero=True))
        )

    def map(self, fn: Callable[[Any], Any]) -> TFRecordDataset:
        """Apply ``fn`` to every element (decoded first if still a record)."""
        if not callable(fn):
            raise InvalidArgumentError(f"map() needs a function, not {type(fn).__name__}")
        return self._with(MapOp(fn))

    def filter(self, predicate: Callable[[Any], Any]) -> TFRecordDataset:
        """Keep the elements for which ``predicate`` is true (decoded first if still records)."""
        if not callable(predicate):
            raise InvalidArgumentError(f"filter() needs a function, not {type(predicate).__name__}")
        return self._with(FilterOp(predicate))

    def take(self, count: int) -> TFRecordDataset:
        """At most the first ``count`` elements."""
        return self._with(TakeOp(check_count("count", count, allow_zero=True)))

    def skip(self, count: int) -> TFRecordDataset:
        """All but the first ``count`` elements."""
        return self._with(SkipOp(check_count("count", count, allow_zero=True)))

    def batch(self, size: int, drop_remainder: bool = False, pad: Any = False) -> TFRecordDataset:
        """Group ``size`` elements into one batch (records: decoded as a whole batch, the fast path).

        Args:
            size: elements per batch.
            drop_remainder: drop a last, smaller batch.
            pad: ``False``: variable-length values stay RaggedArray / SparseArray
                (or, after ``map``, must have equal shapes). ``True``: they are
                padded to dense arrays with 0 / ``b""``; a value, or a dict of
                values (nested like the features, or by ``"a/b"`` key), pads with those.
        """
        return self._with(BatchOp(check_count("size", size), bool(drop_remainder), pad_ok(pad)))

    def prefetch(self, depth: int = 2) -> TFRecordDataset:
        """Run everything before this in a background thread, ``depth`` pulls (batches) ahead."""
        return self._with(PrefetchOp(check_count("depth", depth)))

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch number that seeds file order and shuffles (in place, as torch's samplers)."""
        self._epoch = check_count("epoch", epoch, allow_zero=True)

    # -- running ------------------------------------------------------------------------------------

    def __iter__(self) -> DatasetIterator:
        return self._iterator(self._state)

    def resume(self, state: Mapping[str, Any]) -> DatasetIterator:
        """An iterator that continues exactly where the one that saved ``state`` stood."""
        return self._iterator(_saved(state))

    def with_state(self, state: Mapping[str, Any]) -> TFRecordDataset:
        """This dataset, whose iterators start where the one that saved ``state`` stood.

        Chain the ops first: each op makes a new dataset, which starts at the beginning.

        Example:
            >>> ds = tfrec.TFRecordDataset("data/", seed=0).shuffle(100).batch(8).with_state(saved)
            >>> for batch in ds: ...   # continues after the batches the saved state had handed out
        """
        copy = self._copy()
        copy._state = dict(_saved(state))
        return copy

    def state_after(self, batches: int) -> dict[str, Any]:
        """A global shuffle's state once ``batches`` batches of this epoch are out, for any number of readers.

        For ``global_shuffle()`` followed by one ``batch()`` (and ``map`` / ``prefetch``):
        batch ``k`` is chunk ``k`` of the rank's share of the epoch, so the batches a
        DataLoader has handed out (its workers' in turn) say where the rank stands,
        though no worker's own state does. ``with_state(state)`` resumes with any number
        of DataLoader workers and ``num_workers``. Counted from where this dataset starts
        (a ``with_state`` position). Plain data (picklable).

        Example:
            >>> ds = tfrec.TFRecordDataset("data/*.tfrecord", spec=spec, seed=0).global_shuffle().batch(256)
            >>> state = ds.state_after(100)   # after the loader's first 100 batches of epoch 0
            >>> rest = ds.with_state(state)   # batches 100, 101... of the same epoch
        """
        return position_state(
            self._recipe,
            batches,
            seed=self._seed,
            epoch=self._epoch,
            shard_options=self._shard_options,
            start=self._state,
        )

    def _iterator(self, state: Mapping[str, Any] | None) -> DatasetIterator:
        return DatasetIterator(
            self._recipe,
            state,
            num_workers=self._num_workers,
            seed=self._seed,
            epoch=self._epoch,
            shard_options=self._shard_options,
            start_method=self.start_method,
            idle=self._idle,
        )

    def fingerprint(self) -> list[Any]:
        """What a saved state must match: files, reading options, ops and processes."""
        return fingerprint(self._recipe, self._num_workers)

    def __repr__(self) -> str:
        ops = "".join(f".{op.describe()}" for op in self._recipe.ops)
        ops = (".global_shuffle()" if self._recipe.global_order is not None else "") + ops
        return f"TFRecordDataset({len(self._recipe.files)} files, num_workers={self._num_workers}){ops}"


def _saved(state: Any) -> Mapping[str, Any]:
    if not isinstance(state, Mapping):
        raise DatasetStateError(
            f"a saved iterator state is a dict (DatasetIterator.state()), not {state!r:.60}"
        )
    return state


def _options(name: str, value: T | None, kind: type[T]) -> T:
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise InvalidArgumentError(f"{name} must be a tfrec.{kind.__name__}, not {type(value).__name__}")
    return value


def _check_index_count(sharding: ShardOptions, files: int) -> None:
    if sharding.index_paths is not None and len(sharding.index_paths) != files:
        raise InvalidArgumentError(
            f"{len(sharding.index_paths)} index path(s) for {files} file(s): give one index per file, "
            "in the order of the dataset's files (TFRecordDataset.files)"
        )
