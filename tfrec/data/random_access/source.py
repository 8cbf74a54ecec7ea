"""Random access to the records of TFRecord files: uncompressed, or gzip in members (data layer).

:class:`RecordFileSource` maps record numbers to records across one or many
shards, with an index per shard (read from ``{shard}.idx`` or built in memory
by scanning headers). Gzip files written as a series of members with a gzip
index are read by :mod:`.gzip_members`. It follows grain's
``RandomAccessDataSource`` protocol and PyTorch's map-style ``Dataset``:
``__len__``, ``__getitem__``, ``__getitems__``.

Example:
    >>> source = tfrec.RecordFileSource("data/train-*.tfrecord", features=features)
    >>> len(source), source[0]["label"], source[-1]["label"]
    >>> batch = source.__getitems__([5, 1, 3])        # decoded together, one sample per index
"""

from __future__ import annotations

import bisect
import functools
import operator
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, SupportsIndex, cast

import numpy as np

from ...errors import InvalidArgumentError, MissingFileError, OutOfRangeError, RecordError
from ...example import (
    FixedLenFeature,
    RaggedArray,
    parse_example,
    parse_single_example,
    single_example_parser,
)
from ...features import FeaturesDict
from ...record import RecordBatch, resolve_compression
from ...record.files import open_regular
from ...record.frame import FOOTER, HEADER
from ...record.mapped import frames_ok, gather_frames, map_file, mapped_size
from ...record.positioned import read_frame, read_frames
from ..index.chain import check_frame_chain
from ..index.format import INDEX_SUFFIX, check_index_span, frames_end, read_index
from ..index.scan import check_uncompressed, scan_index
from ..paths import expand_paths
from ..pipeline.decode import check_features_or_spec
from .gzip_members import GzipShard, MemberCache
from .shuffled_batches import ShuffledBatches

__all__ = ["RecordFileSource"]

PathLike = str | os.PathLike[str]
_BATCH_BYTES = 64 << 20  # __getitems__ verifies up to this many bytes of frames together


