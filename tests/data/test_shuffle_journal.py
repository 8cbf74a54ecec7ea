"""Journaled states (reading processes): snapshots pickle as the copies taken at their moment."""

from __future__ import annotations

import gc
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data.pipeline.assemble import build
from tfrec.data.pipeline.batch import BatchOp
from tfrec.data.pipeline.shuffle import BufferSnapshot, ShuffleBuffer, ShuffleOp
from tfrec.data.pipeline.stage import PipelineRecipe, Run

# A run of the buffer: pushes of so many new elements, 0 meaning a drain.
changes = st.lists(st.integers(0, 12), max_size=30)


@settings(max_examples=100, deadline=None)
@given(size=st.integers(1, 8), steps=changes, keep=st.integers(1, 4))
def test_snapshots_pickle_as_the_contents_of_their_moment(size: int, steps: list[int], keep: int) -> None:
    plain = ShuffleBuffer(size, np.random.default_rng(7))
    journaled = ShuffleBuffer(size, np.random.default_rng(7), journal=True)
    held: list[tuple[list[int], BufferSnapshot]] = []  # the last ``keep``, as a reading process holds them
    counter = 0
    for step in steps:
        if step:
            new = list(range(counter, counter + step))
            counter += step
            assert journaled.push(new) == plain.push(new)
        else:
            assert journaled.drain() == plain.drain()
        snapshot: BufferSnapshot | None = journaled.snapshot()  # type: ignore[assignment]
        assert isinstance(snapshot, BufferSnapshot)
        held = [*held, (list(plain.items), snapshot)][-keep:]
        assert [pickle.loads(pickle.dumps(kept)) for _, kept in held] == [items for items, _ in held]
    # The journal holds only what the living snapshots need.
    held.clear()
    snapshot = None
    gc.collect()
    journaled.push([counter])
    assert journaled.journal == []


def test_without_a_journal_a_state_is_a_plain_copy() -> None:
    buffer = ShuffleBuffer(4, np.random.default_rng(0), [1, 2, 3])
    copy = buffer.snapshot()
    buffer.push([4, 5, 6])
    assert copy == [1, 2, 3]


def test_a_snapshot_older_than_the_journal_is_refused() -> None:
    buffer = ShuffleBuffer(2, np.random.default_rng(0), journal=True)
    with pytest.raises(ValueError, match="no longer knows"):
        buffer.contents_at(buffer.version + 1)


@pytest.mark.parametrize("batch", [1, 7, 64])
def test_a_journaled_pipelines_states_pickle_as_a_copying_ones(tmp_path: Path, batch: int) -> None:
    files = []
    for shard in range(3):
        files.append(str(tmp_path / f"r-{shard}.tfrecord"))
        tfrec.write_records(files[-1], [b"%d-%d" % (shard, i) for i in range(150 + 40 * shard)])
    ops = (ShuffleOp(50), BatchOp(batch))
    recipe = PipelineRecipe(files=tuple(files), ops=ops, cycle_length=2, shuffle_files=True)
    plain = build(recipe, Run(3), (0,))
    journaled = build(recipe, Run(3), (0,), journal=True)
    held = []  # a reading process holds its last few states while it pulls on
    while True:
        try:
            expected = plain.pull()
        except StopIteration:
            with pytest.raises(StopIteration):
                journaled.pull()
            break
        assert journaled.pull() == expected
        held = [*held, (plain.state(), journaled.state())][-4:]
        assert [pickle.loads(pickle.dumps(j)) for _, j in held] == [p for p, _ in held]
