"""Writing TFRecord frames (record layer).

A frame is ``uint64 LE length``, ``uint32 LE masked crc32c(length bytes)``,
the data, ``uint32 LE masked crc32c(data)``. A writer given a path writes to a
hidden temporary file beside it and renames it into place on a clean close,
so a crash never leaves a file that looks complete. A URL (``memory://``,
``s3://``, ``gs://``..., through the optional fsspec) is written the same way:
a temporary object in the same bucket and directory, moved into place when whole.
A file already at the path is replaced whole, as ``tf.io.TFRecordWriter`` replaces it
(``overwrite=False`` refuses it instead); sets of shards are refused by default one layer up.

Example:
    >>> with RecordWriter("train.tfrecord") as writer:
    ...     writer.write(b"payload")
    >>> write_records("more.tfrecord.gz", [b"a", b"b"], compression="gzip")
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import secrets
import struct
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import IO, Any

import numpy as np

from ..arguments import check_count
from ..errors import InvalidArgumentError, OutputExistsError, RecordTypeError, TfrecError
from . import frame
from .compression import GzipMembersWriter, check_level, open_compressed, resolve_compression
from .crc import crc_function, mask, mask_array
from .files import exists, local_file, move_file, open_new, remove_file
from .framing_batch import Frames, frame_records
from .write_behind import Pages

__all__ = ["RecordWriter", "temporary_path", "write_records"]


_FLUSH_BYTES = 1 << 20  # frames are copied into a page of ~1 MiB, written when full
_OWN_JOB = 1 << 16  # records (or frames made together) this long are written from where they are,
# not copied into the page
_BATCH = 4096  # most records framed together by write_many
_FIRST_BATCH = 64  # the first batch, before the record size is known
_DIRECT_PART = 4096  # parts this large on average are written one by one, not copied first
_FRAMED_BELOW = 1024  # records shorter on average are framed together (measured: ~10% faster for
# 40-byte records, ~7% slower for 4 KiB ones, whose headers cost little beside their bytes)
# Streams that copy what they are given (or write it at once): a page can be lent to them as a
# view and written again afterwards. Anything else may keep what it is given: it gets bytes.
_LENT_TO = (io.BufferedWriter, io.BufferedRandom, io.FileIO)

_header, _pack_crc, _FRAMING = frame.header, frame.pack_crc, frame.HEADER + frame.FOOTER

Bytes = bytes | bytearray | memoryview
BytesLike = Bytes | np.ndarray  # what a record may be given as: an array of dtype uint8, C-contiguous


def _as_record(record: object, where: str) -> bytes:
    """A bytes-like record as bytes; anything else is refused (an int must never become a length)."""
    if isinstance(record, (bytes, bytearray)):
        return bytes(record)
    if isinstance(record, memoryview):
        return record.tobytes()
    if isinstance(record, np.ndarray) and record.dtype == np.uint8 and record.flags.c_contiguous:
        return record.tobytes()
    given = f"an array of dtype {record.dtype}" if isinstance(record, np.ndarray) else type(record).__name__
    raise RecordTypeError(
        f"{where}: a record must be bytes-like (bytes, bytearray, memoryview or a C-contiguous uint8 "
        f"array), got {given}: {_short_repr(record)}"
    )


def temporary_path(path: str | os.PathLike[str]) -> str:
    """A fresh hidden name beside ``path`` to write it under: ``.NAME.<8 hex digits>.tmp``.

    Every temporary file tfrec writes is named so (record files, pending shards, index and
    JSON files), so one pattern, ``.*.tmp``, finds whatever a killed writer left behind.
    A URL's temporary name is in the same bucket and directory.

    Example:
        >>> temporary_path("out/train.tfrecord")  # doctest: +SKIP
        '/abs/out/.train.tfrecord.5f2a9c01.tmp'
    """
    path = os.fspath(path)
    local = local_file(path)
    if local is None:  # a URL: "/" separates its parts whatever the OS
        directory, _, name = path.rpartition("/")
        return f"{directory}/.{name}.{secrets.token_hex(4)}.tmp"
    directory, name = os.path.split(os.path.abspath(local))
    return os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class RecordWriter:
    """Write records as TFRecord frames to a path or a binary file object.

    Args:
        destination: a path, a URL (``file://``, or ``memory://``, ``s3://``,
            ``gs://``... through fsspec: ``pip install 'tfrec[fsspec]'``), or a
            binary file object opened for writing (it is not closed by the writer).
        compression: ``"auto"`` (the default: from the suffix, ``.gz`` -> gzip,
            ``.zz``/``.zlib`` -> zlib, anything else or a file object -> none),
            ``None``, ``"gzip"`` or ``"zlib"``.
        compression_level: zlib level 0-9; ``None`` for zlib's default (as TF).
        gzip_member_bytes: gzip only: end a gzip member after this many
            uncompressed bytes of frames, on a record boundary (``None``: one
            member, the bytes ``tf.io.TFRecordWriter`` writes). The members
            are one gzip stream to every reader, and :attr:`gzip_members` says
            where each starts, so that an index can locate records
            (indexed shards use 1 MiB).
        overwrite: replace a file (or anything) already at ``destination``
            whole at :meth:`close`, as TensorFlow's writer does (one file
            cannot be left half old, half new); ``False``: that is an
            :class:`~tfrec.OutputExistsError`, raised before anything is
            written (and checked again at :meth:`close`).

    A path is written through a temporary file in the same directory
    (``.NAME.<8 hex digits>.tmp``), renamed over ``destination`` by :meth:`close`:
    a replaced file stays whole until the new one is.
    Frames are copied into a page of about 1 MiB as records are written (a record of 64 KiB or
    more is written from where it is), so the caller's record can be freed at once. For a path or
    a plain file object (``open(..., "wb")``) pages filled by :meth:`write_many` are written by a
    background thread while the caller fills the next page (pages filled by :meth:`write`, one
    record at a time, are written in the caller's thread: a hand-over per page cost more there than
    the overlap gave); the thread stops at :meth:`close` (or when the writer is
    garbage-collected), and a page it is writing is finished before a fork and at exit. An error
    of the thread's write (a full disk...) is raised by the next call that hands over a page
    (a write that fills one), or by :meth:`flush` or :meth:`close` at the latest. Other file
    objects are written in the caller's thread and given bytes, never a buffer reused later.
    When the ``with`` block raises, what was written is kept as
    ``destination + ".partial"`` and the exception gets a note saying so. When a
    write, flush or close fails (a full disk...), the writer never publishes:
    the temporary file is removed and every later call raises
    :class:`~tfrec.TfrecError`.

    Example:
        >>> with tfrec.RecordWriter("x.tfrecord.gz", compression="gzip") as w:
        ...     w.write(b"payload")
    """

    def __init__(
        self,
        destination: str | os.PathLike[str] | IO[bytes],
        compression: str | None = "auto",
        *,
        compression_level: int | None = None,
        gzip_member_bytes: int | None = None,
        overwrite: bool = True,
    ) -> None:
        self._path: str | None = None
        self._temp_path: str | None = None
        self._closed = False
        self._raw: IO[bytes]
        is_path = isinstance(destination, (str, os.PathLike))
        # Validate before any file is created.
        codec = resolve_compression(compression, destination if is_path else None)  # type: ignore[arg-type]
        check_level(compression_level)
        if gzip_member_bytes is not None:
            check_count("gzip_member_bytes", gzip_member_bytes)
            if codec != "gzip":
                raise InvalidArgumentError(
                    f"RecordWriter: gzip_member_bytes needs gzip compression, not {codec or 'none'}"
                )
        self._crc = crc_function()
        self._overwrite = overwrite
        if isinstance(destination, (str, os.PathLike)):
            self._path = os.fspath(destination)
            self._check_free()
            self._temp_path = temporary_path(self._path)
            self._raw = open_new(self._temp_path)
        else:
            self._raw = destination
        self._stream = open_compressed(self._raw, codec, compression_level, gzip_member_bytes)
        self._members = self._stream if isinstance(self._stream, GzipMembersWriter) else None
        # Frames are copied into a page, handed over when ~1 MiB is there: the caller's records are
        # freed at once and no list of them grows. A file the writer opened, or a plain file, is
        # written behind, by a thread, while the caller fills a second page.
        owned = self._temp_path is not None or type(self._raw) in _LENT_TO
        lend = owned or self._stream is not self._raw  # a page is lent as a view, not copied
        self._pages = Pages(self._stream, self._members, behind=owned, lend=lend, page_bytes=_FLUSH_BYTES)
        self._closed = False
        self._failed: BaseException | None = None  # the error a write, flush or close raised

    def _check_free(self) -> None:
        """Refuse to replace what is at the path, unless ``overwrite=True``."""
        if self._path is not None and not self._overwrite and exists(self._path):
            raise OutputExistsError(
                f"{self._path}: the file exists; pass overwrite=True to replace it",
                paths=[self._path],
                option="overwrite=True",
            )

    @property
    def path(self) -> str | None:
        """The final path of the file, or ``None`` when writing to a file object."""
        return self._path

    @property
    def gzip_members(self) -> list[tuple[int, int]] | None:
        """``(compressed offset, first record)`` of each gzip member so far, with ``gzip_member_bytes``;
        else ``None``. Complete after :meth:`close`.

        Example:
            >>> with tfrec.RecordWriter("x.tfrecord.gz", gzip_member_bytes=1 << 20) as w:
            ...     w.write_many(records)
            >>> w.gzip_members
            [(0, 0), (301544, 2730), ...]
        """
        return list(self._members.members) if self._members is not None else None

    def _check_open(self) -> None:
        if self._failed is not None:
            raise self._failure()
        if self._closed:
            raise InvalidArgumentError(f"{self._path or '<stream>'}: write to a closed RecordWriter")

    def write(self, record: BytesLike) -> None:
        """Append one record.

        Raises:
            RecordTypeError: ``record`` is not bytes-like (bytes, bytearray, memoryview or a
                C-contiguous uint8 array); nothing is written.

        Example:
            >>> writer.write(b"\\x00\\x01")
        """
        if self._closed:  # also after a failed write
            self._check_open()  # raises, saying which
        if type(record) is not bytes:
            record = _as_record(record, "RecordWriter.write")
        size = len(record)
        pages = self._pages
        if size >= _OWN_JOB:
            frame = [_header(size), record, _pack_crc(mask(self._crc(record)))]
            self._guarded(pages.write_parts, frame, True)  # in the caller's thread, as pages below
            return
        # Per record: a cached header, one CRC, three copies into the page.
        put = pages.put
        put(_header(size))
        put(record)
        put(_pack_crc(mask(self._crc(record))))
        if pages.lengths is not None:
            pages.lengths.append(size)
        pages.at += size + _FRAMING
        if pages.at >= _FLUSH_BYTES:
            self._guarded(pages.drain, True)  # one record at a time: written in the caller's thread

    def write_many(self, records: Iterable[BytesLike]) -> int:
        """Append many records; faster than calling :meth:`write` in a loop.

        Returns:
            The number of records written.
        """
        self._check_open()
        count = 0
        batch_size = _FIRST_BATCH
        iterator = iter(records)
        while given := list(itertools.islice(iterator, batch_size)):
            batch: list[bytes] = given  # type: ignore[assignment]  # checked on the next line
            if set(map(type, given)) != {bytes}:  # bytearray, memoryview...: copied once into bytes
                batch = [
                    _as_record(record, f"RecordWriter.write_many, record {count + i}")
                    for i, record in enumerate(given)
                ]
            size = len(batch)
            lengths = list(map(len, batch))
            batch_bytes = sum(lengths) + _FRAMING * size
            if self._members is None and batch_bytes < _FRAMED_BELOW * size:
                # Small records: the batch's frames in one buffer, headers and footers made in numpy
                # (a writer of gzip members ends them between frames: it takes them one by one).
                self._write_block(frame_records(batch, np.array(lengths, np.int64)).data, lengths)
            else:  # header, data, footer of every record, copied by C loops only
                crcs = mask_array(np.fromiter(map(self._crc, batch), np.uint32, size))
                footers = struct.Struct("4s" * size).unpack(crcs.astype("<u4").tobytes())
                parts = itertools.chain.from_iterable(zip(map(_header, lengths), batch, footers, strict=True))
                if batch_bytes >= 3 * _DIRECT_PART * size:  # large records: written from where they are
                    self._guarded(self._pages.write_parts, list(parts))
                else:
                    self._pages.page.writelines(parts)
                    self._guarded(self._pages.added, batch_bytes, lengths)
            count += size
            # Size batches to about _FLUSH_BYTES, so memory stays bounded whatever the record size.
            batch_size = max(1, min(_BATCH, _FLUSH_BYTES * size // batch_bytes))
        return count

    def write_frames(self, frames: Frames) -> int:
        """Append records framed together (:mod:`~tfrec.record.framing_batch`).

        Returns:
            The number of records written.
        """
        self._check_open()
        self._write_block(frames.data, frames.lengths.tolist() if self._members is not None else [])
        return len(frames)

    def _write_block(self, block: bytes | bytearray, lengths: list[int]) -> None:
        """Append frames made together (``block`` is never changed afterwards)."""
        if len(block) >= _OWN_JOB:  # written from where it is, after the page
            self._guarded(self._pages.write_block, block, lengths)
        else:
            self._pages.put(block)
            self._guarded(self._pages.added, len(block), lengths)

    def _guarded(self, step: Callable[..., None], *args: Any) -> None:
        """``step(*args)``, a step of writing: when it fails, the writer fails."""
        try:
            step(*args)
        except BaseException as exc:
            self._fail(exc)
            raise

    def _fail(self, exc: BaseException) -> None:
        """Give up after a failed write: what reached the file may end inside a frame.

        The writer refuses any further call, never publishes, and removes its
        temporary file (a retried write would duplicate or tear records).
        """
        if self._failed is not None:
            return
        self._failed = exc
        self._closed = True
        with contextlib.suppress(Exception):  # its error, if any, is this one
            self._pages.close()
        if self._temp_path is not None:
            with contextlib.suppress(Exception):
                self._raw.close()  # may fail again flushing its buffer: nothing more to save
            with contextlib.suppress(OSError):
                remove_file(self._temp_path)

    def _failure(self) -> TfrecError:
        where = self._path or "<stream>"
        kept = f"; {self._path} was not written" if self._path is not None else ""
        error = TfrecError(
            f"{where}: an earlier write failed ({type(self._failed).__name__}: {self._failed}), "
            f"so the records cannot be completed{kept}"
        )
        error.__cause__ = self._failed
        return error

    def flush(self) -> None:
        """Push every record written so far to the file (idempotent)."""
        if self._failed is not None:
            raise self._failure()
        if self._closed:
            return
        self._guarded(self._pages.drain)
        self._guarded(self._pages.settle)
        try:
            self._stream.flush()
        except BaseException as exc:
            self._fail(exc)
            raise

    def close(self) -> None:
        """Finish the stream and, for a path, rename the file into place (idempotent).

        If finishing fails (a full disk...), nothing is published and the
        temporary file is removed; calling :meth:`close` again raises again.
        """
        if self._failed is not None:
            raise self._failure()
        if self._closed:
            return
        self._guarded(self._pages.drain)
        self._guarded(self._pages.settle)
        try:
            self._finish_streams()
            if self._temp_path is not None and self._path is not None:
                self._check_free()  # a file made meanwhile is not replaced either
                move_file(self._temp_path, self._path)
        except BaseException as exc:
            self._fail(exc)
            raise

    def _finish_streams(self) -> None:
        self._closed = True
        self._pages.close()  # (settled: nothing more to raise)
        if self._stream is not self._raw:
            self._stream.close()  # ends the gzip/zlib stream; never closes raw
        if self._temp_path is not None:
            self._raw.close()
        else:
            self._raw.flush()

    def abort(self) -> str | None:
        """Stop writing without publishing the file as complete.

        Returns:
            The path of the ``.partial`` file that keeps the records written so
            far, or ``None`` when writing to a file object.
        """
        if self._closed:
            return None
        self._guarded(self._pages.drain)
        self._guarded(self._pages.settle)
        try:
            self._finish_streams()
            if self._temp_path is None or self._path is None:
                return None
            partial = self._path + ".partial"
            move_file(self._temp_path, partial)
        except BaseException as exc:
            self._fail(exc)
            raise
        return partial

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        try:
            partial = self.abort()
        except Exception:  # the writer failed too (a full disk...): the block's own error goes on
            partial = None
        if self._path is not None and hasattr(exc, "add_note"):  # add_note: Python >= 3.11
            kept = f"records written so far are in {partial}" if partial else "nothing was kept"
            exc.add_note(f"tfrec: {self._path} was not completed; {kept}")

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RecordWriter {self._path or '<stream>'} {state}>"


def write_records(
    destination: str | os.PathLike[str] | IO[bytes],
    records: Iterable[BytesLike],
    compression: str | None = "auto",
    *,
    compression_level: int | None = None,
    gzip_member_bytes: int | None = None,
    overwrite: bool = True,
) -> int:
    """Write every record of ``records`` to ``destination`` as TFRecord frames.

    Args:
        destination: a path or a binary file object (left open).
        records: bytes-like objects.
        compression: ``"auto"`` (from the suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        compression_level: zlib level 0-9; ``None`` for zlib's default.
        gzip_member_bytes: gzip only: a series of members of about this many
            uncompressed bytes each (see :class:`RecordWriter`).
        overwrite: replace a file already at ``destination`` (``False``: :class:`~tfrec.OutputExistsError`).

    Returns:
        The number of records written.

    Example:
        >>> tfrec.write_records("x.tfrecord", [b"a", b"bc"])
        2
    """
    with RecordWriter(
        destination,
        compression,
        compression_level=compression_level,
        gzip_member_bytes=gzip_member_bytes,
        overwrite=overwrite,
    ) as writer:
        return writer.write_many(records)
