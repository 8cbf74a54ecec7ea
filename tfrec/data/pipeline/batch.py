"""The batch step: records decoded as one batch, values collated by stacking, padding on request (data layer).

Records still raw reach :class:`BatchOp`'s stage and are decoded in one call to
the batched parser; values already decoded (after ``map``) are collated by
stacking; variable-length values are padded when ``pad`` asks for it.

Example:
    >>> collate([{"x": np.ones(2)}, {"x": np.zeros(2)}])["x"].shape
    (2, 2)
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import TfrecError
from ...example import RaggedArray, SparseArray
from .decode import Decoder
from .stage import Context, Op, Stage, Upstream, UpstreamCheck, up_state
from .state_check import StateField


@dataclass(frozen=True)
class BatchOp(Op):
    size: int
    drop_remainder: bool = False
    pad: Any = False
    decodes = True

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        decoder = ctx.recipe.decoder if ctx.raw_inputs[position] else None
        # Only the batch a reading process sends as it is may leave its strings packed: nothing reads them
        # before the consumer (where unpickling makes them bytes).
        packed = ctx.hand_over and position == len(ctx.recipe.ops) - 1 and self.pad is False
        return _BatchStage(self, upstream(epoch, up_state(state)), decoder, state, ctx.journal, packed)

    def check(
        self, upstream: UpstreamCheck, ctx: Context, position: int, epoch: tuple[int, ...], field: StateField
    ) -> None:
        field = field.keys("up", "pending", "done")
        done = field["done"].boolean()
        field["pending"].elements(ctx.raw_inputs[position])
        if field["up"].missing != done:
            field["up"].fail("None once the input is done, else the state of the step before")
        if not done:
            upstream(epoch, field["up"])

    def describe(self) -> str:
        return f"batch({self.size}, drop_remainder={self.drop_remainder}, pad={self.pad!r})"


class _BatchStage:
    """Elements wait in the lists the step before handed out (never changed), so that a reading
    process's state after every pull holds those lists instead of a copy of their elements."""

    def __init__(
        self,
        op: BatchOp,
        up: Stage,
        decoder: Decoder | None,
        state: Any,
        journal: bool,
        packed: bool = False,
    ) -> None:
        self.op, self.up, self.decoder, self.journal, self.packed = op, up, decoder, journal, packed
        pending = list(state["pending"]) if state is not None else []
        self.chunks: collections.deque[list[Any]] = collections.deque([pending] if pending else [])
        self.offset = 0  # into the first chunk
        self.count = len(pending)  # elements waiting
        self.done = bool(state["done"]) if state is not None else False
        self.error: TfrecError | None = None  # raised once the elements before it are out

    def pull(self) -> list[Any]:
        size = self.op.size
        if self.error is not None and not self.count:
            error, self.error = self.error, None
            raise error
        while self.count < size and not self.done and self.error is None:
            try:
                new = self.up.pull()
            except StopIteration:
                self.done = True
            except TfrecError as exc:  # damage: the elements before it first, as a short batch
                if not self.count:
                    raise
                self.error = exc
            else:
                if new:
                    self.chunks.append(new)
                    self.count += len(new)
        if self.error is not None:
            return [self._batch(self._take(size))]
        if not self.count or (self.count < size and self.op.drop_remainder):
            self.chunks.clear()
            self.offset = self.count = 0
            raise StopIteration
        return [self._batch(self._take(size))]

    def _take(self, size: int) -> list[Any]:
        items: list[Any] = []
        chunks = self.chunks
        while len(items) < size and chunks:
            first = chunks[0]
            end = min(len(first), self.offset + size - len(items))
            items += first[self.offset : end]
            self.offset = end
            if end == len(first):
                chunks.popleft()
                self.offset = 0
        self.count -= len(items)
        return items

    def _batch(self, items: list[Any]) -> Any:
        pad = self.op.pad
        if self.decoder is not None:
            batch = self.decoder.decode_batch(items, self.packed)
            return pad_batch(batch, pad) if pad is not False else batch
        if items and isinstance(items[0], (bytes, bytearray)):
            return list(items)  # raw records without a decoder: a list of bytes
        return collate(items, pad)

    def state(self) -> Any:
        pending = PendingSnapshot(tuple(self.chunks), self.offset)
        return {
            "up": self.up.state() if not self.done else None,
            "pending": pending if self.journal else pending.items(),
            "done": self.done,
        }

    def close(self) -> None:
        self.up.close()


class PendingSnapshot:
    """The elements waiting for a batch at one moment (the lists hold them); pickles as a plain list."""

    __slots__ = ("chunks", "offset")

    def __init__(self, chunks: tuple[list[Any], ...], offset: int) -> None:
        self.chunks, self.offset = chunks, offset

    def items(self) -> list[Any]:
        out = self.chunks[0][self.offset :] if self.chunks else []
        for chunk in self.chunks[1:]:
            out += chunk
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self.items(),))


