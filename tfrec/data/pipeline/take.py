"""The ``take`` and ``skip`` steps: counting elements (data layer).

Example:
    >>> ds.skip(100).take(10)   # elements 100 to 109
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .stage import Context, Op, Stage, Upstream, UpstreamCheck, up_state
from .state_check import StateField


@dataclass(frozen=True)
class TakeOp(Op):
    count: int

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        left = state["left"] if state is not None else self.count
        return _CountStage(upstream(epoch, up_state(state)) if left else None, left, take=True)

    def check(
        self, upstream: UpstreamCheck, ctx: Context, position: int, epoch: tuple[int, ...], field: StateField
    ) -> None:
        field = field.keys("up", "left")
        left = field["left"].integer(0, self.count)
        if field["up"].missing != (left == 0):  # reading stops as soon as nothing more is needed
            field["up"].fail("None once no element is left to take, else the state of the step before")
        if left:
            upstream(epoch, field["up"])

    def describe(self) -> str:
        return f"take({self.count})"


@dataclass(frozen=True)
class SkipOp(Op):
    count: int

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        left = state["left"] if state is not None else self.count
        return _CountStage(upstream(epoch, up_state(state)), left, take=False)

    def check(
        self, upstream: UpstreamCheck, ctx: Context, position: int, epoch: tuple[int, ...], field: StateField
    ) -> None:
        field = field.keys("up", "left")
        field["left"].integer(0, self.count)
        upstream(epoch, field["up"])

    def describe(self) -> str:
        return f"skip({self.count})"


class _CountStage:
    def __init__(self, up: Stage | None, left: int, *, take: bool) -> None:
        self.up, self.left, self.take = up, left, take

    def pull(self) -> list[Any]:
        if self.up is None:
            raise StopIteration
        if self.take:
            items = self.up.pull()[: self.left]
            self.left -= len(items)
            if not self.left:  # nothing more is needed: stop reading now
                self.up.close()
                self.up = None
            return items
        while True:
            items = self.up.pull()
            if self.left:
                dropped = min(self.left, len(items))
                self.left -= dropped
                items = items[dropped:]
            if items:
                return items

    def state(self) -> Any:
        return {"up": self.up.state() if self.up is not None else None, "left": self.left}

    def close(self) -> None:
        if self.up is not None:
            self.up.close()
