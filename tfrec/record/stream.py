"""The bytes a record reader reads: its file opened, moved to the start, decompressed, read ahead
(record layer).

A path is opened (and closed) here, and must name a regular file (a FIFO or a device is
refused at once: see :mod:`~tfrec.record.files`); a file object is read as it is and never closed. Reading
starts at a byte offset of the decompressed stream: a plain file seeks there, a compressed or
unseekable stream is read up to it. A damaged gzip or zlib stream is reported as a
:class:`~tfrec.RecordError` located at the frame being read. No read asks for more than
:data:`MAX_READ` bytes, so a corrupt length cannot allocate more than the stream holds.

Example:
    >>> stream = RecordStream("train.tfrecord", "train.tfrecord", None, report=raise_it)
    >>> stream.open(0, 0, digest=None)
    >>> header = stream.read(12, offset=0, index=0)
    >>> stream.close()
"""

from __future__ import annotations

import functools
import os
import zlib
from collections.abc import Callable, Generator, Sequence
from typing import IO

from ..errors import RecordError, TruncatedRecordError
from .compression import Compression, looks_like, open_decompressed
from .files import open_regular
from .fill_ahead import AfterPiece, Filler, Piece, ReadInto, fill_here
from .read_ahead import ReadAhead

__all__ = ["MAX_READ", "RecordStream"]

MAX_READ = 1 << 24  # largest single read: a corrupt length never allocates more
# A path must name a regular file (a FIFO would block in open(), a device never ends); a pipe is
# read when it is handed over as a stream, which says the caller means to wait on it.
_PIPE_HINT = (
    "; to read records from a pipe or a device, open it and pass the stream: read_records(open(path, 'rb'))"
)


