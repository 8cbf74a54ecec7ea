"""Assembling a running pipeline from a recipe: the source of records, then one stage per op (data layer).

Example:
    >>> stage = build(recipe, Run(seed=0), epoch=(0,))
    >>> stage.pull()   # the first list of elements
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .interleave import InterleavedRecords
from .shuffle import epoch_files
from .stage import Context, PipelineRecipe, Run, Stage, raw_after


def source_stage(ctx: Context, epoch: tuple[int, ...], state: Any) -> Stage:
    recipe = ctx.recipe
    files = epoch_files(recipe, ctx.run, epoch)
    return InterleavedRecords(files, recipe.options, recipe.cycle_length, recipe.block_length, state)


def build(
    recipe: PipelineRecipe,
    run: Run,
    epoch: tuple[int, ...],
    state: Any = None,
    *,
    source: Callable[[Context, tuple[int, ...], Any], Stage] = source_stage,
    raw: bool = True,
) -> Stage:
    """The running pipeline of ``recipe`` (its last stage), for ``epoch``, from ``state`` or the start."""
    ctx = Context(recipe, run, raw_after(recipe.ops, raw))
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
