"""One reading process: runs the front of the pipeline over its share and sends its pulls back (data layer).

A process is at most :data:`PULLS_AHEAD` pulls ahead of the consumer. A pull
takes a free shared-memory slot of the process's :data:`SLOTS`; the slot is taken
until the consumer says it is free again ("free": its arrays are gone or were
copied), and a pull that finds none goes through the pipe. It keeps the pipeline's state after each
pull it sent, back to the last one the consumer took (see :mod:`tfrec.data.parallel.pool`). The
pipeline runs with a journal (``build(..., journal=True)``): those states hold snapshots of the
shuffle buffer and of the elements waiting for a batch, copied only when the consumer asks for one
(copying them after every pull cost more than the hand-over itself). A pull goes out as one
message (:func:`frame`), written by the process itself when the pipe has room for it, else by
a sending thread (:class:`Outbox`).

Example:
    >>> worker_main(0, recipe, run, commands, data, pool_id)   # the target of each process
"""

from __future__ import annotations

import collections
import os
import pickle
import struct
import sys
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from ...allocator import keep_freed_memory
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


# A message to the consumer: the length of its pickled head, the head, then a pull's in-band pickle
# (one write and one read per pull).
HEAD = struct.Struct("<I")


def frame(head: Any, inband: bytes = b"") -> bytes:
    """One message: ``head`` (a tuple: its kind, the run's token, ...) and, for a pull, its in-band pickle."""
    pickled = pickle.dumps(head, protocol=pickle.HIGHEST_PROTOCOL)
    return b"".join((HEAD.pack(len(pickled)), pickled, inband))


def unframe(message: bytes) -> tuple[Any, memoryview]:
    """A :func:`frame`'s head and in-band pickle (a view of ``message``)."""
    (size,) = HEAD.unpack_from(message)
    view = memoryview(message)
    return pickle.loads(view[HEAD.size : HEAD.size + size]), view[HEAD.size + size :]


def _pipe_room(data: Connection) -> Callable[[], int] | None:
    """How many bytes the pipe ``data`` takes without blocking (Linux); None where that cannot be known."""
    try:
        import fcntl
        import termios

        fd = data.fileno()
        capacity = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
        unread = bytearray(4)

        def room() -> int:
            fcntl.ioctl(fd, termios.FIONREAD, unread)
            return int(capacity) - int.from_bytes(unread, sys.byteorder, signed=True)

        room()
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    return room


class Outbox:
    """The process's messages to the consumer, in order.

    A message the pipe has room for is written at once by the process's own
    thread; the others (a pull through the pipe, a consumer that has stopped
    reading) wait for a sending thread, so that the process stays free to
    answer commands while a send blocks. Writing at once spares each pull two
    thread switches, which cost more than the write on a small pull.
    """

    def __init__(self, data: Connection) -> None:
        self.data = data
        self.room = _pipe_room(data)
        self.waiting: collections.deque[tuple[int | None, bytes] | None] = collections.deque()
        self.sending = False  # the thread is writing a message it took
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._send_loop, daemon=True)
        self.thread.start()

    def put(self, message: bytes, slot: int | None = None) -> None:
        """Send ``message`` (``slot``: the slot its pull lies in, freed if it is cancelled unsent)."""
        with self.changed:
            # (Connection.send_bytes writes a header of at most 12 bytes before the message)
            if self.waiting or self.sending or self.room is None or self.room() < len(message) + 16:
                self.waiting.append((slot, message))
                self.changed.notify()
                return
        # The thread has nothing to send (only this thread gives it more): the order is kept, and
        # the pipe has room for the whole message (only the consumer takes from it): no blocking.
        self.data.send_bytes(message)

    def cancel(self) -> list[int]:
        """Drop the messages not sent yet; the slots of their pulls."""
        with self.changed:
            dropped, self.waiting = self.waiting, collections.deque()
        return [item[0] for item in dropped if item is not None and item[0] is not None]

    def close(self) -> None:
        with self.changed:
            self.waiting.append(None)
            self.changed.notify()

    def _send_loop(self) -> None:
        while True:
            with self.changed:
                while not self.waiting:
                    self.changed.wait()
                item = self.waiting.popleft()
                if item is None:
                    return
                self.sending = True
            try:
                self.data.send_bytes(item[1])
            except (OSError, ValueError):  # the consumer has gone
                return
            finally:
                with self.changed:
                    self.sending = False


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
    outbox = Outbox(data)  # bounded by the credits (PULLS_AHEAD)
    slots = SlotWriter(pool, index, SLOTS)
    taken: set[int] = set()  # slots holding a pull the consumer has not given back
    stage: Stage | None = None
    token = -1
    seq = 0
    received = 0  # the last pull the consumer has received: credit-based flow control
    history: collections.OrderedDict[int, Any] = collections.OrderedDict()
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
                            recipe, Run(seed, run.consumer), epoch, state, journal=True, hand_over=True
                        )
                    except BaseException as exc:
                        stage = None
                        outbox.put(frame(("error", token, worker_exception(index, exc))))
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
                    taken.difference_update(outbox.cancel())  # pulls never sent: their slots are free again
                elif kind == "stop":
                    return
                continue
            if not busy or stage is None:
                continue
            try:
                items = stage.pull()
            except StopIteration:
                stage.close()
                stage = None
                outbox.put(frame(("end", token)))
                continue
            except BaseException as exc:
                stage.close()
                stage = None
                outbox.put(frame(("error", token, worker_exception(index, exc))))
                continue
            seq += 1
            history[seq] = stage.state()
            slot = next((s for s in range(SLOTS) if s not in taken), None)
            try:
                header, inband = slots.pack(items, slot)
                if header is not None:
                    taken.add(header[0])
            except Exception as exc:  # a map() result that does not pickle, say
                stage.close()
                stage = None
                outbox.put(frame(("error", token, worker_exception(index, exc))))
                continue
            finally:
                del items
            outbox.put(frame(("chunk", token, seq, header), inband), None if header is None else header[0])
    except (EOFError, OSError, KeyboardInterrupt):
        return  # the consumer has gone
    finally:
        if stage is not None:
            stage.close()
        slots.close()
        outbox.close()
