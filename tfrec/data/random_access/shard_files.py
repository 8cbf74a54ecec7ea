"""The shard files under a :class:`~.source.RecordFileSource`: descriptors, maps and reads (data layer).

A source numbers records and decodes them; :class:`ShardFiles` owns what it holds of
its files in one process, and reads their frames by record number:

- One read-only descriptor per file, opened by the first read of that file (whichever
  thread reads first) and shared by every thread: reads are positioned (``pread``),
  so no file position is shared. Descriptors are never pickled: a copy (a spawned
  worker process, grain's processes) opens its files again on first use. A forked
  child inherits them, and positioned reads let it use them as they are.
- A read-only map of each file, made by its first batched read; the frames of a batch
  are gathered from the maps and checked together (:mod:`tfrec.record.mapped`).
- The check that a file is still the one indexed, made when it is opened: its size,
  and, when its frames came from an index file, that the index points at its record
  headers (:mod:`tfrec.data.index.chain`). A map is made to the size checked then, and
  its size is checked again before each gather: a file that shrank is read with
  positioned reads, which raise the error naming the record, instead of a map read
  past the end of the file (a SIGBUS).
- Both CRCs of every frame are checked on every read; an error names the file, the
  record and its byte offset. A read that overlapped :meth:`ShardFiles.close` reads
  its record again from the reopened file: close() frees descriptor numbers, which
  the next open anywhere in the process may be given, for another file.

Example:
    >>> files = ShardFiles(paths, bounds, counts, index_paths=[None] * len(paths), gzip=[None] * len(paths))
    >>> files.read(17)                             # record 17 counted through all files, CRCs checked
    >>> records, order = files.read_many([5, 1, 3])
    >>> files.close()                              # reading again reopens the files
"""

from __future__ import annotations

import bisect
import os
import threading
import weakref
from collections.abc import Sequence
from typing import cast

import numpy as np

from ...errors import MissingFileError, RecordError
from ...forking import renew_in_child
from ...record import RecordBatch
from ...record.files import open_regular
from ...record.frame import FOOTER, HEADER
from ...record.mapped import frames_ok, gather_frames, map_file, mapped_size
from ...record.positioned import read_frame, read_frames
from ..index.chain import check_frame_chain
from .gzip_members import GzipShard, MemberCache

__all__ = ["ShardFiles"]

_BATCH_BYTES = 64 << 20  # read_many verifies up to this many bytes of frames together


