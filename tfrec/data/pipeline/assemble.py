"""Assembling a running pipeline from a recipe: where each op runs, the source of records, then one
stage per op (data layer).

:func:`place` decides, once, which ops run in the reading processes and which in
the consumer, and where records are decoded; :func:`build` turns a recipe into
its running stages.

Example:
    >>> placement = place(recipe, processes=0)
    >>> stage = build(placement.consumer, Run(seed=0), epoch=(0,))
    >>> stage.pull()   # the first list of elements
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .elements import DecodeOp
from .global_order import check_global_source, global_source
from .interleave import InterleavedRecords, check_reading_state
from .prefetch import PrefetchOp
from .repeat import RepeatOp
from .shuffle import epoch_files
from .stage import Context, PipelineRecipe, Run, Stage, raw_after
from .state_check import StateField
from .take import SkipOp, TakeOp

# The reading processes run the ops before the first of these: take/skip/repeat count or restart the
# whole stream (every process's share), and prefetch is the consumer's own thread.
SPLIT_OPS = (TakeOp, SkipOp, RepeatOp, PrefetchOp)


@dataclass(frozen=True)
class Placement:
    """Where the ops of a recipe run, decoding included.

    Attributes:
        processes: what the reading processes run; ``None`` when there are none.
        consumer: what the consumer runs (over the processes' pulls when there are processes).
        consumer_raw: whether the consumer's first op receives raw records.
    """

    processes: PipelineRecipe | None
    consumer: PipelineRecipe
    consumer_raw: bool = True


def place(recipe: PipelineRecipe, processes: int) -> Placement:
    """Split ``recipe`` between ``processes`` reading processes (0: none) and the consumer.

    Records still raw at the end are decoded one by one by a :class:`DecodeOp`
    added last: in the processes when nothing the consumer runs needs the records
    themselves, else in the consumer.
    """
    decodes = not recipe.decoder.raw
    if processes == 0:
        ops = recipe.ops
        if decodes and raw_after(ops)[-1]:
            ops = (*ops, DecodeOp())
        return Placement(None, replace(recipe, ops=ops))
    split = next((i for i, op in enumerate(recipe.ops) if isinstance(op, SPLIT_OPS)), len(recipe.ops))
    front = recipe.ops[:split]
    # The processes already work ahead of the consumer: a prefetch thread after them adds nothing.
    back = tuple(op for op in recipe.ops[split:] if not isinstance(op, PrefetchOp))
    if decodes and raw_after(front)[-1] and not any(op.decodes for op in back):
        front = (*front, DecodeOp())  # decode in the processes: nothing later needs records
    if decodes and raw_after(front + back)[-1]:
        back = (*back, DecodeOp())
    return Placement(replace(recipe, ops=front), replace(recipe, ops=back), raw_after(front)[-1])


def source_stage(ctx: Context, epoch: tuple[int, ...], state: Any) -> Stage:
    recipe = ctx.recipe
    if recipe.global_order is not None:  # global shuffle: records at random, no files interleaved
        return global_source(ctx, epoch, state)
    files = epoch_files(recipe, ctx.run, epoch)
    return InterleavedRecords(files, recipe.options, recipe.cycle_length, state)


def check_source(ctx: Context, epoch: tuple[int, ...], field: StateField) -> None:
    recipe = ctx.recipe
    if recipe.global_order is not None:  # global shuffle
        check_global_source(ctx, epoch, field)
        return
    check_reading_state(field, epoch_files(recipe, ctx.run, epoch), recipe.options, recipe.cycle_length)


def check(
    recipe: PipelineRecipe,
    run: Run,
    epoch: tuple[int, ...],
    field: StateField,
    *,
    source: Callable[[Context, tuple[int, ...], StateField], None] = check_source,
    raw: bool = True,
) -> None:
    """Check a saved state of :func:`build`'s pipeline field by field (DatasetStateError naming one)."""
    ctx = Context(recipe, run, raw_after(recipe.ops, raw))

    def below(count: int, epoch: tuple[int, ...], field: StateField) -> None:
        if count == 0:
            source(ctx, epoch, field)
            return
        op = recipe.ops[count - 1]
        op.check(
            lambda epoch, up: below(count - 1, epoch, up), ctx, count - 1, epoch, field.owned(op.describe())
        )

    below(len(recipe.ops), epoch, field)


def build(
    recipe: PipelineRecipe,
    run: Run,
    epoch: tuple[int, ...],
    state: Any = None,
    *,
    source: Callable[[Context, tuple[int, ...], Any], Stage] = source_stage,
    raw: bool = True,
    journal: bool = False,
    hand_over: bool = False,
) -> Stage:
    """The running pipeline of ``recipe`` (its last stage), for ``epoch``, from ``state`` or the start.

    ``journal``: states are taken after every pull but sent only when asked; ``hand_over``: a
    reading process runs it (see :class:`Context`).
    """
    ctx = Context(recipe, run, raw_after(recipe.ops, raw), journal, hand_over)
    return _build(ctx, len(recipe.ops), epoch, state, source)


def _build(
    ctx: Context,
    count: int,
    epoch: tuple[int, ...],
    state: Any,
    source: Callable[[Context, tuple[int, ...], Any], Stage],
) -> Stage:
    if count == 0:
        return source(ctx, epoch, state)

    def upstream(epoch: tuple[int, ...], state: Any) -> Stage:
        return _build(ctx, count - 1, epoch, state, source)

    return ctx.recipe.ops[count - 1].stage(upstream, ctx, count - 1, epoch, state)
