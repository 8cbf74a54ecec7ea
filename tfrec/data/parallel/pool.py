"""Reading processes, the consumer's side: starting them, credits, taking their pulls (data layer).

With ``num_workers=N`` the ops up to the first ``take``/``skip``/``repeat``
(usually shuffle, map and batch: reading, decompression, CRC checks and
batched parsing) run in N processes, each over a disjoint share of the files
(:mod:`tfrec.data.sharding`). Each process hands back whole pulls (a batch
each after ``batch``): their large arrays through shared-memory slots, the
rest pickled over a pipe (:mod:`tfrec.data.parallel.slots`). Numeric arrays
arrive as views of the slot, without a copy: the slot is lent to the consumer
until they are gone, and the consumer tells the process which slots are free
again as it pulls (a process that finds none free sends through the pipe). The consumer
takes them round-robin, worker 0, 1, ..., skipping workers that are done: the
order depends only on the seed and N, never on timing. A process may be
:data:`~tfrec.data.parallel.worker.PULLS_AHEAD` pulls ahead of the consumer (credit-based flow control).

Every process keeps the pipeline state after each pull it has sent, back to
the last one the consumer took, so the consumer's ``state()`` asks each
process for the state after the last pull it consumed (one request per
process, only when a state is asked for). Errors
travel back in order and are raised as they were (tfrec errors pickle with
their path, index and offset); one that does not pickle becomes a
:class:`~tfrec.WorkerError` carrying the traceback.

Processes are started by multiprocessing's fork server where there is one
(POSIX; ``spawn`` elsewhere): both are safe with threads, but a spawned
process imports tfrec and numpy anew (~0.3 s of CPU each, every iterator,
every epoch), while the fork server, started once per program with this
module preloaded, forks processes that have them already (a few ms). A
process takes the consumer's ``os.environ`` as it is when the iterator
starts, as a spawned one would (the fork server's is that of its own start).
They stop when the iterator is closed, exhausted or garbage collected, and
the shared memory goes with them.

Example:
    >>> pool = WorkerPool(recipe, Run(seed=0), processes=2)
    >>> stage = pool.stage(epoch=(0,), state=None)
    >>> stage.pull()
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import threading
import weakref
from multiprocessing.connection import Connection
from typing import Any

from ...errors import DatasetStateError, InvalidArgumentError, WorkerError
from ..pipeline.assemble import check
from ..pipeline.stage import Context, PipelineRecipe, Run, Stage
from ..pipeline.state_check import StateField
from .slots import SlotReader, new_pool_id, unlink_segments
from .worker import POLL, SLOTS, unframe, worker_main

DEFAULT_START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


_preloaded = False  # whether the worker module is among the fork server's preloaded modules yet


def _preload_in_fork_server(context: Any) -> None:
    """Have the fork server import this module before it forks (once; other preloads kept)."""
    global _preloaded
    if _preloaded:
        return
    import multiprocessing.forkserver  # POSIX only

    # multiprocessing has no getter for the list; its default is ["__main__"].
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    modules = list(getattr(server, "_preload_modules", None) or ["__main__"])
    if worker_main.__module__ not in modules:
        context.set_forkserver_preload([*modules, worker_main.__module__])
    _preloaded = True


class _Process:
    def __init__(self, process: Any, commands: Connection, data: Connection) -> None:
        self.process, self.commands, self.data = process, commands, data
        self.lock = threading.Lock()  # the consumer and a finalizer (any thread) may both send

    def send(self, command: Any) -> None:
        with self.lock:
            self.commands.send(command)

    def ask(self, command: Any) -> Any:
        with self.lock:
            self.commands.send(command)
            return self.commands.recv()


def _shutdown(processes: list[_Process], reader: SlotReader) -> None:
    for p in processes:
        with contextlib.suppress(OSError, ValueError):
            p.send(("stop",))
    for p in processes:
        p.process.join(timeout=5)
        if p.process.is_alive():
            p.process.terminate()
            p.process.join(timeout=5)
        p.commands.close()
        p.data.close()
    reader.close()
    unlink_segments(reader.pool, len(processes), SLOTS)  # a process that was killed left its slots


class WorkerPool:
    """``processes`` reading processes running ``recipe`` (whose ops all run in the processes)."""

    def __init__(
        self, recipe: PipelineRecipe, run: Run, processes: int, start_method: str | None = None
    ) -> None:
        if multiprocessing.current_process().daemon:
            raise InvalidArgumentError(
                f"num_workers={processes} cannot start reading processes inside a daemon process "
                "(a torch DataLoader worker, say): use num_workers=0 there and let the DataLoader's "
                "workers read in parallel"
            )
        method = start_method or DEFAULT_START_METHOD
        context = multiprocessing.get_context(method)
        if method == "forkserver":
            _preload_in_fork_server(context)
        self.count = processes
        self.token = 0
        self.seed = run.seed  # of the next run: a pool kept for later iterators serves their seeds
        self.processes: list[_Process] = []
        self.slots = SlotReader(new_pool_id(), lend=True)
        self._finalizer = weakref.finalize(self, _shutdown, self.processes, self.slots)
        try:
            for index in range(processes):
                commands, child_commands = context.Pipe(duplex=True)
                data, child_data = context.Pipe(duplex=False)
                worker_run = Run(run.seed, run.consumer.with_process(index, processes))
                process = context.Process(  # type: ignore[attr-defined]
                    target=worker_main,
                    args=(
                        index,
                        recipe,
                        worker_run,
                        self.slots.pool,
                        dict(os.environ),
                        child_commands,
                        child_data,
                    ),
                    name=f"tfrec-reader-{index}",
                    daemon=True,
                )
                try:
                    process.start()
                except (pickle.PicklingError, AttributeError, TypeError) as exc:
                    raise InvalidArgumentError(
                        f"the pipeline cannot be sent to reading processes: {exc}. Hint: functions given "
                        "to map()/filter() must be picklable (defined at module level, not lambdas) "
                        "when num_workers > 0"
                    ) from exc
                finally:
                    child_commands.close()
                    child_data.close()
                self.processes.append(_Process(process, commands, data))
        except BaseException:
            self.close()
            raise

    def stage(self, ctx: Context, epoch: tuple[int, ...], state: Any) -> Stage:
        """The source stage of the consumer's pipeline: the processes' pulls, round-robin."""
        self.token += 1
        return _PoolStage(self, self.token, epoch, state)

    def give_back(self) -> None:
        """Tell the processes which of their slots are free again (lent arrays gone, or copied)."""
        freed: dict[int, list[int]] = {}
        for worker, slot in self.slots.returned():
            freed.setdefault(worker, []).append(slot)
        for worker, slots in freed.items():
            with contextlib.suppress(OSError, ValueError):  # a dead process: its next message says so
                self.processes[worker].send(("free", slots))

    def alive(self) -> bool:
        """Whether every process still runs (a pool may then serve another iterator)."""
        return bool(self._finalizer.alive) and all(p.process.is_alive() for p in self.processes)

    def close(self) -> None:
        self._finalizer()


class IdlePool:
    """The reading processes a finished iterator left for the next iterator of a dataset
    (``persistent_workers``), with what they run (the key). Pickles empty: processes do not travel.
    """

    def __init__(self) -> None:
        self.kept: tuple[Any, WorkerPool] | None = None

    def take(self, key: Any) -> WorkerPool | None:
        """The kept processes if they run ``key`` (and still live); others are stopped."""
        kept, self.kept = self.kept, None
        if kept is not None and kept[0] == key and kept[1].alive():
            return kept[1]
        if kept is not None:
            kept[1].close()
        return None

    def keep(self, key: Any, pool: WorkerPool) -> None:
        if self.kept is not None or not pool.alive():  # another iterator's are kept already
            pool.close()
        else:
            self.kept = (key, pool)

    def __reduce__(self) -> tuple[Any, ...]:
        return (IdlePool, ())


class _PoolStage:
    """The consumer's side of one run: the processes' pulls, round-robin, as they were pulled."""

    def __init__(self, pool: WorkerPool, token: int, epoch: tuple[int, ...], state: Any) -> None:
        count = pool.count
        self.pool, self.token = pool, token
        if state is not None and len(state["workers"]) != count:
            raise DatasetStateError(
                f"the state was saved with {len(state['workers'])} reading processes, not {count}"
            )
        self.starts: list[Any] = list(state["workers"]) if state is not None else [None] * count
        self.done: list[bool] = list(state["done"]) if state is not None else [False] * count
        self.turn: int = state["turn"] if state is not None else 0
        # Pulls taken from each process since the run began: a process's state is None only before its first.
        self.pulls: list[int] = list(state["pulls"]) if state is not None else [0] * count
        self.seqs = [0] * count
        self.finished = False
        for index, p in enumerate(pool.processes):
            if not self.done[index]:
                p.send(("run", token, epoch, self.starts[index], pool.seed))

    def _message(self, index: int) -> tuple[Any, ...]:
        """The next message of process ``index`` for this run (stale ones from a cancelled run dropped)."""
        p = self.pool.processes[index]
        while True:
            if not p.data.poll(POLL):
                self.pool.give_back()  # arrays dropped while we wait (by another thread, say)
                if not p.process.is_alive():
                    return ("error", self.token, _died(index, p.process.exitcode))
                continue
            try:
                head, inband = unframe(p.data.recv_bytes())
                message = (*head, inband) if head[0] == "chunk" else head
            except (EOFError, OSError):  # the process died (before it ran, say): say so, with its exit code
                p.process.join(timeout=1)
                return ("error", self.token, _died(index, p.process.exitcode))
            if message[1] == self.token:
                return tuple(message)
            if message[0] == "chunk" and message[3] is not None:  # a cancelled run's pull: never unpacked
                with contextlib.suppress(OSError, ValueError):
                    p.send(("free", [message[3][0]]))

    def pull(self) -> list[Any]:
        count = self.pool.count
        self.pool.give_back()
        while not self.finished:
            index = self.turn
            if all(self.done):
                self.finished = True
                break
            if self.done[index]:
                self.turn = (index + 1) % count
                continue
            message = self._message(index)
            kind = message[0]
            if kind == "chunk":
                _, _, seq, header, inband = message
                try:
                    items = self.pool.slots.unpack(index, header, inband)
                except FileNotFoundError as exc:  # the process unlinked its slots: it was interrupted
                    self.finished = True
                    raise WorkerError(
                        f"reading process {index} stopped while a pull of it was on its way ({exc})",
                        worker=index,
                    ) from exc
                with contextlib.suppress(OSError, ValueError):  # a dead process: its next message says so
                    self.pool.processes[index].send(("received", self.token, seq))
                self.seqs[index] = seq
                self.pulls[index] += 1
                self.turn = (index + 1) % count
                return items
            if kind == "end":
                self.done[index] = True
                self.turn = (index + 1) % count
                continue
            self.finished = True
            error: BaseException = message[2]
            if hasattr(error, "add_note"):
                error.add_note(f"raised in reading process {index} of {count}")
            raise error
        raise StopIteration

    def state(self) -> Any:
        workers = []
        for index, p in enumerate(self.pool.processes):
            if self.done[index] or not self.seqs[index]:
                workers.append(self.starts[index] if not self.done[index] else None)
                continue
            _, found, state = p.ask(("state", self.token, self.seqs[index]))
            if not found:
                raise DatasetStateError(f"reading process {index} no longer holds the state asked for")
            workers.append(state)
        return {"workers": workers, "done": list(self.done), "turn": self.turn, "pulls": list(self.pulls)}

    def close(self) -> None:
        self.finished = True
        for index, p in enumerate(self.pool.processes):
            if not self.done[index]:
                with contextlib.suppress(OSError, ValueError):
                    p.send(("cancel",))


def check_pool_state(
    field: StateField, recipe: PipelineRecipe, run: Run, processes: int, epoch: tuple[int, ...]
) -> None:
    """Check a saved state of the reading processes' pulls, each process's pipeline state included."""
    field = field.owned("the reading processes").keys("workers", "done", "turn", "pulls")
    workers = field["workers"].items()
    if len(workers) != processes:  # the fingerprint holds num_workers: a state edited by hand
        field["workers"].fail(f"the states of {processes} reading processes")
    done = [f.boolean() for f in field["done"].items(processes)]
    field["turn"].integer(0, processes - 1)
    pulls = [f.integer(0) for f in field["pulls"].items(processes)]
    for index, worker in enumerate(workers):
        if done[index] or not pulls[index]:
            if not worker.missing:
                worker.fail(f"None for a process that is done or has handed out nothing (process {index})")
            continue
        if worker.missing:
            worker.fail(f"the pipeline state of process {index}, which has handed out {pulls[index]} pulls")
        process_run = Run(run.seed, run.consumer.with_process(index, processes))
        check(recipe, process_run, epoch, worker.owned(f"reading process {index}"))


def _died(index: int, exitcode: int | None) -> WorkerError:
    hint = ""
    if exitcode is not None and exitcode == -getattr(signal, "SIGBUS", 0):
        hint = ". Hint: SIGBUS: the shared memory (/dev/shm) may be full"
    elif exitcode == 1:  # errors inside a run come back as themselves: this one came before it
        hint = (
            ". Hint: it failed while starting, with its error printed above; a script that starts "
            'reading processes must keep its top level behind if __name__ == "__main__":'
        )
    return WorkerError(
        f"reading process {index} exited unexpectedly (exit code {exitcode}){hint}", worker=index
    )
