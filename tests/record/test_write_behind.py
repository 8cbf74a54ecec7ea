"""RecordWriter's pages and its write-behind thread: the bytes never depend on how they were written.

The same records written one at a time, with write_many and with write_frames, to a path (pages
written by a thread), to a plain file object (a thread too) and to a BytesIO (no thread, bytes
copies) give the same frames, with every compression; page boundaries, records larger than a page,
empty records and errors of the thread's writes included.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recordcheck import decompress, threads_named

import tfrec
from tfrec.record import frame
from tfrec.record.crc import masked_crc
from tfrec.record.framing_batch import frame_records
from tfrec.record.write_behind import WriteBehind

PAGE = 1 << 20
FRAMING = frame.HEADER + frame.FOOTER


def framed(records: list[bytes]) -> bytes:
    return b"".join(frame.header(len(r)) + r + frame.pack_crc(masked_crc(r)) for r in records)


def write_in_ways(writer: tfrec.RecordWriter, records: list[bytes], way: str) -> None:
    if way == "write":
        for record in records:
            writer.write(record)
    elif way == "write_many":
        writer.write_many(records)
    else:  # a mix: one at a time, many, framed together
        third = len(records) // 3
        for record in records[:third]:
            writer.write(record)
        writer.write_many(records[third : 2 * third])
        writer.write_frames(frame_records(records[2 * third :]))


# Sizes around the page's end (a frame is 16 bytes more than its record), the size written
# from where it is (64 KiB), a record larger than a page, empty records.
SIZES = [0, 1, 100, 4080, (1 << 16) - 1, 1 << 16, PAGE - 16, PAGE - 17, PAGE, 3 * PAGE + 5]


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
@pytest.mark.parametrize("way", ["write", "write_many", "mix"])
def test_a_path_a_file_and_a_bytesio_get_the_same_bytes(
    tmp_path: Path, compression: str | None, way: str
) -> None:
    rng = np.random.default_rng(len(way))
    sizes = [int(s) for s in rng.choice(SIZES, 24)] + [int(s) for s in rng.integers(0, 5000, 600)]
    records = [rng.bytes(size) for size in sizes]
    path = tmp_path / "x.tfrecord"
    with tfrec.RecordWriter(path, compression) as writer:
        write_in_ways(writer, records, way)
    with open(tmp_path / "plain", "wb") as file, tfrec.RecordWriter(file, compression) as writer:
        write_in_ways(writer, records, way)
    sink = io.BytesIO()
    with tfrec.RecordWriter(sink, compression) as writer:
        write_in_ways(writer, records, way)
    assert decompress(path.read_bytes(), compression) == framed(records)
    assert path.read_bytes() == (tmp_path / "plain").read_bytes() == sink.getvalue()
    assert not threads_named("tfrec-write")  # stopped by close


@pytest.mark.parametrize("way", ["write", "write_many", "mix"])
def test_gzip_members_end_at_the_same_records_however_written(tmp_path: Path, way: str) -> None:
    rng = np.random.default_rng(7)
    records = [rng.bytes(int(n)) for n in rng.integers(0, 9000, 900)] + [bytes(200_000), b""] * 3
    one_by_one = tmp_path / "reference.tfrecord.gz"
    with tfrec.RecordWriter(one_by_one, gzip_member_bytes=100_000) as writer:
        for record in records:
            writer.write_many([record])  # a page job per record: its member ends are what they were
    expected = writer.gzip_members
    with tfrec.RecordWriter(tmp_path / "x.tfrecord.gz", gzip_member_bytes=100_000) as writer:
        write_in_ways(writer, records, way)
    assert writer.gzip_members == expected
    assert (tmp_path / "x.tfrecord.gz").read_bytes() == one_by_one.read_bytes()
    assert gzip.decompress(one_by_one.read_bytes()) == framed(records)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([0, 3, 1000, PAGE - 40, PAGE - 16, 70_000]), max_size=12))
def test_records_filling_pages_to_any_boundary_come_out_whole(sizes: list[int]) -> None:
    records = [bytes([i % 251]) * size for i, size in enumerate(sizes)]
    sink = io.BytesIO()
    with tfrec.RecordWriter(sink) as writer:
        for record in records:
            writer.write(record)
    assert sink.getvalue() == framed(records)


def test_the_thread_writes_pages_behind_and_stops_at_close(tmp_path: Path) -> None:
    with tfrec.RecordWriter(tmp_path / "x.tfrecord") as writer:
        writer.write_many([bytes(1000)] * 3000)  # 3 MB: pages are handed over
        assert len(threads_named("tfrec-write")) == 1
    assert not threads_named("tfrec-write")
    with tfrec.RecordWriter(io.BytesIO()) as writer:  # a stream that may keep what it gets: no thread
        writer.write_many([bytes(1000)] * 3000)
        assert not threads_named("tfrec-write")


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_writer_dropped_without_closing_stops_its_thread(tmp_path: Path) -> None:
    writer = tfrec.RecordWriter(tmp_path / "x.tfrecord")
    writer.write_many([bytes(1000)] * 3000)
    thread = threads_named("tfrec-write")[0]
    del writer  # (its file is left to the garbage collector, unclosed, as before)
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == []  # not published


class _FailingAt:
    """A file whose ``fail_at``-th write (counting from 0) raises OSError(ENOSPC)."""

    def __init__(self, inner: Any, fail_at: int) -> None:
        self.inner, self.fail_at, self.writes = inner, fail_at, 0

    def write(self, data: Any) -> int:
        self.writes += 1
        if self.writes - 1 == self.fail_at:
            raise OSError(28, "No space left on device (injected)")
        return self.inner.write(data)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("fail_at", [0, 1, 3])
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_an_error_of_the_thread_is_raised_by_a_later_call_and_nothing_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int, compression: str | None
) -> None:
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: _FailingAt(real_fdopen(fd, *a, **k), fail_at))
    path = tmp_path / "x.tfrecord"
    writer = tfrec.RecordWriter(path, compression)
    record = np.random.default_rng(1).bytes(10_000)
    with pytest.raises(OSError, match="injected"):  # by a write that hands over a page, or close
        for _ in range(1000):  # 10 MB: pages are handed over
            writer.write(record)
        writer.close()
    with pytest.raises(tfrec.TfrecError, match="an earlier write failed"):
        writer.write(b"more")
    with pytest.raises(tfrec.TfrecError, match="an earlier write failed"):
        writer.close()
    assert list(tmp_path.iterdir()) == []  # no final file, no temporary one
    assert not threads_named("tfrec-write")


def test_an_error_of_the_last_page_is_raised_by_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: _FailingAt(real_fdopen(fd, *a, **k), 0))
    writer = tfrec.RecordWriter(tmp_path / "x.tfrecord")
    writer.write(b"one record")
    with pytest.raises(OSError, match="injected"):
        writer.flush()
    with pytest.raises(tfrec.TfrecError, match="an earlier write failed"):
        writer.flush()


def test_write_behind_runs_jobs_in_order_and_raises_a_jobs_error_once() -> None:
    done: list[int] = []
    behind = WriteBehind()
    for number in range(50):
        behind.submit(lambda number=number: done.append(number))
    behind.wait()
    assert done == list(range(50))

    def fail() -> None:
        raise OSError("injected")

    behind.submit(fail)
    with pytest.raises(OSError, match="injected"):
        behind.wait()
    behind.wait()  # raised once
    behind.close()
    behind.submit(lambda: done.append(-1))  # after close: run by the caller
    assert done[-1] == -1
