"""Reading and verifying TFRecord frames (record layer).

Small records are cut out of 1 MiB blocks and checked a block at a time: the
length CRC depends only on the length, so it is looked up in a table; runs of
equal headers are recognised with one numpy compare, and blocks of small frames
of varying sizes are split with numpy too; one struct call builds all the
records of a block. The data CRCs of a block are checked together with one CRC
pass over it (:mod:`~tfrec.record.block_crc`); only a block that fails is checked
record by record, to name the damaged one. :meth:`RecordReader.batches` hands out
spans of the block instead of records (no copy per record), in blocks of a few
batches that a thread reads, and takes the CRC of, while the block before is
decoded. Large records are read straight into their own ``bytes`` object.
Records before a damaged one are always handed out before the error is raised.

Example:
    >>> for record in read_records("train.tfrecord.gz"):
    ...     handle(record)
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import stat
import struct
import threading
import warnings
import zlib
from collections.abc import Iterable, Iterator, Sequence
from types import TracebackType
from typing import IO, Literal

import numpy as np

from ..allocator import keep_freed_memory
from ..arguments import ON_ERROR, check_choice
from ..errors import (
    ChecksumError,
    RecordError,
    RecordTypeError,
    TfrecError,
    TfrecWarning,
    TruncatedRecordError,
)
from . import block_crc, frame, salvage
from .batch import RecordBatch
from .compression import Compression, looks_like, open_decompressed, resolve_compression
from .crc import crc32c, crc_function, mask, mask_array
from .read_ahead import ReadAhead

__all__ = ["OnError", "RecordReader", "read_batches", "read_records"]

OnError = Literal["raise", "skip", "warn"]

_MAX_READ = 1 << 24  # largest single read: a corrupt length never allocates more
_WALK = 64  # frames walked in Python before looking for a run of equal headers
_NO_ENDS = np.empty(0, np.int64)
# batches() reads blocks this many batches long (1 MiB to _MAX_READ): a batch that spans two blocks
# is joined, the others are views. Measured on 3.7 KB records: 8% less time than 1 MiB blocks.
_BATCHES_PER_BLOCK = 4
_FIRST_BLOCK_GOAL = 4 * salvage.BLOCK  # blocks batches() reads before a whole batch is known


class _EndOfStream(Exception):
    """Internal: nothing more can be read (a damaged end was skipped)."""


class _LockedBatches:
    """A reader's batches handed out one at a time under a lock.

    Threads sharing a reader are serialized batch by batch (one lock per ~1 MiB
    of records): each record goes to exactly one of them, and the generator is
    never run by two threads at once.
    """

    __slots__ = ("_batches", "_lock")

    def __init__(self, batches: Iterator[Iterator[bytes]]) -> None:
        self._batches = batches
        self._lock = threading.Lock()

    def __iter__(self) -> _LockedBatches:
        return self

    def __next__(self) -> Iterator[bytes]:
        with self._lock:
            return next(self._batches)


class _Frames:
    """Consecutive records of a block handed out as spans of it, for :meth:`RecordReader.batches`.

    :meth:`take` hands out spans without copying; iterating slices records one by one (when a
    reader's records are iterated while it hands out views).
    """

    __slots__ = ("buffer", "ends", "next", "starts")

    def __init__(self, buffer: bytes, starts: np.ndarray, ends: np.ndarray) -> None:
        self.buffer = buffer
        self.starts = starts
        self.ends = ends
        self.next = 0  # rows taken so far

    def take(self, count: int) -> tuple[bytes, np.ndarray, np.ndarray]:
        """Up to ``count`` more records, as ``(buffer, starts, ends)``."""
        first = self.next
        self.next = last = min(first + count, len(self.starts))
        return self.buffer, self.starts[first:last], self.ends[first:last]

    def __iter__(self) -> _Frames:
        return self

    def __next__(self) -> bytes:
        row = self.next
        if row >= len(self.starts):
            raise StopIteration
        self.next = row + 1
        return self.buffer[self.starts[row] : self.ends[row]]

    def __length_hint__(self) -> int:
        return len(self.starts) - self.next


class RecordReader:
    """Iterate over the records of one TFRecord file or stream, verifying CRCs.

    Args:
        source: a path, or a binary file object (not closed by the reader).
        compression: ``"auto"`` (from the suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        verify_checksums: check the length and data CRC of every record.
        on_error: ``"raise"`` a :class:`~tfrec.RecordError` at the first damaged
            record; ``"skip"`` damaged records and carry on (a bad length is
            passed by scanning for the next header that validates); ``"warn"``
            does the same with a :class:`~tfrec.TfrecWarning` per damage.
        start_offset: byte offset (in the decompressed stream) of the record to
            start from, e.g. a saved :attr:`offset`.
        start_index: the number of that record, so errors report true indices.

    Records are ``bytes`` objects that stay valid. :attr:`offset` and
    :attr:`index` name the next record, so reading can resume later.

    A reader iterated from several threads at once hands each record to
    exactly one of them (batches of records are taken under a lock); share the
    reader itself, not an iterator taken from it.

    Example:
        >>> reader = tfrec.RecordReader("train.tfrecord")
        >>> first = next(iter(reader))
        >>> state = (reader.offset, reader.index)
        >>> rest = tfrec.RecordReader("train.tfrecord", start_offset=state[0], start_index=state[1])
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | IO[bytes],
        compression: str | None = "auto",
        *,
        verify_checksums: bool = True,
        on_error: OnError = "raise",
        start_offset: int = 0,
        start_index: int = 0,
    ) -> None:
        check_choice("on_error", on_error, ON_ERROR)
        if start_offset < 0 or start_index < 0:
            raise TfrecError("start_offset and start_index must be >= 0")
        self._source = source
        self.path: str | None = (
            os.fspath(source) if isinstance(source, (str, os.PathLike)) else getattr(source, "name", None)
        )
        if not isinstance(self.path, str):
            self.path = None
        self.compression: Compression = resolve_compression(
            compression, source if isinstance(source, (str, os.PathLike)) else self.path
        )
        self.verify_checksums = verify_checksums
        self.on_error: OnError = on_error
        self._crc = crc_function()
        self._raw: IO[bytes] | None = None
        self._stream: IO[bytes] | None = None
        self._ahead: ReadAhead | None = None  # reads self._stream, a block ahead in batches()
        self._may_read_ahead = False
        self._end: int | None = None  # decompressed size when known (plain files)
        self._views = False  # hand out blocks as spans of them (batches()), not as records
        self._block = salvage.BLOCK  # bytes read at once; batches() reads blocks of a few batches
        self._block_goal = salvage.BLOCK  # what batches() lets self._block grow to
        # Created here, not on first use, so that threads starting at once share one.
        self._generator = _LockedBatches(self._batches())
        self._chains: dict[int, Iterator[bytes]] = {}  # thread id -> that thread's iterator
        # Progress: the batch being handed out and where it sits in the stream.
        self._batch: Iterator[bytes] = iter(())
        self._batch_ends: np.ndarray | Sequence[int] = _NO_ENDS  # stream offset just past each frame
        self._batch_start = start_offset
        self._batch_end = start_offset  # stream offset of the next record once the batch is consumed
        self._batch_index = start_index

    # -- progress ---------------------------------------------------------------------------

    def _consumed(self) -> int:
        return len(self._batch_ends) - operator.length_hint(self._batch)

    @property
    def offset(self) -> int:
        """Byte offset (in the decompressed stream) of the next record to be returned."""
        consumed = self._consumed()
        if 0 < consumed < len(self._batch_ends):
            return int(self._batch_ends[consumed - 1])
        return self._batch_start if consumed == 0 and len(self._batch_ends) else self._batch_end

    @property
    def index(self) -> int:
        """Number of the next record to be returned, counting from 0."""
        return self._batch_index + self._consumed()

    # -- opening and reading ----------------------------------------------------------------

    def _open(self) -> None:
        start = self._batch_end
        if isinstance(self._source, (str, os.PathLike)):
            self._raw = open(self._source, "rb")  # noqa: SIM115 (closed by close())
            status = os.fstat(self._raw.fileno())
            if self.compression is None and stat.S_ISREG(status.st_mode):
                self._end = status.st_size  # lets a corrupt length fail before any read
                if start > self._end:
                    raise TruncatedRecordError(
                        f"start_offset {start} is past the end of the file ({self._end} bytes)",
                        path=self.path,
                        index=self._batch_index,
                        offset=start,
                    )
                self._raw.seek(start)
        else:
            self._raw = self._source
            if start and self.compression is None:
                self._seek_forward(self._raw, start)
        self._stream = open_decompressed(self._raw, self.compression)
        self._ahead = ReadAhead(self._stream, crc32c if self.verify_checksums else None)
        # Never read ahead of a pipe or socket: closing the reader would wait for data that may not
        # come. Nor of a compressed stream: inflating takes the GIL between pieces, and costs ten times
        # what decoding does, so it gained nothing (3% slower on 3.7 KB records).
        self._may_read_ahead = self.compression is None and _seekable(self._raw)
        if start and self._end is None:  # not seekable to a decompressed offset: skip by reading
            skipped = 0
            while skipped < start:
                piece = self._read(min(_MAX_READ, start - skipped), skipped, self._batch_index)
                if not piece:
                    raise TruncatedRecordError(
                        f"start_offset {start} is past the end of the stream ({skipped} bytes)",
                        path=self.path,
                        index=self._batch_index,
                        offset=start,
                    )
                skipped += len(piece)

    def _seek_forward(self, raw: IO[bytes], start: int) -> None:
        """Move a seekable stream ``start`` bytes on (e.g. an fsspec file), rather than reading them."""
        try:
            if not raw.seekable():
                return
            here = raw.tell()
            size = raw.seek(0, os.SEEK_END) - here
        except (OSError, AttributeError, ValueError):
            return  # not really seekable: skipped by reading
        if start > size:
            raw.seek(here)
            raise TruncatedRecordError(
                f"start_offset {start} is past the end of the stream ({size} bytes)",
                path=self.path,
                index=self._batch_index,
                offset=start,
            )
        raw.seek(here + start)
        self._end = size

    def _read(self, size: int, offset: int, index: int) -> bytes:
        """Read up to ``size`` bytes for the frame at ``offset``; b"" at the end.

        A damaged compressed stream is reported as a RecordError at that frame;
        when the caller skips damage, reading simply ends there.
        """
        if self._ahead is None:
            return b""
        try:
            return self._ahead.read(size)
        except (zlib.error, EOFError) as exc:
            error: RecordError
            if isinstance(exc, EOFError):
                error = TruncatedRecordError(
                    f"{exc}: the file is truncated", path=self.path, index=index, offset=offset
                )
            else:
                hint = ""
                if offset == 0 and looks_like(self._raw_head()) is None:
                    hint = "; was it written without compression? (pass compression=None)"
                error = RecordError(
                    f"the {self.compression} stream is damaged: {exc}{hint}",
                    path=self.path,
                    index=index,
                    offset=offset,
                )
            self._ahead = None
            self._report(error)
            return b""

    def _raw_head(self) -> bytes:
        """The first bytes of the raw file, for hints (empty when not seekable)."""
        raw = self._raw
        if raw is None:
            return b""
        try:
            where = raw.tell()
            raw.seek(0)
            head = raw.read(2)
            raw.seek(where)
            return head
        except (OSError, AttributeError):  # a pipe or socket: no hint
            return b""

    def _read_exact(self, size: int, at: int, offset: int, index: int) -> bytes:
        """Read ``size`` bytes starting at stream offset ``at`` (fewer at the end of the stream).

        Never asks for more than _MAX_READ at once, so a corrupt length cannot
        allocate more memory than the stream really holds.
        """
        if self._end is not None and at + size > self._end:
            return b""  # cannot be satisfied: the caller reports the truncation without reading
        first = self._read(min(size, _MAX_READ), offset, index)
        if len(first) == size or not first:
            return first
        pieces = [first]
        have = len(first)
        while have < size:
            piece = self._read(min(size - have, _MAX_READ), offset, index)
            if not piece:
                break
            pieces.append(piece)
            have += len(piece)
        return b"".join(pieces)

    # -- iteration --------------------------------------------------------------------------

    def __iter__(self) -> Iterator[bytes]:
        # chain hands out the records of each batch from C, the cheapest loop there is. A chain is not
        # thread-safe, so each thread gets its own: they share the batch being handed out (a C
        # iterator, safe to share) and then take whole batches from the locked generator.
        thread = threading.get_ident()
        chain = self._chains.get(thread)
        if chain is None:
            chain = itertools.chain.from_iterable(itertools.chain((self._batch,), self._generator))
            self._chains[thread] = chain
        return chain

    def __next__(self) -> bytes:
        for record in self._batch:
            return record
        return next(iter(self))

    def batches(self, size: int) -> Iterator[RecordBatch]:
        """Iterate over the records in batches of ``size`` (the last may be smaller), each one
        :class:`~tfrec.record.batch.RecordBatch`: one buffer that batched decoders read as it is.

        CRCs are checked as when iterating record by record, and :attr:`offset` / :attr:`index`
        name the record after the last batch handed out. A batch is a view of the block it was
        read in (a few batches long), which stays in memory as long as the batch does; pickled, a
        batch carries only its records. An uncompressed file or other stream that can seek is read a
        block ahead in a background thread (a pipe is not: closing the reader would wait for its
        data). With
        ``on_error="skip"`` a batch may hold records from both sides of skipped damage;
        ``batch.start_index`` is its first record's.

        Example:
            >>> for batch in tfrec.RecordReader("train.tfrecord").batches(1024):
            ...     columns = tfrec.parse_example(batch, spec)
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise TfrecError(f"batch size must be a positive int, not {size!r}")
        large_blocks = keep_freed_memory()  # else every block above 1 MiB is a fresh mapping
        if large_blocks:
            self._block_goal = _FIRST_BLOCK_GOAL
        self._views = True
        try:
            while True:
                pieces: list[tuple[bytes, np.ndarray, np.ndarray]] = []
                first_index = have = 0
                try:
                    while have < size:
                        taken = self._take(size - have)
                        if taken is None:
                            break
                        if not pieces:
                            first_index = self.index - len(taken[1])  # its own number, after any damage
                        pieces.append(taken)
                        have += len(taken[1])
                except RecordError:
                    if pieces:  # what was read before the damage is handed out first
                        yield self._batch_of(pieces, first_index)
                    raise
                if not pieces:
                    return
                batch = self._batch_of(pieces, first_index)
                if large_blocks and len(batch) == size:  # blocks of a few batches: most are views
                    span = int(batch.ends[-1] - batch.starts[0]) + frame.HEADER + frame.FOOTER
                    self._block_goal = min(_MAX_READ, max(salvage.BLOCK, _BATCHES_PER_BLOCK * span))
                yield batch
        finally:
            self._views = False

    def _batch_of(self, pieces: list[tuple[bytes, np.ndarray, np.ndarray]], index: int) -> RecordBatch:
        return RecordBatch.from_pieces(pieces, path=self.path, index=index, end_offset=self.offset)

    def _take(self, count: int) -> tuple[bytes, np.ndarray, np.ndarray] | None:
        """Up to ``count`` records from the batch being handed out, or the next one; ``None`` at the end."""
        while True:
            current = self._batch
            if isinstance(current, _Frames):
                if len(current.starts) > current.next:
                    return current.take(count)
            else:  # records handed out one by one before batches() was called
                records = list(itertools.islice(current, count))
                if records:
                    joined = RecordBatch.from_records(records)
                    return joined.buffer, joined.starts, joined.ends
            try:
                next(self._generator)  # publishes the next batch as self._batch
            except StopIteration:
                return None

    def _batches(self) -> Iterator[Iterator[bytes]]:
        """Yield the records batch by batch; the file is closed when the generator finishes."""
        try:
            self._open()
            buf = b""
            pos = 0  # position in buf of the next frame
            base = self._batch_end  # stream offset of buf[0]
            index = self._batch_index
            eof = False
            header_only = False  # after a large record, read just the next header
            # A block read ahead while a frame cut by its start is handed out on its own:
            # (the block, its stream offset, where its first whole frame starts).
            ahead: tuple[bytes, int, int] | None = None
            while True:
                start = pos
                ends, pos, bad_length = self._split(buf, pos)
                if ends.size:
                    yield from self._hand_out(buf, start, ends, base, index)
                    index += ends.size
                if ahead is not None and pos == len(buf):
                    buf, base, pos = ahead
                    ahead = None
                    continue
                if bad_length:
                    self._publish((), _NO_ENDS, base + pos, index)
                    self._report(self._length_error(buf, pos, base, index))
                    buf, pos, base, eof = salvage.resync(
                        buf,
                        pos + 1,
                        base,
                        eof,
                        read=functools.partial(self._read, index=index),
                        read_exact=functools.partial(self._read_exact, index=index),
                        end_of_stream=self._end,
                        crc=self._crc,
                        gave_up=functools.partial(self._report_gave_up, index=index),
                    )
                    if pos < 0:
                        return
                    index += 1
                    continue
                available = len(buf) - pos
                if available >= frame.HEADER and frame.unpack_header(buf, pos)[0] >= frame.LARGE:
                    record, footer, after = self._read_large(buf, pos, base, index)
                    yield self._hand_out_large(record, footer, base + pos, index)
                    index += 1
                    base += pos + len(record) + frame.HEADER + frame.FOOTER
                    buf, pos, header_only = after, 0, True
                    continue
                if eof:
                    if available:
                        self._publish((), _NO_ENDS, base + pos, index)
                        length = frame.unpack_header(buf, pos)[0] if available >= frame.HEADER else None
                        error = self._truncation_error(
                            length,
                            available - frame.HEADER if length is not None else available,
                            base + pos,
                            index,
                            buf[pos : pos + 2],
                        )
                        self._report(error)
                    return
                chunk = self._read(frame.HEADER if header_only else self._block, base + pos, index)
                if self._views and not header_only and chunk:
                    self._block = min(2 * self._block, self._block_goal)  # grows as decoding gets going
                    if self._may_read_ahead and self._ahead is not None:
                        self._ahead.prefetch(self._block)  # read on while this block is decoded
                header_only = False
                if not chunk:
                    eof = True
                    continue
                if available >= frame.HEADER:
                    # Complete the frame cut by the block boundary on its own, rather
                    # than copying the whole new block behind the leftover bytes.
                    missing = frame.unpack_header(buf, pos)[0] + frame.HEADER + frame.FOOTER - available
                    if missing <= len(chunk):
                        ahead = (chunk, base + len(buf), missing)
                        chunk = chunk[:missing]
                base += pos
                buf = buf[pos:] + chunk if available else chunk
                pos = 0
        except _EndOfStream:
            pass
        finally:
            self.close()

    def _split(self, buf: bytes, pos: int) -> tuple[np.ndarray, int, bool]:
        """Find every whole frame of ``buf`` from ``pos``, checking length CRCs.

        Returns the position just past each frame, the position of the first
        frame not taken, and whether that frame has a bad length CRC.
        """
        end_of_buffer = len(buf)
        first = pos
        parts: list[list[int] | np.ndarray] = []  # frame ends, walked or found in runs
        unpack = frame.unpack_length
        chained = False  # small frames found with numpy, at most once per block (it reads all the rest)
        while True:
            # Walk the chain of lengths: the only per-record Python loop ...
            walked: list[int] = []
            step = walked.append
            try:
                for _ in range(_WALK):
                    end = pos + unpack(buf, pos)[0] + frame.HEADER + frame.FOOTER
                    if end > end_of_buffer:
                        break
                    step(end)
                    pos = end
            except struct.error:
                pass  # fewer than 8 bytes left: not even a length
            if not walked:
                break
            parts.append(walked)
            # ... and when it went in equal strides, take the run of identical
            # headers that follows with one numpy compare.
            stride = walked[-1] - walked[-2] if len(walked) > 1 else 0
            if (
                len(walked) == _WALK
                and walked[-1] - walked[0] == stride * (_WALK - 1)
                and end_of_buffer - pos >= frame.MIN_RUN * stride
                and unpack(buf, pos)[0] == stride - frame.HEADER - frame.FOOTER
            ):
                count = frame.count_equal_headers(buf, pos, stride)
                parts.append(np.arange(pos + stride, pos + stride * count + 1, stride, dtype=np.int64))
                pos += stride * count
            elif (
                not chained
                and len(walked) == _WALK
                and walked[-1] - walked[0] < frame.SMALL_FRAME * (_WALK - 1)
                and end_of_buffer - pos >= frame.MIN_RUN * frame.SMALL_FRAME
            ):
                # Small frames of varying sizes: numpy over the rest of the block's bytes beats
                # a Python step per frame.
                chained = True
                chain = frame.small_frame_chain(buf, pos)
                if chain.size:
                    parts.append(chain)
                    pos = int(chain[-1])
            elif len(walked) < _WALK:
                break
        ends = np.concatenate([np.asarray(part, np.int64) for part in parts]) if parts else _NO_ENDS
        bad_length = False
        if self.verify_checksums:
            bad_start = frame.first_bad_length(buf, first, ends)
            if bad_start is None and pos + frame.HEADER <= end_of_buffer and not frame.length_ok(buf, pos):
                bad_start = pos  # the frame left over: its length decides what to read next
            if bad_start is not None:
                ends = ends[ends <= bad_start]
                pos, bad_length = bad_start, True
        return ends, pos, bad_length

    def _hand_out(
        self, buf: bytes, first: int, ends: np.ndarray, base: int, index: int
    ) -> Iterator[Iterator[bytes]]:
        """Yield the frames of ``buf`` from position ``first`` to ``ends`` (just past each frame;
        ``buf[0]`` is at stream offset ``base``) as batches of records, or of frames when the
        reader hands out views (:meth:`batches`).

        Data CRCs are checked at once; the intact records around a damaged one are handed out,
        each damage reported in turn.
        """
        count = ends.size
        data_starts = np.empty_like(ends)
        data_starts[0] = first
        data_starts[1:] = ends[:-1]
        data_starts += frame.HEADER
        data_ends = ends - frame.FOOTER
        records = None if self._views else frame.slice_records(buf, first, ends)

        def rows(a: int, b: int) -> Sequence[bytes] | _Frames:
            if records is not None:
                return records[a:b]
            return _Frames(buf, data_starts[a:b], data_ends[a:b])

        stream_ends = ends + base
        if not self.verify_checksums:
            yield self._publish(rows(0, count), stream_ends, base + first, index)
            return
        buf_crc = self._ahead.digest_of(buf) if self._ahead is not None else None
        if count > 1 and block_crc.data_crcs_match(buf, first, ends, buf_crc):
            yield self._publish(rows(0, count), stream_ends, base + first, index)
            return
        # Damage somewhere (or a record too long for the block check): record by record. Views
        # are checked through short-lived slices, not copies of every record kept alive.
        pieces: Iterable[bytes] | None = records
        if pieces is None:
            pieces = map(buf.__getitem__, map(slice, data_starts.tolist(), data_ends.tolist()))
        computed = mask_array(np.fromiter(map(self._crc, pieces), np.uint32, count))
        stored = frame.stored_crcs(buf, ends)
        bad = np.flatnonzero(computed != stored)
        done = 0
        for k in bad.tolist():
            offset = int(stream_ends[k - 1]) if k else base + first
            done_start = int(stream_ends[done - 1]) if done else base + first
            yield self._publish(rows(done, k), stream_ends[done:k], done_start, index + done)
            self._publish((), _NO_ENDS, offset, index + k)
            size = int(data_ends[k] - data_starts[k])
            self._report(self._data_error(size, int(stored[k]), int(computed[k]), offset, index + k))
            done = k + 1
        done_start = int(stream_ends[done - 1]) if done else base + first
        yield self._publish(rows(done, count), stream_ends[done:], done_start, index + done)

    def _hand_out_large(self, record: bytes, footer: bytes, start: int, index: int) -> Iterator[bytes]:
        """One large record: checked with plain integers, numpy would cost more than the CRC."""
        end = (start + len(record) + frame.HEADER + frame.FOOTER,)
        if self.verify_checksums:
            stored = frame.unpack_crc(footer)[0]
            computed = mask(self._crc(record))
            if computed != stored:
                self._publish((), _NO_ENDS, start, index)
                self._report(self._data_error(len(record), stored, computed, start, index))
                return self._publish((), end, start, index + 1)
        if self._views:
            whole = _Frames(record, np.zeros(1, np.int64), np.full(1, len(record), np.int64))
            return self._publish(whole, end, start, index)
        return self._publish((record,), end, start, index)

    def _data_error(self, size: int, stored: int, computed: int, offset: int, index: int) -> ChecksumError:
        return frame.data_error(size, stored, computed, path=self.path, index=index, offset=offset)

    def _publish(
        self, records: Sequence[bytes] | _Frames, ends: np.ndarray | Sequence[int], start: int, index: int
    ) -> Iterator[bytes]:
        """Make ``records`` the batch being handed out; progress is derived from it."""
        self._batch = iter(records)
        self._batch_ends = ends
        self._batch_start = start
        self._batch_end = int(ends[-1]) if len(ends) else start
        self._batch_index = index
        return self._batch

    def _report(self, error: RecordError) -> None:
        if self.on_error == "raise":
            raise error
        if self.on_error == "warn":
            warnings.warn(f"skipped damaged data: {error}", TfrecWarning, stacklevel=4)

    def _read_large(self, buf: bytes, pos: int, base: int, index: int) -> tuple[bytes, bytes, bytes]:
        """Read the data of the large frame at ``pos`` straight into its own object.

        Returns the data, the 4 footer bytes, and up to a header's worth of the
        bytes that follow (read with the footer: one call less per record).
        """
        length = frame.unpack_header(buf, pos)[0]
        have = buf[pos + frame.HEADER :]  # the part of the frame already read (less than all of it)
        if len(have) >= length:
            data, footer = have[:length], have[length:]
        else:
            rest = self._read_exact(length - len(have), base + len(buf), base + pos, index)
            data = have + rest if have else rest
            footer = b""
        after = b""
        if len(data) == length and len(footer) < frame.FOOTER:
            need = frame.FOOTER - len(footer)
            more = self._read(need + frame.HEADER, base + pos, index)
            if len(more) < need:  # a short read: the footer must still be complete
                at = base + pos + frame.HEADER + length + len(footer) + len(more)
                more += self._read_exact(need - len(more), at, base + pos, index)
            footer, after = footer + more[:need], more[need:]
        if len(data) < length or len(footer) < frame.FOOTER:
            available = len(data) + len(footer)
            if self._end is not None:  # what _read_exact would not read, as it could not complete the frame
                available = self._end - (base + pos) - frame.HEADER
            self._publish((), _NO_ENDS, base + pos, index)
            self._report(self._truncation_error(length, available, base + pos, index))
            raise _EndOfStream
        return data, footer[: frame.FOOTER], footer[frame.FOOTER :] + after

    def _length_error(self, buf: bytes, pos: int, base: int, index: int) -> RecordError:
        length, stored = frame.unpack_header(buf, pos)
        hint = "the length field is damaged"
        if base + pos == 0:
            guess = looks_like(buf[:2])
            if guess is not None and self.compression is None:
                hint = f"the file looks {guess}-compressed: pass compression={guess!r}"
            else:
                hint = "is this a TFRecord file?"
        return frame.length_error(length, stored, hint, path=self.path, index=index, offset=base + pos)

    def _truncation_error(
        self, length: int | None, available: int, offset: int, index: int, head: bytes = b""
    ) -> TruncatedRecordError:
        """The error for a stream that ends inside the frame at ``offset`` (see frame.truncation_error)."""
        guess = looks_like(head) if offset == 0 and self.compression is None else None
        hint = f"; the file looks {guess}-compressed: pass compression={guess!r}" if guess is not None else ""
        return frame.truncation_error(
            length, available, path=self.path, index=index, offset=offset, hint=hint
        )

    def _report_gave_up(self, offsets: list[int], index: int) -> None:
        self._report(
            RecordError(
                f"gave up checking {len(offsets)} record headers between offsets {offsets[0]} and "
                f"{offsets[-1]} while skipping damage: the data they claim exceeds the bound of "
                f"{salvage.SLACK >> 20} MiB plus {salvage.WORK_PER_BYTE} bytes per byte passed over; "
                "records there, if any, are skipped",
                path=self.path,
                index=index,
                offset=offsets[0],
            )
        )

    # -- life cycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file if the reader opened it (idempotent)."""
        if self._ahead is not None:
            self._ahead.stop()
            self._ahead = None
        if self._stream is not None and self._stream is not self._raw:
            self._stream.close()
        if self._raw is not None and self._raw is not self._source:
            self._raw.close()
        self._stream = self._raw = None

    def __enter__(self) -> RecordReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __getstate__(self) -> dict[str, object]:
        # Open handles do not travel: a copy reopens the file and resumes at the next record.
        if not isinstance(self._source, (str, os.PathLike)):
            raise RecordTypeError("a RecordReader over a file object cannot be pickled; pass a path")
        return {
            "source": self._source,
            "compression": self.compression,
            "verify_checksums": self.verify_checksums,
            "on_error": self.on_error,
            "start_offset": self.offset,
            "start_index": self.index,
        }

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"<RecordReader {self.path or '<stream>'} offset={self.offset} index={self.index}>"


def _seekable(stream: IO[bytes]) -> bool:
    try:
        return bool(stream.seekable())
    except (OSError, AttributeError, ValueError):
        return False


def read_records(
    source: str | os.PathLike[str] | IO[bytes],
    compression: str | None = "auto",
    *,
    verify_checksums: bool = True,
    on_error: OnError = "raise",
) -> RecordReader:
    """Iterate over the records of a TFRecord file, verifying both CRCs of each.

    Args:
        source: a path or a binary file object.
        compression: ``"auto"`` (from the suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        verify_checksums: check the length and data CRC of every record.
        on_error: ``"raise"``, ``"skip"`` or ``"warn"``; see :class:`RecordReader`.

    Returns:
        A :class:`RecordReader`: iterate over it for ``bytes`` records.

    Example:
        >>> [len(r) for r in tfrec.read_records("x.tfrecord")]
        [1, 2]
    """
    return RecordReader(source, compression, verify_checksums=verify_checksums, on_error=on_error)


def read_batches(
    source: str | os.PathLike[str] | IO[bytes],
    size: int,
    compression: str | None = "auto",
    *,
    verify_checksums: bool = True,
    on_error: OnError = "raise",
) -> Iterator[RecordBatch]:
    """Iterate over the records of a TFRecord file in batches of ``size``, verifying both CRCs of each.

    Each :class:`~tfrec.record.batch.RecordBatch` is one buffer plus offsets, which
    ``tfrec.parse_example`` and ``FeaturesDict.deserialize_batch`` read without copying records.

    Example:
        >>> for batch in tfrec.read_batches("train.tfrecord", 1024):
        ...     columns = tfrec.parse_example(batch, spec)
    """
    reader = RecordReader(source, compression, verify_checksums=verify_checksums, on_error=on_error)
    return reader.batches(size)