class ShardFiles:
    """The files of a source: opened lazily, once per process; their records read by number.

    Args:
        paths: the files, in record order.
        flat: all files' frame bounds in one array: record ``g`` (counted through all
            files) of file ``f`` starts at ``flat[g + f]`` and ends at ``flat[g + f + 1]``;
            each file's last entry is its size (or its inflated stream's, for gzip).
        counts: the number of records in each file.
        index_paths: each file's index file, to be checked against the file's record
            headers when it is opened; None where the frames were found by scanning
            those headers (or the check was made).
        gzip: each gzip file's members (:mod:`.gzip_members`); None for an uncompressed file.

    Example:
        >>> files = ShardFiles(["a.tfrecord"], np.array([0, 21, 42]), [2], [None], [None])
        >>> files.read(1), files.read_many([1, 0])
    """

    def __init__(
        self,
        paths: list[str],
        flat: np.ndarray,
        counts: Sequence[int],
        index_paths: list[str | None],
        gzip: list[GzipShard | None],
    ) -> None:
        self.paths = paths
        self.flat = flat
        self.index_paths = index_paths  # an entry is set to None once its file is checked
        self.gzip = gzip
        self._ends = np.cumsum(counts, dtype=np.int64)  # global number just past each file's records
        self._ends_list = self._ends.tolist()
        self._fds: list[int | None] = [None] * len(paths)
        # Bumped by close() after it empties self._fds and before it closes them: a read that saw the
        # same number before and after its pread read no descriptor that close() freed (and that the
        # next open anywhere in the process may have been given, for another file).
        self._generation = 0
        self._open_lock = threading.Lock()
        renew_in_child(self, "_open_lock")  # a child forked while another thread opens a file
        self._inflated = MemberCache()  # the gzip members inflated last
        self._finalizer = weakref.finalize(self, _close_all, self._fds)
        # Each file's read-only map, made on the first batched read of it (per process: never pickled).
        # None: not mapped yet, or (when _unmappable says so) it cannot be: its batches use pread.
        self._maps: list[np.ndarray | None] = [None] * len(paths)
        self._unmappable = [False] * len(paths)

    def read(self, number: int) -> bytes:
        """Record ``number`` (counted through all files), both CRCs checked."""
        shard = bisect.bisect_right(self._ends_list, number)
        members = self.gzip[shard]
        if members is not None:
            return self._read_gzip(members, shard, number)
        generation = self._generation
        fd = self._fds[shard]
        if fd is None:
            fd = self._open(shard)
        at = number + shard
        offset = self.flat.item(at)
        try:  # _read_from, inlined: this is the hot path of __getitem__
            data = read_frame(
                fd,
                offset,
                self.flat.item(at + 1) - offset,
                path=self.paths[shard],
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
        offset = self.flat.item(at)
        index = number - (self._ends_list[shard - 1] if shard else 0)
        return read_frame(fd, offset, self.flat.item(at + 1) - offset, path=self.paths[shard], index=index)

    def _read_again(self, shard: int, number: int) -> bytes:
        """Read a record again after close() interrupted its read: under the lock close() takes, so
        that no close() can interrupt it again (a rare path: only reads that overlapped a close())."""
        with self._open_lock:
            fd = self._fds[shard]
            if fd is None:
                fd = self._open_locked(shard)
            return self._read_from(fd, shard, number)

    def _read_gzip(self, members: GzipShard, shard: int, number: int) -> bytes:
        """A record of a gzip file, as read reads one of a plain file (again after a close())."""
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

    def read_many(self, numbers: list[int]) -> tuple[Sequence[bytes], np.ndarray | None]:
        """The records, gathered from the files' maps into one batch when they can be, else read with
        positioned reads (batched, or one by one to name a damaged record); and their ``order``:
        record ``k`` is the one asked ``order[k]``-th (``None``: in the order asked)."""
        if not numbers:
            return [], None
        if any(self.gzip):  # in record order, so that each member is inflated once per batch
            found: list[bytes] = [b""] * len(numbers)
            for place in sorted(range(len(numbers)), key=numbers.__getitem__):
                found[place] = self.read(numbers[place])
            return found, None
        chosen = np.array(numbers, np.int64)
        shards = np.searchsorted(self._ends, chosen, side="right")
        at = chosen + shards
        offsets = self.flat[at]
        lengths = self.flat[at + 1] - offsets
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
        # the record; read reads again what a close() interrupted).
        return [self.read(number) for number in numbers], None

    def _gather(
        self, shards: np.ndarray, offsets: np.ndarray, lengths: np.ndarray
    ) -> tuple[RecordBatch, np.ndarray | None] | None:
        """The frames gathered from the files' maps (sorted by file and offset; with their order, as
        read_many returns them) and checked together; None when a file cannot be mapped, no longer
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
                view = self._maps[shard] = map_file(fd, self.flat.item(self._ends_list[shard] + shard))
                self._unmappable[shard] = view is None
            return view

    def _open(self, shard: int) -> int:
        with self._open_lock:
            fd = self._fds[shard]
            return fd if fd is not None else self._open_locked(shard)

    def _open_locked(self, shard: int) -> int:
        """Open a file and check it is the one indexed (``_open_lock`` held)."""
        path = self.paths[shard]
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
        members = self.gzip[shard]
        if members is not None:
            members.check_file(fd)
            return
        path = self.paths[shard]
        first, last = self._ends_list[shard - 1] + shard if shard else 0, self._ends_list[shard] + shard
        size = os.fstat(fd).st_size
        expected = self.flat.item(last)  # the file's size
        if size != expected:
            raise RecordError(
                f"the file has {size} bytes but its index covers {expected}: "
                "it changed since the index was made",
                path=path,
            )
        index_path = self.index_paths[shard]
        if index_path is not None:  # an index file may point inside records: check it against the headers
            bounds = self.flat[first : last + 1]
            check_frame_chain(fd, bounds[:-1], np.diff(bounds), index_path=index_path, path=path)
            self.index_paths[shard] = None

    def close(self) -> None:
        """Close the open files (idempotent); reading again reopens them.

        Safe while other threads read: a read that overlaps ``close()`` reads
        its record again from the reopened file, never from a descriptor that
        was closed (and may since have been given to another file).
        """
        with self._open_lock:
            open_fds = [fd for fd in self._fds if fd is not None]
            self._fds[:] = [None] * len(self._fds)  # first: no read picks up a descriptor being closed
            self._generation += 1  # then: reads already holding one will notice
            self._maps[:] = [None] * len(self._maps)  # unmapped once no read holds them
            for fd in open_fds:
                os.close(fd)
            self._inflated.clear()


def _close_all(fds: list[int | None]) -> None:
    for shard, fd in enumerate(fds):
        if fd is not None:
            fds[shard] = None
            os.close(fd)
