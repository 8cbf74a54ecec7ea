"""InterleavedRecords hands out records in tf.data's interleave order and resumes at any record."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from datafiles import record, write_files
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data.pipeline.interleave import InterleavedRecords, ReadOptions


def reference_interleave(sizes: Sequence[int], cycle_length: int, block_length: int) -> list[bytes]:
    """tf.data's InterleaveDataset, one element at a time, over files of ``sizes`` records."""
    slots: list[list[bytes] | None] = [None] * cycle_length
    next_file, turn, block, end_of_input, out = 0, 0, 0, False, []
    while not end_of_input or any(s is not None for s in slots):
        current = slots[turn]
        if current is not None:
            if current:
                out.append(current.pop(0))
                block += 1
                if block == block_length:
                    block, turn = 0, (turn + 1) % cycle_length
            else:
                slots[turn] = None
                block, turn = 0, (turn + 1) % cycle_length
        elif not end_of_input:
            if next_file < len(sizes):
                slots[turn] = [record(next_file, i) for i in range(sizes[next_file])]
                next_file += 1
            else:
                end_of_input = True
        else:
            block, turn = 0, (turn + 1) % cycle_length
    return out


def read_all(stage: InterleavedRecords) -> list[bytes]:
    out: list[bytes] = []
    while True:
        try:
            out += stage.pull()
        except StopIteration:
            return out


layouts = st.tuples(
    st.lists(st.integers(0, 700), min_size=1, max_size=6), st.integers(1, 4), st.integers(1, 5)
)


@settings(max_examples=40, deadline=None)
@given(layouts)
def test_order_is_tf_datas_interleave(layout: tuple[list[int], int, int]) -> None:
    sizes, cycle, block = layout
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_files(Path(tmp), sizes, gzip_every=2)
        stage = InterleavedRecords(paths, ReadOptions(block_length=block), cycle)
        assert read_all(stage) == reference_interleave(sizes, cycle, block)


@settings(max_examples=25, deadline=None)
@given(layouts, st.data())
def test_resumes_exactly_at_any_pull(layout: tuple[list[int], int, int], data: st.DataObject) -> None:
    sizes, cycle, block = layout
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_files(Path(tmp), sizes, gzip_every=3)
        expected = reference_interleave(sizes, cycle, block)
        stage = InterleavedRecords(paths, ReadOptions(block_length=block), cycle)
        seen: list[bytes] = []
        cuts = data.draw(st.integers(0, 6))
        for _ in range(cuts):
            try:
                seen += stage.pull()
            except StopIteration:
                break
            state = stage.state()
            stage.close()
            stage = InterleavedRecords(paths, ReadOptions(block_length=block), cycle, state)
        assert seen + read_all(stage) == expected


def test_records_before_a_damaged_one_come_first(tmp_path: Path) -> None:
    paths = write_files(tmp_path, [5, 5])
    data = bytearray(Path(paths[1]).read_bytes())
    data[-1] ^= 0xFF  # the data CRC of the last record of file 1
    Path(paths[1]).write_bytes(bytes(data))
    stage = InterleavedRecords(paths, ReadOptions(), cycle_length=2)
    seen: list[bytes] = []
    with pytest.raises(tfrec.ChecksumError) as caught:
        while True:
            seen += stage.pull()
    assert seen == reference_interleave([5, 4], 2, 1)
    assert (caught.value.path, caught.value.index) == (paths[1], 4)
    skipping = InterleavedRecords(paths, ReadOptions(on_error="skip"), cycle_length=2)
    assert read_all(skipping) == reference_interleave([5, 4], 2, 1)
