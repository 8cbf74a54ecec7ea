"""Record ranges: the records of indexed files cut into near-equal shares, one per reader (data layer).

When every file has an index (``{file}.idx``, see :mod:`tfrec.data.index.format`),
readers need not take whole files: the records of all files, one after the
other, are cut into ``count`` contiguous shares whose sizes differ by at most
one record, and each share into per-file pieces. A piece is a
:class:`FileRange`: a file's path with the first record to read (its number
and byte offset) and where to stop. A piece may start in the middle of a file;
:class:`~tfrec.RecordReader` starts there from the offset and numbers records
from the index, so errors name true record numbers.

A range is bounded by bytes: it holds the frames that start before its end
offset, so ranges never overlap nor leave a gap, even where skipped damage
makes record numbers drift. Only the index lines at the cuts (and the last
one, which must end where the file ends) are parsed: counting the lines of a
million-record index takes milliseconds, and the reader verifies every frame.

Gzip files written as a series of members have a gzip index
(:mod:`tfrec.data.index.members`): their ranges are in offsets of the inflated
stream, as :class:`~tfrec.RecordReader` counts them; a reader inflates its file
from the start up to its range (the members are not yet used to skip ahead).

A :class:`FileRange` *is* its path (a ``str``), so everything that lists,
shuffles or opens a reader's files handles pieces unchanged; only the reader
of a file looks at the range.

Example:
    >>> ranges = split_records(["a.tfrecord"], 3)      # 1000 records; needs a.tfrecord.idx
    >>> ranges.readers[1]
    (FileRange('a.tfrecord', records 333 to 665),)
"""

from __future__ import annotations

import bisect
import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidArgumentError, ShardingError
from ...record import resolve_compression
from ..index.format import INDEX_SUFFIX, IndexLines, check_index_covers, read_index_text
from ..index.members import GZIP_INDEX_HEADER, is_gzip_index, parse_gzip_index, read_gzip_index
from ..paths import file_size, is_file, local_path, read_bytes

__all__ = ["FileRange", "RecordRanges", "locate_indexes", "split_records"]


class FileRange(str):
    """A file's path with a range of its records: ``start`` to ``stop`` (excluded).

    Attributes:
        start: the number of the first record (as the index numbers them).
        offset: its byte offset.
        stop: the number just past the last record.
        end: the byte offset just past the last record's frame (where the next one starts).
    """

    start: int
    offset: int
    stop: int
    end: int

    def __new__(cls, path: str, start: int, offset: int, stop: int, end: int) -> FileRange:
        piece = super().__new__(cls, path)
        piece.start, piece.offset, piece.stop, piece.end = start, offset, stop, end
        return piece

    @property
    def path(self) -> str:
        return str.__str__(self)

    @property
    def records(self) -> int:
        """How many records the range holds."""
        return self.stop - self.start

    def _key(self) -> tuple[str, int, int, int, int]:
        return (self.path, self.start, self.offset, self.stop, self.end)

    def __eq__(self, other: object) -> bool:
        # Two pieces of one file are different pieces; a piece is not its bare path.
        return isinstance(other, FileRange) and self._key() == other._key()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:
        return (FileRange, self._key())

    def __repr__(self) -> str:
        return f"FileRange({self.path!r}, records {self.start} to {self.stop - 1})"


@dataclass(frozen=True)
class RecordRanges:
    """Every reader's pieces: ``readers[c]`` is what reader ``c`` of ``count`` reads, in order."""

    readers: tuple[tuple[FileRange, ...], ...]

    @property
    def count(self) -> int:
        return len(self.readers)

    def records(self, reader: int) -> int:
        """How many records reader ``reader`` reads."""
        return sum(piece.records for piece in self.readers[reader])


def locate_indexes(
    files: Sequence[str],
    *,
    compression: str | None = "auto",
    storage_options: Mapping[str, Any] | None = None,
    index_paths: Sequence[str] | None = None,
) -> list[str]:
    """The index file of each file: ``index_paths`` as given, else ``{file}.idx`` beside it.

    Raises:
        ShardingError: a file is compressed (no index can exist for it, but for
            gzip members with a gzip index), or has no index beside it; the
            message names the first such file.
        InvalidArgumentError: ``index_paths`` does not give one index per file.
    """
    if index_paths is not None and len(index_paths) != len(files):
        raise InvalidArgumentError(
            f"{len(index_paths)} index path(s) for {len(files)} file(s): give one index per file, "
            "in the order of the dataset's files"
        )
    found = []
    for n, path in enumerate(files):
        codec = resolve_compression(compression, path)
        index_path = index_paths[n] if index_paths is not None else path + INDEX_SUFFIX
        if codec is not None and not (codec == "gzip" and _gzip_index(index_path, storage_options)):
            raise ShardingError(
                f"{path} is {codec}-compressed, and a compressed file cannot be indexed "
                "(a record in the middle of it cannot be reached without reading everything before it), "
                "unless it is a series of gzip members with a gzip index beside it, as "
                "tfrec.ShardedWriter(..., compression='gzip', index=True) writes"
            )
        if index_paths is None and not is_file(index_path, storage_options):
            raise ShardingError(
                f"{path} has no index ({index_path} does not exist; tfrec.build_index({path!r}) writes it)"
            )
        found.append(index_path)
    return found