class RecordStream:
    """The decompressed bytes of a TFRecord file or stream, read from a start offset.

    Args:
        source: a path, or a binary file object (not closed here).
        path: the name errors give (``None`` for an anonymous stream).
        compression: ``None``, ``"gzip"`` or ``"zlib"`` (already resolved).
        report: what the reader does with an error: raise it, or warn and go on
            (reading then ends where the stream is damaged).

    :attr:`end` is the size of the decompressed stream when it is known (a plain file, or a
    stream that seeks), so that a corrupt length fails before any read.

    Example:
        >>> stream = RecordStream(open("x.tfrecord", "rb"), "x.tfrecord", None, report=raise_it)
        >>> stream.open(0, 0, digest=crc32c)
        >>> block = stream.read(1 << 20, offset=0, index=0)
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | IO[bytes],
        path: str | None,
        compression: Compression,
        *,
        report: Callable[[RecordError], None],
    ) -> None:
        self.source = source
        self.path = path
        self.compression: Compression = compression
        self._report = report
        self._raw: IO[bytes] | None = None
        self._stream: IO[bytes] | None = None
        self._ahead: ReadAhead | None = None  # reads self._stream, a block ahead when asked to
        self._may_read_ahead = False
        self._filler: Filler | None = None  # fills spans in a thread (fill); made at first use
        self._fd: int | None = None  # a plain file opened here: spans are read at positions in it
        self.end: int | None = None  # decompressed size when known (plain files)

    def open(self, start: int, index: int, *, digest: Callable[[bytes], int] | None) -> None:
        """Open the source at stream offset ``start`` (record ``index``, for errors).

        ``digest`` (a CRC32C) is taken of every block read ahead, in the reading thread.
        """
        if isinstance(self.source, (str, os.PathLike)):
            fd = open_regular(os.fspath(self.source), purpose="reading records by path", hint=_PIPE_HINT)
            self._raw = open(fd, "rb")  # noqa: SIM115 (closed by close())
            if self.compression is None:
                self._fd = fd if hasattr(os, "preadv") else None
                self.end = os.fstat(fd).st_size  # lets a corrupt length fail before any read
                if start > self.end:
                    raise TruncatedRecordError(
                        f"start_offset {start} is past the end of the file ({self.end} bytes)",
                        path=self.path,
                        index=index,
                        offset=start,
                    )
                self._raw.seek(start)
        else:
            self._raw = self.source
            if start and self.compression is None:
                self._seek_forward(self._raw, start, index)
        self._stream = open_decompressed(self._raw, self.compression)
        self._ahead = ReadAhead(self._stream, digest)
        # Never read ahead of a pipe or socket: closing the reader would wait for data that may not
        # come. Nor of a compressed stream: inflating takes the GIL between pieces, and costs ten times
        # what decoding does, so it gained nothing (3% slower on 3.7 KB records).
        self._may_read_ahead = self.compression is None and _seekable(self._raw)
        if start and self.end is None:  # not seekable to a decompressed offset: skip by reading
            skipped = 0
            while skipped < start:
                piece = self.read(min(MAX_READ, start - skipped), skipped, index)
                if not piece:
                    raise TruncatedRecordError(
                        f"start_offset {start} is past the end of the stream ({skipped} bytes)",
                        path=self.path,
                        index=index,
                        offset=start,
                    )
                skipped += len(piece)

    def _seek_forward(self, raw: IO[bytes], start: int, index: int) -> None:
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
                index=index,
                offset=start,
            )
        raw.seek(here + start)
        self.end = size

    def read(self, size: int, offset: int, index: int) -> bytes:
        """Read up to ``size`` bytes for the frame at ``offset``; b"" at the end.

        A damaged compressed stream is reported as a RecordError at that frame;
        when the caller skips damage, reading simply ends there.
        """
        if self._ahead is None:
            return b""
        try:
            return self._ahead.read(size)
        except (zlib.error, EOFError) as exc:
            self._damaged(exc, offset, index)
            return b""

    def read_into(self, target: memoryview, offset: int, index: int) -> int:
        """Fill ``target`` from the stream for the frame at ``offset`` with one copy; returns the
        bytes read, fewer only at the end (or where a damaged stream is skipped, as :meth:`read`)."""
        if self._ahead is None:
            return 0
        try:
            return self._ahead.readinto(target)
        except (zlib.error, EOFError) as exc:
            self._damaged(exc, offset, index)
            return 0

    def fill(
        self,
        target: memoryview,
        offset: int,
        index: int,
        piece: int,
        *,
        ahead: bool,
        after: AfterPiece | None = None,
    ) -> Generator[int, None, None]:
        """Fill ``target`` as :meth:`read_into` does, ``piece`` bytes at a time; yield how many bytes
        are filled each time a piece lands. With ``ahead``, a stream that may be read ahead is read
        in a background thread (:mod:`~tfrec.record.fill_ahead`) while the caller checks what is
        filled; errors are raised where reading in this thread would raise them. A file opened here
        is read at positions, by the thread and the caller both (:meth:`Filler.fill_shared`), each
        piece passed to ``after`` once filled (:meth:`fills_at`); the other ways call ``after`` for
        no piece."""
        read_into = functools.partial(self.read_into, offset=offset, index=index)
        if not (ahead and self._may_read_ahead):
            return fill_here(read_into, target, piece)
        if self._fd is None:
            return self._the_filler().fill(read_into, target, piece)
        return self._fill_at(self._the_filler(), self._fd, target, read_into, piece, after)

    def _the_filler(self) -> Filler:
        """The thread that fills and sums with this one, made at first use."""
        if self._filler is None:
            self._filler = Filler()
        return self._filler

    def _fill_at(
        self,
        filler: Filler,
        fd: int,
        target: memoryview,
        read_into: ReadInto,
        piece: int,
        after: AfterPiece | None,
    ) -> Generator[int, None, None]:
        """:meth:`fill` for a file opened here: what was read ahead first, then the rest read at
        its positions in the file, which is then moved past what was read."""
        assert self._ahead is not None and self._raw is not None
        filler.start()  # (it wakes while what was read ahead is copied)
        first = read_into(target[: min(len(target), self._ahead.held())])
        if first:
            yield first
        if first == len(target):
            return
        start = self._raw.tell()  # the file's position of target[first] (nothing is held ahead now)
        if first and after is not None:  # (the pieces' places in the target)
            after = functools.partial(_shifted, after, first)
        filled = 0
        read_at = functools.partial(_read_at, fd, start)
        pieces = filler.fill_shared(read_at, target[first:], piece, after=after)
        try:
            for filled in pieces:
                yield first + filled
        finally:
            pieces.close()  # (the thread lets go of the target)
            self._raw.seek(start + filled)

    def fills_at(self) -> bool:
        """Whether :meth:`fill` with ``ahead`` reads at positions, by two threads, and passes every
        piece it fills whole to ``after``."""
        return self._fd is not None and self._may_read_ahead

    def reads_at(self) -> bool:
        """Whether :meth:`fill_at` may read now: a plain file opened here, nothing read ahead."""
        return (
            self._fd is not None
            and self._may_read_ahead
            and self._ahead is not None
            and not self._ahead.held()
        )

    def fill_at(
        self, pieces: Sequence[Piece], *, after: AfterPiece | None = None
    ) -> Generator[int, None, None]:
        """Fill ``pieces`` (views, each with the stream offset of its first byte) from the file, by
        a thread and this one (:meth:`Filler.fill_pieces`), when :meth:`reads_at`; the stream does
        not move (see :meth:`skip`)."""
        assert self._fd is not None
        return self._the_filler().fill_pieces(functools.partial(_read_at, self._fd, 0), pieces, after=after)

    def fd_to_map(self) -> int | None:
        """The file's descriptor, when spans of it may be mapped: a plain file opened here. What was
        read ahead is dropped, the file moved back to its first byte (a span that cannot be mapped
        is read from there); after a span mapped, the caller goes on with :meth:`move_to`."""
        if self._fd is None or not self._may_read_ahead or self._raw is None:
            return None
        if self._ahead is not None:
            held = self._ahead.held()
            self._ahead.stop()
            self._raw.seek(-held, os.SEEK_CUR)
        return self._fd

    def peek(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes from stream offset ``offset`` of a plain file opened here, read where
        they are (the stream does not move); ``b""`` for other streams."""
        return os.pread(self._fd, size, offset) if self._fd is not None else b""

    def move_to(self, offset: int) -> None:
        """Read on from stream offset ``offset`` (past a span mapped, see :meth:`fd_to_map`)."""
        assert self._raw is not None
        self._raw.seek(offset)

    def share(self, pieces: Sequence[Piece], work: AfterPiece) -> Generator[int, None, None]:
        """Call ``work(start, stop)`` for each of ``pieces`` (views of a map, each with its position),
        by the filler's thread and this one (:meth:`Filler.fill_pieces`: nothing is read)."""
        return self._the_filler().fill_pieces(_in_place, pieces, after=work)

    def skip(self, size: int) -> None:
        """Move the stream ``size`` bytes on, past bytes :meth:`fill_at` read."""
        if size and self._raw is not None:
            self._raw.seek(size, os.SEEK_CUR)

    def _damaged(self, exc: zlib.error | EOFError, offset: int, index: int) -> None:
        """Report a damaged compressed stream at the frame at ``offset``; reading ends there."""
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

    def read_exact(self, size: int, at: int, offset: int, index: int) -> bytes:
        """Read ``size`` bytes starting at stream offset ``at`` (fewer at the end of the stream).

        Never asks for more than MAX_READ at once, so a corrupt length cannot
        allocate more memory than the stream really holds.
        """
        if self.end is not None and at + size > self.end:
            return b""  # cannot be satisfied: the caller reports the truncation without reading
        first = self.read(min(size, MAX_READ), offset, index)
        if len(first) == size or not first:
            return first
        pieces = [first]
        have = len(first)
        while have < size:
            piece = self.read(min(size - have, MAX_READ), offset, index)
            if not piece:
                break
            pieces.append(piece)
            have += len(piece)
        return b"".join(pieces)

    def prefetch(self, size: int) -> None:
        """Read the next ``size`` bytes in a background thread, when the stream may be read ahead."""
        if self._may_read_ahead and self._ahead is not None:
            self._ahead.prefetch(size)

    def digest_of(self, block: bytes) -> int | None:
        """The digest of ``block`` if it was read ahead whole (see :class:`ReadAhead`), else ``None``."""
        return self._ahead.digest_of(block) if self._ahead is not None else None

    def close(self) -> None:
        """Close the file if it was opened here (idempotent); stop reading ahead."""
        if self._filler is not None:
            self._filler.close()
            self._filler = None
        if self._ahead is not None:
            self._ahead.stop()
            self._ahead = None
        if self._stream is not None and self._stream is not self._raw:
            self._stream.close()
        if self._raw is not None and self._raw is not self.source:
            self._raw.close()
        self._stream = self._raw = self._fd = None


def _shifted(after: AfterPiece, by: int, start: int, end: int) -> None:
    after(start + by, end + by)


def _in_place(target: memoryview, _at: int) -> int:
    """A piece already in memory (a view of a map): nothing to read."""
    return len(target)


def _read_at(fd: int, start: int, target: memoryview, at: int) -> int:
    """Fill ``target`` from file position ``start + at``; fewer bytes only at the end of the file."""
    done = 0
    while done < len(target):
        got = os.preadv(fd, [target[done:]], start + at + done)
        if not got:
            break
        done += got
    return done


def _seekable(stream: IO[bytes]) -> bool:
    try:
        return bool(stream.seekable())
    except (OSError, AttributeError, ValueError):
        return False
