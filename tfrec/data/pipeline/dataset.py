"""``TFRecordDataset``: many TFRecord files as one shuffled, batched, resumable stream (data layer).

The pipeline of TensorFlow's "reading data" guide without TensorFlow: the file
list (globs, directories, URLs), per-epoch file shuffling, interleaved readers,
a shuffle buffer, batching with the fast batched parser, several reading
processes, and sharding among ranks and DataLoader workers. Each method
returns a new dataset; nothing is read until it is iterated.

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

import contextlib
import os
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ...allocator import keep_freed_memory
from ...arguments import ON_ERROR, check_choice, check_count
from ...errors import DatasetStateError, InvalidArgumentError, TfrecError
from ...features import FeaturesDict
from ..parallel.pool import WorkerPool
from ..paths import expand_paths
from ..sharding.consumers import Consumer, check_shard_by, detect_consumer, split_among
from .assemble import build
from .batch import BatchOp, pad_ok
from .decode import Decoder
from .elements import DecodeOp, FilterOp, MapOp
from .interleave import ReaderOptions
from .prefetch import PrefetchOp
from .repeat import RepeatOp
from .shuffle import ShuffleOp
from .stage import Context, Op, PipelineRecipe, Run, Stage, raw_after
from .take import SkipOp, TakeOp

__all__ = ["DatasetIterator", "TFRecordDataset"]

STATE_FORMAT = "tfrec.data.state/1"
_SPLIT_OPS = (TakeOp, SkipOp, RepeatOp, PrefetchOp)  # where the reading processes' share ends


class TFRecordDataset:
    """Records of many TFRecord files: shuffled, decoded, batched, in parallel, resumable.

    Args:
        paths: a path, glob, brace pattern (``{00000..00015}``), directory or
            URL, or a list of them (see :func:`tfrec.data.expand_paths`).
        features: a :class:`~tfrec.features.FeaturesDict` (or a dict of
            connectors): elements are nested dicts of numpy.
        spec: a tf.io-style parse spec instead: elements as ``parse_example`` returns them.
            Neither: elements are the raw record bytes.
        compression: ``"auto"`` (from each file's suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        shuffle_files: read each consumer's files in a new order every epoch.
        cycle_length: files read at once, interleaved (as tf.data's ``interleave``).
        block_length: consecutive records taken from a file per turn.
        num_workers: reading processes (0: read in this process). They run the
            ops up to the first ``take``/``skip``/``repeat``/``prefetch``.
        seed: the seed of every random choice (file order, shuffle buffers);
            ``None`` draws one per iterator (it is saved in the state).
        on_error: ``"raise"``, ``"skip"`` or ``"warn"`` on a damaged record
            (see :class:`~tfrec.RecordReader`).
        verify_checksums: check both CRCs of every record.
        storage_options: passed to fsspec for URLs.
        shard: ``(index, count)`` of this rank; by default from ``RANK`` /
            ``WORLD_SIZE`` or an initialised ``torch.distributed``.
        shard_by: how readers (ranks x DataLoader workers x ``num_workers``)
            share the data. ``"files"``: each reads whole files, and fewer
            files than readers is a :class:`~tfrec.ShardingError`.
            ``"records"``: the records of all files are cut into one
            contiguous range per reader, equal to within one record (a range
            may start mid-file); every file needs an index. ``"auto"``: files
            when there are at least as many files as readers, else records
            when every file has an index (else the ShardingError, saying why).
        index_paths: the index file of each of :attr:`files`, in that order
            (DALI ``tfrecord2idx`` format); by default ``{file}.idx`` beside
            each file, as :func:`tfrec.build_index` writes it. Used only to
            split records; compressed files cannot have one.
        persistent_workers: keep the reading processes (``num_workers``) when an
            iterator ends, for the next iterator of this same dataset object (the
            next epoch of ``for epoch ...: for batch in ds:``): they start warm, with
            their memory already in place. They stop when the dataset is garbage
            collected (as torch's DataLoader ``persistent_workers``).
        state: an iterator :meth:`DatasetIterator.state` to start from.

    Example:
        >>> ds = tfrec.TFRecordDataset("data/", spec={"label": tfrec.FixedLenFeature([], tfrec.int64)})
        >>> next(iter(ds.batch(2)))
        {'label': array([3, 1])}
    """

    def __init__(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        features: FeaturesDict | Mapping[str, Any] | None = None,
        spec: Mapping[str, Any] | None = None,
        compression: str | None = "auto",
        shuffle_files: bool = False,
        cycle_length: int = 1,
        block_length: int = 1,
        num_workers: int = 0,
        seed: int | None = None,
        on_error: str = "raise",
        verify_checksums: bool = True,
        storage_options: Mapping[str, Any] | None = None,
        shard: tuple[int, int] | None = None,
        shard_by: str = "auto",
        index_paths: Sequence[str | os.PathLike[str]] | None = None,
        persistent_workers: bool = False,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        check_choice("on_error", on_error, ON_ERROR)
        if seed is not None:
            seed = check_count("seed", seed, allow_zero=True)
        self._recipe = PipelineRecipe(
            files=tuple(expand_paths(paths, storage_options=storage_options)),
            options=ReaderOptions(compression, verify_checksums, on_error, storage_options),
            decoder=Decoder(features, spec),
            cycle_length=check_count("cycle_length", cycle_length),
            block_length=check_count("block_length", block_length),
            shuffle_files=bool(shuffle_files),
        )
        self._num_workers = check_count("num_workers", num_workers, allow_zero=True)
        self._seed = seed
        self._shard = shard
        self._shard_by = check_shard_by(shard_by)
        self._index_paths = _index_paths(index_paths, len(self._recipe.files))
        self._epoch = 0
        self._state = dict(state) if state is not None else None
        self._persistent_workers = bool(persistent_workers)
        self._idle_pool: tuple[Any, WorkerPool] | None = None  # (what it runs, the pool) between iterators
        self.start_method: str | None = None  # multiprocessing start method of the reading processes

    # -- building -----------------------------------------------------------------------------------

    @property
    def files(self) -> list[str]:
        """Every file of the dataset, in order (before sharding and shuffling)."""
        return list(self._recipe.files)

    def _with(self, op: Op) -> TFRecordDataset:
        copy = object.__new__(TFRecordDataset)
        copy.__dict__.update(self.__dict__)
        recipe = self._recipe
        copy._recipe = PipelineRecipe(
            recipe.files, recipe.options, (*recipe.ops, op), recipe.decoder, recipe.cycle_length,
            recipe.block_length, recipe.shuffle_files,
        )  # fmt: skip
        copy._state = None
        copy._idle_pool = None
        return copy

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_idle_pool"] = None  # processes do not travel (to DataLoader workers, say)
        return state

    def _take_pool(self, key: Any) -> WorkerPool | None:
        """The reading processes a finished iterator left, if they run ``key`` (persistent_workers)."""
        idle, self._idle_pool = self._idle_pool, None
        if idle is not None and idle[0] == key and idle[1].alive():
            return idle[1]
        if idle is not None:
            idle[1].close()
        return None

    def _keep_pool(self, key: Any, pool: WorkerPool) -> None:
        if self._idle_pool is not None or not pool.alive():  # another iterator's are kept already
            pool.close()
        else:
            self._idle_pool = (key, pool)

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
            raise TfrecError(f"map() needs a function, not {type(fn).__name__}")
        return self._with(MapOp(fn))

    def filter(self, predicate: Callable[[Any], Any]) -> TFRecordDataset:
        """Keep the elements for which ``predicate`` is true (decoded first if still records)."""
        if not callable(predicate):
            raise TfrecError(f"filter() needs a function, not {type(predicate).__name__}")
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
        return DatasetIterator(self, self._state)

    def resume(self, state: Mapping[str, Any]) -> DatasetIterator:
        """An iterator that continues exactly where the one that saved ``state`` stood."""
        return DatasetIterator(self, state)

    def fingerprint(self) -> list[Any]:
        """What a saved state must match: files, reading options, ops and processes."""
        recipe = self._recipe
        return [
            list(recipe.files),
            [recipe.cycle_length, recipe.block_length, recipe.shuffle_files, recipe.options.compression],
            [op.describe() for op in recipe.ops],
            repr(recipe.decoder),
            self._num_workers,
        ]

    def __repr__(self) -> str:
        ops = "".join(f".{op.describe()}" for op in self._recipe.ops)
        return f"TFRecordDataset({len(self._recipe.files)} files, num_workers={self._num_workers}){ops}"


class DatasetIterator(Iterator[Any]):
    """One pass over a :class:`TFRecordDataset`; :meth:`state` says exactly where it stands.

    Closes its files and stops its reading processes when exhausted, on
    :meth:`close`, or when garbage collected.
    """

    def __init__(self, dataset: TFRecordDataset, state: Mapping[str, Any] | None = None) -> None:
        keep_freed_memory()  # batches of decoded records: see tfrec.allocator
        self._fingerprint = dataset.fingerprint()
        if state is not None:
            _check_state(state, self._fingerprint)
            seed, epoch = int(state["seed"]), int(state["epoch"])
        else:
            seed = dataset._seed if dataset._seed is not None else secrets.randbits(63)
            epoch = dataset._epoch
        self._seed, self._epoch = seed, epoch
        recipe = dataset._recipe
        workers = dataset._num_workers
        # Split now, among every reader: too few files fails here, not in a process.
        readers = split_among(
            detect_consumer(dataset._shard).with_process(0, max(workers, 1)),
            recipe.files,
            shard_by=dataset._shard_by,
            compression=recipe.options.compression,
            storage_options=recipe.options.storage_options,
            index_paths=dataset._index_paths,
            shuffle_files=recipe.shuffle_files,
        )
        readers.files(recipe.files)
        self._split = _split_of(readers)
        if state is not None:
            _check_split(state, self._split)
        consumer = readers.with_process(0, 1)
        run = Run(seed, consumer)
        self._pool: WorkerPool | None = None
        self._owner: TFRecordDataset | None = None
        self._pool_key: Any = None
        self._pending: list[Any] = []
        self._position = 0
        self._stage: Stage | None = None
        saved = state["pipeline"] if state is not None else None
        if state is not None and state["finished"]:
            pass  # nothing left but what was pending
        elif workers == 0:
            ops = recipe.ops
            if raw_after(ops)[-1] and not recipe.decoder.raw:
                ops = (*ops, DecodeOp())
            self._stage = build(_replace_ops(recipe, ops), run, (epoch,), saved)
        else:
            split = next(
                (i for i, op in enumerate(recipe.ops) if isinstance(op, _SPLIT_OPS)), len(recipe.ops)
            )
            front, back = (
                recipe.ops[:split],
                tuple(op for op in recipe.ops[split:] if not isinstance(op, PrefetchOp)),
            )
            if raw_after(front)[-1] and not recipe.decoder.raw and not any(op.decodes for op in back):
                front = (*front, DecodeOp())  # decode in the processes: nothing later needs records
            if raw_after(front + back)[-1] and not recipe.decoder.raw:
                back = (*back, DecodeOp())
            front_recipe = _replace_ops(recipe, front)
            self._pool_key = (front, consumer, workers, dataset.start_method)
            self._owner = dataset if dataset._persistent_workers else None
            kept = self._owner._take_pool(self._pool_key) if self._owner is not None else None
            self._pool = kept or WorkerPool(front_recipe, run, workers, dataset.start_method)
            self._pool.seed = seed
            pool = self._pool

            def source(ctx: Context, epoch: tuple[int, ...], state: Any) -> Stage:
                return pool.stage(ctx, epoch, state)

            self._stage = build(
                _replace_ops(recipe, back), run, (epoch,), saved, source=source, raw=raw_after(front)[-1]
            )
        if state is not None:
            self._pending = list(state["pending"])

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        if self._position < len(self._pending):
            self._position += 1
            return self._pending[self._position - 1]
        if self._stage is None:
            raise StopIteration
        try:
            self._pending = self._stage.pull()
        except BaseException:
            self.close()
            raise
        self._position = 1
        return self._pending[0]

    def state(self) -> dict[str, Any]:
        """Where this iterator stands: pass it to :meth:`TFRecordDataset.resume` (picklable).

        It holds the files' byte offsets, the epoch, the random generators'
        states and the shuffle buffers' contents (raw records).
        """
        return {
            "format": STATE_FORMAT,
            "fingerprint": self._fingerprint,
            "seed": self._seed,
            "epoch": self._epoch,
            "split": self._split,
            "pipeline": self._stage.state() if self._stage is not None else None,
            "finished": self._stage is None,
            "pending": list(self._pending[self._position :]),
        }

    def close(self) -> None:
        """Stop reading: close files, stop background threads and reading processes."""
        if self._stage is not None:
            stage, self._stage = self._stage, None
            stage.close()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            if self._owner is not None:  # persistent_workers: kept for the dataset's next iterator
                self._owner._keep_pool(self._pool_key, pool)
            else:
                pool.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> DatasetIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _replace_ops(recipe: PipelineRecipe, ops: tuple[Op, ...]) -> PipelineRecipe:
    return PipelineRecipe(
        recipe.files,
        recipe.options,
        ops,
        recipe.decoder,
        recipe.cycle_length,
        recipe.block_length,
        recipe.shuffle_files,
    )


def _index_paths(paths: Sequence[str | os.PathLike[str]] | None, files: int) -> tuple[str, ...] | None:
    if paths is None:
        return None
    if isinstance(paths, (str, os.PathLike)):
        raise InvalidArgumentError("index_paths must be a list of paths, one per file, not a single path")
    found = tuple(os.fspath(p) for p in paths)
    if len(found) != files:
        raise InvalidArgumentError(
            f"{len(found)} index path(s) for {files} file(s): give one index per file, "
            "in the order of the dataset's files (TFRecordDataset.files)"
        )
    return found


def _split_of(readers: Consumer) -> list[Any]:
    """How the data is split among the readers, as saved in states: ["files" | "records", readers]."""
    return ["records" if readers.ranges is not None else "files", readers.count]


def _check_split(state: Mapping[str, Any], split: list[Any]) -> None:
    saved = state.get("split")
    if saved is not None and list(saved) != split:
        raise DatasetStateError(
            f"the state was saved reading {saved[0]} split among {saved[1]} reader(s), and this "
            f"iterator reads {split[0]} split among {split[1]}: resume with the same ranks, "
            "DataLoader workers, num_workers and index files"
        )


def _check_state(state: Mapping[str, Any], fingerprint: list[Any]) -> None:
    if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
        raise DatasetStateError(f"not a saved iterator state of this version ({STATE_FORMAT})")
    if state["fingerprint"] != fingerprint:
        names = ["files", "reading options", "ops", "decoder", "num_workers"]
        differ = [n for n, a, b in zip(names, state["fingerprint"], fingerprint, strict=False) if a != b]
        raise DatasetStateError(
            f"the state belongs to another dataset: its {', '.join(differ) or 'layout'} "
            "differ from this one's"
        )
