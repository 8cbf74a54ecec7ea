"""The vocabulary of a dataset pipeline: ops, their running stages, the recipe (data layer).

A dataset is a source of records followed by *ops* (frozen dataclasses, so
picklable: DataLoader workers and reading processes receive copies). Running
it builds one *stage* per op; every stage hands out elements a list at a time
(``pull()``, ``StopIteration`` at the end) and can say where it stands
(``state()``: plain data, copied, so that it stays valid while the pipeline
moves on). A stage built with a saved state continues exactly from there.

Elements stay raw record bytes until an op needs values: ``map``/``filter``
decode one record at a time, ``batch`` decodes the whole batch in one call to
the batched parser, and records still raw at the end are decoded one by one.

Example:
    >>> recipe = PipelineRecipe(files=("a.tfrecord",), options=ReadOptions(), ops=(BatchOp(32),))
    >>> stage = build(recipe, Run(seed=0), epoch=(0,))
    >>> stage.pull()   # [first batch]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..sharding.consumers import Consumer
from ..sharding.permutation import GlobalOrder
from .decode import Decoder
from .interleave import ReadOptions
from .state_check import StateField


class Stage(Protocol):
    def pull(self) -> list[Any]: ...
    def state(self) -> Any: ...
    def close(self) -> None: ...


# Builds the stage below an op for an epoch, from a saved state (or None).
Upstream = Callable[[tuple[int, ...], Any], Stage]
# Checks a saved state of the stage below an op, for an epoch.
UpstreamCheck = Callable[[tuple[int, ...], StateField], None]


@dataclass(frozen=True)
class Run:
    """What one running copy of a pipeline is: its seed and its place among consumers."""

    seed: int
    consumer: Consumer = field(default_factory=Consumer)

    def generator(self, tag: int, position: int, epoch: tuple[int, ...]) -> np.random.Generator:
        entropy = [self.seed, tag, position, self.consumer.index, *epoch]
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


class Op:
    """One step of a pipeline; ``stage`` builds its running form."""

    decodes = False  # whether the op needs values (decodes raw records first)

    def stage(
        self, upstream: Upstream, ctx: Context, position: int, epoch: tuple[int, ...], state: Any
    ) -> Stage:
        raise NotImplementedError

    def check(
        self, upstream: UpstreamCheck, ctx: Context, position: int, epoch: tuple[int, ...], field: StateField
    ) -> None:
        """Check ``field``, a saved state of this op's stage, and through ``upstream`` those below it.

        Raises DatasetStateError naming the first field that does not fit. This default is for steps
        whose state is only their upstream's (``{"up": ...}``).
        """
        upstream(epoch, field.keys("up")["up"])

    def describe(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class PipelineRecipe:
    """Everything needed to run a pipeline in any process (picklable): files, how to read them, the ops.

    Named apart from the parse plans of :mod:`tfrec.example.parse.plan`, which are another thing.
    """

    files: tuple[str, ...]
    options: ReadOptions = field(default_factory=ReadOptions)
    ops: tuple[Op, ...] = ()
    decoder: Decoder = field(default_factory=lambda: Decoder(None, None), compare=False)
    cycle_length: int = 1
    shuffle_files: bool = False
    global_order: GlobalOrder | None = None  # set: records come in a global shuffled order (global_order.py)


@dataclass
class Context:
    """A recipe being run: what each op's stage needs to know besides its upstream.

    ``journal``: a reading process takes the state after every pull and sends one only when the
    consumer asks, so steps with a large state (the shuffle buffer) keep a journal of their changes
    and hand out a snapshot that is copied only when it is sent.

    ``hand_over``: a reading process runs the recipe, and sends what its last op gives to the
    consumer: a batch step there may leave strings packed (see :meth:`Decoder.decode_batch`).
    """

    recipe: PipelineRecipe
    run: Run
    raw_inputs: list[bool]  # per op: whether its input elements are still raw records
    journal: bool = False
    hand_over: bool = False


def raw_after(ops: tuple[Op, ...], raw: bool = True) -> list[bool]:
    """Whether elements are still raw records before each op, and after the last (one more entry)."""
    kinds = [raw]
    for op in ops:
        raw = raw and not op.decodes
        kinds.append(raw)
    return kinds


def up_state(state: Any) -> Any:
    return state["up"] if state is not None else None
