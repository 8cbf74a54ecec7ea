"""The ``repeat`` step: several passes, each a new epoch with its own file order and shuffles (data layer).

Example:
    >>> ds.shuffle(1000).batch(32).repeat(3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .stage import Context, Op, Stage, Upstream, UpstreamCheck, up_state
from .state_check import StateField


@dataclass(frozen=True)
class RepeatOp(Op):
    """``epochs`` passes over everything before it (None: forever); each pass is a new epoch."""

    epochs: int | None = None

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        return _RepeatStage(self.epochs, upstream, epoch, state)

    def check(
        self, upstream: UpstreamCheck, ctx: Context, position: int, epoch: tuple[int, ...], field: StateField
    ) -> None:
        field = field.keys("up", "epoch", "produced")
        passes = field["epoch"].integer(0, self.epochs if self.epochs is not None else 2**62)
        produced = field["produced"].boolean()
        if self.epochs is not None and passes == self.epochs:
            if not field["up"].missing or produced:
                field["up"].fail("None after the last pass")
        elif field["up"].missing:
            # A pass with no state left is rebuilt from its start: exact only if it handed out nothing.
            if produced:
                field["up"].fail("the state of the current pass, which has handed out elements")
        else:
            upstream(_nth(epoch, passes), field["up"])

    def describe(self) -> str:
        return f"repeat({self.epochs})"


def _nth(epoch: tuple[int, ...], passes: int) -> tuple[int, ...]:
    """The epoch of pass ``passes`` of a repeat: pass n of epoch e is epoch e + n (as set_epoch(e + n))."""
    return (*epoch[:-1], epoch[-1] + passes)


class _RepeatStage:
    def __init__(self, epochs: int | None, upstream: Upstream, epoch: tuple[int, ...], state: Any) -> None:
        self.epochs, self.upstream, self.outer = epochs, upstream, epoch
        self.epoch = state["epoch"] if state is not None else 0
        self.up: Stage | None = None
        if epochs is None or self.epoch < epochs:
            self.up = upstream(_nth(epoch, self.epoch), up_state(state))
        self.produced = state["produced"] if state is not None else False

    def pull(self) -> list[Any]:
        while self.up is not None:
            try:
                items = self.up.pull()
                self.produced = True
                return items
            except StopIteration:
                self.up.close()
                self.up = None
                if not self.produced:  # an empty pass: repeating it would loop forever
                    break
                self.epoch += 1
                self.produced = False
                if self.epochs is None or self.epoch < self.epochs:
                    self.up = self.upstream(_nth(self.outer, self.epoch), None)
        raise StopIteration

    def state(self) -> Any:
        return {
            "up": self.up.state() if self.up is not None else None,
            "epoch": self.epoch,
            "produced": self.produced,
        }

    def close(self) -> None:
        if self.up is not None:
            self.up.close()
