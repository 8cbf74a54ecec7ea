"""Shuffling: the shuffle step and its buffer, and each epoch's file order (data layer).

The algorithm is tf.data's: the buffer first fills up to ``buffer_size``; then
every new element takes the place of a uniformly drawn one, which is handed
out; at the end of the input the rest comes out in a random order. Random
indices are drawn from a private ``numpy.random.Generator`` a chunk at a time,
never from the global RNG. Elements are usually still raw record bytes (cheap
to move); the buffer's contents and the generator's state are part of the
iterator state, so a resumed iterator continues with the very same order.

Example:
    >>> buffer = ShuffleBuffer(10_000, np.random.default_rng(0))
    >>> out = buffer.push(records)   # what leaves the buffer for these new elements
    >>> rest = buffer.drain()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import TfrecError
from .stage import Context, Op, PipelineRecipe, Run, Stage, Upstream, UpstreamCheck, up_state
from .state_check import StateField

# Tags that keep the random streams of different purposes apart.
FILES_TAG = 1


SHUFFLE_TAG = 2


def epoch_files(recipe: PipelineRecipe, run: Run, epoch: tuple[int, ...]) -> list[str]:
    """This consumer's files for ``epoch``, in reading order (shuffled per epoch if asked)."""
    files = run.consumer.files(recipe.files)
    if recipe.shuffle_files:
        order = run.generator(FILES_TAG, 0, epoch).permutation(len(files)).tolist()
        files = [files[i] for i in order]
    return files


@dataclass(frozen=True)
class ShuffleOp(Op):
    buffer_size: int

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        return _ShuffleStage(
            self, upstream(epoch, up_state(state)), ctx.run.generator(SHUFFLE_TAG, position, epoch), state
        )

    def check(
        self, upstream: UpstreamCheck, ctx: Context, position: int, epoch: tuple[int, ...], field: StateField
    ) -> None:
        field = field.keys("up", "rng", "items", "done")
        done = field["done"].boolean()
        field["rng"].generator()
        field["items"].elements(ctx.raw_inputs[position], most=self.buffer_size)
        if field["up"].missing != done:
            field["up"].fail("None once the input is done, else the state of the step before")
        if not done:
            upstream(epoch, field["up"])

    def describe(self) -> str:
        return f"shuffle({self.buffer_size})"


class _ShuffleStage:
    def __init__(self, op: ShuffleOp, up: Stage, rng: np.random.Generator, state: Any) -> None:
        self.up = up
        self.done = False
        self.error: TfrecError | None = None  # raised once the buffer is drained
        if state is None:
            self.buffer = ShuffleBuffer(op.buffer_size, rng)
        else:
            self.buffer = ShuffleBuffer(op.buffer_size, generator_from_state(state["rng"]), state["items"])
            self.done = state["done"]

    def pull(self) -> list[Any]:
        while not self.done and self.error is None:
            try:
                new = self.up.pull()
            except StopIteration:
                self.done = True
                break
            except TfrecError as exc:  # damage: what the buffer holds (read before it) comes out first
                self.error = exc
                break
            out = self.buffer.push(new)
            if out:
                return out
        out = self.buffer.drain()
        if not out:
            if self.error is not None:
                error, self.error = self.error, None
                raise error
            raise StopIteration
        return out

    def state(self) -> Any:
        return {
            "up": self.up.state() if not self.done else None,
            "rng": self.buffer.rng.bit_generator.state,
            "items": list(self.buffer.items),
            "done": self.done,
        }

    def close(self) -> None:
        self.up.close()


def generator_from_state(state: Mapping[str, Any]) -> np.random.Generator:
    """A Generator restored from ``bit_generator.state`` (every step's generator is a PCG64's)."""
    bits = np.random.PCG64()
    saved: Any = dict(state)
    bits.state = saved
    return np.random.Generator(bits)


class ShuffleBuffer:
    """tf.data's shuffle buffer over a private Generator."""

    def __init__(self, size: int, rng: np.random.Generator, contents: Sequence[Any] = ()) -> None:
        self.size = size
        self.rng = rng
        self.items: list[Any] = list(contents)

    def push(self, new: Sequence[Any]) -> list[Any]:
        """Put ``new`` in; return the elements that leave the buffer to make room, in order."""
        items = self.items
        room = self.size - len(items)
        if room > 0:
            items.extend(new[:room])
            new = new[room:]
            if not new:
                return []
        out: list[Any] = []
        append = out.append
        for i, element in zip(self.rng.integers(0, self.size, len(new)).tolist(), new, strict=True):
            append(items[i])
            items[i] = element
        return out

    def drain(self) -> list[Any]:
        """Everything left, in a random order; the buffer is empty afterwards."""
        items, self.items = self.items, []
        return [items[i] for i in self.rng.permutation(len(items)).tolist()]
