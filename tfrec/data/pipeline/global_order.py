"""Global shuffle: every record of every file in a new keyed order each epoch, shared by chunks (data layer).

The source of a pipeline made with ``TFRecordDataset(...).global_shuffle()``.
Position ``p`` of epoch ``e`` is record ``KeyedPermutation(N, (seed, e))(p)`` of
all ``N`` records (files numbered one after the other, as
:class:`~tfrec.RecordFileSource` numbers them). The positions are shared in
three steps, each exact (every position once):

- rank ``r`` of ``R`` takes the positions ``p = r + q * R``; its own sequence is ``q = 0, 1, ...``;
- that sequence is cut into *chunks* of ``GlobalOrder.chunk`` positions; DataLoader worker
  ``w`` of ``W`` takes the chunks ``k = w + m * W`` (torch's DataLoader hands out their
  batches in turn, so the chunks come out in order);
- reading process ``i`` of ``P`` takes that worker's chunks ``m = i + t * P`` (the consumer
  takes the processes' pulls in turn, so again in order).

One pull of the source is one chunk, and a reader's state is the number ``t``
of chunks it has handed out. The chunks of a read-ahead group are read
together with :meth:`~tfrec.RecordFileSource.__getitems__`, sorted by record
number (by file, then offset: the frames are gathered from each file's map in
address order, see :mod:`tfrec.record.mapped`) and put back in permutation
order. Once a group read waited for the disk (its wall time well past its CPU
time), the next groups of the epoch are read in a background thread while the
pipeline works on the current one; records in the page cache are read where
they are used, where a thread would only contend for the GIL.

**Elastic resume.** When every step of the pipeline hands out one pull per
chunk (``map``, ``prefetch``, and at most one ``batch``, whose size is then the
chunk), the consumer has taken chunks ``0 .. G-1`` of its sequence and no
other: ``G`` is the whole state. :func:`position_of` reads it from a saved
state, and :func:`state_at` writes the state any number of reading processes
would have at ``G`` (a process's ``t`` is how many of its chunks lie below
``G``), so a state saved with 2 processes resumes with 0 or 4.

A DataLoader worker's iterator knows only its own chunks, but the main process
receives the workers' batches in turn, chunk ``k`` from worker ``k % W``: the
count of batches it received is ``G`` for the whole rank. A *position state*
(:func:`~tfrec.data.pipeline.iterator.position_state`, ``TFRecordDataset.state_after``)
holds that count; a run resumed from it has ``GlobalOrder.start = G``, and every
reader numbers the rank's chunks from ``G`` on (chunk ``G + w + m * W`` for
worker ``w`` of ``W``), so the resumed loader's first batch, from worker 0, is
chunk ``G``, with any number of DataLoader workers and reading processes.

Example:
    >>> ds = tfrec.TFRecordDataset("data/*.tfrecord", spec=spec, seed=0).global_shuffle().batch(256)
    >>> first = next(iter(ds))   # 256 records drawn from all files
"""

from __future__ import annotations

import collections
import itertools
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ...errors import DatasetStateError
from ...forking import renew_in_child
from ..paths import local_path
from ..random_access.source import RecordFileSource
from ..sharding.consumers import Consumer
from ..sharding.permutation import DEFAULT_CHUNK, GlobalOrder, KeyedPermutation
from .batch import BatchOp
from .elements import DecodeOp, MapOp
from .prefetch import PrefetchOp
from .stage import Context, Op, PipelineRecipe, Run
from .state_check import StateField

__all__ = [
    "GlobalOrderRecords",
    "check_global_source",
    "chunk_size",
    "elastic",
    "global_source",
    "position_of",
    "rank_chunks",
    "record_source",
    "state_at",
]

READ_AHEAD_RECORDS = 4096  # records read together (whole chunks), one group ahead in a thread
# A group read here whose wall time passed its CPU time this many times over waited for the disk: the
# next groups of the epoch are read ahead in a thread. Data in the page cache reads at CPU speed, and a
# thread reading it only contends for the GIL: on cached shards, global shuffle read 630-660 k small
# records/s with the thread and 724-729 k without; image-like records 164-167 k and 176-184 k.
WAITED = 1.5
ELASTIC_OPS = (MapOp, BatchOp, PrefetchOp, DecodeOp)  # steps that hand out one pull per chunk

_sources: dict[tuple[Any, ...], RecordFileSource] = {}  # per process: indexes are read once
_sources_lock = threading.Lock()
renew_in_child(sys.modules[__name__], "_sources_lock")


