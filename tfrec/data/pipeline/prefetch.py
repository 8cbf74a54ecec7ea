"""The ``prefetch`` step: a background thread runs everything before it, a few pulls ahead (data layer).

Example:
    >>> ds.batch(1024).prefetch(2)
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any

from .stage import Context, Op, Stage, Upstream, up_state


@dataclass(frozen=True)
class PrefetchOp(Op):
    """A background thread runs everything before it, up to ``depth`` pulls ahead."""

    depth: int = 2

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        return Prefetcher(upstream(epoch, up_state(state)), self.depth)

    def describe(self) -> str:
        return f"prefetch({self.depth})"


_END = object()


class Prefetcher:
    """Pulls from ``up`` in a daemon thread; ``state()`` is ``up``'s state after the last list handed out."""

    def __init__(self, up: Stage, depth: int) -> None:
        self.up = up
        self.snapshot = up.state()
        self.queue: queue.Queue[Any] = queue.Queue(max(1, depth))
        self.stopping = threading.Event()
        self.finished = False
        self.thread = threading.Thread(target=self._run, name="tfrec-prefetch", daemon=True)
        self.thread.start()

    def _put(self, item: Any) -> bool:
        while not self.stopping.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    items = self.up.pull()
                except StopIteration:
                    self._put((_END, None))
                    return
                if not self._put((items, self.up.state())):
                    return
        except BaseException as exc:  # handed to the consumer, which raises it
            self._put((_END, exc))

    def pull(self) -> list[Any]:
        if self.finished:
            raise StopIteration
        items, state = self.queue.get()
        if items is _END:
            self.finished = True
            self.thread.join()
            if state is not None:
                raise state
            raise StopIteration
        self.snapshot = state
        return list(items)

    def state(self) -> Any:
        return {"up": self.snapshot}

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)
        self.up.close()
