"""A binary stream that reads its next block in a background thread (record layer).

Reading a block of a file releases the GIL, so it overlaps the decoding of the block before it
(numpy releases the GIL often enough for the thread to get on). The thread also takes the
block's CRC32C; the CRC backends hold the GIL while they sum, but at memory speed (about 55 us a
MiB), a few percent of what decoding the block costs.

Example:
    >>> stream = ReadAhead(open("train.tfrecord", "rb"), digest=crc32c)
    >>> block = stream.read(1 << 20)
    >>> stream.prefetch(1 << 20)  # the next read(1 << 20) finds the block read, its CRC taken
    >>> block = stream.read(1 << 20)
    >>> stream.digest_of(block) == crc32c(block)
    True
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import IO

from .owned_thread import on_fork_and_exit, snapshot

__all__ = ["ReadAhead"]

# Streams with a read in flight. A thread forked away mid-read would leave its file's lock held
# for ever in the child: forking waits for those reads to end.
_READING: weakref.WeakSet[ReadAhead] = weakref.WeakSet()


def _finish_reads() -> None:
    for stream in snapshot(_READING):
        stream.finish()


on_fork_and_exit(before_fork=_finish_reads)  # (none at exit: the interpreter waits for a thread no daemon)


class ReadAhead:
    """Wrap ``stream`` so that :meth:`prefetch` reads on in a thread while the caller works.

    Reads return what was read ahead first, in order, whatever sizes they ask for (like a
    buffered stream, a read may return fewer bytes than asked; only ``b""`` means the end).
    An error raised by the read ahead is raised by the read that reaches it. ``digest`` (e.g.
    CRC32C) is taken of each block read ahead, in the thread. Not thread-safe: one reader at a
    time, as the record reader's lock ensures. The thread is not a daemon: at exit the interpreter
    waits for its read (a daemon stopped inside a read leaves the file locked, and closing it
    then aborts the interpreter), so only streams whose reads end may be read ahead.

    Waiting for a read waits for the thread's own signal that it is done, never with
    ``Thread.join``: a reader collected by the garbage collector is stopped wherever the collection
    runs, also in a thread being started inside ``threading``'s bookkeeping, whose lock joining a
    thread that is not a daemon takes again (the interpreter then hangs).
    """

    def __init__(self, stream: IO[bytes], digest: Callable[[bytes], int] | None = None) -> None:
        self._stream = stream
        self._digest = digest
        self._thread: threading.Thread | None = None
        self._done = threading.Event()  # set by the thread once its read is over
        self._outcome: tuple[bytes, int | None] | BaseException = (b"", None)
        self._left = b""  # read ahead, not yet returned from _taken on
        self._left_digest: int | None = None
        self._taken = 0
        self._digested: tuple[bytes, int] | None = None  # the last block returned whole, digested

    def prefetch(self, size: int) -> None:
        """Start reading the next ``size`` bytes (after any still unread) in a background thread."""
        if self._thread is None:
            done = self._done = threading.Event()
            thread = threading.Thread(target=self._read_ahead, args=(size, done), name="tfrec-read-ahead")
            _READING.add(self)
            try:
                thread.start()
            except RuntimeError:  # no thread to be had (a process limit): the next read reads itself
                _READING.discard(self)
                return
            self._thread = thread

    def _read_ahead(self, size: int, done: threading.Event) -> None:
        try:
            block = self._stream.read(size)
            self._outcome = (block, None if self._digest is None else self._digest(block))
        except BaseException as exc:  # raised again by the read that reaches it
            self._outcome = exc
        finally:
            _READING.discard(self)
            done.set()

    def finish(self) -> None:
        """Wait for the read in flight, if any, keeping what it reads."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            self._done.wait()

    def _wait(self) -> tuple[bytes, int | None]:
        """The block read ahead and its digest (``b""`` when no read is in progress)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return b"", None
        self._done.wait()
        outcome, self._outcome = self._outcome, (b"", None)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes: what was read ahead, else straight from the stream."""
        if self._taken >= len(self._left):
            (self._left, self._left_digest), self._taken = self._wait(), 0
            if not self._left:
                self._digested = None
                return self._stream.read(size)
        left, taken = self._left, self._taken
        if taken == 0 and size >= len(left):  # the whole block, as the caller usually asks
            self._left = b""
            self._digested = (left, self._left_digest) if self._left_digest is not None else None
            return left
        piece = left[taken : taken + size]
        self._taken = taken + len(piece)
        self._digested = None  # (kept only while its block is the one being decoded)
        return piece

    def readinto(self, target: memoryview) -> int:
        """Fill ``target`` (a writable byte view): what was read ahead first, then straight from the
        stream with one copy (``readinto`` when it has one). Fewer bytes only at the end."""
        done = 0
        size = len(target)
        while done < size:
            if self._taken >= len(self._left):
                (self._left, self._left_digest), self._taken = self._wait(), 0
                if not self._left:
                    break
            taken = self._taken
            piece = memoryview(self._left)[taken : taken + size - done]
            target[done : done + len(piece)] = piece
            self._taken = taken + len(piece)
            done += len(piece)
        self._digested = None
        readinto = getattr(self._stream, "readinto", None)
        while done < size:
            if readinto is not None:
                got = readinto(target[done:])
            else:  # a stream with only read() (the inflater): one copy more
                data = self._stream.read(size - done)
                got = len(data)
                target[done : done + got] = data
            if not got:
                break
            done += got
        return done

    def held(self) -> int:
        """The bytes read ahead and not yet returned (after the read in flight, if any, ends)."""
        if self._taken >= len(self._left):
            (self._left, self._left_digest), self._taken = self._wait(), 0
        return len(self._left) - self._taken

    def digest_of(self, block: bytes) -> int | None:
        """The digest of ``block`` if it is the last block read ahead and returned whole."""
        digested = self._digested
        return digested[1] if digested is not None and digested[0] is block else None

    def stop(self) -> None:
        """Wait for a read in progress and drop what it read: the stream may then be closed."""
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():  # (a GC run there)
            self._done.wait()
        self._left, self._outcome, self._digested = b"", (b"", None), None