def record_source(files: Sequence[str], index_paths: Sequence[str] | None) -> RecordFileSource:
    """The :class:`RecordFileSource` of ``files`` (raw records), made once per process and kept."""
    key = (tuple(files), None if index_paths is None else tuple(index_paths))
    with _sources_lock:
        source = _sources.get(key)
        if source is None:
            if len(_sources) >= 4:
                _sources.pop(next(iter(_sources))).close()
            paths = [local_path(str.__str__(f)) or f for f in files]  # file:// URLs too
            source = _sources[key] = RecordFileSource(paths, index_paths=index_paths)
        return source


def chunk_size(ops: Sequence[Op]) -> int:
    """The chunk of a pipeline: the size of its first ``batch`` (one chunk, one batch), else the default."""
    return next((op.size for op in ops if isinstance(op, BatchOp)), DEFAULT_CHUNK)


def elastic(recipe: PipelineRecipe) -> bool:
    """Whether a saved position alone says where the pipeline stands (see the module's docstring)."""
    ops = recipe.ops
    return (
        recipe.global_order is not None
        and all(isinstance(op, ELASTIC_OPS) for op in ops)
        and sum(isinstance(op, BatchOp) for op in ops) <= 1
    )


def rank_chunks(total: int, consumer: Consumer, chunk: int) -> int:
    """How many chunks ``consumer``'s rank has in an epoch of ``total`` records."""
    return -(-len(range(consumer.rank, total, consumer.ranks)) // chunk)


class _Share:
    """One reader's chunks of one epoch: which positions each holds."""

    def __init__(self, total: int, order: GlobalOrder, run: Run, epoch: tuple[int, ...]) -> None:
        c = run.consumer
        self.rank, self.ranks, self.chunk, self.start = c.rank, c.ranks, order.chunk, order.start
        self.positions = len(range(c.rank, total, c.ranks))  # of this rank
        # Chunks before ``start`` were handed out before this run: the workers share the rest.
        worker_chunks = len(
            range(c.worker, max(rank_chunks(total, c, self.chunk) - self.start, 0), c.workers)
        )
        self.worker, self.workers, self.process, self.processes = c.worker, c.workers, c.process, c.processes
        self.worker_chunks = worker_chunks  # of this DataLoader worker (every process together)
        self.count = len(range(c.process, worker_chunks, c.processes))  # of this reader
        self.permutation = KeyedPermutation(total, (run.seed, *epoch))

    def records(self, start: int, stop: int) -> tuple[np.ndarray, list[int]]:
        """The record numbers of this reader's chunks ``start`` to ``stop`` (in permutation order,
        one permutation call for all), and where each chunk ends among them."""
        ranges = []
        for t in range(start, stop):
            # The rank's chunk: those before ``start`` went out before this run.
            k = self.start + self.worker + (self.process + t * self.processes) * self.workers
            ranges.append(
                np.arange(k * self.chunk, min((k + 1) * self.chunk, self.positions), dtype=np.int64)
            )
        q = np.concatenate(ranges)
        return self.permutation(self.rank + q * self.ranks), np.cumsum([len(r) for r in ranges]).tolist()


def global_source(ctx: Context, epoch: tuple[int, ...], state: Any) -> GlobalOrderRecords:
    recipe = ctx.recipe
    assert recipe.global_order is not None  # only called for a global order
    source = record_source(recipe.files, recipe.global_order.index_paths)
    share = _Share(len(source), recipe.global_order, ctx.run, epoch)
    return GlobalOrderRecords(source, share, state["next"] if state is not None else 0)


def check_global_source(ctx: Context, epoch: tuple[int, ...], field: StateField) -> None:
    recipe = ctx.recipe
    assert recipe.global_order is not None
    source = record_source(recipe.files, recipe.global_order.index_paths)
    share = _Share(len(source), recipe.global_order, ctx.run, epoch)
    field.owned("reading in global order").keys("next")["next"].integer(0, share.count)


class GlobalOrderRecords:
    """A reader's chunks of the global order, a pull each: the raw records, in permutation order."""

    def __init__(self, source: RecordFileSource, share: _Share, start: int) -> None:
        self.source, self.share = source, share
        self.next = start  # chunks handed out
        self.group = max(1, READ_AHEAD_RECORDS // share.chunk)  # chunks read together
        self.ready: collections.deque[list[bytes]] = collections.deque()
        self.pending: Future[list[list[bytes]]] | None = None  # the next group, being read
        self.pending_start = start
        self.executor: ThreadPoolExecutor | None = None
        self.ahead = False  # groups are read ahead in a thread: a read here waited for the disk

    def pull(self) -> list[bytes]:
        if self.next >= self.share.count:
            raise StopIteration
        if not self.ready:
            start = self.next
            if self.pending is not None and self.pending_start == start:
                group, self.pending = self.pending.result(), None
            else:
                group = self._read_here(start)
            self.ready.extend(group)
            if self.ahead:
                self._read_ahead(start + len(group))
        self.next += 1
        return self.ready.popleft()

    def _read_here(self, start: int) -> list[list[bytes]]:
        """:meth:`_read`, timed: a read that waited (more wall time than CPU time) turns reading ahead on."""
        wall, cpu = time.perf_counter(), time.thread_time()
        group = self._read(start)
        self.ahead = self.ahead or time.perf_counter() - wall > WAITED * (time.thread_time() - cpu)
        return group

    def _read_ahead(self, start: int) -> None:
        if start >= self.share.count:
            return
        if self.executor is None:
            self.executor = ThreadPoolExecutor(1, thread_name_prefix="tfrec-global-read")
        self.pending_start = start
        self.pending = self.executor.submit(self._read, start)

    def _read(self, start: int) -> list[list[bytes]]:
        """Chunks ``start`` onwards (a group), read together: sorted by record number, then put back."""
        numbers, ends = self.share.records(start, min(start + self.group, self.share.count))
        order = np.argsort(numbers, kind="stable")
        records = self.source.__getitems__(numbers[order].tolist())  # by file, then offset: coalesced reads
        back = np.empty_like(order)
        back[order] = np.arange(len(order))
        found = [records[i] for i in back.tolist()]
        return [found[a:b] for a, b in itertools.pairwise([0, *ends])]

    def state(self) -> Any:
        return {"next": self.next}

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None
        self.pending = None


# -- elastic resume ---------------------------------------------------------------------------------


def position_of(pipeline: Any) -> int | None:
    """The chunks handed out, read from an elastic pipeline's saved state; None once its input is done.

    The state nests each step's state under ``"up"`` down to the source: the
    reading processes' (their pulls add up to the chunks taken) or the source's own.
    """
    state = pipeline
    while isinstance(state, dict) and "up" in state:
        if state.get("pending"):
            raise DatasetStateError("the state's batch holds records of a chunk: it cannot move elsewhere")
        state = state["up"]
    if state is None:
        return None
    if "workers" not in state:
        return int(state["next"])
    pulls = state["pulls"]
    for n, worker in enumerate(state["workers"]):
        # Each pull of a process is one of its chunks: its source says how many it handed out.
        handed = position_of(worker) if worker is not None else (None if state["done"][n] else 0)
        if handed is not None and handed != pulls[n]:
            raise DatasetStateError(
                f"the state's field pipeline.pulls[{n}]: reading process {n} handed out {pulls[n]} pulls "
                f"by this count and {handed} chunks by its own state"
            )
    return int(sum(pulls))


def _wrap(ops: Sequence[Op], inner: Any) -> Any:
    """The state of elastic steps ``ops`` over ``inner`` right after a pull (they hold nothing then)."""
    for op in ops:
        inner = {"up": inner, "pending": [], "done": False} if isinstance(op, BatchOp) else {"up": inner}
    return inner


def state_at(
    position: int | None, consumer_ops: Sequence[Op], process_ops: Sequence[Op] | None, processes: int
) -> Any:
    """The pipeline state a run with ``processes`` reading processes has once ``position`` chunks are out.

    ``process_ops``: the steps the processes run (None without processes); ``None``
    as ``position``: the input is done (only steps above it hold elements).
    """
    if position is None:
        return _done(consumer_ops)
    if process_ops is None:
        return _wrap(consumer_ops, {"next": position})
    pulls = [len(range(i, position, processes)) for i in range(processes)]
    workers = [_wrap(process_ops, {"next": n}) if n else None for n in pulls]
    pool = {"workers": workers, "done": [False] * processes, "turn": position % processes, "pulls": pulls}
    return _wrap(consumer_ops, pool)


def _done(ops: Sequence[Op]) -> Any:
    """A finished input seen from the top: the first batch from the top says so, with nothing held."""
    inner: Any = None
    for op in ops:
        if inner is None and isinstance(op, BatchOp):
            inner = {"up": None, "pending": [], "done": True}
        elif inner is not None:
            inner = _wrap([op], inner)
    if inner is None:
        raise DatasetStateError("the state's input is done, yet no step above it says so")
    return inner
