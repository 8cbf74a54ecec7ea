"""Dask integration: TFRecord shards as a ``dask.dataframe.DataFrame`` and back (optional ``dask`` extra).

Reading builds one partition per file (or per range of records, where the file has an index
``{file}.idx``) through ``dd.from_map``; each partition is decoded in batches straight into Arrow
and handed to pandas with Arrow-backed columns for anything that is not a plain number (lists,
tensors as nested fixed-size lists, bytes, text). The meta comes from the features, so building
the graph reads no records. Writing writes one shard per partition, under a hidden name, and
renames them all once every partition is written.

TensorFlow is never imported.

Example:
    >>> import tfrec.dask
    >>> ddf = tfrec.dask.read_tfrecords("data/train-*.tfrecord", columns=["label", "text"])
    >>> ddf.label.value_counts().compute()
    >>> tfrec.dask.to_tfrecords(ddf, "out/train")
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..arguments import check_count
from ..data import expand_paths, open_binary, read_index, shard_name
from ..data.index.format import INDEX_SUFFIX
from ..data.paths import is_url
from ..data.writing.names import pending_name, pending_pattern, shard_suffix
from ..data.writing.publish import check_free, publish_shards
from ..errors import OptionalDependencyError, SchemaError
from ..features import FeaturesDict
from ..record import RecordReader, RecordWriter, resolve_compression

try:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa
    from dask.base import compute
    from dask.delayed import delayed
except ImportError:  # pragma: no cover - exercised only without dask
    raise OptionalDependencyError("dask", "dask", "tfrec.dask") from None

from .arrow import (
    BATCH_SIZE,
    ArrowDecoder,
    NamedStream,
    features_from_arrow,
    saved_or_inferred_features,
    serialize_table,
)

__all__ = ["read_tfrecords", "to_tfrecords"]

# One partition: (path, start offset, start index, number of records or None for the rest).
Part = tuple[str, int, int, "int | None"]


def _pandas_dtype(arrow: pa.DataType) -> Any:
    """Plain numbers stay numpy columns; lists, tensors, bytes and text are Arrow-backed."""
    if pa.types.is_integer(arrow) or pa.types.is_floating(arrow) or pa.types.is_boolean(arrow):
        return None
    return pd.ArrowDtype(arrow)


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=_pandas_dtype)


class _ReadPart:
    """Reads one partition (picklable: sent to the workers)."""

    def __init__(self, decoder: ArrowDecoder, compression: str | None, verify: bool, batch_size: int) -> None:
        self.decoder = decoder
        self.compression = compression
        self.verify = verify
        self.batch_size = batch_size

    def __call__(self, part: Part) -> pd.DataFrame:
        path, offset, index, count = part
        codec = resolve_compression(self.compression, path)
        source: Any = NamedStream(open_binary(path), path) if is_url(path) else path  # a named stream
        reader = RecordReader(
            source, codec, verify_checksums=self.verify, start_offset=offset, start_index=index
        )
        tables = []
        with reader:
            remaining = count
            size = self.batch_size if remaining is None else min(self.batch_size, remaining)
            for batch in reader.batches(max(size, 1)) if size else ():
                tables.append(self.decoder.decode(batch))
                if remaining is not None:
                    remaining -= len(batch)
                    if remaining <= 0:
                        break
        table = pa.concat_tables(tables) if tables else self.decoder.decode([])
        return _to_pandas(table)


def _parts(files: Sequence[str], records_per_partition: int | None) -> list[Part]:
    parts: list[Part] = []
    for path in files:
        index_path = path + INDEX_SUFFIX
        if records_per_partition is None or is_url(path) or not os.path.exists(index_path):
            parts.append((path, 0, 0, None))
            continue
        offsets, _ = read_index(index_path)
        for start in range(0, max(len(offsets), 1), records_per_partition):
            count = min(records_per_partition, len(offsets) - start)
            parts.append((path, int(offsets[start]) if len(offsets) else 0, start, count))
    return parts


def read_tfrecords(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    features: FeaturesDict | Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    *,
    compression: str | None = "auto",
    verify_checksums: bool = True,
    records_per_partition: int | None = None,
    batch_size: int = BATCH_SIZE,
) -> dd.DataFrame:
    """Read TFRecord files of tf.train.Examples as a Dask DataFrame, without TensorFlow.

    Args:
        paths: files, globs, brace patterns, directories (their data files) or fsspec URLs.
        features: a FeaturesDict (columns are its decoded values, nested names joined by
            ``/``), a tf.io-style spec, or ``None``: the ``features.json`` beside the first file,
            else inferred from a sample of the first files.
        columns: only these columns; nothing else is decoded.
        compression: ``"auto"`` (from each file's suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        verify_checksums: check both CRCs of every record (default).
        records_per_partition: split files that have an index (``{file}.idx``) into partitions
            of this many records; files without one stay one partition each.
        batch_size: records decoded at a time.

    Returns:
        A Dask DataFrame: numbers as numpy columns; lists, tensors (nested fixed-size lists),
        bytes and text as ``pd.ArrowDtype`` columns.

    Example:
        >>> ddf = tfrec.dask.read_tfrecords("data/", records_per_partition=100_000)
        >>> ddf.npartitions
    """
    files = expand_paths(paths)
    if features is None:
        features = saved_or_inferred_features(files, None, compression)
    elif not isinstance(features, (FeaturesDict, Mapping)):
        raise SchemaError(
            f"features must be a FeaturesDict, a spec dict or None, not {type(features).__name__}"
        )
    if records_per_partition is not None:
        records_per_partition = check_count("records_per_partition", records_per_partition)
    decoder = ArrowDecoder(features, columns)
    meta = _to_pandas(decoder.decode([]))
    reader = _ReadPart(decoder, compression, verify_checksums, batch_size)
    return dd.from_map(
        reader,
        _parts(files, records_per_partition),
        meta=meta,
        label="read-tfrecords",
        enforce_metadata=False,
    )


# -- writing -------------------------------------------------------------------------------------------


def _write_part(frame: pd.DataFrame, pending: str, features: FeaturesDict, codec: str | None) -> int:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with RecordWriter(pending, codec) as writer:
        writer.write_many(serialize_table(table, features))
    return table.num_rows


def to_tfrecords(
    ddf: dd.DataFrame,
    path: str | os.PathLike[str],
    features: FeaturesDict | None = None,
    *,
    compression: str | None = None,
    overwrite: bool = False,
) -> list[str]:
    """Write a Dask DataFrame as TFRecord shards, one per partition: ``{path}-{i:05d}-of-{n:05d}.tfrecord``.

    Args:
        ddf: the frame; columns named ``a/b`` are written as the nested feature ``a/b``.
        path: the shards' prefix (a directory every worker and this process see).
        features: the FeaturesDict that serializes each row; ``None``: inferred from the frame's
            meta (numbers, and Arrow-backed lists, bytes and text). Written once as
            ``features.json`` beside the shards.
        compression: ``None``, ``"gzip"`` or ``"zlib"`` (the suffix gets ``.gz`` / ``.zz``).
        overwrite: replace an earlier output of the prefix. Without it, shards of the prefix
            in any count or compression, temporary files of the prefix (``.NAME-*.tmp``) or a
            ``features.json`` of other features beside it are an
            :class:`~tfrec.OutputExistsError`, raised before any partition is computed.

    Returns:
        The shards' paths, in partition order.

    Each partition is written under a hidden name; the shards get their final names once all
    are written, in index order (with ``overwrite``, the earlier set is removed once the new one
    is whole); a failed write removes them.

    Example:
        >>> tfrec.dask.to_tfrecords(ddf.repartition(npartitions=16), "out/train", features)
    """
    if features is None:
        schema = pa.Schema.from_pandas(ddf._meta, preserve_index=False)
        if any(pa.types.is_null(field.type) for field in schema):
            raise SchemaError(
                "cannot infer features from object columns of the meta: give features=, "
                "or use Arrow-backed columns (pd.ArrowDtype)"
            )
        features = features_from_arrow(schema)
    elif not isinstance(features, FeaturesDict):
        raise SchemaError(f"features must be a FeaturesDict, not {type(features).__name__}")
    prefix = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(prefix)
    os.makedirs(directory, exist_ok=True)
    codec = resolve_compression(compression, None)
    suffix = shard_suffix(codec)
    check_free(prefix, suffix, overwrite, features=features)
    token = secrets.token_hex(4)
    pendings = [pending_name(prefix, i, token) for i in range(ddf.npartitions)]
    tasks = [
        delayed(_write_part)(part, pending, features, codec)
        for part, pending in zip(ddf.to_delayed(), pendings, strict=True)
    ]
    try:
        compute(*tasks)
    except BaseException:
        for leftover in glob.glob(pending_pattern(prefix, token, ".*")):
            with contextlib.suppress(OSError):
                os.remove(leftover)
        raise
    finals = [shard_name(prefix, i, len(pendings), suffix) for i in range(len(pendings))]
    renames = [[(pending, final)] for pending, final in zip(pendings, finals, strict=True)]
    try:
        publish_shards(prefix, suffix, renames, overwrite=overwrite)
    except BaseException:
        for pending in pendings:
            with contextlib.suppress(OSError):
                os.remove(pending)
        raise
    features.save(directory)
    return finals
