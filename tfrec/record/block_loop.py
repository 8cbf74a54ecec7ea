"""The block loop of a record reader: blocks read, their frames found, checked and handed out
(record layer).

Small records are cut out of 1 MiB blocks and checked a block at a time: frames are found with
:func:`~tfrec.record.block_split.split_block`, the data CRCs of a block are checked together with
one CRC pass over it (:mod:`~tfrec.record.block_crc`), and the records of a block are built
together (:func:`~tfrec.record.frame.slice_records`); only a block that fails is checked record by
record, to name the damaged one. When the reader hands out views (``RecordReader.batches``), a
block is handed out as spans of it (:class:`Frames`, no copy per record), in blocks of a few
batches that the stream reads, and takes the CRC of, while the block before is decoded. Large
records (64 KiB or more) are read straight into their own ``bytes`` object one by one; handed out
in batches from a plain file, they are spans of the file mapped (:mod:`~tfrec.record.mapped_spans`);
from a file object of known size (or with ``TFREC_MAP_FILES=0``), a batch's worth at a time is read
into a buffer of its own (a span, :mod:`~tfrec.record.spans`), its data CRCs taken as it is read.
Records before a
damaged one are always handed out before the error is reported; the errors are worded here, with
hints for a file that looks compressed.

Example:
    >>> loop = BlockLoop(stream, verify_checksums=True, publish=publish, report=report)
    >>> for batch in loop.run():  # each batch was published (with its offsets) before it is yielded
    ...     records.extend(batch)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from ..errors import ChecksumError, RecordError, TruncatedRecordError
from . import block_crc, frame, salvage
from .batch import PAD, RecordBatch
from .block_split import NO_ENDS, split_block
from .compression import looks_like
from .crc import crc32c, crc_function, mask, mask_array, releasing_crc_function
from .mapped_spans import map_span, may_map
from .spans import POOL, Span, read_span
from .spans_ahead import SpansAhead
from .stream import RecordStream

__all__ = ["NO_CRCS", "BlockLoop", "Frames", "Publish"]


NO_CRCS = np.empty(0, np.uint32)  # no data CRC known in advance


class _EndOfStream(Exception):
    """Internal: nothing more can be read (a damaged end was skipped)."""


class Frames:
    """Consecutive records of a block handed out as spans of it, for :meth:`RecordReader.batches`.

    :meth:`take` hands out spans without copying; iterating slices records one by one (when a
    reader's records are iterated while it hands out views).

    The block may be a map of the file (``file_base``: the file offset of ``buffer[0]``): records
    are then handed out only while the file still holds them whole, as a map read past the end of
    a file that shrank under it ends the process (and as a copy when it no longer holds the bytes
    the decoders read after them). The first record it no longer holds is passed to ``shrunk``,
    with the file's size, to report the truncation; nothing more is handed out.
    """

    __slots__ = ("_size_now", "buffer", "ends", "file_base", "next", "shrunk", "starts")

    def __init__(
        self,
        buffer: bytes,
        starts: np.ndarray,
        ends: np.ndarray,
        file_base: int | None = None,
        shrunk: Callable[[int, int], None] | None = None,
    ) -> None:
        self.buffer = buffer
        self.starts = starts
        self.ends = ends
        self.next = 0  # rows taken so far
        self.file_base = file_base
        self.shrunk = shrunk
        self._size_now = 0  # the file's size, as a position in the map, when last asked

    def take(self, count: int) -> tuple[bytes, np.ndarray, np.ndarray]:
        """Up to ``count`` more records, as ``(buffer, starts, ends)``; none only when the file
        shrank (reported)."""
        first = self.next
        last = self._held(first, min(first + count, len(self.starts)))
        if last == first:  # the file shrank: reported
            return b"", self.starts[:0], self.ends[:0]
        self.next = last
        buffer, starts, ends = self.buffer, self.starts[first:last], self.ends[first:last]
        if last == len(self.starts):  # all taken: the batches alone keep the block (a span's map is
            self.buffer = b""  # reused as soon as nothing refers to it)
        if self.file_base is not None and self._size_now < min(int(ends[-1]) + PAD, len(buffer)):
            # The decoders read past the last record, into bytes the file no longer holds: a copy.
            records = [buffer[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
            joined = RecordBatch.from_records(records)
            return joined.buffer, joined.starts, joined.ends
        return buffer, starts, ends

    def _held(self, first: int, last: int) -> int:
        """``last``, or the first row of ``first..last`` the file no longer holds whole (reported)."""
        if self.file_base is None or first == last:
            return last
        # The size of the file now (a map gives it), as a position in the map, against where each
        # frame ends: 4 bytes past its data.
        self._size_now = self.buffer.size() - self.file_base  # type: ignore[attr-defined]
        held = first + int(np.searchsorted(self.ends[first:last], self._size_now - frame.FOOTER, "right"))
        if held == first and self.shrunk is not None:
            self.next = len(self.starts)  # nothing more from this map
            self.buffer = b""
            self.shrunk(first, self._size_now + self.file_base)
        return held

    def __iter__(self) -> Frames:
        return self

    def __next__(self) -> bytes:
        row = self.next
        if row >= len(self.starts) or self._held(row, row + 1) == row:
            raise StopIteration
        self.next = row + 1
        return self.buffer[self.starts[row] : self.ends[row]]

    def __length_hint__(self) -> int:
        return len(self.starts) - self.next


# Makes ``records`` the batch being handed out: (records, the stream offset just past each of their
# frames, the offset of the first, the index of the first) -> the iterator handed out.
Publish = Callable[[Sequence[bytes] | Frames, np.ndarray | Sequence[int], int, int], Iterator[bytes]]


class BlockLoop:
    """Read a stream block by block; find, check and publish the records of each block.

    Args:
        stream: where the bytes come from (opened by :meth:`run`, closed when it ends).
        verify_checksums: check the length and data CRC of every record.
        publish: makes a batch the one being handed out (the reader's progress follows it).
        report: raises a damaged record's error, or warns and goes on (the reader's ``on_error``).
        start_offset: stream offset of the first record.
        start_index: the number of that record, so errors report true indices.

    :attr:`views`, :attr:`block` and :attr:`block_goal` are the reader's to set while it hands
    out views: blocks are then handed out as :class:`Frames`, and grow up to ``block_goal``.
    """

    def __init__(
        self,
        stream: RecordStream,
        *,
        verify_checksums: bool,
        publish: Publish,
        report: Callable[[RecordError], None],
        start_offset: int = 0,
        start_index: int = 0,
    ) -> None:
        self.stream = stream
        self.verify_checksums = verify_checksums
        self.publish = publish
        self.report = report
        self._start_offset = start_offset
        self._start_index = start_index
        self.crc = crc_function()
        # Spans of large records are summed while other threads fill them: a CRC that lets go of
        # the GIL lets them run meanwhile (see spans).
        self.span_crc = releasing_crc_function() or self.crc
        self.views = False  # hand out blocks as spans of them (batches()), not as records
        self.block = salvage.BLOCK  # bytes read at once; batches() reads blocks of a few batches
        self.block_goal = salvage.BLOCK  # what batches() lets self.block grow to
        self.wanted = 1  # records the batch being gathered still wants (batches() sets it)
        self.batch_size = 1  # the size of batches() batches: a mapped span ends where one does
        self.spans_ahead = SpansAhead()  # the spans of small batches of large records, read ahead
        self.map_spans = may_map()  # spans of a plain file are maps of it, not reads (mapped_spans)
        self.cut = False  # the file shrank under the span being handed out (reported)

    def run(self) -> Iterator[Iterator[bytes]]:
        """Yield the records batch by batch, each published first; the stream is closed at the end."""
        try:
            digest = crc32c if self.verify_checksums else None
            self.stream.open(self._start_offset, self._start_index, digest=digest)
            buf = b""
            pos = 0  # position in buf of the next frame
            base = self._start_offset  # stream offset of buf[0]
            index = self._start_index
            eof = False
            # After a large record, read just the next header; so too first, when a batch would
            # be mapped from there (mapped_spans): a block read would be dropped.
            header_only = self.views and self.map_spans and self._large_at(base)
            # A block read ahead while a frame cut by its start is handed out on its own:
            # (the block, its stream offset, where its first whole frame starts).
            ahead: tuple[bytes, int, int] | None = None
            while True:
                span = None
                if self._spans_from(buf, pos, eof, ahead):
                    span, base = self._read_span(buf, pos, base, index)
                    buf, pos, eof = span.buffer, span.first, span.end_of_stream  # type: ignore[assignment]
                start = pos
                known = NO_CRCS  # data CRCs of the frames from start on, taken as they were read
                sums = None  # or the CRCs of pieces of the span, taken as they were read
                # A span's frames were found (their lengths checked) as it was read; what follows
                # them is found again, from the top, for the next batch.
                more = span is not None and span.frames > 0
                if span is not None and more:
                    ends, known, sums, bad_length = span.ends, span.crcs, span.pieces, False
                    pos = int(ends[-1])
                else:
                    ends, pos, bad_length = split_block(buf, pos, self.verify_checksums)
                mapped = span is not None and span.mapped
                if ends.size:
                    yield from self._hand_out(buf, start, ends, base, index, known, sums, mapped)
                    index += ends.size
                if mapped:  # read on from the file, not from its map: the file may have shrunk since
                    base += pos
                    self.stream.move_to(base)
                    buf, pos, eof, header_only, self.cut = b"", 0, False, True, False
                    continue
                if more:
                    continue
                if ahead is not None and pos == len(buf):
                    buf, base, pos = ahead
                    ahead = None
                    continue
                if bad_length:
                    self.publish((), NO_ENDS, base + pos, index)
                    self.report(self._length_error(buf, pos, base, index))
                    if not isinstance(buf, bytes):  # a span's map: resync grows what it is given
                        buf, base, pos = buf[pos:], base + pos, 0
                    buf, pos, base, eof = salvage.resync(
                        buf,
                        pos + 1,
                        base,
                        eof,
                        read=functools.partial(self.stream.read, index=index),
                        read_exact=functools.partial(self.stream.read_exact, index=index),
                        end_of_stream=self.stream.end,
                        crc=self.crc,
                        gave_up=functools.partial(self._report_gave_up, index=index),
                    )
                    if pos < 0:
                        return
                    index += 1
                    continue
                available = len(buf) - pos
                if available >= frame.HEADER and frame.unpack_header(buf, pos)[0] >= frame.LARGE:
                    if self._spans_from(buf, pos, eof, ahead):
                        continue  # read with the frames after it, above
                    record, footer, after = self._read_large(buf, pos, base, index)
                    yield self._hand_out_large(record, footer, base + pos, index)
                    index += 1
                    base += pos + len(record) + frame.FRAMING
                    buf, pos, header_only = after, 0, True
                    continue
                if eof:
                    if available:
                        self.publish((), NO_ENDS, base + pos, index)
                        length = frame.unpack_header(buf, pos)[0] if available >= frame.HEADER else None
                        error = self._truncation_error(
                            length,
                            available - frame.HEADER if length is not None else available,
                            base + pos,
                            index,
                            buf[pos : pos + 2],
                        )
                        self.report(error)
                    return
                chunk = self.stream.read(frame.HEADER if header_only else self.block, base + pos, index)
                if self.views and not header_only and chunk:
                    self.block = min(2 * self.block, self.block_goal)  # grows as decoding gets going
                    self.stream.prefetch(self.block)  # read on while this block is decoded
                header_only = False
                if not chunk:
                    eof = True
                    continue
                if available >= frame.HEADER:
                    # Complete the frame cut by the block boundary on its own, rather
                    # than copying the whole new block behind the leftover bytes.
                    missing = frame.unpack_header(buf, pos)[0] + frame.FRAMING - available
                    if missing <= len(chunk):
                        ahead = (chunk, base + len(buf), missing)
                        chunk = chunk[:missing]
                base += pos
                buf = buf[pos:] + chunk if available else chunk
                pos = 0
        except _EndOfStream:
            pass
        finally:
            self.spans_ahead.clear()
            self.stream.close()
            POOL.release()  # the span buffers no batch holds: the kernel may take them back

    def _large_at(self, offset: int) -> bool:
        """Whether the frame at stream ``offset`` of a plain file is a large record's."""
        header = self.stream.peek(offset, frame.HEADER)
        return len(header) == frame.HEADER and frame.unpack_length(header)[0] >= frame.LARGE

    def _spans_from(self, buf: bytes, pos: int, eof: bool, ahead: object) -> bool:
        """Whether to read on from the frame at ``pos`` as a span (:mod:`~tfrec.record.spans`): it is
        a large record handed out in a batch, and the stream's size is known."""
        return (
            self.views
            and not eof
            and ahead is None
            and self.stream.end is not None
            and len(buf) - pos >= frame.HEADER
            and frame.unpack_length(buf, pos)[0] >= frame.LARGE
            and (not self.verify_checksums or frame.length_ok(buf, pos))
        )

    def _read_span(self, buf: bytes, pos: int, base: int, index: int) -> tuple[Span, int]:
        """The frame at ``pos`` and those after it that the batch wants, in a span buffer (a map
        of the file, else read into a map of the pool: slices of either are bytes), and the stream
        offset of its start."""
        assert self.stream.end is not None  # (checked by _spans_from)
        mapped = self._map_span(base + pos) if self.map_spans else None
        if mapped is not None:
            return mapped
        with memoryview(buf) as view:
            span = read_span(
                self.stream,
                POOL,
                view[pos:],
                at=base + pos,
                end=self.stream.end,
                wanted=self.wanted,
                index=index,
                digest=self.span_crc if self.verify_checksums else None,
                verify_lengths=self.verify_checksums,
                ahead=self.spans_ahead,
            )
        return span, base + pos - span.first

    def _map_span(self, at: int) -> tuple[Span, int] | None:
        """The frame at stream offset ``at`` and those after it, as a span of the file mapped
        (:mod:`~tfrec.record.mapped_spans`), and the offset of the map's start; ``None`` when the
        file cannot be mapped now."""
        fd = self.stream.fd_to_map()
        end = self.stream.end
        if fd is None or end is None:
            return None
        self.spans_ahead.clear()  # (their thread sums the map; what they read is read again)
        span = map_span(
            fd,
            self.stream.share,
            at=at,
            end=end,
            wanted=self.wanted,
            batch_size=self.batch_size,
            verify_lengths=self.verify_checksums,
            digest=self.span_crc if self.verify_checksums else None,
        )
        if span is None:
            return None
        return span, at - span.first

    def _hand_out(
        self,
        buf: bytes,
        first: int,
        ends: np.ndarray,
        base: int,
        index: int,
        known: np.ndarray = NO_CRCS,
        sums: list[block_crc.Piece] | None = None,
        mapped: bool = False,
    ) -> Iterator[Iterator[bytes]]:
        """Yield the frames of ``buf`` from position ``first`` to ``ends`` (just past each frame;
        ``buf[0]`` is at stream offset ``base``) as batches of records, or of frames when the
        reader hands out views (:attr:`views`). ``mapped``: ``buf`` is a map of the file.

        Data CRCs are checked at once, from ``known`` (the frames', taken as they were read), or
        ``sums`` (CRCs of pieces of ``buf`` taken as they were read: see block_crc), or the block;
        the intact records around a damaged one are handed out, each damage reported in turn.
        """
        count = ends.size
        data_starts = np.empty_like(ends)
        data_starts[0] = first
        data_starts[1:] = ends[:-1]
        data_starts += frame.HEADER
        data_ends = ends - frame.FOOTER
        records = None if self.views else frame.slice_records(buf, first, ends)

        stream_ends = ends + base

        def rows(a: int, b: int) -> Sequence[bytes] | Frames:
            if records is not None:
                return records[a:b]
            if not mapped:
                return Frames(buf, data_starts[a:b], data_ends[a:b])
            offsets = data_starts[a:b] + (base - frame.HEADER)  # each frame's, in the file
            return Frames(
                buf,
                data_starts[a:b],
                data_ends[a:b],
                base,
                functools.partial(self._shrunk, offsets, index + a),
            )

        if not self.verify_checksums:
            yield self.publish(rows(0, count), stream_ends, base + first, index)
            return
        if sums is None and known.size >= count:  # taken as the span was read
            computed = mask_array(known[:count])
        else:
            buf_crc = self.stream.digest_of(buf) if sums is None else None
            if (count > 1 or sums is not None) and block_crc.data_crcs_match(
                buf, first, ends, buf_crc, pieces=sums
            ):
                yield self.publish(rows(0, count), stream_ends, base + first, index)
                return
            # Damage somewhere (or a record too long for the block check): record by record. Views
            # are checked through short-lived slices, not copies of every record kept alive.
            pieces: Iterable[bytes | np.ndarray] | None = records
            if pieces is None:  # views of the block, not copies
                u8 = np.frombuffer(buf, np.uint8)
                pieces = map(u8.__getitem__, map(slice, data_starts.tolist(), data_ends.tolist()))
            computed = mask_array(np.fromiter(map(self.crc, pieces), np.uint32, count))
        stored = frame.stored_crcs(buf, ends)
        bad = np.flatnonzero(computed != stored)
        done = 0
        for k in bad.tolist():
            offset = int(stream_ends[k - 1]) if k else base + first
            done_start = int(stream_ends[done - 1]) if done else base + first
            yield self.publish(rows(done, k), stream_ends[done:k], done_start, index + done)
            if self.cut:  # the file shrank under a map of it: its records after the cut are gone
                return
            self.publish((), NO_ENDS, offset, index + k)
            size = int(data_ends[k] - data_starts[k])
            self.report(self._data_error(size, int(stored[k]), int(computed[k]), offset, index + k))
            done = k + 1
        done_start = int(stream_ends[done - 1]) if done else base + first
        yield self.publish(rows(done, count), stream_ends[done:], done_start, index + done)

    def _shrunk(self, offsets: np.ndarray, index: int, row: int, size: int) -> None:
        """Report that the file (now ``size`` bytes) no longer holds the frame at ``offsets[row]``
        (record ``index + row``), about to be handed out from a map of it."""
        offset = int(offsets[row])
        self.cut = True
        self.publish((), NO_ENDS, offset, index + row)
        self.report(
            TruncatedRecordError(
                f"the file shrank to {size} bytes while it was read: this record and those after it are gone",
                path=self.stream.path,
                index=index + row,
                offset=offset,
            )
        )

    def _hand_out_large(self, record: bytes, footer: bytes, start: int, index: int) -> Iterator[bytes]:
        """One large record: checked with plain integers, numpy would cost more than the CRC."""
        end = (start + len(record) + frame.FRAMING,)
        if self.verify_checksums:
            stored = frame.unpack_crc(footer)[0]
            computed = mask(self.crc(record))
            if computed != stored:
                self.publish((), NO_ENDS, start, index)
                self.report(self._data_error(len(record), stored, computed, start, index))
                return self.publish((), end, start, index + 1)
        if self.views:
            whole = Frames(record, np.zeros(1, np.int64), np.full(1, len(record), np.int64))
            return self.publish(whole, end, start, index)
        return self.publish((record,), end, start, index)

    def _data_error(self, size: int, stored: int, computed: int, offset: int, index: int) -> ChecksumError:
        return frame.data_error(size, stored, computed, path=self.stream.path, index=index, offset=offset)

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
            rest = self.stream.read_exact(length - len(have), base + len(buf), base + pos, index)
            data = have + rest if have else rest
            footer = b""
        after = b""
        if len(data) == length and len(footer) < frame.FOOTER:
            need = frame.FOOTER - len(footer)
            more = self.stream.read(need + frame.HEADER, base + pos, index)
            if len(more) < need:  # a short read: the footer must still be complete
                at = base + pos + frame.HEADER + length + len(footer) + len(more)
                more += self.stream.read_exact(need - len(more), at, base + pos, index)
            footer, after = footer + more[:need], more[need:]
        if len(data) < length or len(footer) < frame.FOOTER:
            available = len(data) + len(footer)
            end = self.stream.end
            if end is not None:  # what read_exact would not read, as it could not complete the frame
                available = end - (base + pos) - frame.HEADER
            self.publish((), NO_ENDS, base + pos, index)
            self.report(self._truncation_error(length, available, base + pos, index))
            raise _EndOfStream
        return data, footer[: frame.FOOTER], footer[frame.FOOTER :] + after

    def _length_error(self, buf: bytes, pos: int, base: int, index: int) -> RecordError:
        length, stored = frame.unpack_header(buf, pos)
        hint = "the length field is damaged"
        if base + pos == 0:
            guess = looks_like(buf[pos : pos + 2])
            if guess is not None and self.stream.compression is None:
                hint = f"the file looks {guess}-compressed: pass compression={guess!r}"
            else:
                hint = "is this a TFRecord file?"
        return frame.length_error(length, stored, hint, path=self.stream.path, index=index, offset=base + pos)

    def _truncation_error(
        self, length: int | None, available: int, offset: int, index: int, head: bytes = b""
    ) -> TruncatedRecordError:
        """The error for a stream that ends inside the frame at ``offset`` (see frame.truncation_error)."""
        guess = looks_like(head) if offset == 0 and self.stream.compression is None else None
        hint = f"; the file looks {guess}-compressed: pass compression={guess!r}" if guess is not None else ""
        return frame.truncation_error(
            length, available, path=self.stream.path, index=index, offset=offset, hint=hint
        )

    def _report_gave_up(self, offsets: list[int], index: int) -> None:
        self.report(
            RecordError(
                f"gave up checking {len(offsets)} record headers between offsets {offsets[0]} and "
                f"{offsets[-1]} while skipping damage: the data they claim exceeds the bound of "
                f"{salvage.SLACK >> 20} MiB plus {salvage.WORK_PER_BYTE} bytes per byte passed over; "
                "records there, if any, are skipped",
                path=self.stream.path,
                index=index,
                offset=offsets[0],
            )
        )
