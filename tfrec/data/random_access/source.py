"""Random access to the records of TFRecord files: uncompressed, or gzip in members (data layer).

:class:`RecordFileSource` maps record numbers to records across one or many
shards, with an index per shard (read from ``{shard}.idx`` or built in memory
by scanning headers), and decodes them. The files underneath (descriptors opened
once per process, maps, frames read and checked) belong to :mod:`.shard_files`;
gzip files written as a series of members with a gzip index are read by
:mod:`.gzip_members`. It follows grain's ``RandomAccessDataSource`` protocol and
PyTorch's map-style ``Dataset``: ``__len__``, ``__getitem__``, ``__getitems__``.

Example:
    >>> source = tfrec.RecordFileSource("data/train-*.tfrecord", features=features)
    >>> len(source), source[0]["label"], source[-1]["label"]
    >>> batch = source.__getitems__([5, 1, 3])        # decoded together, one sample per index
"""

from __future__ import annotations

import functools
import operator
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, SupportsIndex

import numpy as np

from ...errors import InvalidArgumentError, MissingFileError, OutOfRangeError
from ...example import (
    FixedLenFeature,
    RaggedArray,
    parse_example,
    parse_single_example,
    single_example_parser,
)
from ...features import FeaturesDict
from ...record import resolve_compression
from ..index.format import INDEX_SUFFIX, check_index_span, frames_end, read_index
from ..index.scan import check_uncompressed, scan_index
from ..paths import expand_paths
from ..pipeline.decode import check_features_or_spec
from .gzip_members import GzipShard
from .shard_files import ShardFiles
from .shuffled_batches import ShuffledBatches

__all__ = ["RecordFileSource"]

PathLike = str | os.PathLike[str]


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
        bounds: list[np.ndarray] = []
        # The index each file's frames came from (its headers are checked when the file is opened), or
        # None when they were found by scanning its headers.
        index_files: list[str | None] = []
        gzip: list[GzipShard | None] = []  # the gzip files' members
        for shard, path in enumerate(self._paths):
            frames, index_path, members = _load_index(path, None if indexes is None else indexes[shard])
            bounds.append(frames)
            index_files.append(index_path)
            gzip.append(members)
        # All files' bounds in one array: record g of file f starts at flat[g + f], ends at flat[g + f + 1].
        flat = np.concatenate(bounds) if bounds else np.zeros(0, np.int64)
        self._counts = [len(b) - 1 for b in bounds]
        self._setup(flat, index_files, gzip)

    def _setup(self, flat: np.ndarray, index_paths: list[str | None], gzip: list[GzipShard | None]) -> None:
        """Derived tables and per-process state (after __init__ and after unpickling)."""
        self._length = sum(self._counts)
        # The files: descriptors, maps and reads (per process: a pickled copy opens its own).
        self._files = ShardFiles(self._paths, flat, self._counts, index_paths, gzip)
        self._batched_spec = self._spec is not None and all(
            isinstance(s, FixedLenFeature) for s in self._spec.values()
        )

    # -- protocol -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, record_key: SupportsIndex) -> Any:
        """The record (bytes, or decoded) with this number; negative numbers count from the end."""
        data = self._files.read(self._number(record_key))
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
        records, order = self._files.read_many(self._numbers(record_keys))
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
        records, order = self._files.read_many(self._numbers(record_keys))
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
        self._files.close()

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
            "flat": self._files.flat,
            "counts": self._counts,
            "index_paths": self._files.index_paths,
            "gzip": self._files.gzip,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._paths = state["paths"]
        self._features = state["features"]
        self._spec = state["spec"]
        self._counts = state["counts"]
        index_paths = list(state.get("index_paths", [None] * len(self._paths)))
        self._setup(state["flat"], index_paths, list(state.get("gzip", [None] * len(self._paths))))

    def __repr__(self) -> str:
        decoded = "features" if self._features is not None else "spec" if self._spec is not None else "bytes"
        files = f"{len(self._paths)} file" + ("s" if len(self._paths) != 1 else "")
        first = f" from {self._paths[0]!r}" if self._paths else ""
        return f"RecordFileSource({files}{first}, {self._length} records, {decoded})"


def _load_index(path: str, index_path: str | None) -> tuple[np.ndarray, str | None, GzipShard | None]:
    """A file's frame bounds: the offsets of its frames followed by its size (where a next frame would
    start); the index file they came from (its headers are checked when the file is opened), None when
    they were found by scanning its headers; and a gzip file's members.

    ``index_path``: the index file the caller gave, else None (then ``{path}.idx`` when it exists).
    """
    gzip = resolve_compression("auto", path) == "gzip"
    if not gzip:
        check_uncompressed(path, purpose="RecordFileSource (random access)")
    if not os.path.exists(path):
        raise MissingFileError(f"{path}: no such file")
    given = index_path is not None
    if index_path is None:
        index_path = path + INDEX_SUFFIX
    if gzip:  # a series of members: its records are read by gzip_members
        members = GzipShard.load(path, index_path if given or os.path.exists(index_path) else None)
        return members.bounds(), None, members
    if not given and not os.path.exists(index_path):
        offsets, lengths = scan_index(path, compression=None)
        index_file = None
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
        index_file = index_path
    # Frames are back to back, so offsets alone say where each starts and ends: 8 bytes a record.
    return np.append(offsets, frames_end(offsets, lengths)).astype(np.int64), index_file, None


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
