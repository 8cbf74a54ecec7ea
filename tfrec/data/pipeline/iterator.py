"""One pass over a dataset: running its pipeline, and the state that resumes it exactly (data layer).

The iterator splits the files among every reader, asks :func:`~tfrec.data.pipeline.assemble.place`
which ops run in the reading processes and which here, builds the stages and
hands out their elements. Its :meth:`DatasetIterator.state` is plain data,
checked field by field before a dataset resumes from it.

Example:
    >>> it = iter(ds); next(it); state = it.state()
    >>> rest = ds.resume(state)      # a DatasetIterator that continues after the first element
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from ...allocator import keep_freed_memory
from ...arguments import check_count
from ...errors import DatasetStateError, InvalidArgumentError
from ..parallel.pool import IdlePool, WorkerPool, check_pool_state
from ..sharding.consumers import Consumer, ShardOptions, detect_consumer, split_among
from .assemble import Placement, build, check, place
from .batch import BatchOp
from .global_order import chunk_size, elastic, position_of, rank_chunks, record_source, state_at
from .stage import Context, PipelineRecipe, Run, Stage, raw_after
from .state_check import StateField

__all__ = ["POSITION_FORMAT", "STATE_FORMAT", "DatasetIterator", "fingerprint", "position_state"]

STATE_FORMAT = "tfrec.data.state/1"
POSITION_FORMAT = "tfrec.data.position/1"  # a global shuffle's rank-level position: see position_state
FINGERPRINT_PARTS = ("files", "reading options", "ops", "decoder", "num_workers")


def fingerprint(recipe: PipelineRecipe, num_workers: int) -> list[Any]:
    """What a saved state must match: files, reading options, ops, decoder and processes."""
    order = recipe.global_order
    start = [order.start] if order is not None and order.start else []  # a resumed position state's
    return [
        list(recipe.files),
        [recipe.cycle_length, recipe.options.block_length, recipe.shuffle_files, recipe.options.compression]
        + (["global", order.chunk, *start] if order is not None else []),
        [op.describe() for op in recipe.ops],
        repr(recipe.decoder),
        num_workers,
    ]


class DatasetIterator(Iterator[Any]):
    """One pass over a :class:`~tfrec.TFRecordDataset`; :meth:`state` says exactly where it stands.

    Made by ``iter(dataset)`` or ``dataset.resume(state)``. Closes its files and
    stops its reading processes when exhausted, on :meth:`close`, or when
    garbage collected (or leaves them to ``idle`` for the dataset's next iterator).

    Args:
        recipe: the dataset's pipeline.
        state: a saved :meth:`state` to continue from, or ``None``.
        num_workers: reading processes (0: everything runs in this process).
        seed: the seed of every random choice; ``None`` draws one (saved in the state).
        epoch: the epoch that seeds file order and shuffles.
        shard_options: how the data is shared among readers.
        start_method: multiprocessing start method of the reading processes.
        idle: where reading processes are kept between iterators (``persistent_workers``).

    Example:
        >>> it = iter(ds)
        >>> batch = next(it); state = it.state(); it.close()
    """

    def __init__(
        self,
        recipe: PipelineRecipe,
        state: Mapping[str, Any] | None = None,
        *,
        num_workers: int = 0,
        seed: int | None = None,
        epoch: int = 0,
        shard_options: ShardOptions | None = None,
        start_method: str | None = None,
        idle: IdlePool | None = None,
    ) -> None:
        keep_freed_memory()  # batches of decoded records: see tfrec.allocator
        sharding = shard_options if shard_options is not None else ShardOptions()
        if isinstance(state, Mapping) and state.get("format") == POSITION_FORMAT:  # all start afresh there
            recipe, seed, epoch = resumed_at(state, recipe, seed, sharding)
            state = None
        elif isinstance(state, Mapping):  # a reader's state of a run that itself started at a position state
            recipe = started_at(state, recipe, sharding)
        if recipe.global_order is not None:  # one chunk of the global order is one pull, one batch
            recipe = replace(recipe, global_order=replace(recipe.global_order, chunk=chunk_size(recipe.ops)))
        self._fingerprint = fingerprint(recipe, num_workers)
        if state is not None:
            check_state(state, self._fingerprint, elastic=elastic(recipe))
            seed, epoch = state["seed"], state["epoch"]
        elif seed is None:
            seed = secrets.randbits(63)
        self._seed, self._epoch = seed, epoch
        # Split now, among every reader: too few files fails here, not in a process.
        if recipe.global_order is not None:  # positions are shared, not files: see global_order.py
            readers = detect_consumer(sharding.shard).with_process(0, max(num_workers, 1))
            self._split: list[Any] = ["global", readers.ranks * readers.workers]
        else:
            readers = self._split_files(recipe, sharding, num_workers)
            self._split = split_of(readers)
        consumer = readers.with_process(0, 1)
        run = Run(seed, consumer)
        placement = place(recipe, num_workers)
        if state is not None:
            check_split(state, self._split)
            state = moved(state, recipe, run, epoch, num_workers)
            check_pipeline_state(StateField(state, "state"), placement, run, (epoch,), num_workers)
        self._pool: WorkerPool | None = None
        self._idle: IdlePool | None = None
        self._pool_key: Any = None
        self._pending: list[Any] = list(state["pending"]) if state is not None else []
        self._position = 0
        self._stage: Stage | None = None
        if state is not None and state["finished"]:
            return  # nothing left but what was pending
        saved = state["pipeline"] if state is not None else None
        if placement.processes is None:
            self._stage = build(placement.consumer, run, (epoch,), saved)
            return
        self._pool_key = (placement.processes.ops, recipe.global_order, consumer, num_workers, start_method)
        self._idle = idle
        kept = idle.take(self._pool_key) if idle is not None else None
        self._pool = kept or WorkerPool(placement.processes, run, num_workers, start_method)
        self._pool.seed = seed
        self._stage = build(
            placement.consumer, run, (epoch,), saved, source=self._pool.stage, raw=placement.consumer_raw
        )

    @staticmethod
    def _split_files(recipe: PipelineRecipe, sharding: ShardOptions, num_workers: int) -> Consumer:
        readers = split_among(
            detect_consumer(sharding.shard).with_process(0, max(num_workers, 1)),
            recipe.files,
            shard_by=sharding.shard_by,
            compression=recipe.options.compression,
            storage_options=recipe.options.storage_options,
            index_paths=None
            if sharding.index_paths is None
            else [os.fspath(p) for p in sharding.index_paths],
            shuffle_files=recipe.shuffle_files,
        )
        readers.files(recipe.files)
        return readers

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
            if self._idle is not None:  # persistent_workers: kept for the dataset's next iterator
                self._idle.keep(self._pool_key, pool)
            else:
                pool.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> DatasetIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def split_of(readers: Consumer) -> list[Any]:
    """How the data is split among the readers, as saved in states: ["files" | "records", readers]."""
    return ["records" if readers.ranges is not None else "files", readers.count]


def check_split(state: Mapping[str, Any], split: list[Any]) -> None:
    saved = state["split"]
    if not isinstance(saved, (list, tuple)) or len(saved) != 2:
        StateField(saved, "state.split").fail('["files" | "records", readers]')
    if list(saved) != split:
        raise DatasetStateError(
            f"the state was saved reading {saved[0]} split among {saved[1]} reader(s), and this "
            f"iterator reads {split[0]} split among {split[1]}: resume with the same ranks, "
            "DataLoader workers, num_workers and index files"
        )


STATE_FIELDS = ("format", "fingerprint", "seed", "epoch", "split", "pipeline", "finished", "pending")


def check_state(state: Mapping[str, Any], fingerprint: list[Any], *, elastic: bool = False) -> None:
    """Check what a state says of itself and of the dataset it belongs to (the pipeline comes later).

    ``elastic``: the state may come from another number of reading processes (``num_workers``).
    """
    if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
        raise DatasetStateError(f"not a saved iterator state of this version ({STATE_FORMAT})")
    field = StateField(state, "state").keys(*STATE_FIELDS)
    if not isinstance(state["fingerprint"], list) or len(state["fingerprint"]) != len(fingerprint):
        field["fingerprint"].fail(f"a list of {len(fingerprint)}: {', '.join(FINGERPRINT_PARTS)}")
    field["seed"].integer(0, 2**128 - 1)
    field["epoch"].integer(0, 2**62)
    if elastic:
        field["fingerprint"][len(fingerprint) - 1].integer(0)
    if state["fingerprint"][: -1 if elastic else None] != fingerprint[: -1 if elastic else None]:
        differ = [
            n for n, a, b in zip(FINGERPRINT_PARTS, state["fingerprint"], fingerprint, strict=False) if a != b
        ]
        raise DatasetStateError(
            f"the state belongs to another dataset: its {', '.join(differ) or 'layout'} "
            "differ from this one's"
        )


def moved(
    state: Mapping[str, Any], recipe: PipelineRecipe, run: Run, epoch: int, processes: int
) -> Mapping[str, Any]:
    """An elastic state saved with another number of reading processes, made for ``processes``.

    The saved pipeline is checked as it was saved; its position (the chunks handed out) is all
    that moves: the new pipeline state is the one a run with ``processes`` has there.
    """
    saved = state["fingerprint"][-1]
    if saved == processes or state["finished"]:
        return state
    check_pipeline_state(StateField(state, "state"), place(recipe, saved), run, (epoch,), saved)
    target = place(recipe, processes)
    inner = None if target.processes is None else target.processes.ops
    pipeline = state_at(position_of(state["pipeline"]), target.consumer.ops, inner, processes)
    return {**state, "pipeline": pipeline}


def check_pipeline_state(
    field: StateField, placement: Placement, run: Run, epoch: tuple[int, ...], processes: int
) -> None:
    """Check the state's pipeline, its pending elements and whether it is finished, against ``placement``."""
    finished = field["finished"].boolean()
    consumer = placement.consumer
    raw = raw_after(consumer.ops, placement.consumer_raw)[-1]
    field["pending"].elements(raw and consumer.decoder.raw)
    pipeline = field["pipeline"].owned("the pipeline")
    if pipeline.missing != finished:
        pipeline.fail("None once the iterator is finished, else the state of its pipeline")
    if finished:
        return
    if placement.processes is None:
        check(consumer, run, epoch, pipeline)
        return
    into = placement.processes

    def pool(ctx: Context, epoch: tuple[int, ...], field: StateField) -> None:
        check_pool_state(field, into, run, processes, epoch)

    check(consumer, run, epoch, pipeline, source=pool, raw=placement.consumer_raw)


# -- position states: a global shuffle's place in its rank's chunks, for any number of readers ---------

POSITION_FIELDS = ("format", "fingerprint", "seed", "epoch", "ranks", "batches")


def position_state(
    recipe: PipelineRecipe,
    batches: int,
    *,
    seed: int | None,
    epoch: int,
    shard_options: ShardOptions,
    start: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The state of ``recipe``'s global shuffle once ``batches`` more of this rank's batches are out.

    In a global shuffle whose steps are ``map``, one ``batch`` and ``prefetch``,
    batch ``k`` of a rank is chunk ``k`` of its share of the epoch, wherever it was
    read: the count of batches the rank has received (a DataLoader yields its
    workers' batches in turn) is where it stands. ``start``: the position state the
    dataset resumes from (its batches are counted from there).

    Raises:
        InvalidArgumentError: not such a global shuffle, or no seed.
        DatasetStateError: ``batches`` beyond the epoch, or ``start`` does not fit the dataset.
    """
    batches = check_count("batches", batches, allow_zero=True)
    if start is not None:
        if start.get("format") != POSITION_FORMAT:
            raise DatasetStateError(
                "this dataset starts from an iterator's state (DatasetIterator.state()), one reader's, "
                "which says nothing of batches counted elsewhere: count batches from a state_after() state "
                "or from the start"
            )
        recipe, seed, epoch = resumed_at(start, recipe, seed, shard_options)
    if (
        recipe.global_order is None
        or not elastic(recipe)
        or not any(isinstance(op, BatchOp) for op in recipe.ops)
    ):
        raise InvalidArgumentError(
            "a state from a count of batches needs TFRecordDataset(...).global_shuffle() followed by one "
            "batch() and only map() / prefetch(): each batch is then one chunk of the permutation"
        )
    if seed is None:
        raise InvalidArgumentError(
            "a global shuffle's state needs the dataset's seed (TFRecordDataset(..., seed=...)): without one "
            "each iterator draws its own permutation"
        )
    assert recipe.global_order is not None
    order = replace(recipe.global_order, chunk=chunk_size(recipe.ops))
    consumer = detect_consumer(shard_options.shard)
    total = rank_chunks(len(record_source(recipe.files, order.index_paths)), consumer, order.chunk)
    if order.start + batches > total:
        after = f" after the {order.start} this dataset starts from" if order.start else ""
        raise DatasetStateError(
            f"{batches} batches{after} go beyond the epoch: rank {consumer.rank} of {consumer.ranks} "
            f"has {total} batches of {order.chunk} records in it"
        )
    return {
        "format": POSITION_FORMAT,
        "fingerprint": fingerprint(replace(recipe, global_order=replace(order, start=0)), 0)[:-1],
        "seed": seed,
        "epoch": epoch,
        "ranks": consumer.ranks,
        "batches": order.start + batches,
    }


def resumed_at(
    state: Mapping[str, Any], recipe: PipelineRecipe, seed: int | None, sharding: ShardOptions
) -> tuple[PipelineRecipe, int, int]:
    """``recipe`` starting at a position state (checked field by field), with the state's seed and epoch.

    Every reader derives its share of the rest from the position alone: the
    rank's chunks from ``batches`` on, in turn among its DataLoader workers and
    reading processes, however many there are now.
    """
    field = StateField(state, "state").keys(*POSITION_FIELDS)
    saved_seed = field["seed"].integer(0, 2**128 - 1)
    epoch = field["epoch"].integer(0, 2**62)
    if recipe.global_order is None or not elastic(recipe):
        raise DatasetStateError(
            "the state is a global shuffle's position: it resumes TFRecordDataset(...).global_shuffle() "
            "with the same steps (map, one batch, prefetch)"
        )
    order = replace(recipe.global_order, chunk=chunk_size(recipe.ops), start=0)
    recipe = replace(recipe, global_order=order)
    ours = fingerprint(recipe, 0)[:-1]
    if state["fingerprint"] != ours:
        saved = state["fingerprint"] if isinstance(state["fingerprint"], list) else []
        differ = [n for n, a, b in zip(FINGERPRINT_PARTS, saved, ours, strict=False) if a != b]
        raise DatasetStateError(
            f"the state belongs to another dataset: its {', '.join(differ) or 'layout'} "
            "differ from this one's"
        )
    if seed is not None and seed != saved_seed:
        raise DatasetStateError(
            f"the state was saved with seed {saved_seed} and this dataset has seed {seed}: another "
            "permutation, in which the batches handed out are other records"
        )
    consumer = detect_consumer(sharding.shard)
    if field["ranks"].integer(1) != consumer.ranks:
        raise DatasetStateError(
            f"the state was saved with {state['ranks']} rank(s) and this dataset has {consumer.ranks}: "
            "the ranks share the epoch's positions, so their number stays"
        )
    total = rank_chunks(len(record_source(recipe.files, order.index_paths)), consumer, order.chunk)
    batches = (
        field["batches"].owned(f"batches of rank {consumer.rank}, whose epoch has {total}").integer(0, total)
    )
    return replace(recipe, global_order=replace(order, start=batches)), saved_seed, epoch


def started_at(state: Mapping[str, Any], recipe: PipelineRecipe, sharding: ShardOptions) -> PipelineRecipe:
    """``recipe`` starting where the run that saved an iterator ``state`` started (its fingerprint says).

    A run resumed from a position state reads the rank's chunks from there on; its
    readers' states count from there too, so resuming one needs the same start.
    """
    order = recipe.global_order
    saved = state.get("fingerprint")
    options = saved[1] if isinstance(saved, list) and len(saved) > 1 else None
    if order is None or not isinstance(options, list) or len(options) != 7 or options[4:5] != ["global"]:
        return recipe  # not such a state: the fingerprint check says what differs
    order = replace(order, chunk=chunk_size(recipe.ops))
    total = rank_chunks(
        len(record_source(recipe.files, order.index_paths)), detect_consumer(sharding.shard), order.chunk
    )
    field = StateField(state, "state")["fingerprint"][1][6].owned("the rank's chunks before the run")
    return replace(recipe, global_order=replace(order, start=field.integer(1, total)))
