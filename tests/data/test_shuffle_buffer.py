"""The shuffle buffer's numpy swaps hand out what tf.data's one-at-a-time loop hands out."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data.pipeline import shuffle
from tfrec.data.pipeline.shuffle import ShuffleBuffer


class _LoopBuffer:
    """The buffer as a plain loop: every new element takes the place of a drawn one, handed out."""

    def __init__(self, size: int, rng: np.random.Generator) -> None:
        self.size, self.rng, self.items = size, rng, []

    def push(self, new: list) -> list:
        room = self.size - len(self.items)
        self.items += new[:room]
        new = new[room:]
        if not new:
            return []
        out = []
        for i, element in zip(self.rng.integers(0, self.size, len(new)).tolist(), new, strict=True):
            out.append(self.items[i])
            self.items[i] = element
        return out

    def drain(self) -> list:
        items, self.items = self.items, []
        return [items[i] for i in self.rng.permutation(len(items)).tolist()]


# Pushes of so many new elements (0: a drain); sizes around the buffer's fill the boundary where
# the list that fills becomes the array that swaps.
steps = st.lists(st.integers(0, 40), max_size=25)


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 12), pushes=steps, seed=st.integers(0, 3))
def test_pushes_hand_out_the_loops_elements_in_its_order(size: int, pushes: list[int], seed: int) -> None:
    buffer = ShuffleBuffer(size, np.random.default_rng(seed))
    loop = _LoopBuffer(size, np.random.default_rng(seed))
    counter = 0
    for count in pushes:
        if count:
            new = [(counter + k, b"x") for k in range(count)]  # tuples: never unpacked into the array
            counter += count
            assert buffer.push(new) == loop.push(new)
        else:
            assert buffer.drain() == loop.drain()
        assert buffer.snapshot() == loop.items
    assert buffer.drain() == loop.drain()


def test_a_slot_drawn_twice_in_one_push_hands_out_what_the_first_draw_put_there() -> None:
    buffer = ShuffleBuffer(2, np.random.default_rng(0), [b"a", b"b"])
    new = [b"%d" % k for k in range(8)]  # 8 draws among 2 slots: repeats for sure
    loop = _LoopBuffer(2, np.random.default_rng(0))
    loop.items = [b"a", b"b"]
    assert buffer.push(new) == loop.push(new)
    assert buffer.snapshot() == loop.items


def test_real_records_leave_in_the_loops_order() -> None:
    # scikit-learn's digits (1,797 images and their labels) as records, pushed a pipeline's chunk at
    # a time through a buffer of about half the data.
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    records = [
        tfrec.encode_example({"pixels": row.astype(np.int64), "label": int(label)})
        for row, label in zip(digits.data, digits.target, strict=True)
    ]
    buffer, loop = ShuffleBuffer(1000, np.random.default_rng(7)), _LoopBuffer(1000, np.random.default_rng(7))
    out, expected = [], []
    for start in range(0, len(records), 256):
        out += buffer.push(records[start : start + 256])
        expected += loop.push(records[start : start + 256])
    out += buffer.drain()
    expected += loop.drain()
    assert out == expected
    assert sorted(out) == sorted(records) and out != records


@pytest.mark.parametrize("push", [shuffle.FEW_DRAWS - 1, shuffle.FEW_DRAWS, 3 * shuffle.FEW_DRAWS])
def test_a_large_buffer_hands_out_the_loops_elements_whatever_the_push(push: int) -> None:
    # Pushes below FEW_DRAWS swap in a loop; above, a buffer of more than COUNTED slots per draw
    # finds the repeated draws by sorting them, a smaller one by counting them per slot.
    for size in (push * shuffle.COUNTED + 1, push * shuffle.COUNTED // 2):
        buffer, loop = (
            ShuffleBuffer(size, np.random.default_rng(size)),
            _LoopBuffer(size, np.random.default_rng(size)),
        )
        first = list(range(size))
        assert buffer.push(first) == loop.push(first) == []
        repeats = 0
        for start in range(size, size + 40 * push, push):
            new = list(range(start, start + push))
            out = buffer.push(new)
            assert out == loop.push(new)
            repeats += sum(element >= start for element in out)  # handed out by the push it came in with
        assert buffer.snapshot() == loop.items
        assert repeats > 0  # slots drawn twice within a push were met
