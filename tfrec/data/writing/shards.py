"""Writing a dataset as numbered shards: ``{prefix}-00000-of-00004.tfrecord`` ... (data layer).

:class:`ShardedWriter` spreads records over a fixed number of shards, or rolls
over to a new shard at a record or byte limit. Every shard is written under a
hidden temporary name (``.NAME.<hex>.tmp``, like every temporary file of tfrec)
and all of them get their final names together at :meth:`ShardedWriter.close`
(:func:`~tfrec.data.writing.publish.publish_shards`: the new shards in index
order, then what is left of an earlier set), so a dataset is whole under its
final names or visibly incomplete: a failure (an exception in the ``with``
block) removes what was written. An earlier set of the prefix (any shard
count) is an :class:`~tfrec.OutputExistsError` unless ``overwrite=True``. The
prefix may be a URL (``memory://``, ``s3://``, ``gs://``... through fsspec):
each shard is a temporary object in the same bucket until the set is published.

Example:
    >>> with tfrec.ShardedWriter("out/train", num_shards=4, features=features) as writer:
    ...     for sample in samples:
    ...         writer.write(sample)
    >>> writer.summary.paths[0]
    'out/train-00000-of-00004.tfrecord'
"""

from __future__ import annotations

import array
import contextlib
import errno
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any

import numpy as np

from ...errors import EncodeError, InvalidArgumentError, TfrecError
from ...features import FeaturesDict
from ...record import RecordWriter, resolve_compression
from ...record.compression import GZIP_MEMBER_BYTES
from ...record.files import local_file, open_new, remove_file
from ...record.frame import FRAMING
from ...record.framing_batch import Frames
from ...record.writer import temporary_path
from ..index.format import INDEX_SUFFIX, write_index
from ..index.members import GzipIndex, write_gzip_index
from .chunks import record_chunks, sample_batches
from .destination import file_size, make_directory, parent_directory
from .names import shard_name, shard_suffix, shard_x_of_y
from .publish import check_free, publish_shards

__all__ = [
    "ShardInfo",
    "ShardedWriter",
    "WriteSummary",
    "shard_name",
    "shard_x_of_y",
]


@dataclass(frozen=True)
class ShardInfo:
    """One written shard.

    Attributes:
        path: its final path.
        records: the number of records in it.
        bytes: its size on disk (compressed size for a compressed shard).
        data_bytes: the sum of its records' lengths, without framing (tfds' ``numBytes``).
        index_path: its index file, when one was written.
    """

    path: str
    records: int
    bytes: int
    data_bytes: int
    index_path: str | None = None


@dataclass(frozen=True)
class WriteSummary:
    """What a :class:`ShardedWriter` wrote: one :class:`ShardInfo` per shard, in shard order.

    Example:
        >>> summary = writer.close()
        >>> summary.records, summary.shard_lengths
        (1000, [250, 250, 250, 250])
    """

    shards: tuple[ShardInfo, ...]

    @property
    def paths(self) -> list[str]:
        """The shards' paths, in order."""
        return [shard.path for shard in self.shards]

    @property
    def shard_lengths(self) -> list[int]:
        """The number of records in each shard."""
        return [shard.records for shard in self.shards]

    @property
    def records(self) -> int:
        """All records written."""
        return sum(shard.records for shard in self.shards)

    @property
    def bytes(self) -> int:
        """All bytes on disk (index files not counted)."""
        return sum(shard.bytes for shard in self.shards)

    @property
    def data_bytes(self) -> int:
        """The lengths of all records, without framing."""
        return sum(shard.data_bytes for shard in self.shards)


@dataclass
class _Shard:
    """A shard being written: its file under a temporary name, the writer on it, and what went in.

    The writer writes to the open ``file`` (a stream, so it makes no temporary file of its own):
    the shard has one temporary file, and its index one more, both named ``.NAME.<hex>.tmp``.
    """

    number: int
    pending: str
    file: IO[bytes]
    writer: RecordWriter
    pending_index: str | None = None
    records: int = 0
    data_bytes: int = 0
    frame_bytes: int = 0  # the uncompressed stream's size = the offset of the next record
    finished: bool = False
    lengths: array.array[int] = field(
        default_factory=lambda: array.array("q")
    )  # frame lengths, for the index


