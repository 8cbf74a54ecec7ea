"""ReadAhead: a stream read a block ahead in a thread returns the same bytes in the same order."""

from __future__ import annotations

import io
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrec.record.crc import crc32c
from tfrec.record.read_ahead import ReadAhead


@given(
    data=st.binary(max_size=2000),
    steps=st.lists(st.tuples(st.integers(1, 700), st.booleans()), min_size=1, max_size=30),
)
@settings(max_examples=100, deadline=None)
def test_reads_return_the_stream_in_order_whatever_is_read_ahead(
    data: bytes, steps: list[tuple[int, bool]]
) -> None:
    stream = ReadAhead(io.BytesIO(data), digest=crc32c)
    got = bytearray()
    for size, ahead in steps:
        piece = stream.read(size)
        assert len(piece) <= size
        got += piece
        if ahead:
            stream.prefetch(size)
    while piece := stream.read(500):
        got += piece
    assert bytes(got) == data


def test_a_block_read_ahead_and_returned_whole_carries_its_digest() -> None:
    stream = ReadAhead(io.BytesIO(bytes(range(256)) * 12), digest=crc32c)
    first = stream.read(1024)
    assert stream.digest_of(first) is None  # read in the caller's thread: nothing to reuse
    stream.prefetch(1024)
    second = stream.read(1024)
    assert second == bytes(range(256)) * 4 and stream.digest_of(second) == crc32c(second)
    stream.prefetch(1024)
    part = stream.read(100)  # a block returned in pieces has no digest
    assert len(part) == 100 and stream.digest_of(part) is None
    assert stream.digest_of(second) is None  # not kept (nor its block) once reading went on


class _Failing(io.RawIOBase):
    def __init__(self) -> None:
        self.calls = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.calls += 1
        if self.calls > 1:
            raise OSError("the disk went away")
        return b"x" * size


def test_an_error_of_the_read_ahead_is_raised_by_the_read_that_reaches_it() -> None:
    stream = ReadAhead(_Failing())
    assert stream.read(4) == b"xxxx"
    stream.prefetch(4)  # fails in the thread: nothing is raised here
    with pytest.raises(OSError, match="the disk went away"):
        stream.read(4)


class _Slow(io.RawIOBase):
    """Each read waits for the release, then returns its own letter: a, b, c..."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.letter = ord("a")

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.release.wait(5)
        self.letter += 1
        return bytes([self.letter - 1]) * size


def test_stop_waits_for_the_read_in_progress_and_drops_it() -> None:
    slow = _Slow()
    stream = ReadAhead(slow)
    stream.prefetch(8)
    threading.Timer(0.05, slow.release.set).start()
    stream.stop()
    assert slow.release.is_set()  # stop returned only once the read had finished
    assert stream.read(3) == b"bbb"  # the block read ahead ("aaa...") was dropped


def test_with_no_thread_to_be_had_the_stream_is_read_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    stream = ReadAhead(io.BytesIO(b"abcdef"))
    assert stream.read(2) == b"ab"
    stream.prefetch(2)
    assert stream.read(2) == b"cd" and stream.read(5) == b"ef"


@pytest.mark.skipif(
    not hasattr(threading, "_shutdown_locks_lock"), reason="the lock of CPython 3.10-3.12's threading"
)
def test_stop_does_not_need_the_lock_a_thread_being_started_holds() -> None:
    # A reader collected by the garbage collector is stopped wherever the collection runs: once, in
    # CI, in a thread being started, inside threading's bookkeeping that holds _shutdown_locks_lock.
    # Joining the read-ahead thread (no daemon) takes that lock again: the interpreter hung.
    stream = ReadAhead(io.BytesIO(bytes(1000)))
    stream.prefetch(100)  # (nothing may join the thread before stop: that would take the lock now)
    stopped = threading.Event()

    def stop_inside_the_bookkeeping() -> None:
        with threading._shutdown_locks_lock:  # type: ignore[attr-defined]
            stream.stop()
        stopped.set()

    threading.Thread(target=stop_inside_the_bookkeeping, daemon=True).start()
    assert stopped.wait(10), "stop() waited for a lock its own thread holds"
    assert stream.read(10) == bytes(10)  # what was read ahead was dropped; the stream reads on
