"""Shuffling: the shuffle step and its buffer, and each epoch's file order (data layer).

The algorithm is tf.data's: the buffer first fills up to ``buffer_size``; then
every new element takes the place of a uniformly drawn one, which is handed
out; at the end of the input the rest comes out in a random order. Random
indices are drawn from a private ``numpy.random.Generator`` a chunk at a time,
never from the global RNG. Elements are usually still raw record bytes (cheap
to move); the buffer's contents and the generator's state are part of the
iterator state, so a resumed iterator continues with the very same order.

A reading process takes a state after every pull (the consumer may ask for
any of the last few) yet sends one only when asked. Copying the buffer each
time would touch every buffered record (10,000 references, cache misses on
large records: about 1 us per record handed out), so there the buffer keeps
a journal of what each change replaced, and its state holds a
:class:`BufferSnapshot` that rebuilds the contents only when it is pickled.

Example:
    >>> buffer = ShuffleBuffer(10_000, np.random.default_rng(0))
    >>> out = buffer.push(records)   # what leaves the buffer for these new elements
    >>> rest = buffer.drain()
"""

from __future__ import annotations

import weakref
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
        rng = ctx.run.generator(SHUFFLE_TAG, position, epoch)
        return _ShuffleStage(self, upstream(epoch, up_state(state)), rng, state, ctx.journal)

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
    def __init__(
        self, op: ShuffleOp, up: Stage, rng: np.random.Generator, state: Any, journal: bool = False
    ) -> None:
        self.up = up
        self.done = False
        self.error: TfrecError | None = None  # raised once the buffer is drained
        if state is None:
            self.buffer = ShuffleBuffer(op.buffer_size, rng, journal=journal)
        else:
            rng = generator_from_state(state["rng"])
            self.buffer = ShuffleBuffer(op.buffer_size, rng, state["items"], journal=journal)
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
            "items": self.buffer.snapshot(),
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
    """tf.data's shuffle buffer over a private Generator.

    With ``journal``, each change is recorded as what undoes it (the indices it
    drew and the elements it handed out, which it replaced), for as long as a
    :class:`BufferSnapshot` of an earlier moment lives.
    """

    def __init__(
        self, size: int, rng: np.random.Generator, contents: Sequence[Any] = (), journal: bool = False
    ) -> None:
        self.size = size
        self.rng = rng
        # A list while it fills; once full, an object array (a push's swaps are then a few numpy steps).
        self.items: list[Any] | np.ndarray = list(contents)
        self.journal: list[tuple[int, np.ndarray, list[Any]] | list[Any] | np.ndarray] | None = (
            [] if journal else None
        )
        self.version = 0  # changes so far; journal[k] undoes change base + k
        self.base = 0
        self.snapshots: weakref.WeakSet[BufferSnapshot] = weakref.WeakSet()

    def push(self, new: Sequence[Any]) -> list[Any]:
        """Put ``new`` in; return the elements that leave the buffer to make room, in order."""
        items = self.items
        length = len(items)
        if isinstance(items, list):
            room = self.size - length
            items.extend(new[:room])
            new = new[room:]
            if not new:
                self._record((length, np.empty(0, np.int64), []))
                return []
            items = self.items = _object_array(items)  # full from now on: swaps are numpy's
        drawn = self.rng.integers(0, self.size, len(new))
        out = swap(items, drawn, new)
        self._record((length, drawn, out))
        return out

    def drain(self) -> list[Any]:
        """Everything left, in a random order; the buffer is empty afterwards."""
        items, self.items = self.items, []
        self._record(items)
        order = self.rng.permutation(len(items))
        if isinstance(items, list):
            return [items[i] for i in order.tolist()]
        out: list[Any] = items[order].tolist()
        return out

    def snapshot(self) -> list[Any] | BufferSnapshot:
        """The contents now: a copy, or with a journal a snapshot that copies them when pickled."""
        if self.journal is None:
            return _as_list(self.items)
        snapshot = BufferSnapshot(self, self.version)
        self.snapshots.add(snapshot)
        return snapshot

    def contents_at(self, version: int) -> list[Any]:
        """The contents after ``version`` changes: the current ones with the later changes undone."""
        if self.journal is None or not self.base <= version <= self.version:
            raise ValueError(f"the shuffle buffer no longer knows its contents at change {version}")
        items = _as_list(self.items)
        for change in reversed(self.journal[version - self.base :]):
            if type(change) is tuple:  # a push: put back what it handed out, then drop what it added
                length, drawn, out = change
                for i, element in zip(reversed(drawn.tolist()), reversed(out), strict=True):
                    items[i] = element
                del items[length:]
            else:  # a drain: the contents it took
                items = _as_list(change)
        return items

    def _record(self, change: tuple[int, np.ndarray, list[Any]] | list[Any] | np.ndarray) -> None:
        self.version += 1
        journal = self.journal
        if journal is None:
            return
        # Only changes after the oldest living snapshot are needed (none: forget them all).
        oldest = min((s.version for s in self.snapshots), default=self.version)
        del journal[: oldest - self.base]
        self.base = oldest
        if oldest < self.version:
            journal.append(change)
        else:
            self.base = self.version