class RecordFileSource:
    """Random access to the records of one or many uncompressed (or indexed gzip) TFRecord files.

    Args:
        paths: a path, a glob pattern, or a list of them; records are numbered
            through the files in the order given (globs sorted).
        features: a FeaturesDict: records come back as decoded samples.
        spec: a tf.io-style parse spec ``{key: FixedLenFeature(...), ...}``:
            records come back parsed to ``{key: ndarray}``. Without ``features``
            or ``spec``, records are ``bytes``.
        index_paths: the index file of each path (DALI ``tfrecord2idx`` format);
            by default ``{path}.idx`` when it exists, else the index is built in
            memory by scanning the record headers. A ``.gz`` file must have been
            written as a series of gzip members (``tfrec.ShardedWriter(...,
            compression="gzip", index=True)``); its gzip index is read, or built
            by inflating the file once. A record is read by inflating its member
            (about 1 MiB); the last few inflated members are kept.

    The source is thread-safe (positioned reads, no shared file position),
    deterministic, and picklable: a copy reopens its files on first use. Both
    CRCs of every record are checked on every read; a damaged record raises a
    :class:`~tfrec.RecordError` naming the file, record and byte offset. An
    index file is checked against the file's record headers when the file is
    first opened (:mod:`tfrec.data.index.chain`): one that points inside a
    record's data is refused, naming the index file and line.

    Example:
        >>> source = tfrec.RecordFileSource(["a.tfrecord", "b.tfrecord"])
        >>> source[0], source[-1], len(source)
        >>> torch.utils.data.DataLoader(source, batch_size=32, shuffle=True)
    """

    def __init__(
        self,
        paths: PathLike | Sequence[PathLike],
        *,
        features: FeaturesDict | None = None,
        spec: Mapping[str, Any] | None = None,
        index_paths: Sequence[PathLike] | None = None,
    ) -> None:
        check_features_or_spec(features, spec, "RecordFileSource")
        if features is not None and not isinstance(features, FeaturesDict):
            raise InvalidArgumentError(
                f"RecordFileSource: features must be a FeaturesDict, not {type(features).__name__}"
            )
        self._paths = expand_paths(paths)
        indexes = [os.fspath(p) for p in index_paths] if index_paths is not None else None
        if indexes is not None and len(indexes) != len(self._paths):
            raise InvalidArgumentError(
                f"RecordFileSource: {len(indexes)} index paths for {len(self._paths)} files; "
                "give one index per file, in the same order"
            )
        self._features = features
        self._spec = dict(spec) if spec is not None else None
        # The index each file's frames came from, or None when they were found by scanning its headers.
        self._index_paths: list[str | None] = [None] * len(self._paths)
        self._gzip: list[GzipShard | None] = [None] * len(self._paths)  # the gzip files' members
        bounds = [self._load_index(i, indexes) for i in range(len(self._paths))]
        # All files' bounds in one array: record g of file f starts at _flat[g + f], ends at _flat[g + f + 1].
        self._flat = np.concatenate(bounds) if bounds else np.zeros(0, np.int64)
        self._counts = [len(b) - 1 for b in bounds]
        self._setup()

    def _load_index(self, shard: int, index_paths: Sequence[str] | None) -> np.ndarray:
        """The offsets of a file's frames followed by the file's size (where a next frame would start)."""
        path = self._paths[shard]
        gzip = resolve_compression("auto", path) == "gzip"
        if not gzip:
            check_uncompressed(path, purpose="RecordFileSource (random access)")
        if not os.path.exists(path):
            raise MissingFileError(f"{path}: no such file")
        index_path = index_paths[shard] if index_paths is not None else path + INDEX_SUFFIX
        if gzip:  # a series of members: its records are read by gzip_members
            given = index_paths is not None or os.path.exists(index_path)
            members = self._gzip[shard] = GzipShard.load(path, index_path if given else None)
            return members.bounds()
        if index_paths is None and not os.path.exists(index_path):
            offsets, lengths = scan_index(path, compression=None)
        else:
            size = os.path.getsize(path)
            offsets, lengths = read_index(index_path, data_size=size)
            start = int(offsets[0]) if len(offsets) else 0
            check_index_span(index_path, path, start, frames_end(offsets, lengths), size)
            gap = np.flatnonzero(offsets[1:] != offsets[:-1] + lengths[:-1])
            if gap.size:
                raise InvalidArgumentError(
                    f"{index_path}, line {int(gap[0]) + 2}: a gap between frames; an index must list "
                    f"every frame of the file; rebuild it with tfrec.build_index({path!r})"
                )
            self._index_paths[shard] = index_path  # its headers are checked when the file is opened
        # Frames are back to back, so offsets alone say where each starts and ends: 8 bytes a record.
        return np.append(offsets, frames_end(offsets, lengths)).astype(np.int64)

    def _setup(self) -> None:
        """Derived tables and per-process state (after __init__ and after unpickling)."""
        self._ends = np.cumsum(self._counts, dtype=np.int64)  # global number just past each file's records
        self._ends_list = self._ends.tolist()
        self._length = int(self._ends[-1]) if self._counts else 0
        self._fds: list[int | None] = [None] * len(self._paths)
        # Bumped by close() after it empties self._fds and before it closes them: a read that saw the
        # same number before and after its pread read no descriptor that close() freed (and that the
        # next open anywhere in the process may have been given, for another file).
        self._generation = 0
        self._open_lock = threading.Lock()
        self._inflated = MemberCache()  # the gzip members inflated last
        self._finalizer = weakref.finalize(self, _close_all, self._fds)
        # Each file's read-only map, made on the first batched read of it (per process: never pickled).
        # None: not mapped yet, or (when _unmappable says so) it cannot be: its batches use pread.
        self._maps: list[np.ndarray | None] = [None] * len(self._paths)
        self._unmappable = [False] * len(self._paths)
        self._batched_spec = self._spec is not None and all(
            isinstance(s, FixedLenFeature) for s in self._spec.values()
        )

    # -- protocol -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, record_key: SupportsIndex) -> Any:
        """The record (bytes, or decoded) with this number; negative numbers count from the end."""
        data = self._read(self._number(record_key))
        decode = self._decode_one
        return data if decode is None else decode(data)

    @functools.cached_property
    def _decode_one(self) -> Callable[[bytes], Any] | None:
        """One record's decoder, chosen and validated once (not per call; not pickled either:
        __getstate__ lists what travels): the features' compiled one, the spec's parser, or None."""
        if self._features is not None:
            return self._features.deserialize_example
        if self._spec is not None:
            return single_example_parser(self._spec)
        return None

    def __getitems__(self, record_keys: Sequence[SupportsIndex]) -> list[Any]:
        """The records with these numbers, in that order; decoded as one batch.

        Each item equals ``self[key]``.
        """
        records, order = self._read_many(self._numbers(record_keys))
        items: list[Any]
        if self._features is not None and len(records):
            items = _rows(self._features.deserialize_batch(records), len(records))
        elif self._spec is not None and self._batched_spec and len(records):
            items = _rows(parse_example(records, self._spec), len(records))
        elif self._spec is not None:
            items = [parse_single_example(data, self._spec) for data in records]
        else:
            items = list(records)
        return items if order is None else _as_asked(items, order)

    # grain's batched-read protocol (SupportsBatchedReadRandomAccessDataSource) names it so.
    _getitems = __getitems__

    def read_batch(self, record_keys: Sequence[SupportsIndex]) -> Any:
        """The records with these numbers as one batch: read together, decoded as one batch.

        A batch as ``TFRecordDataset(...).batch(n)`` gives it: with features, the
        nested dict of batched arrays of ``features.deserialize_batch``; with a
        spec, ``parse_example``'s ``{key: array}``; else a list of bytes. Row
        ``j`` holds the values of ``self[record_keys[j]]``. It is the batch
        function of grain's map datasets, whose ``batch`` step otherwise
        fetches and decodes one record at a time and stacks them.

        Example:
            >>> keys = grain.MapDataset.range(len(source)).shuffle(seed=0)
            >>> dataset = keys.batch(256, batch_fn=source.read_batch)  # batches of decoded records
        """
        records, order = self._read_many(self._numbers(record_keys))
        if order is not None:  # gathered by file and offset: back in the order asked
            records = _as_asked(list(records), order)
        if self._features is not None:
            return self._features.deserialize_batch(records)
        if self._spec is not None:
            return parse_example(records, self._spec)
        return list(records)  # bytes, also when they were gathered into one buffer

    def shuffled_batches(
        self, batch_size: int, *, seed: int, epochs: int = 1, drop_remainder: bool = False
    ) -> ShuffledBatches:
        """Batches of a record-level shuffle of every record, as a random-access source of batches.

        Batch ``i`` of an epoch is the records at positions ``[i * batch_size, (i + 1) *
        batch_size)`` of a keyed permutation of all records (a new one each epoch), read and
        decoded together as :meth:`read_batch` does; the records of a batch come in record
        order. For grain, whose map datasets pay per element: one element per batch.

        Example:
            >>> dataset = grain.MapDataset.source(source.shuffled_batches(256, seed=0, epochs=10))
            >>> torch.utils.data.DataLoader(source.shuffled_batches(256, seed=0), batch_size=None)
        """
        return ShuffledBatches(self, batch_size, seed=seed, epochs=epochs, drop_remainder=drop_remainder)

    def _number(self, record_key: SupportsIndex) -> int:
        try:
            number = operator.index(record_key)
        except TypeError:
            raise InvalidArgumentError(
                f"RecordFileSource: record keys are integers, not {type(record_key).__name__}"
            ) from None
        if number < 0:
            number += self._length
        if not 0 <= number < self._length:
            raise OutOfRangeError(
                f"RecordFileSource: record {operator.index(record_key)} is out of range "
                f"for {self._length} records"
            )
        return number

    def _numbers(self, record_keys: Sequence[SupportsIndex]) -> list[int]:
        try:
            keys = np.fromiter(map(operator.index, record_keys), np.int64, len(record_keys))
        except (TypeError, OverflowError):  # name the first key that is not a record number
            return [self._number(key) for key in record_keys]
        numbers = np.where(keys < 0, keys + self._length, keys)
        if numbers.size and not (numbers.min() >= 0 and numbers.max() < self._length):
            bad = int(np.flatnonzero((numbers < 0) | (numbers >= self._length))[0])
            self._number(record_keys[bad])  # raises the error naming that key
        return numbers.tolist()

    def _read(self, number: int) -> bytes:
        shard = bisect.bisect_right(self._ends_list, number)
        members = self._gzip[shard]
        if members is not None:
            return self._read_gzip(members, shard, number)
        generation = self._generation
        fd = self._fds[shard]
        if fd is None:
            fd = self._open(shard)
        at = number + shard
        offset = self._flat.item(at)
        try:  # _read_from, inlined: this is the hot path of __getitem__
            data = read_frame(
                fd,
                offset,
                self._flat.item(at + 1) - offset,
                path=self._paths[shard],
                index=number - (self._ends_list[shard - 1] if shard else 0),
            )
        except (OSError, RecordError):
            if self._generation == generation:
                raise
            return self._read_again(shard, number)
        if self._generation != generation:  # closed meanwhile: the descriptor may have been another file's
            return self._read_again(shard, number)
        return data

    def _read_from(self, fd: int, shard: int, number: int) -> bytes:
        at = number + shard
        offset = self._flat.item(at)
        index = number - (self._ends_list[shard - 1] if shard else 0)
        return read_frame(fd, offset, self._flat.item(at + 1) - offset, path=self._paths[shard], index=index)

    def _read_again(self, shard: int, number: int) -> bytes:
        """Read a record again after close() interrupted its read: under the lock close() takes, so
        that no close() can interrupt it again (a rare path: only reads that overlapped a close())."""
        with self._open_lock:
            fd = self._fds[shard]
            if fd is None:
                fd = self._open_locked(shard)
            return self._read_from(fd, shard, number)

    def _read_gzip(self, members: GzipShard, shard: int, number: int) -> bytes:
        """A record of a gzip file, as _read reads one of a plain file (again after a close())."""
        local = number - (self._ends_list[shard - 1] if shard else 0)
        generation = self._generation
        fd = self._fds[shard]
        if fd is None:
            fd = self._open(shard)
        try:
            data = members.read(fd, local, self._inflated, (generation, shard))
        except (OSError, RecordError):
            if self._generation == generation:
                raise
            data = None
        if data is None or self._generation != generation:
            with self._open_lock:
                fd = self._fds[shard]
                if fd is None:
                    fd = self._open_locked(shard)
                return members.read(fd, local, self._inflated, (self._generation, shard))
        return data

    def _read_many(self, numbers: list[int]) -> tuple[Sequence[bytes], np.ndarray | None]:
        """The records, gathered from the files' maps into one batch when they can be, else read with
        positioned reads (batched, or one by one to name a damaged record); and their ``order``:
        record ``k`` is the one asked ``order[k]``-th (``None``: in the order asked)."""
        if not numbers:
            return [], None
        if any(self._gzip):  # in record order, so that each member is inflated once per batch
            found: list[bytes] = [b""] * len(numbers)
            for place in sorted(range(len(numbers)), key=numbers.__getitem__):
                found[place] = self._read(numbers[place])
            return found, None
        chosen = np.array(numbers, np.int64)
        shards = np.searchsorted(self._ends, chosen, side="right")
        at = chosen + shards
        offsets = self._flat[at]
        lengths = self._flat[at + 1] - offsets
        if int(lengths.sum()) <= _BATCH_BYTES:
            gathered = self._gather(shards, offsets, lengths)
            if gathered is not None:
                return gathered
            generation = self._generation
            if len(self._fds) == 1:
                fds = np.full(len(numbers), self._fds[0] if self._fds[0] is not None else self._open(0))
            else:
                for shard in np.unique(shards).tolist():
                    if self._fds[shard] is None:
                        self._open(shard)
                fds = np.array([-1 if fd is None else fd for fd in self._fds])[shards]
            try:
                records = read_frames(fds, offsets, lengths)
            except OSError:
                if self._generation == generation:
                    raise
                records = None
            if records is not None and self._generation == generation:
                return records, None
        # Large records, damage, or a close() meanwhile: one by one (read_frame raises the error naming
        # the record; _read reads again what a close() interrupted).
        return [self._read(number) for number in numbers], None

    def _gather(
        self, shards: np.ndarray, offsets: np.ndarray, lengths: np.ndarray
    ) -> tuple[RecordBatch, np.ndarray | None] | None:
        """The frames gathered from the files' maps (sorted by file and offset; with their order, as
        _read_many returns them) and checked together; None when a file cannot be mapped, no longer
        has the size its index gives (a map read past the end of its file would be a SIGBUS), or a
        frame fails a check (then the caller's reads name it)."""
        used = np.unique(shards).tolist() if len(self._maps) > 1 else [0]
        views = list(self._maps)  # held here, the maps stay alive whatever close() does meanwhile
        for shard in used:
            view = views[shard]
            if view is None:
                if self._unmappable[shard]:
                    return None
                view = views[shard] = self._map(shard)
                if view is None:
                    return None
            if mapped_size(view) != len(view):
                return None
        gathered = gather_frames(cast("list[np.ndarray]", views), shards, offsets, lengths)  # all used mapped
        if gathered is None:
            return None
        buf, ends, order = gathered
        frame_lengths = lengths if order is None else lengths[order]
        if not frames_ok(buf, ends, frame_lengths):
            return None
        return RecordBatch(buf, ends - frame_lengths + HEADER, ends - FOOTER), order

    def _map(self, shard: int) -> np.ndarray | None:
        """Map a file (opening it, and checking it is the one indexed, first)."""
        with self._open_lock:
            view = self._maps[shard]
            if view is None and not self._unmappable[shard]:
                fd = self._fds[shard]
                if fd is None:
                    fd = self._open_locked(shard)
                # The size checked at opening: a file shorter now cannot be mapped to it.
                view = self._maps[shard] = map_file(fd, self._flat.item(self._ends_list[shard] + shard))
                self._unmappable[shard] = view is None
            return view

    def _open(self, shard: int) -> int:
        with self._open_lock:
            fd = self._fds[shard]
            return fd if fd is not None else self._open_locked(shard)

    def _open_locked(self, shard: int) -> int:
        """Open a file and check it is the one indexed (``_open_lock`` held)."""
        path = self._paths[shard]
        try:
            fd = open_regular(path, purpose="RecordFileSource (random access)")
        except MissingFileError:
            raise MissingFileError(f"{path}: no such file (it was there when the index was made)") from None
        try:
            self._check_file(shard, fd)
        except BaseException:
            os.close(fd)
            raise
        self._fds[shard] = fd
        return fd

    def _check_file(self, shard: int, fd: int) -> None:
        """Raise unless the open file is the one indexed: its size, and (from an index file) its frames."""
        members = self._gzip[shard]
        if members is not None:
            members.check_file(fd)
            return
        path = self._paths[shard]
        first, last = self._ends_list[shard - 1] + shard if shard else 0, self._ends_list[shard] + shard
        size = os.fstat(fd).st_size
        expected = self._flat.item(last)  # the file's size
        if size != expected:
            raise RecordError(
                f"the file has {size} bytes but its index covers {expected}: "
                "it changed since the index was made",
                path=path,
            )
        index_path = self._index_paths[shard]
        if index_path is not None:  # an index file may point inside records: check it against the headers
            bounds = self._flat[first : last + 1]
            check_frame_chain(fd, bounds[:-1], np.diff(bounds), index_path=index_path, path=path)
            self._index_paths[shard] = None

    # -- life cycle -----------------------------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        """The files, in record order."""
        return list(self._paths)

    def shard_lengths(self) -> list[int]:
        """The number of records in each file."""
        return list(self._counts)

    def close(self) -> None:
        """Close the open files (idempotent); reading again reopens them.

        Safe while other threads read: a read that overlaps ``close()`` reads
        its record again from the reopened file, never from a descriptor that
        was closed (and may since have been given to another file), and never
        fails because of the close.
        """
        with self._open_lock:
            open_fds = [fd for fd in self._fds if fd is not None]
            self._fds[:] = [None] * len(self._fds)  # first: no read picks up a descriptor being closed
            self._generation += 1  # then: reads already holding one will notice
            self._maps[:] = [None] * len(self._maps)  # unmapped once no read holds them
            for fd in open_fds:
                os.close(fd)
            self._inflated.clear()

    def __enter__(self) -> RecordFileSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        # File descriptors do not travel: the copy reopens its files lazily.
        return {
            "paths": self._paths,
            "features": self._features,
            "spec": self._spec,
            "flat": self._flat,
            "counts": self._counts,
            "index_paths": self._index_paths,
            "gzip": self._gzip,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._paths = state["paths"]
        self._features = state["features"]
        self._spec = state["spec"]
        self._flat = state["flat"]
        self._counts = state["counts"]
        self._index_paths = list(state.get("index_paths", [None] * len(self._paths)))
        self._gzip = list(state.get("gzip", [None] * len(self._paths)))
        self._setup()

    def __repr__(self) -> str:
        decoded = "features" if self._features is not None else "spec" if self._spec is not None else "bytes"
        files = f"{len(self._paths)} file" + ("s" if len(self._paths) != 1 else "")
        first = f" from {self._paths[0]!r}" if self._paths else ""
        return f"RecordFileSource({files}{first}, {self._length} records, {decoded})"


def _close_all(fds: list[int | None]) -> None:
    for shard, fd in enumerate(fds):
        if fd is not None:
            fds[shard] = None
            os.close(fd)


def _as_asked(items: list[Any], order: np.ndarray) -> list[Any]:
    """Items put back in the order asked: item ``k`` was asked ``order[k]``-th."""
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return list(map(items.__getitem__, back.tolist()))


def _rows(batch: Any, count: int) -> list[Any]:
    """A batched decode result (nested dicts of arrays, RaggedArrays) -> one item per row."""
    if isinstance(batch, dict):
        columns = {key: _rows(value, count) for key, value in batch.items()}
        return [{key: column[i] for key, column in columns.items()} for i in range(count)]
    if isinstance(batch, RaggedArray):
        splits = batch.row_splits.tolist()
        return [_take(batch.values, splits[i], splits[i + 1]) for i in range(count)]
    return list(batch)


def _take(values: Any, start: int, stop: int) -> Any:
    if isinstance(values, RaggedArray):
        splits = values.row_splits[start : stop + 1]
        return RaggedArray(_take(values.values, int(splits[0]), int(splits[-1])), splits - splits[0])
    return values[start:stop]
