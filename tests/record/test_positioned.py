"""read_frames: nearby frames read together, the gaps skipped unchecked, with the checks of read_frame."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.record import frame, positioned
from tfrec.record.positioned import read_frame, read_frames

SIZES = st.one_of(st.integers(0, 40), st.integers(40, 300), st.sampled_from([0, 1, 2000]))


@contextmanager
def gap_settings(gap_bytes: int, gap_budget: int) -> Iterator[None]:
    """GAP_BYTES and GAP_BUDGET set for the block (hypothesis examples share one test function call)."""
    saved = positioned.GAP_BYTES, positioned.GAP_BUDGET
    positioned.GAP_BYTES, positioned.GAP_BUDGET = gap_bytes, gap_budget
    try:
        yield
    finally:
        positioned.GAP_BYTES, positioned.GAP_BUDGET = saved


@contextmanager
def counting_preads() -> Iterator[list[tuple[int, int]]]:
    """The (offset, size) of every pread read_frames makes in the block."""
    calls: list[tuple[int, int]] = []
    real = positioned.pread

    def counting(fd: int, size: int, offset: int) -> bytes:
        calls.append((offset, size))
        return real(fd, size, offset)

    positioned.pread = counting
    try:
        yield calls
    finally:
        positioned.pread = real


def write_file(path: Path, records: list[bytes]) -> tuple[list[int], list[int]]:
    """Write the records; their frames' offsets and lengths."""
    tfrec.write_records(path, records)
    lengths = [len(r) + frame.FRAMING for r in records]
    return np.cumsum([0, *lengths[:-1]]).tolist(), lengths


@contextmanager
def opened(*paths: Path) -> Iterator[list[int]]:
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    try:
        yield fds
    finally:
        for fd in fds:
            os.close(fd)


@settings(max_examples=150, deadline=None)
@given(
    files=st.lists(st.lists(SIZES, min_size=1, max_size=25), min_size=1, max_size=3),
    data=st.data(),
    gap_bytes=st.sampled_from([0, 16, 60, 200, 1000, 8 << 10]),
    gap_budget=st.sampled_from([0, 100, 1000, 16 << 20]),
)
def test_read_frames_equals_read_frame_one_by_one(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[list[int]],
    data: st.DataObject,
    gap_bytes: int,
    gap_budget: int,
) -> None:
    # Random subsets, orders and repeats of frames of random sizes, over files; gaps around the threshold.
    directory = tmp_path_factory.mktemp("frames")
    layouts = []
    for number, sizes in enumerate(files):
        records = [bytes([(number * 7 + i) & 0xFF]) * size for i, size in enumerate(sizes)]
        layouts.append(write_file(directory / f"{number}.tfrecord", records))
    picks = data.draw(
        st.lists(st.tuples(st.integers(0, len(files) - 1), st.integers(0, 24)), min_size=1, max_size=40)
    )
    picks = [(f, i % len(files[f])) for f, i in picks]
    with opened(*(directory / f"{n}.tfrecord" for n in range(len(files)))) as fds:
        want = [read_frame(fds[f], layouts[f][0][i], layouts[f][1][i], path="x", index=i) for f, i in picks]
        args = (
            [fds[f] for f, _ in picks],
            [layouts[f][0][i] for f, i in picks],
            [layouts[f][1][i] for f, i in picks],
        )
        with gap_settings(gap_bytes, gap_budget), counting_preads() as calls:
            assert read_frames(*args) == want
        assert len(calls) <= len(set(picks))  # a frame asked twice is read once
        wasted = sum(size for _, size in calls) - sum(layouts[f][1][i] for f, i in set(picks))
        assert wasted <= gap_budget  # gap bytes read stay within the budget
        if gap_budget >= 1 << 20:  # frames this close share a read
            ranges = sorted((f, layouts[f][0][i], layouts[f][0][i] + layouts[f][1][i]) for f, i in set(picks))
            near = sum(a[0] == b[0] and 0 <= b[1] - a[2] <= gap_bytes for a, b in itertools.pairwise(ranges))
            assert len(calls) == len(ranges) - near


@settings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(SIZES, min_size=2, max_size=25),
    data=st.data(),
    part=st.sampled_from(["length", "length crc", "data", "data crc"]),
)
def test_damage_inside_a_gap_fails_no_read(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], data: st.DataObject, part: str
) -> None:
    # The bytes of a gap are read and skipped unchecked; a damaged frame asked for fails the batch (None).
    path = tmp_path_factory.mktemp("damage") / "x.tfrecord"
    records = [bytes([i + 1]) * size for i, size in enumerate(sizes)]
    offsets, lengths = write_file(path, records)
    damaged = data.draw(st.integers(0, len(sizes) - 1))
    if part == "data" and not sizes[damaged]:
        part = "data crc"  # no data byte to damage
    where = {"length": 0, "length crc": 8, "data": frame.HEADER, "data crc": lengths[damaged] - frame.FOOTER}
    content = bytearray(path.read_bytes())
    content[offsets[damaged] + where[part]] ^= 0x10
    path.write_bytes(bytes(content))
    asked = data.draw(st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=30))
    with opened(path) as (fd,), gap_settings(1 << 20, 1 << 30):
        got = read_frames([fd] * len(asked), [offsets[i] for i in asked], [lengths[i] for i in asked])
    if damaged in asked:
        assert got is None  # the caller reads one by one and raises read_frame's error
    else:
        assert got == [records[i] for i in asked]


def test_a_truncated_file_gives_none_and_what_it_holds_reads(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    records = [bytes([i]) * 50 for i in range(6)]
    offsets, lengths = write_file(path, records)
    os.truncate(path, offsets[5] + 20)  # the file ends inside the last frame
    with opened(path) as (fd,):
        assert read_frames([fd, fd], [offsets[1], offsets[5]], [lengths[1], lengths[5]]) is None
        assert read_frames([fd, fd], [offsets[4], offsets[0]], [lengths[4], lengths[0]]) == [
            records[4],
            records[0],
        ]
        with pytest.raises(tfrec.TruncatedRecordError):
            read_frame(fd, offsets[5], lengths[5], path=str(path), index=5)


def test_nearby_frames_share_a_read_and_far_ones_do_not(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    records = [bytes([i]) * 100 for i in range(200)]  # frames of 116 bytes
    offsets, lengths = write_file(path, records)
    asked = [0, 2, 10, 150, 151, 190]  # gaps of 116, 7 * 116, 139 * 116, 0, 38 * 116 bytes
    with opened(path) as (fd,), counting_preads() as calls:
        args = ([fd] * len(asked), [offsets[i] for i in asked], [lengths[i] for i in asked])
        with gap_settings(8 * 116, 16 << 20):
            assert read_frames(*args) == [records[i] for i in asked]
        assert calls == [(0, 11 * 116), (150 * 116, 2 * 116), (190 * 116, 116)]
        calls.clear()
        with gap_settings(8 * 116, 116):  # the budget takes the smallest gap only
            assert read_frames(*args) == [records[i] for i in asked]
        assert calls == [(0, 3 * 116), (10 * 116, 116), (150 * 116, 2 * 116), (190 * 116, 116)]
        calls.clear()
        with gap_settings(0, 16 << 20):  # adjacent frames only: the behaviour before gaps were read
            assert read_frames(*args) == [records[i] for i in asked]
        assert len(calls) == 5
