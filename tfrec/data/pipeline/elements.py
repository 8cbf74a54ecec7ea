"""Element-wise steps: ``map``, ``filter`` and one-record-at-a-time decoding (data layer).

Example:
    >>> ds.map(lambda x: x["label"]).filter(lambda label: label > 0)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .decode import Decoder
from .stage import Context, Op, Stage, Upstream, up_state


@dataclass(frozen=True)
class MapOp(Op):
    fn: Callable[[Any], Any]
    decodes = True

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        decoder = ctx.recipe.decoder if ctx.raw_inputs[position] and not ctx.recipe.decoder.raw else None
        return _ElementStage(upstream(epoch, up_state(state)), decoder, self.fn, None)

    def describe(self) -> str:
        return f"map({getattr(self.fn, '__qualname__', type(self.fn).__name__)})"


@dataclass(frozen=True)
class FilterOp(Op):
    predicate: Callable[[Any], Any]
    decodes = True

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        decoder = ctx.recipe.decoder if ctx.raw_inputs[position] and not ctx.recipe.decoder.raw else None
        return _ElementStage(upstream(epoch, up_state(state)), decoder, None, self.predicate)

    def describe(self) -> str:
        return f"filter({getattr(self.predicate, '__qualname__', type(self.predicate).__name__)})"


@dataclass(frozen=True)
class DecodeOp(Op):
    """Internal: decode records still raw, one at a time."""

    decodes = True

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        return _ElementStage(upstream(epoch, up_state(state)), ctx.recipe.decoder, None, None)


class _ElementStage:
    """map, filter and one-by-one decoding: element-wise, no state of its own."""

    def __init__(
        self,
        up: Stage,
        decoder: Decoder | None,
        fn: Callable[[Any], Any] | None,
        predicate: Callable[[Any], Any] | None,
    ) -> None:
        self.up, self.decoder, self.fn, self.predicate = up, decoder, fn, predicate

    def pull(self) -> list[Any]:
        while True:
            items = self.up.pull()
            if self.decoder is not None:
                items = list(map(self.decoder.decode_one, items))
            if self.fn is not None:
                items = list(map(self.fn, items))
            if self.predicate is not None:
                items = [item for item in items if self.predicate(item)]
            if items:
                return items

    def state(self) -> Any:
        return {"up": self.up.state()}

    def close(self) -> None:
        self.up.close()
