"""A reading process's messages: one frame per message, in order, written at once or by a thread."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from tfrec.data.parallel.worker import Outbox, frame, unframe


def test_a_frame_carries_its_head_and_the_pulls_inband_pickle() -> None:
    head, inband = unframe(frame(("chunk", 3, 7, None), b"in band"))
    assert head == ("chunk", 3, 7, None)
    assert bytes(inband) == b"in band"
    head, inband = unframe(frame(("end", 3)))
    assert head == ("end", 3)
    assert bytes(inband) == b""


def until_sending(outbox: Outbox) -> None:
    deadline = time.monotonic() + 10
    while not outbox.sending and time.monotonic() < deadline:
        time.sleep(0.001)
    assert outbox.sending


def test_messages_arrive_in_order_when_the_pipe_is_full() -> None:
    # A message larger than the pipe waits for the thread; those after it wait behind it.
    reader, writer = multiprocessing.Pipe(duplex=False)
    outbox = Outbox(writer)
    large = frame(("chunk", 1, 1, None), bytes(1 << 20))
    outbox.put(large)
    small = [frame(("chunk", 1, seq, None), b"x") for seq in range(2, 6)]
    for message in small:
        outbox.put(message)
    assert [reader.recv_bytes() for _ in range(5)] == [large, *small]
    outbox.put(frame(("end", 1)))  # the pipe is empty: written at once
    assert unframe(reader.recv_bytes())[0] == ("end", 1)
    outbox.close()


def test_cancelling_drops_what_is_not_sent_and_frees_its_slots() -> None:
    reader, writer = multiprocessing.Pipe(duplex=False)
    outbox = Outbox(writer)
    large = frame(("chunk", 1, 1, None), bytes(1 << 20))
    outbox.put(large)  # the thread blocks on it: nobody reads yet
    until_sending(outbox)
    outbox.put(frame(("chunk", 1, 2, (4, 1, [])), b""), slot=4)
    outbox.put(frame(("end", 1)))
    outbox.put(frame(("chunk", 1, 3, (5, 1, [])), b""), slot=5)
    assert sorted(outbox.cancel()) == [4, 5]
    assert reader.recv_bytes() == large
    outbox.put(frame(("end", 2)))
    assert unframe(reader.recv_bytes())[0] == ("end", 2)  # nothing cancelled came through
    outbox.close()


def test_a_consumer_gone_ends_the_sending_thread_quietly() -> None:
    reader, writer = multiprocessing.Pipe(duplex=False)
    outbox = Outbox(writer)
    reader.close()
    with pytest.raises(OSError):  # written at once: the process's own error (it stops)
        outbox.put(frame(("end", 1)))
    outbox.put(frame(("chunk", 1, 2, None), bytes(1 << 20)))  # the thread's: it ends instead of raising
    outbox.thread.join(timeout=10)
    assert not outbox.thread.is_alive()
