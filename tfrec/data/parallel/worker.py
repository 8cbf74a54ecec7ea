"""One reading process: runs the front of the pipeline over its share and sends its pulls back (data layer).

A process is at most :data:`PULLS_AHEAD` pulls ahead of the consumer. A pull
takes a free shared-memory slot of the process's :data:`SLOTS`, chosen before the
pull so that its batch is decoded straight into it; the slot is taken
until the consumer says it is free again ("free": its arrays are gone or were
copied), and a pull that finds none goes through the pipe. It keeps the pipeline's state after each
pull it sent, back to the last one the consumer took (see :mod:`tfrec.data.parallel.pool`). The
pipeline runs with a journal (``build(..., journal=True)``): those states hold snapshots of the
shuffle buffer and of the elements waiting for a batch, copied only when the consumer asks for one
(copying them after every pull cost more than the hand-over itself).

Example:
    >>> worker_main(0, recipe, run, commands, data, pool_id)   # the target of each process
"""

from __future__ import annotations

import collections
import contextlib
import os
import pickle
import queue
import threading
import traceback
from multiprocessing.connection import Connection
from typing import Any

from ...allocator import Arena, keep_freed_memory
from ...errors import WorkerError
from ..pipeline.assemble import build
from ..pipeline.stage import PipelineRecipe, Run, Stage
from .slots import LEND_LIMIT, SlotWriter

PULLS_AHEAD = 3  # pulls a process may be ahead of what the consumer has received
# Its slots: one per pull in flight, those lent to the consumer, and one freed that it has not heard of yet.
SLOTS = PULLS_AHEAD + LEND_LIMIT + 1


POLL = 0.05  # seconds between checks for commands / liveness


def worker_exception(index: int, exc: BaseException) -> BaseException:
    """The worker's error as it can travel back."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return WorkerError(
            f"reading process {index}: {type(exc).__name__}: {exc}", worker=index, details=details
        )


def _send_loop(outbox: queue.Queue[Any], data: Connection) -> None:
    """Sends the process's messages (a thread: the process stays free to answer while a send blocks)."""
    while True:
        message = outbox.get()
        if message is None:
            return
        head, inband = message
        try:
            data.send_bytes(pickle.dumps(head, protocol=pickle.HIGHEST_PROTOCOL))
            if inband is not None:
                data.send_bytes(inband)
        except (OSError, ValueError):  # the consumer has gone
            return


def worker_main(
    index: int,
    recipe: PipelineRecipe,
    run: Run,
    pool: str,
    environ: dict[str, str],
    commands: Connection,
    data: Connection,
) -> None:
    """The body of reading process ``index``: runs the pipeline when told, sends what it pulls."""
    keep_freed_memory()
    if os.environ != environ:  # forked by a fork server started earlier: the consumer's environment now
        os.environ.clear()
        os.environ.update(environ)
    outbox: queue.Queue[Any] = queue.Queue()  # bounded by the credits (PULLS_AHEAD)
    slots = SlotWriter(pool, index, SLOTS)
    taken: set[int] = set()  # slots holding a pull the consumer has not given back
    sender = threading.Thread(target=_send_loop, args=(outbox, data), daemon=True)
    sender.start()
    stage: Stage | None = None
    token = -1
    seq = 0
    received = 0  # the last pull the consumer has received: credit-based flow control
    history: collections.OrderedDict[int, Any] = collections.OrderedDict()
    arena: list[Arena | None] = [None]  # the memory of the slot the next pull goes to

    def next_arena() -> Arena | None:
        return arena[0]

    try:
        while True:
            busy = stage is not None and seq - received < PULLS_AHEAD
            if commands.poll(0 if busy else POLL):
                command = commands.recv()
                kind = command[0]
                if kind == "run":
                    if stage is not None:
                        stage.close()
                    _, token, epoch, state, seed = command
                    seq = received = 0
                    history = collections.OrderedDict({0: state})
                    try:
                        # journal: a state per pull, sent only when asked (copied then)
                        stage = build(
                            recipe, Run(seed, run.consumer), epoch, state, journal=True, arena=next_arena
                        )
                    except BaseException as exc:
                        stage = None
                        outbox.put((("error", token, worker_exception(index, exc)), None))
                elif kind == "received":
                    if command[1] == token:
                        received = max(received, command[2])
                        # The consumer asks only for the state after the last pull it received (it
                        # credits a pull as it takes it): older states hold records for nothing.
                        while history and next(iter(history)) < received:
                            history.popitem(last=False)
                elif kind == "free":  # of any run: a slot stays lent across runs
                    taken.difference_update(command[1])
                elif kind == "state":
                    _, asked_token, asked = command
                    found = asked_token == token and asked in history
                    commands.send(("state", found, history.get(asked) if found else None))
                elif kind == "cancel":
                    if stage is not None:
                        stage.close()
                        stage = None
                    with outbox.mutex:  # pulls never sent: their slots are free again
                        for message in outbox.queue:
                            if message is not None and message[0][0] == "chunk" and message[0][3] is not None:
                                taken.discard(message[0][3][0])
                        outbox.queue.clear()
                        outbox.not_full.notify_all()
                elif kind == "stop":
                    return
                continue
            if not busy or stage is None:
                continue
            # The batch is decoded straight into the slot it goes out in (when the slot has the room).
            slot = next((s for s in range(SLOTS) if s not in taken), None)
            arena[0] = slots.arena(slot)
            try:
                items = stage.pull()
            except StopIteration:
                arena[0] = None
                stage.close()
                stage = None
                outbox.put((("end", token), None))
                continue
            except BaseException as exc:
                arena[0] = None
                stage.close()
                stage = None
                outbox.put((("error", token, worker_exception(index, exc)), None))
                continue
            seq += 1
            history[seq] = stage.state()
            try:
                header, inband = slots.pack(items, slot, arena[0])
                if header is not None:
                    taken.add(header[0])
            except Exception as exc:  # a map() result that does not pickle, say
                stage.close()
                stage = None
                outbox.put((("error", token, worker_exception(index, exc)), None))
                continue
            finally:
                del items  # nothing may view a slot it replaces (too small) or unmaps
                arena[0] = None
            outbox.put((("chunk", token, seq, header), inband))
    except (EOFError, OSError, KeyboardInterrupt):
        return  # the consumer has gone
    finally:
        if stage is not None:
            stage.close()
        slots.close()
        with contextlib.suppress(queue.Full):
            outbox.put_nowait(None)