def pad_ok(pad: Any) -> Any:
    if pad is None:
        return False
    if isinstance(pad, Mapping):
        return dict(pad)
    return pad


def _pad_value(pad: Any, path: tuple[str, ...]) -> Any:
    """The padding value asked for the value at ``path`` (None: the dtype's zero / b"")."""
    if isinstance(pad, Mapping):
        value: Any = pad
        for name in path:
            if not isinstance(value, Mapping) or name not in value:
                flat = "/".join(path)
                return pad.get(flat) if flat in pad else None
            value = value[name]
        return None if isinstance(value, Mapping) else value
    return None if pad is True else pad


def _filled(dtype: np.dtype, fill: Any) -> Any:
    if fill is not None:
        return fill
    return b"" if dtype.kind == "O" else np.zeros((), dtype)[()]


def _dense_ragged(value: RaggedArray, fill: Any, path: tuple[str, ...]) -> np.ndarray:
    if isinstance(value.values, RaggedArray):
        raise TfrecError(f"{'/'.join(path)}: padding more than one ragged dimension is not supported")
    splits = np.asarray(value.row_splits)
    lengths = np.diff(splits)
    values = np.asarray(value.values)
    rows, longest = len(lengths), int(lengths.max()) if lengths.size else 0
    out = np.full((rows, longest, *values.shape[1:]), _filled(values.dtype, fill), dtype=values.dtype)
    if values.shape[0]:
        row = np.repeat(np.arange(rows), lengths)
        column = np.arange(values.shape[0]) - np.repeat(splits[:-1], lengths)
        out[row, column] = values
    return out


def pad_batch(batch: Any, pad: Any, path: tuple[str, ...] = ()) -> Any:
    """Make every RaggedArray / SparseArray of a decoded batch dense, padded with ``pad``'s values."""
    if isinstance(batch, Mapping):
        return {name: pad_batch(value, pad, (*path, str(name))) for name, value in batch.items()}
    if isinstance(batch, RaggedArray):
        return _dense_ragged(batch, _pad_value(pad, path), path)
    if isinstance(batch, SparseArray):
        return batch.to_dense(_pad_value(pad, path))
    return batch


def _stack_padded(items: list[np.ndarray], fill: Any) -> np.ndarray:
    rank = items[0].ndim
    if any(item.ndim != rank for item in items):
        raise TfrecError("values of different ranks cannot be padded into one batch")
    shape = tuple(max(item.shape[d] for item in items) for d in range(rank))
    dtype = np.result_type(*items) if items[0].dtype != object else np.dtype(object)
    out = np.full((len(items), *shape), _filled(dtype, fill), dtype=dtype)
    for i, item in enumerate(items):
        out[(i, *[slice(0, n) for n in item.shape])] = item  # type: ignore[index]
    return out


def collate(items: Sequence[Any], pad: Any = False, path: tuple[str, ...] = ()) -> Any:
    """Stack decoded values (nested dicts, tuples, arrays, scalars, bytes) into one batch.

    Arrays of different shapes are padded when ``pad`` asks for it (True, a
    value, or a nested/flat dict of values), else an error names the key.
    """
    first = items[0]
    where = "/".join(path) or "<element>"
    if isinstance(first, Mapping):
        return {name: collate([item[name] for item in items], pad, (*path, str(name))) for name in first}
    if isinstance(first, tuple):
        return tuple(collate([item[i] for item in items], pad, (*path, str(i))) for i in range(len(first)))
    if isinstance(first, (bytes, str)):
        out = np.empty(len(items), dtype=object)
        out[:] = list(items)
        return out
    if isinstance(first, SparseArray):
        if pad is False:
            raise TfrecError(f"{where}: sparse values cannot be stacked; pass batch(..., pad=True)")
        items = [item.to_dense(_pad_value(pad, path)) for item in items]
    arrays = [np.asarray(item) for item in items]
    if all(a.shape == arrays[0].shape for a in arrays):
        if arrays[0].dtype == object:
            out = np.empty((len(arrays), *arrays[0].shape), dtype=object)
            for i, array in enumerate(arrays):
                out[i] = array
            return out
        return np.stack(arrays)
    if pad is False:
        shapes = sorted({a.shape for a in arrays})
        raise TfrecError(
            f"{where}: values of shapes {shapes[:4]} cannot be stacked into one batch; "
            "pass batch(..., pad=True) (or padding values) to pad them"
        )
    return _stack_padded(arrays, _pad_value(pad, path))
