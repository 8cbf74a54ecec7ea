"""Small batches of large records read with the spans of the batches after them
(tfrec.record.spans_ahead)."""

from __future__ import annotations

import gc
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recordcheck import outcome

import tfrec
from tfrec.record import spans_ahead
from tfrec.record.batch import PAD
from tfrec.record.mapped import MAP_FILES_ENV
from tfrec.record.spans import PAGE

KIB = 1024


@pytest.fixture(autouse=True)
def _spans_read_not_mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spans read into buffers of their own, as where files are not mapped (test_mapped_spans
    covers maps)."""
    monkeypatch.setenv(MAP_FILES_ENV, "0")


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each span asked for was found read ahead (spans ahead of up to 1 MiB)."""
    monkeypatch.setattr(spans_ahead, "AHEAD_BYTES", 1 << 20)
    found: list[bool] = []
    take = spans_ahead.SpansAhead.take

    def counted(self: spans_ahead.SpansAhead, *args: object) -> object:
        early = take(self, *args)  # type: ignore[arg-type]
        found.append(early is not None)
        return early

    monkeypatch.setattr(spans_ahead.SpansAhead, "take", counted)
    return found


def _write(path: Path, sizes: list[int], seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    records = [rng.bytes(size) for size in sizes]
    tfrec.write_records(path, records)
    return records


def test_batches_of_equal_large_records_are_mostly_read_ahead_each_in_its_own_buffer(
    tmp_path: Path, taken: list[bool]
) -> None:
    path = tmp_path / "x.tfrecord"
    records = _write(path, [100 * KIB] * 80)
    batches = list(tfrec.read_batches(path, 2))
    assert [list(b) for b in batches] == [records[i : i + 2] for i in range(0, 80, 2)]
    # (The first MiBs come from the blocks read ahead at the start; after them, a fill reads its
    # batch and up to 1 MiB ahead.)
    assert sum(taken) > len(taken) // 3
    buffers = {id(b.buffer) for b in batches}
    for batch in batches[1:]:
        assert not isinstance(batch.buffer, bytes) and batch.starts[0] - 12 < PAGE
        assert len(batch.buffer) - int(batch.ends[-1]) >= PAD or batch is batches[-1]
    assert len(buffers) == len(batches)  # kept batches are never written over


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(
        st.one_of(st.integers(64 * KIB, 160 * KIB), st.sampled_from([100 * KIB]), st.integers(0, 2000)),
        max_size=40,
    ),
    size=st.integers(1, 6),
    verify=st.booleans(),
)
def test_spans_read_ahead_give_what_records_do_whatever_the_sizes(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], size: int, verify: bool
) -> None:
    # A guess that misses (the frames after a batch are not as long as its first) drops the spans
    # read ahead: they are read again, never handed out.
    path = tmp_path_factory.mktemp("a") / "x.tfrecord"
    records = _write(path, sizes, seed=len(sizes))
    batches = list(tfrec.read_batches(path, size, verify_checksums=verify))
    assert [list(b) for b in batches] == [records[i : i + size] for i in range(0, len(records), size)]
    for number, batch in enumerate(batches):
        assert batch.start_index == number * size
        rest = tfrec.RecordReader(
            path, start_offset=batch.end_offset, start_index=batch.start_index + len(batch)
        )
        assert list(rest) == records[number * size + len(batch) :]


@pytest.mark.parametrize("where", [0.55, 0.75, 0.95])
@pytest.mark.parametrize("damage", ["flip data", "flip length", "truncate"])
def test_damage_in_spans_read_ahead_is_reported_at_the_record_read_records_names(
    tmp_path: Path, taken: list[bool], where: float, damage: str
) -> None:
    path = tmp_path / "x.tfrecord"
    _write(path, [100 * KIB] * 80, seed=3)  # (the first MiBs come from blocks read ahead)
    data = bytearray(path.read_bytes())
    at = int(where * len(data))
    if damage == "truncate":
        del data[at:]
    else:
        frame = 100 * KIB + 16
        data[at - at % frame if damage == "flip length" else at] ^= 0x20
    path.write_bytes(bytes(data))

    for on_error in ("raise", "skip"):
        expected = outcome(tfrec.read_records(path, on_error=on_error))  # type: ignore[arg-type]
        for size in (1, 3):
            assert outcome(tfrec.read_batches(path, size, on_error=on_error)) == expected  # type: ignore[arg-type]
    assert any(taken)


def test_a_reader_closed_with_spans_read_ahead_lets_go_of_them(tmp_path: Path, taken: list[bool]) -> None:
    path = tmp_path / "x.tfrecord"
    records = _write(path, [100 * KIB] * 80, seed=4)
    reader = tfrec.RecordReader(path)
    batches = reader.batches(2)
    for number in range(25):  # (past the blocks read ahead at the start)
        assert list(next(batches)) == records[2 * number : 2 * number + 2]
    assert any(taken)
    early = [weakref.ref(span) for span in reader._blocks.spans_ahead.spans]
    assert early  # spans of the next batches are held
    reader.close()
    gc.collect()
    assert not any(ref() for ref in early)  # and let go by close, their buffers free for reuse
    fills = [t for t in threading.enumerate() if t.name == "tfrec-fill"]
    for thread in fills:
        thread.join(timeout=10)
    assert not any(t.is_alive() for t in fills)


def test_records_of_varying_sizes_are_seldom_read_ahead_so_read_about_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each guess misses (the next batch's frames are not as long as this one's first): reading
    # ahead backs off, doubling the batches read without it.
    path = tmp_path / "x.tfrecord"
    rng = np.random.default_rng(9)
    records = _write(path, [int(n) for n in rng.integers(64 * KIB, 160 * KIB, 300)], seed=9)
    fills = []
    fill = spans_ahead.SpansAhead.fill

    def counted(self: spans_ahead.SpansAhead, *args: object, **kwargs: object) -> int:
        fills.append(1)
        return fill(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(spans_ahead.SpansAhead, "fill", counted)
    batches = list(tfrec.read_batches(path, 2))
    assert [r for b in batches for r in b] == records
    assert 1 <= len(fills) <= 10  # of 150 batches
