"""The lifecycle both thread owners share (tfrec.record.owned_thread): no thread to be had, a
close from the thread itself, a drop, a close and a later start; and listing the work in flight
while threads change it.

Forks and the interpreter's exit are tested in child processes, in tests/hardening.
"""

from __future__ import annotations

import gc
import io
import sys
import threading
import weakref
from collections.abc import Callable

import pytest
from recordcheck import none_left, threads_named

from tfrec.record.fill_ahead import Filler
from tfrec.record.owned_thread import snapshot
from tfrec.record.write_behind import WriteBehind

Owner = WriteBehind | Filler


def _run_in(owner: Owner, work: Callable[[], None]) -> None:
    """Hand ``work`` to ``owner`` as its users do, and wait until it is done."""
    if isinstance(owner, WriteBehind):
        owner.submit(work)
        owner.wait()
    else:

        def read_into(view: memoryview) -> int:
            work()
            view[:] = bytes(len(view))
            return len(view)

        assert list(owner.fill(read_into, memoryview(bytearray(10)), 10)) == [10]


OWNERS = [(WriteBehind, "tfrec-write"), (Filler, "tfrec-fill")]


@pytest.mark.parametrize(("make", "name"), OWNERS)
def test_with_no_thread_to_be_had_the_work_runs_in_the_caller_until_one_is(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], Owner], name: str
) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    ran: list[str] = []
    owner = make()
    monkeypatch.setattr(threading.Thread, "start", refuse)
    assert not owner.start()
    for _ in range(3):
        _run_in(owner, lambda: ran.append(threading.current_thread().name))
    assert ran == [threading.current_thread().name] * 3
    monkeypatch.undo()  # threads are to be had again: the next work starts one
    _run_in(owner, lambda: ran.append(threading.current_thread().name))
    assert ran[-1] == name
    owner.close()
    assert none_left(name)


@pytest.mark.parametrize(("make", "name"), OWNERS)
def test_an_owner_stopped_runs_later_work_in_the_caller(make: Callable[[], Owner], name: str) -> None:
    ran: list[str] = []
    owner = make()
    _run_in(owner, lambda: ran.append(threading.current_thread().name))
    owner.close()
    owner.close()  # idempotent
    assert none_left(name)
    _run_in(owner, lambda: ran.append(threading.current_thread().name))
    assert ran == [name, threading.current_thread().name]
    assert not owner.start() and not threads_named(name)


@pytest.mark.parametrize(("make", "name"), OWNERS)
def test_an_owner_dropped_after_its_thread_started_stops_it(make: Callable[[], Owner], name: str) -> None:
    owner = make()
    _run_in(owner, lambda: None)  # (the start makes the state the thread serves: the finalizer follows it)
    assert len(threads_named(name)) >= 1
    del owner
    gc.collect()
    assert none_left(name)


def test_a_filler_closed_from_its_own_thread_ends_the_fill_and_the_thread() -> None:
    # As a garbage collection in the thread closing the reader that owns the filler would: the thread
    # is not joined from itself, the fill ends with what it read, the thread ends after it.
    filler = Filler()
    data = io.BytesIO(bytes(range(100)))

    def read_into(view: memoryview) -> int:
        filler.close()
        return data.readinto(view)

    target = bytearray(100)
    assert list(filler.fill(read_into, memoryview(target), 100)) == [100]
    assert bytes(target) == bytes(range(100))
    assert none_left("tfrec-fill")


def test_a_weak_set_of_work_in_flight_is_listed_while_threads_change_it() -> None:
    # A fork's hook lists the objects with work in flight while their threads discard themselves:
    # a plain list() of the weak set raises "set changed size" now and then (about 1 in 500 here).
    objects = [threading.Event() for _ in range(400)]
    in_flight: weakref.WeakSet[threading.Event] = weakref.WeakSet(objects[:200])
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            in_flight.add(objects[n % 400])
            in_flight.discard(objects[n * 7 % 400])
            n += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(20_000):
            listed = snapshot(in_flight)
            assert all(item in objects for item in listed[:3])
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