FEW_DRAWS = 256  # a push of fewer draws swaps in a loop: numpy's steps cost more on so few
COUNTED = 16  # draws are counted slot by slot while the buffer has at most this many slots per draw


def swap(items: np.ndarray, drawn: np.ndarray, elements: Sequence[Any]) -> list[Any]:
    """Put ``elements[k]`` at ``items[drawn[k]]`` for k in order, and return what each put replaced.

    The same as a loop over ``k`` (``out.append(items[i]); items[i] = elements[k]``)
    when a slot is drawn more than once: the later draw hands out the element
    the earlier one put there, and the slot keeps the last one.
    """
    if drawn.size < FEW_DRAWS:
        handed_out: list[Any] = []
        for i, element in zip(drawn.tolist(), elements, strict=True):
            handed_out.append(items[i])
            items[i] = element
        return handed_out
    new = _object_array(elements)
    out = items[drawn]
    repeated = _drawn_again(drawn, items.size)
    if not repeated.any():
        items[drawn] = new
    else:  # only the draws of slots drawn again are sorted: by slot, then in the order drawn
        width = drawn.size
        slots, order = np.divmod(np.sort(drawn[repeated] * width + np.flatnonzero(repeated)), width)
        again = np.flatnonzero(slots[1:] == slots[:-1])  # (sorted place - 1) of each later draw
        out[order[again + 1]] = new[order[again]]  # what the draw before it put there
        last = np.ones(slots.size, bool)
        last[again] = False  # every draw but the last of its slot
        single = ~repeated
        items[drawn[single]] = new[single]
        items[slots[last]] = new[order[last]]
    handed: list[Any] = out.tolist()
    return handed


def _drawn_again(drawn: np.ndarray, slots: int) -> np.ndarray:
    """Whether each draw's slot is drawn more than once in ``drawn`` (draws among ``slots`` slots).
    Counting per slot costs in proportion to the buffer, sorting the draws in proportion to the
    push: a buffer of a million and pushes of a few hundred sort."""
    if slots <= COUNTED * drawn.size:
        again: np.ndarray = np.bincount(drawn, minlength=slots)[drawn] > 1
        return again
    ordered = np.sort(drawn)
    return np.isin(drawn, ordered[1:][ordered[1:] == ordered[:-1]])


def _object_array(values: Sequence[Any]) -> np.ndarray:
    """``values`` in a 1-D object array (never unpacked into more dimensions, as np.array would)."""
    return np.fromiter(values, object, len(values))


def _as_list(items: list[Any] | np.ndarray) -> list[Any]:
    return items.tolist() if isinstance(items, np.ndarray) else list(items)


class BufferSnapshot:
    """The contents of a journaled :class:`ShuffleBuffer` at one moment; pickles as the plain list."""

    __slots__ = ("__weakref__", "buffer", "version")

    def __init__(self, buffer: ShuffleBuffer, version: int) -> None:
        self.buffer, self.version = buffer, version

    def items(self) -> list[Any]:
        return self.buffer.contents_at(self.version)

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self.items(),))
