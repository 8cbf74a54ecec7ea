"""Writing a whole dataset in one call: samples, records or a table to a set of shards (data layer).

:func:`write_dataset` is :class:`~tfrec.data.writing.shards.ShardedWriter` in one call, with a
progress bar; a table (a DataFrame, an Arrow table or stream, numpy columns, a Hugging Face dataset)
is encoded a batch of columns at a time by :mod:`.tables` and its inferred features saved beside
the shards.

Example:
    >>> tfrec.write_dataset(samples, "out/train", features, num_shards=4)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any

from ...errors import OptionalDependencyError
from ...features import FeaturesDict
from .chunks import CHUNK_RECORDS
from .destination import differing_features_file, parent_directory, save_features
from .publish import refuse_existing
from .shards import ShardedWriter, WriteSummary
from .tables import table_records

__all__ = ["write_dataset"]


def write_dataset(
    samples: Iterable[Any],
    path_prefix: str | os.PathLike[str],
    features: FeaturesDict | None = None,
    *,
    num_shards: int | None = None,
    max_records: int | None = None,
    max_bytes: int | None = None,
    compression: str | None = None,
    index: bool = False,
    suffix: str = ".tfrecord",
    progress: bool | None = None,
    gzip_member_bytes: int | None = None,
    overwrite: bool = False,
) -> WriteSummary:
    """Write every sample (or bytes record, without ``features``) as shards, in one call.

    Args:
        samples: nested dicts (with ``features``) or bytes; or a table, written column by
            column: a pandas DataFrame, a pyarrow Table or RecordBatch stream, a Hugging Face
            ``datasets.Dataset``, or a dict of numpy arrays (the first axis is the record).
            A table's features are inferred from its columns when not given, and saved as
            ``features.json`` beside the shards.
        path_prefix, num_shards, max_records, max_bytes, compression, index, suffix,
            gzip_member_bytes, overwrite: as for :class:`ShardedWriter` (give one of the
            three limits; the prefix may be a URL; an earlier set of the prefix is replaced
            only with ``overwrite=True``).
        features: the FeaturesDict that serializes the samples.
        progress: show a tqdm progress bar (records and records/s). ``None``:
            when tqdm is installed and stderr is a terminal; ``True``: always
            (tqdm needed); ``False``: never.

    Returns:
        The :class:`WriteSummary`.

    Example:
        >>> summary = tfrec.write_dataset(samples, "out/train", features, num_shards=8)
        >>> summary.shard_lengths
    """
    table = table_records(samples, features, framed=True)  # a DataFrame, Arrow table, numpy columns...
    if table is not None and not overwrite:  # its features.json goes beside the shards: refuse another's
        other = differing_features_file(table.features, parent_directory(os.fspath(path_prefix)))
        refuse_existing(os.fspath(path_prefix), [other] if other else [], "overwrite=True")
    bar = _progress_bar(progress, samples, None if table is None else table.rows)
    with ShardedWriter(
        path_prefix,
        num_shards=num_shards,
        max_records=max_records,
        max_bytes=max_bytes,
        compression=compression,
        features=features if table is None else None,
        index=index,
        suffix=suffix,
        gzip_member_bytes=gzip_member_bytes,
        overwrite=overwrite,
    ) as writer:
        if table is not None:
            _write_chunks(writer, table.chunks, bar)
        elif bar is None:
            writer.write_many(samples)
        else:
            with bar:
                writer.write_many(_counted(samples, bar))
    if table is not None:  # beside the shards, for read_arrow and FeaturesDict.load
        save_features(table.features, parent_directory(writer.summary.paths[0]))
    return writer.summary


def _write_chunks(writer: ShardedWriter, chunks: Iterable[Sequence[bytes]], bar: Any) -> None:
    """Records already encoded (and framed) a batch at a time (a table's), each batch written whole."""
    with bar if bar is not None else contextlib.nullcontext():
        for records in chunks:
            writer.write_many(records)  # bytes: the writer has no features
            if bar is not None:
                bar.update(len(records))


def _counted(items: Iterable[Any], bar: Any) -> Iterator[Any]:
    """``items``, moving the progress bar on every CHUNK_RECORDS items (and at the end)."""
    taken = 0
    for item in items:
        yield item
        taken += 1
        if taken == CHUNK_RECORDS:
            bar.update(taken)
            taken = 0
    bar.update(taken)


def _progress_bar(progress: bool | None, samples: Iterable[Any], rows: int | None = None) -> Any:
    """A tqdm bar, or None when there should be none; ``rows``: the total, when known otherwise."""
    if progress is False:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if progress:
            raise OptionalDependencyError("tqdm", "progress", "write_dataset(progress=True)") from None
        return None
    if progress is None and not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
        return None
    total = rows if rows is not None else len(samples) if isinstance(samples, Sized) else None
    return tqdm(total=total, unit=" records", unit_scale=True, desc="writing")
