"""Spans filled in a background thread while their CRCs are taken (tfrec.record.fill_ahead)."""

from __future__ import annotations

import gc
import io
import mmap
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recordcheck import none_left, outcome, threads_named

import tfrec
from tfrec.record import spans
from tfrec.record.fill_ahead import Filler, fill_here
from tfrec.record.mapped import MAP_FILES_ENV

KIB = 1024


@pytest.fixture(autouse=True)
def _spans_read_not_mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spans read into buffers of their own, as where files are not mapped (test_mapped_spans
    covers maps)."""
    monkeypatch.setenv(MAP_FILES_ENV, "0")


class _FailingAt:
    """A stream whose read fails once ``limit`` bytes have been read."""

    def __init__(self, data: bytes, limit: int) -> None:
        self.stream = io.BytesIO(data)
        self.limit = limit

    def readinto(self, target: memoryview) -> int:
        if self.stream.tell() >= self.limit:
            raise OSError(5, "Input/output error")
        return self.stream.readinto(target)


def test_a_filler_fills_piece_by_piece_as_reading_here_does() -> None:
    data = np.random.default_rng(0).bytes(1000)
    for fill in (Filler().fill, fill_here):
        target = bytearray(1200)
        with memoryview(target) as view:
            counts = list(fill(io.BytesIO(data).readinto, view, 300))
        # Each count is a piece's end (the thread may land several before the caller looks), fewer
        # than asked only at the end of the stream.
        assert counts == sorted(set(counts)) and set(counts) <= {300, 600, 900, 1000}
        assert counts[-1] == 1000
        assert bytes(target[:1000]) == data


def test_an_error_in_the_thread_is_raised_after_the_pieces_before_it() -> None:
    data = bytes(range(256)) * 8
    filler = Filler()
    outcomes = []
    for fill in (filler.fill, fill_here):
        counts: list[int] = []
        with pytest.raises(OSError, match="Input/output error"):
            for count in fill(_FailingAt(data, 600).readinto, memoryview(bytearray(2048)), 200):
                counts.append(count)
        outcomes.append(counts)
    assert outcomes[1] == [200, 400, 600]
    assert set(outcomes[0]) <= {200, 400, 600} and outcomes[0][-1] == 600  # all before the error
    target = bytearray(300)  # the thread serves the next fill
    assert list(filler.fill(io.BytesIO(data).readinto, memoryview(target), 200))[-1] == 300
    filler.close()
    assert none_left("tfrec-fill")


def test_a_fill_left_early_lets_go_of_its_buffer() -> None:
    stream = io.BytesIO(bytes(4 * KIB))

    def slow_read_into(target: memoryview) -> int:
        time.sleep(0.01)  # the thread is still reading when the caller leaves
        return stream.readinto(target)

    buffer = mmap.mmap(-1, 4 * KIB)
    filler = Filler()
    with memoryview(buffer) as view:
        fill = filler.fill(slow_read_into, view[:], 512)
        assert next(fill) >= 512
        fill.close()
    assert stream.tell() < 4 * KIB  # it stopped at the piece it was reading
    buffer.resize(8 * KIB)  # a map with a view of it alive (in the thread) could not be resized
    filler.close()
    assert none_left("tfrec-fill")


def test_a_collected_filler_stops_its_thread() -> None:
    filler = Filler()
    assert list(filler.fill(io.BytesIO(bytes(100)).readinto, memoryview(bytearray(100)), 10))[-1] == 100
    assert len(threads_named("tfrec-fill")) >= 1
    del filler
    gc.collect()
    assert none_left("tfrec-fill")


# -- through the reader: small pieces, so that spans of a few records are filled in the thread --


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spans, "PIECE", 48 * KIB)
    monkeypatch.setattr(spans, "FILL_AHEAD_MIN", 96 * KIB)


def _large_file(tmp_path: Path, count: int = 30) -> tuple[Path, list[bytes]]:
    rng = np.random.default_rng(7)
    records = [rng.bytes(int(n)) for n in rng.integers(64 * KIB, 200 * KIB, count)]
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, records)
    return path, records


@pytest.mark.usefixtures("threaded")
@pytest.mark.parametrize("size", [1, 3, 8, 30])
def test_threaded_spans_read_what_records_do(tmp_path: Path, size: int) -> None:
    path, records = _large_file(tmp_path)
    batches = list(tfrec.read_batches(path, size))
    assert [list(b) for b in batches] == [records[i : i + size] for i in range(0, len(records), size)]


@pytest.mark.usefixtures("threaded")
@pytest.mark.parametrize("where", [0.05, 0.3, 0.55, 0.8, 0.97])
@pytest.mark.parametrize("damage", ["flip data", "flip length", "truncate"])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_threaded_spans_raise_the_errors_of_read_records_at_the_same_record(
    tmp_path: Path, where: float, damage: str, on_error: str
) -> None:
    path, _ = _large_file(tmp_path)
    data = bytearray(path.read_bytes())
    at = int(where * len(data))
    if damage == "truncate":
        del data[at:]
    else:
        if damage == "flip length":  # the length field of the frame that holds `at`
            ends = [b.end_offset for b in tfrec.RecordReader(path).batches(1)]
            starts = [0, *ends[:-1]]
            at = max(start for start in starts if start <= at)
        data[at] ^= 0x20
    path.write_bytes(bytes(data))
    expected = outcome(tfrec.read_records(path, on_error=on_error))  # type: ignore[arg-type]
    for size in (2, 7):
        got = outcome(tfrec.read_batches(path, size, on_error=on_error))  # type: ignore[arg-type]
        assert got == expected


@pytest.mark.usefixtures("threaded")
def test_a_reader_closed_or_dropped_early_leaves_no_thread(tmp_path: Path) -> None:
    path, records = _large_file(tmp_path)
    reader = tfrec.RecordReader(path)
    batches = reader.batches(8)
    assert list(next(batches)) == records[:8]
    assert threads_named("tfrec-fill")  # the thread is there while the reader reads
    reader.close()
    assert none_left("tfrec-fill")

    batches = tfrec.RecordReader(path).batches(8)
    next(batches)
    del batches
    gc.collect()
    assert none_left("tfrec-fill")

    for _ in range(3):  # finished readers leave none either
        assert sum(map(len, tfrec.read_batches(path, 5))) == len(records)
    assert none_left("tfrec-fill")


# -- reads at positions, shared by the thread and the caller --------------------------------------


def _read_at(data: bytes, fail_at: int | None = None, delay: float = 0.0):  # type: ignore[no-untyped-def]
    """A ReadAt over ``data``: fewer bytes at its end; an OSError for a read from ``fail_at`` on."""
    readers: set[int] = set()

    def read_at(view: memoryview, at: int) -> int:
        readers.add(threading.get_ident())
        if fail_at is not None and at >= fail_at:
            raise OSError(5, "Input/output error")
        time.sleep(delay)
        piece = data[at : at + len(view)]
        view[: len(piece)] = piece
        return len(piece)

    read_at.readers = readers  # type: ignore[attr-defined]
    return read_at


def test_a_shared_fill_is_read_by_the_thread_and_the_caller_in_any_order_and_yields_in_order() -> None:
    data = np.random.default_rng(1).bytes(10_000)
    filler = Filler()
    read_at = _read_at(data, delay=0.002)
    target = bytearray(10_000)
    with memoryview(target) as view:
        counts = list(filler.fill_shared(read_at, view, 700))
    assert counts == sorted(set(counts)) and counts[-1] == 10_000
    assert all(count % 700 == 0 for count in counts[:-1])
    assert bytes(target) == data
    assert len(read_at.readers) == 2  # both read pieces
    filler.close()
    assert none_left("tfrec-fill")


def test_a_shared_fill_ends_at_a_short_piece_and_raises_the_first_error_after_the_pieces_before() -> None:
    data = bytes(range(256)) * 10
    filler = Filler()
    target = bytearray(4096)
    with memoryview(target) as view:
        counts = list(filler.fill_shared(_read_at(data), view, 512))
    assert counts[-1] == len(data) and bytes(target[: len(data)]) == data
    other = Filler()  # (whose thread may not be awake before the failed piece)
    for fill in (filler.fill_shared, other.fill_shared):
        counts = []
        with pytest.raises(OSError, match="Input/output error"), memoryview(bytearray(4096)) as view:
            for count in fill(_read_at(data, fail_at=1536, delay=0.001), view, 512):
                counts.append(count)
        assert counts and counts[-1] == 1536  # every piece before the failed one, none after
    other.close()
    with memoryview(bytearray(600)) as view:  # the thread serves the next fill
        assert list(filler.fill_shared(_read_at(data), view, 256))[-1] == 600
    filler.close()
    with memoryview(bytearray(600)) as view:  # a closed filler: the caller reads every piece
        read_at = _read_at(data)
        assert list(filler.fill_shared(read_at, view, 256))[-1] == 600
        assert read_at.readers == {threading.get_ident()}
    assert none_left("tfrec-fill")


def test_a_shared_fill_left_early_lets_go_of_its_buffer() -> None:
    buffer = mmap.mmap(-1, 64 * KIB)
    filler = Filler()
    with memoryview(buffer) as view:
        fill = filler.fill_shared(_read_at(bytes(64 * KIB), delay=0.01), view[:], 4 * KIB)
        assert next(fill) >= 4 * KIB
        fill.close()
    buffer.resize(128 * KIB)  # a map with a view of it alive (in the thread) could not be resized
    filler.close()
    assert none_left("tfrec-fill")


@pytest.mark.usefixtures("threaded")
@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.one_of(st.integers(64 * KIB, 300 * KIB), st.integers(0, 3000)), max_size=30),
    size=st.integers(1, 12),
    start=st.integers(0, 29),
)
def test_threaded_spans_of_any_records_from_any_start_read_what_records_do(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], size: int, start: int
) -> None:
    # Spans read at positions follow blocks read ahead, small records and one another: the file's
    # position must be where reading on expects it after each of them.
    rng = np.random.default_rng(len(sizes))
    records = [rng.bytes(n) for n in sizes]
    path = tmp_path_factory.mktemp("t") / "x.tfrecord"
    tfrec.write_records(path, records)
    start = min(start, len(records))
    offset = sum(n + 16 for n in sizes[:start])
    reader = tfrec.RecordReader(path, start_offset=offset, start_index=start)
    got = [list(batch) for batch in reader.batches(size)]
    rest = records[start:]
    assert got == [rest[i : i + size] for i in range(0, len(rest), size)]


@pytest.mark.usefixtures("threaded")
def test_a_file_truncated_while_its_spans_are_read_raises_as_read_records_does(tmp_path: Path) -> None:
    path, records = _large_file(tmp_path, count=40)
    ends = [b.end_offset for b in tfrec.RecordReader(path).batches(1)]
    for cut in (ends[20] + 5, ends[25] - 7):
        tfrec.write_records(path, records)
        reader = tfrec.RecordReader(path)
        batches = reader.batches(6)
        got = list(next(batches))  # the file's size is known by now: the rest is cut under the reader
        os.truncate(path, cut)
        with pytest.raises(tfrec.TruncatedRecordError) as caught:
            for batch in batches:
                got.extend(batch)
        # Whole records, then the error at the next one; what was read before the cut may be kept.
        kept = ends.index(max(end for end in ends if end <= cut)) + 1
        assert got == records[: len(got)] and len(got) >= kept and caught.value.index == len(got)
        reader.close()
    assert none_left("tfrec-fill")


@pytest.mark.usefixtures("threaded")
@pytest.mark.parametrize("size", [2, 9])
def test_threaded_spans_of_a_stream_object_are_read_in_order_by_the_thread(tmp_path: Path, size: int) -> None:
    # A stream handed over has no descriptor of ours to read at positions: the thread alone reads it.
    # (Its size is known when it is moved to a start offset: then its large records are spans.)
    path, records = _large_file(tmp_path)
    first = len(records[0]) + 16
    with open(path, "rb") as stream:
        reader = tfrec.RecordReader(stream, start_offset=first, start_index=1)
        got = [list(batch) for batch in reader.batches(size)]
        reader.close()
    assert got == [records[i : i + size] for i in range(1, len(records), size)]
    assert none_left("tfrec-fill")