class ShardedWriter:
    """Write records (or samples, with ``features``) over numbered shards.

    Args:
        path_prefix: shards are named ``{path_prefix}-{i:05d}-of-{n:05d}{suffix}``;
            missing parent directories are created. A path, or a URL (``file://``,
            or ``memory://``, ``s3://``, ``gs://``... through fsspec:
            ``pip install 'tfrec[fsspec]'``).
        num_shards: write exactly this many shards, all open at once (more than
            the process may open is an InvalidArgumentError); records
            go round-robin (record ``k`` to shard ``k % num_shards``), so shards
            differ by at most one record and the split does not depend on the
            records' content.
        max_records: start a new shard after this many records.
        max_bytes: start a new shard before a record would take the shard past
            this many bytes of frames (uncompressed; a larger record gets a
            shard of its own). With ``max_records`` or ``max_bytes`` the number
            of shards is known only at close, when the shards are renamed.
        compression: ``None``, ``"gzip"`` or ``"zlib"``; its extension
            (``.gz``, ``.zz``) is appended to ``suffix`` unless already there.
        compression_level: zlib level 0-9, ``None`` for zlib's default.
        features: a FeaturesDict: :meth:`write` takes samples and serializes
            them with it. Without it, :meth:`write` takes bytes.
        index: also write ``{shard}.idx`` per shard, from the offsets known
            while writing: DALI's ``tfrecord2idx`` format for uncompressed
            shards; for gzip, shards of gzip members that end on record
            boundaries and a gzip index locating each record's member
            (:mod:`tfrec.data.index.members`), so they are read at random and
            split by records, and are still one gzip stream for TensorFlow.
            zlib shards cannot be indexed.
        gzip_member_bytes: gzip: uncompressed bytes of records per gzip member
            (default with ``index=True``: 1 MiB; without an index, one member).
        suffix: the shards' file suffix.
        overwrite: replace an earlier set of the prefix. Without it, any shard
            ``{path_prefix}-I-of-N`` already there (any ``N``, any compression,
            or its index file) or a temporary file of the prefix
            (``.NAME-*.tmp``: a writer at work, or a killed one's) is an
            :class:`~tfrec.OutputExistsError`, raised before anything is written.
            With it, the earlier set stays until the new one is whole, then is
            removed (see :mod:`~tfrec.data.writing.publish`).

    Give exactly one of ``num_shards``, ``max_records``, ``max_bytes``. Use it as
    a context manager, or call :meth:`close` (which returns the
    :class:`WriteSummary`) or :meth:`abort`. Not thread-safe.

    Example:
        >>> with tfrec.ShardedWriter("out/train", max_records=10_000, index=True) as writer:
        ...     writer.write_many(records)
        >>> writer.summary.paths
        ['out/train-00000-of-00003.tfrecord', ...]
    """

    def __init__(
        self,
        path_prefix: str | os.PathLike[str],
        *,
        num_shards: int | None = None,
        max_records: int | None = None,
        max_bytes: int | None = None,
        compression: str | None = None,
        compression_level: int | None = None,
        features: FeaturesDict | None = None,
        index: bool = False,
        suffix: str = ".tfrecord",
        gzip_member_bytes: int | None = None,
        overwrite: bool = False,
    ) -> None:
        limits = {"num_shards": num_shards, "max_records": max_records, "max_bytes": max_bytes}
        given = {name: value for name, value in limits.items() if value is not None}
        if len(given) != 1:
            raise InvalidArgumentError(
                "ShardedWriter: give exactly one of num_shards, max_records, max_bytes; "
                f"found {', '.join(f'{k}={v!r}' for k, v in given.items()) or 'none'}"
            )
        ((limit_name, limit),) = given.items()
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidArgumentError(f"ShardedWriter: {limit_name} must be an int >= 1, not {limit!r}")
        if features is not None and not isinstance(features, FeaturesDict):
            raise InvalidArgumentError(
                f"ShardedWriter: features must be a FeaturesDict, not {type(features).__name__}"
            )
        self._codec = resolve_compression(compression, None)
        self._suffix = _full_suffix(suffix, self._codec)
        if index and self._codec == "zlib":
            raise InvalidArgumentError(
                "ShardedWriter: index=True needs uncompressed shards (or gzip ones, written as a series of "
                "members): an index holds byte offsets, and no record of a zlib stream can be reached by "
                "its offset"
            )
        if gzip_member_bytes is None and index and self._codec == "gzip":
            gzip_member_bytes = GZIP_MEMBER_BYTES
        self._member_bytes = gzip_member_bytes
        self._prefix = os.fspath(path_prefix)
        if index and local_file(self._prefix) is None:
            raise InvalidArgumentError(
                f"ShardedWriter: {self._prefix}: index=True writes index files beside local shards only; "
                "write the shards, then build their indexes where they are read (tfrec.build_index)"
            )
        self._overwrite = overwrite
        self._num_shards = num_shards
        self._max_records = max_records
        self._max_bytes = max_bytes
        self._level = compression_level
        self._features = features
        self._index = index
        self._shards: list[_Shard] = []
        self._written = 0
        self._summary: WriteSummary | None = None
        self._closed = False
        make_directory(parent_directory(self._prefix), "ShardedWriter")
        check_free(self._prefix, self._suffix, overwrite)
        if num_shards is not None:
            try:
                for _ in range(num_shards):
                    self._new_shard()
            except OSError as exc:
                self._abort_noting(exc)
                if exc.errno not in (errno.EMFILE, errno.ENFILE):
                    raise
                raise InvalidArgumentError(
                    f"ShardedWriter: {self._prefix}: num_shards={num_shards} keeps {num_shards} files open "
                    f"at once, and this process could open only {len(self._shards)} more ({exc.strerror}); "
                    "use fewer shards, raise the limit on open files (ulimit -n), or give max_records= or "
                    "max_bytes=, which keep one shard open at a time"
                ) from exc
            except BaseException as exc:
                self._abort_noting(exc)
                raise

    # -- writing --------------------------------------------------------------------------------------

    def write(self, item: Any) -> None:
        """Write one record: bytes, or a sample when the writer has ``features``.

        Example:
            >>> writer.write({"label": 1, "text": "hi"})
        """
        record = self._serialize(item)
        self._check_open()
        length = len(record)
        if self._num_shards is not None:
            shard = self._shards[self._written % self._num_shards]
        else:
            shard = self._current_for(length)
        shard.writer.write(record)
        shard.records += 1
        shard.data_bytes += length
        shard.frame_bytes += length + FRAMING
        if self._index:
            shard.lengths.append(length + FRAMING)
        self._written += 1

    def write_many(self, items: Iterable[Any]) -> int:
        """Write every record (or sample) of ``items``; faster than :meth:`write` in a loop. Records
        framed together (:class:`~tfrec.record.framing_batch.Frames`: a table's batch) are written as
        they are.

        Returns:
            The number written.
        """
        if isinstance(items, Frames) and self._features is None:  # framed together already (a table's)
            self._write_records(items)
            return len(items)
        count = 0
        chunks = (  # samples are serialized together, in batches that are chunks already
            record_chunks(map(self._serialize, items))
            if self._features is None
            else sample_batches(items, self._features.serialize_frames)
        )
        for chunk in chunks:
            self._write_records(chunk)
            count += len(chunk)
        return count

    def _serialize(self, item: Any) -> bytes:
        if self._features is not None:
            return self._features.serialize_example(item)
        if isinstance(item, (bytes, bytearray, memoryview)):
            return bytes(item)
        raise EncodeError(
            f"ShardedWriter without features writes bytes, not {type(item).__name__}: "
            "pass features= (a FeaturesDict) to write samples"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidArgumentError(f"{self._prefix}: write to a closed ShardedWriter")

    def _write_records(self, records: Sequence[bytes]) -> None:
        self._check_open()
        if self._num_shards is not None:
            # Round-robin: record k of the whole stream goes to shard k % n.
            n = self._num_shards
            first = self._written % n
            for j in range(min(n, len(records))):
                self._append(self._shards[(first + j) % n], records[j::n])
        else:
            start = 0
            while start < len(records):
                shard = self._current_for(len(records[start]))
                stop = self._room(shard, records, start)
                self._append(shard, records[start:stop])
                start = stop
        self._written += len(records)

    def _current_for(self, length: int) -> _Shard:
        """The shard the next record (of ``length`` bytes) goes to, rolling over when it is full."""
        if self._shards:
            shard = self._shards[-1]
            full = (self._max_records is not None and shard.records >= self._max_records) or (
                self._max_bytes is not None
                and shard.records
                and shard.frame_bytes + length + FRAMING > self._max_bytes
            )
            if not full:
                return shard
            self._finish(shard)
        return self._new_shard()

    def _room(self, shard: _Shard, records: Sequence[bytes], start: int) -> int:
        """How far from ``start`` the records fit in ``shard`` (at least one)."""
        if self._max_records is not None:
            return min(len(records), start + self._max_records - shard.records)
        assert self._max_bytes is not None
        lengths = _lengths(records[start:]) + FRAMING
        room = self._max_bytes - shard.frame_bytes
        fits = int(np.searchsorted(np.cumsum(lengths), room, side="right"))
        return start + max(fits, 1 if not shard.records else 0)

    def _append(self, shard: _Shard, records: Sequence[bytes]) -> None:
        if not records:
            return
        _write(shard.writer, records)
        lengths = _lengths(records)
        shard.records += len(records)
        data_bytes = int(lengths.sum())
        shard.data_bytes += data_bytes
        shard.frame_bytes += data_bytes + FRAMING * len(records)
        if self._index:
            shard.lengths.frombytes((lengths + FRAMING).tobytes())

    def _new_shard(self) -> _Shard:
        number = len(self._shards)
        pending = temporary_path(f"{self._prefix}-{number:05d}")
        file = open_new(pending)  # closed by _finish or abort
        try:
            writer = RecordWriter(
                file, self._codec, compression_level=self._level, gzip_member_bytes=self._member_bytes
            )
        except BaseException:
            file.close()
            remove_file(pending)
            raise
        shard = _Shard(number, pending, file, writer)
        self._shards.append(shard)
        return shard

    def _finish(self, shard: _Shard) -> None:
        """Finish a shard's stream and file (complete under its temporary name) and write its index."""
        shard.finished = True
        shard.writer.close()
        shard.file.close()
        if self._index:
            lengths = np.frombuffer(shard.lengths, np.int64)
            offsets = np.cumsum(lengths) - lengths
            shard.pending_index = temporary_path(f"{self._prefix}-{shard.number:05d}{INDEX_SUFFIX}")
            members = shard.writer.gzip_members
            if members is not None:
                write_gzip_index(shard.pending_index, GzipIndex.from_members(members, lengths))
            else:
                write_index(shard.pending_index, offsets.tolist(), lengths.tolist())
            shard.lengths = array.array("q")

    # -- closing --------------------------------------------------------------------------------------

    def close(self) -> WriteSummary:
        """Finish every shard and give them their final names (idempotent).

        The shards are published whole or visibly incomplete: they are renamed
        in index order, so a process stopped on the way leaves fewer than ``N``
        shards, which readers report; an earlier set of the prefix (whatever its
        shard count; only with ``overwrite=True``) is removed once the new one
        is whole.

        Returns:
            The :class:`WriteSummary`.
        """
        if self._summary is not None:
            return self._summary
        if self._closed:
            raise InvalidArgumentError(f"{self._prefix}: the ShardedWriter was aborted; nothing was written")
        try:
            if not self._shards:
                self._new_shard()  # no records: one empty shard, so the dataset exists
            for shard in self._shards:
                if not shard.finished:
                    self._finish(shard)
            count = len(self._shards)
            finals = [shard_name(self._prefix, number, count, self._suffix) for number in range(count)]
            infos = [
                ShardInfo(
                    final,
                    shard.records,
                    file_size(shard.pending),
                    shard.data_bytes,
                    final + INDEX_SUFFIX if self._index else None,
                )
                for shard, final in zip(self._shards, finals, strict=True)
            ]
            renames = [
                ([(shard.pending_index, final + INDEX_SUFFIX)] if shard.pending_index is not None else [])
                + [(shard.pending, final)]
                for shard, final in zip(self._shards, finals, strict=True)
            ]
            publish_shards(self._prefix, self._suffix, renames, overwrite=self._overwrite)
        except BaseException as exc:
            self._abort_noting(exc)
            _note(exc, f"tfrec: {self._prefix}: no shard was kept")
            raise
        self._closed = True
        self._shards.clear()
        self._summary = WriteSummary(tuple(infos))
        return self._summary

    def abort(self) -> None:
        """Stop and remove everything written (temporary shards and indexes); idempotent.

        Every temporary file is removed even when closing or removing another
        one fails (a full disk...). A file that cannot be removed raises
        :class:`~tfrec.TfrecError` naming it, once all were tried.
        """
        self._closed = True
        failed = _remove_temporary_files(self._shards)
        self._shards.clear()
        if failed:
            error = TfrecError(
                f"{self._prefix}: the ShardedWriter could not remove {len(failed)} temporary files: "
                + ", ".join(f"{path} ({exc.strerror})" for path, exc in failed)
            )
            raise error from failed[0][1]

    def _abort_noting(self, exc: BaseException) -> None:
        """Abort while ``exc`` goes on: a failed clean-up becomes a note on it, not a new error."""
        try:
            self.abort()
        except TfrecError as failure:
            _note(exc, f"tfrec: {failure}")

    @property
    def summary(self) -> WriteSummary:
        """The :class:`WriteSummary`, once closed."""
        if self._summary is None:
            raise InvalidArgumentError(f"{self._prefix}: the summary exists once the ShardedWriter is closed")
        return self._summary

    @property
    def records_written(self) -> int:
        """Records written so far."""
        return self._written

    def __enter__(self) -> ShardedWriter:
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
        self._abort_noting(exc)
        _note(exc, f"tfrec: {self._prefix}: the ShardedWriter was aborted; no shard was kept")

    def __repr__(self) -> str:
        mode = next(
            f"{name}={value}"
            for name, value in (
                ("num_shards", self._num_shards),
                ("max_records", self._max_records),
                ("max_bytes", self._max_bytes),
            )
            if value is not None
        )
        state = "closed" if self._closed else "open"
        return f"ShardedWriter({self._prefix!r}, {mode}, {self._written} records, {state})"


def _write(writer: RecordWriter, records: Sequence[bytes]) -> None:
    if isinstance(records, Frames):  # framed together by the features' batch encoder
        writer.write_frames(records)
    else:
        writer.write_many(records)


def _lengths(records: Sequence[bytes]) -> np.ndarray:
    return records.lengths if isinstance(records, Frames) else np.fromiter(map(len, records), np.int64)


def _remove_temporary_files(shards: list[_Shard]) -> list[tuple[str, OSError]]:
    """Close and remove every shard's temporary files, going on past failures; the files not removed."""
    failed = []
    for shard in shards:
        # The records are thrown away: nothing is flushed, so a full disk cannot stop the clean-up.
        with contextlib.suppress(Exception):
            shard.file.close()
        for path in filter(None, (shard.pending, shard.pending_index)):
            try:
                remove_file(path)
            except OSError as exc:
                failed.append((path, exc))
    return failed


def _full_suffix(suffix: str, codec: str | None) -> str:
    """``suffix`` with the compression's extension, refusing one that names another compression."""
    implied = resolve_compression("auto", "x" + suffix)
    if implied is not None and implied != codec:
        raise InvalidArgumentError(
            f"ShardedWriter: suffix {suffix!r} names {implied} compression but compression={codec!r}; "
            f"pass compression={implied!r}, or a suffix without the extension"
        )
    return suffix if implied == codec else shard_suffix(codec, suffix)


def _note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(note)
