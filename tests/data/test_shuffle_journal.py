"""The shuffle buffer's journal: a reading process's snapshots equal the copies taken at their moment."""

from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrec.data.pipeline.shuffle import BufferSnapshot, ShuffleBuffer

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
