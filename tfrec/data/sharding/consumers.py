"""Who reads what: ranks x DataLoader workers x reading processes (data layer).

Every reader of a dataset is one *consumer*. Consumers are numbered rank-major:
``((rank * loader_workers) + loader_worker) * processes + process``. They
split the dataset in one of two ways:

- by files: consumer ``c`` of ``C`` reads the files ``files[c::C]`` of the
  file list. Fewer files than consumers is an error, never a silent duplicate
  or an empty consumer.
- by records, when every file has an index (:mod:`tfrec.data.sharding.ranges`): the
  records of all files are cut into ``C`` contiguous ranges that differ by at
  most one record; a range may start in the middle of a file.

``shard_by="auto"`` (the default) splits by files when there are at least as
many files as consumers (no index is read), and by records otherwise, when
every file has an index. The split is made before any per-epoch shuffling, so
every record is read exactly once per epoch even when ranks disagree on the
seed.

The rank comes from, in this order: an explicit ``shard=(index, count)``; the
``RANK`` and ``WORLD_SIZE`` environment variables; ``torch.distributed`` when
torch is already imported and a process group is initialised. DataLoader
worker info is asked of torch only when torch is already imported.

Example:
    >>> consumer = Consumer(rank=1, ranks=2, worker=0, workers=2)
    >>> consumer.files(["a", "b", "c", "d"])
    ['c']
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...errors import InvalidArgumentError, ShardingError
from .ranges import RecordRanges, locate_indexes, split_records

__all__ = [
    "SHARD_BY",
    "Consumer",
    "ShardOptions",
    "check_shard_by",
    "detect_consumer",
    "detect_loader_worker",
    "detect_rank",
    "split_among",
]

SHARD_BY = ("auto", "files", "records")
SHUFFLE_PIECES = 16  # pieces each consumer's record range is cut into when files are shuffled


@dataclass(frozen=True)
class Consumer:
    """One reader's place among all readers: rank of ranks, loader worker of loader workers.

    ``process`` / ``processes`` number the reading processes of one
    iterator (``num_workers=``). ``ranges``, when set, splits records instead
    of files (made for :attr:`count` consumers).
    """

    rank: int = 0
    ranks: int = 1
    worker: int = 0
    workers: int = 1
    process: int = 0
    processes: int = 1
    ranges: RecordRanges | None = field(default=None, repr=False)

    @property
    def index(self) -> int:
        return (self.rank * self.workers + self.worker) * self.processes + self.process

    @property
    def count(self) -> int:
        return self.ranks * self.workers * self.processes

    def with_process(self, process: int, processes: int) -> Consumer:
        return replace(self, process=process, processes=processes)

    def with_ranges(self, ranges: RecordRanges | None) -> Consumer:
        return replace(self, ranges=ranges)

    def describe(self) -> str:
        parts = []
        if self.ranks > 1:
            parts.append(f"{self.ranks} ranks")
        if self.workers > 1:
            parts.append(f"{self.workers} DataLoader workers")
        if self.processes > 1:
            parts.append(f"{self.processes} reading processes (num_workers)")
        return " x ".join(parts) or "1 reader"

    def files(self, files: Sequence[str]) -> list[str]:
        """This consumer's share of ``files`` (the full list every consumer sees alike).

        With :attr:`ranges`, the share is this consumer's record ranges
        (:class:`~tfrec.data.sharding.ranges.FileRange`, each a path with a range).

        Raises:
            ShardingError: fewer files than consumers (and no record ranges).
        """
        if self.ranges is not None:
            if self.ranges.count != self.count:  # pragma: no cover (made for this count by split_among)
                raise ShardingError(f"record ranges for {self.ranges.count} readers, not {self.count}")
            return list(self.ranges.readers[self.index])
        if len(files) < self.count:
            raise ShardingError(_too_few_files(len(files), self))
        return list(files[self.index :: self.count])


def _too_few_files(files: int, consumer: Consumer, why_not_records: str = "") -> str:
    """The message of the error for fewer files than consumers."""
    records = (
        f" Records could be split instead of files if every file had an index, but {why_not_records}."
        if why_not_records
        else ""
    )
    return (
        f"{files} file(s) cannot be split among {consumer.count} readers ({consumer.describe()}): "
        f"each reader needs at least one file, or some would read nothing.{records} "
        "Hint: write more shards (tfrec.ShardedWriter), index uncompressed files (tfrec.build_index) "
        "so that records are split, or lower num_workers / DataLoader workers"
    )


@dataclass(frozen=True)
class ShardOptions:
    """How a dataset is shared among its readers (ranks x DataLoader workers x reading processes).

    Frozen and picklable; checked when made.

    Args:
        shard: ``(index, count)`` of this rank; by default from ``RANK`` /
            ``WORLD_SIZE`` or an initialised ``torch.distributed``.
        shard_by: ``"files"``: each reader reads whole files, and fewer files
            than readers is a :class:`~tfrec.ShardingError`. ``"records"``: the
            records of all files are cut into one contiguous range per reader,
            equal to within one record (a range may start mid-file); every file
            needs an index. ``"auto"``: files when there are at least as many
            files as readers, else records when every file has an index (else
            the ShardingError, saying why).
        index_paths: the index file of each of the dataset's files, in that
            order (DALI ``tfrecord2idx`` format); by default ``{file}.idx`` beside
            each file, as :func:`tfrec.build_index` writes it. Used only to split
            records; compressed files cannot have one.

    Example:
        >>> ds = tfrec.TFRecordDataset("data/", shard_options=tfrec.ShardOptions(shard=(rank, world_size)))
    """

    shard: tuple[int, int] | None = None
    shard_by: str = "auto"
    index_paths: Sequence[str | os.PathLike[str]] | None = None  # kept as a tuple of str

    def __post_init__(self) -> None:
        if self.shard is not None:
            index, count = self.shard
            object.__setattr__(self, "shard", _check_shard(int(index), int(count), "shard="))
        check_shard_by(self.shard_by)
        if self.index_paths is not None:
            if isinstance(self.index_paths, (str, os.PathLike)):
                raise InvalidArgumentError(
                    "index_paths must be a list of paths, one per file, not a single path"
                )
            object.__setattr__(self, "index_paths", tuple(os.fspath(p) for p in self.index_paths))


def check_shard_by(shard_by: str) -> str:
    if shard_by not in SHARD_BY:
        raise InvalidArgumentError(f"shard_by must be 'auto', 'files' or 'records', not {shard_by!r}")
    return shard_by


def split_among(
    consumer: Consumer,
    files: Sequence[str],
    *,
    shard_by: str = "auto",
    compression: str | None = "auto",
    storage_options: Mapping[str, Any] | None = None,
    index_paths: Sequence[str] | None = None,
    shuffle_files: bool = False,
) -> Consumer:
    """``consumer`` (whose :attr:`~Consumer.count` counts every reader) with its split decided.

    ``shard_by="files"``: files, always. ``"records"``: record ranges, always
    (every file needs an index). ``"auto"``: files when there are at least as
    many as consumers, else record ranges when every file has an index.
    With ``shuffle_files``, each consumer's range is cut into up to
    ``SHUFFLE_PIECES`` pieces, whose order is shuffled every epoch.

    Raises:
        ShardingError: the dataset cannot be split without duplicates or empty
            consumers; the message says why records could not be split.
        InvalidArgumentError: an index does not match its file.
    """
    check_shard_by(shard_by)
    if shard_by == "files" or (shard_by == "auto" and len(files) >= consumer.count):
        return consumer.with_ranges(None)
    try:
        located = locate_indexes(
            files, compression=compression, storage_options=storage_options, index_paths=index_paths
        )
    except ShardingError as exc:
        if shard_by == "records":
            raise ShardingError(f"shard_by='records' needs an index for every file, but {exc}") from None
        raise ShardingError(_too_few_files(len(files), consumer, str(exc))) from None
    ranges = split_records(
        files,
        consumer.count,
        index_paths=located,
        storage_options=storage_options,
        compression=compression,
        pieces=SHUFFLE_PIECES if shuffle_files else 1,
        readers=consumer.describe(),
    )
    return consumer.with_ranges(ranges)


def _check_shard(index: int, count: int, origin: str) -> tuple[int, int]:
    if count < 1 or not 0 <= index < count:
        raise ShardingError(f"{origin}: shard index {index} of {count} is out of range (0 <= index < count)")
    return index, count


def detect_rank(shard: tuple[int, int] | None) -> tuple[int, int]:
    """(rank, ranks): the explicit ``shard``, else RANK/WORLD_SIZE, else torch.distributed, else (0, 1)."""
    if shard is not None:
        index, count = shard
        return _check_shard(int(index), int(count), "shard=")
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is not None and world is not None:
        try:
            return _check_shard(int(rank), int(world), "RANK/WORLD_SIZE")
        except ValueError as exc:
            if isinstance(exc, ShardingError):
                raise
            raise ShardingError(f"RANK={rank!r} / WORLD_SIZE={world!r} are not integers") from None
    torch = sys.modules.get("torch")
    distributed = getattr(torch, "distributed", None) if torch is not None else None
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        return int(distributed.get_rank()), int(distributed.get_world_size())
    return 0, 1


def detect_loader_worker() -> tuple[int, int]:
    """(worker, workers) of the torch DataLoader worker this code runs in, else (0, 1)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0, 1
    info = torch.utils.data.get_worker_info()
    if info is None:
        return 0, 1
    return int(info.id), int(info.num_workers)


def detect_consumer(shard: tuple[int, int] | None) -> Consumer:
    """This process's :class:`Consumer` (reading processes not counted yet)."""
    rank, ranks = detect_rank(shard)
    worker, workers = detect_loader_worker()
    return Consumer(rank, ranks, worker, workers)