def _gzip_index(index_path: str, storage_options: Mapping[str, Any] | None) -> bool:
    """Whether ``index_path`` exists and is a gzip index (its first line says so)."""
    if not is_file(index_path, storage_options):
        return False
    local = local_path(os.fspath(index_path))
    if local is None:
        return is_gzip_index(read_bytes(os.fspath(index_path), storage_options))
    with open(local, "rb") as file:
        return is_gzip_index(file.read(len(GZIP_INDEX_HEADER)))


class _StreamLines:
    """A gzip index as :func:`_pieces` reads it: a count and each record's offset in the inflated stream."""

    def __init__(self, bounds: Any) -> None:
        self._bounds = bounds
        self.count = len(bounds) - 1

    def offset(self, record: int) -> int:
        return int(self._bounds[record])


def split_records(
    files: Sequence[str],
    count: int,
    *,
    index_paths: Sequence[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    compression: str | None = "auto",
    pieces: int = 1,
    readers: str = "",
) -> RecordRanges:
    """Cut the records of ``files`` into ``count`` contiguous shares of near-equal size.

    Share ``c`` holds the records ``c * N // count`` to ``(c + 1) * N // count``
    of all ``N`` records, files taken in order; with ``pieces > 1`` each share
    is cut again into up to ``pieces`` near-equal parts (so that shuffling a
    reader's pieces changes its order). Every piece lies within one file.

    Args:
        files: every file, in the order every reader sees alike.
        count: the number of readers.
        index_paths: each file's index; by default ``{file}.idx``.
        storage_options: passed to fsspec for URLs.
        compression: the dataset's compression setting (compressed files have no index).
        pieces: parts per share, at most.
        readers: who the readers are, for messages (``"3 ranks"``).

    Raises:
        ShardingError: a file has no index or is compressed; fewer records than readers.
        InvalidArgumentError: an index does not match its file (names the index).
    """
    located = locate_indexes(
        files, compression=compression, storage_options=storage_options, index_paths=index_paths
    )
    indexes = [
        _index(path, index, storage_options, compression) for path, index in zip(files, located, strict=True)
    ]
    counts = [lines.count for lines in indexes]
    total = sum(counts)
    if total < count:
        raise ShardingError(
            f"{total} record(s) in {len(files)} file(s) cannot be split among {count} readers"
            f"{f' ({readers})' if readers else ''}: each reader needs at least one record, or some "
            "would read nothing. Hint: lower num_workers / DataLoader workers, or use fewer ranks"
        )
    ends = list(itertools.accumulate(counts))  # global number just past each file's records
    shares = []
    for c in range(count):
        low, high = c * total // count, (c + 1) * total // count
        parts = min(max(pieces, 1), high - low)
        cuts = [low + j * (high - low) // parts for j in range(parts + 1)]
        shares.append(
            tuple(piece for a, b in itertools.pairwise(cuts) for piece in _pieces(a, b, files, ends, indexes))
        )
    return RecordRanges(tuple(shares))


def _pieces(
    low: int, high: int, files: Sequence[str], ends: list[int], indexes: list[IndexLines | _StreamLines]
) -> list[FileRange]:
    """Global records ``low`` to ``high`` as one piece per file they touch."""
    out = []
    f = bisect.bisect_right(ends, low)
    while low < high:
        first = ends[f - 1] if f else 0
        start, stop = low - first, min(high, ends[f]) - first
        if stop > start:
            lines = indexes[f]
            out.append(FileRange(files[f], start, lines.offset(start), stop, lines.offset(stop)))
        low = first + stop
        f += 1
    return out


def _index(
    path: str, index_path: str, storage_options: Mapping[str, Any] | None, compression: str | None
) -> IndexLines | _StreamLines:
    """The lines of ``path``'s index, once its frames are seen to cover the file from end to end."""
    size = file_size(path, storage_options)
    local = local_path(os.fspath(index_path))
    if resolve_compression(compression, path) == "gzip":
        # Checked line by line and against the file's size (its frames can only be read inflated).
        if local is not None:
            return _StreamLines(read_gzip_index(local, data_size=size).stream_offsets())
        text = read_bytes(os.fspath(index_path), storage_options)
        return _StreamLines(parse_gzip_index(text, index_path, data_size=size).stream_offsets())
    # A local index is opened as a regular file and read no further than its data file allows: a FIFO
    # would block and a device would be read whole.
    text = (
        read_index_text(local, size)
        if local is not None
        else read_bytes(os.fspath(index_path), storage_options)
    )
    lines = IndexLines(text, index_path)
    start = lines.offset(0) if lines.count else 0
    check_index_covers(index_path, path, start, lines.offset(lines.count), size)
    return lines
