"""Ray Data integration: TFRecord shards as a ``ray.data.Dataset`` and back (optional ``ray`` extra).

Reading is a ``FileBasedDatasource``: one read task per group of files, each file read in
batches of records (CRCs checked) that the batched decoder turns straight into Arrow tables:
fixed-shape tensors as Ray's tensor extension type, varying lengths as lists, bytes as binary.
Writing is a ``Datasink``: each write task writes one shard under a hidden name (itself written
through a temporary file), and the driver gives them their final names
``{prefix}-{i:05d}-of-{n:05d}.tfrecord`` once every task has finished, then writes
``features.json`` beside them. An earlier output of the prefix is replaced only with
``overwrite=True`` (see :func:`write_tfrecords`).

TensorFlow is never imported.

Example:
    >>> import tfrec.ray
    >>> ds = tfrec.ray.read_tfrecords("data/train-*.tfrecord", columns=["image", "label"])
    >>> ds = ds.map_batches(preprocess)
    >>> tfrec.ray.write_tfrecords(ds, "out/train", num_shards=16)
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Literal, cast

import numpy as np

from ..arguments import check_count
from ..data import expand_paths, shard_name
from ..data.paths import is_listed
from ..data.writing.names import pending_name, pending_pattern, shard_suffix
from ..data.writing.publish import check_free, publish_shards
from ..errors import MissingFileError, OptionalDependencyError, SchemaError
from ..features import FeaturesDict
from ..record import RecordReader, RecordWriter, resolve_compression

try:
    import pyarrow as pa
    import ray.data
    from ray.data.block import BlockAccessor
    from ray.data.datasource import Datasink, FileBasedDatasource
    from ray.data.extensions import ArrowTensorArray
except ImportError:  # pragma: no cover - exercised only without ray
    raise OptionalDependencyError("ray", "ray", "tfrec.ray") from None

from .arrow import (
    BATCH_SIZE,
    ArrowDecoder,
    NamedStream,
    arrow_filesystem,
    features_from_arrow,
    saved_or_inferred_features,
    serialize_table,
)

__all__ = [
    "TFRecordDatasink",
    "TFRecordDatasource",
    "read_tfrecords",
    "write_tfrecords",
]


def _tensor(values: np.ndarray) -> pa.Array:
    return ArrowTensorArray.from_numpy(values)


class TFRecordDatasource(FileBasedDatasource):  # type: ignore[misc]
    """Reads TFRecord files of tf.train.Examples into Arrow blocks (see :func:`read_tfrecords`)."""

    def __init__(
        self,
        paths: str | list[str],
        *,
        decoder: ArrowDecoder,
        compression: str | None = "auto",
        verify_checksums: bool = True,
        on_error: Literal["raise", "skip", "warn"] = "raise",
        batch_size: int = BATCH_SIZE,
        **file_based_kwargs: Any,
    ) -> None:
        super().__init__(paths, **file_based_kwargs)
        self._decoder = decoder
        self._compression = compression
        self._verify = verify_checksums
        self._on_error = on_error
        self._batch_size = batch_size

    def _open_input_source(self, filesystem: Any, path: str, **open_args: Any) -> Any:
        # The raw bytes: tfrec inflates gzip / zlib itself (Arrow would not know .zz files, and
        # a damaged stream must be reported at its record).
        open_args.pop("compression", None)
        buffer_size = open_args.pop("buffer_size", None) or 1 << 20
        return filesystem.open_input_stream(path, compression=None, buffer_size=buffer_size, **open_args)

    def _read_stream(self, f: Any, path: str) -> Any:
        codec = resolve_compression(self._compression, path)
        reader = RecordReader(
            cast("IO[bytes]", NamedStream(f, path)),
            codec,
            verify_checksums=self._verify,
            on_error=self._on_error,
        )
        for batch in reader.batches(self._batch_size):
            yield self._decoder.decode(batch)

    def get_name(self) -> str:
        return "ReadTFRecord(tfrec)"


# -- reading -------------------------------------------------------------------------------------------


def _list_with(filesystem: Any, paths: str | Sequence[str]) -> list[str]:
    """Files named by ``paths`` on a pyarrow (or fsspec) filesystem; directories list their data files."""
    import pyarrow.fs as pafs

    filesystem = arrow_filesystem(filesystem)
    files: list[str] = []
    for path in [paths] if isinstance(paths, str) else list(paths):
        info = filesystem.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            found = filesystem.get_file_info(pafs.FileSelector(path))
            files += sorted(
                i.path for i in found if i.type == pafs.FileType.File and is_listed(os.path.basename(i.path))
            )
        elif info.type == pafs.FileType.File:
            files.append(path)
        else:
            raise MissingFileError(f"{path}: no such file or directory on {filesystem.type_name}", path=path)
    return files


def read_tfrecords(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    features: FeaturesDict | Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    compression: str | None = "auto",
    verify_checksums: bool = True,
    on_error: Literal["raise", "skip", "warn"] = "raise",
    *,
    batch_size: int = BATCH_SIZE,
    filesystem: Any = None,
    **ray_kwargs: Any,
) -> ray.data.Dataset:
    """Read TFRecord files of tf.train.Examples as a Ray Dataset, without TensorFlow.

    Args:
        paths: files, globs, brace patterns (``train-{00000..00015}-of-00016``), directories
            (their data files, without ``features.json`` and other sidecars) or URLs; any shard
            naming (tfds ``train.tfrecord-00000-of-00016``, Beam ``train-00000-of-00016``).
            With ``filesystem``, paths on it (files or directories).
        features: a FeaturesDict (columns are its decoded values, nested names joined by
            ``/``), a tf.io-style spec (``{"label": tfrec.FixedLenFeature([], tfrec.int64)}``),
            or ``None``: the ``features.json`` beside the first file if there is one (as
            :func:`write_tfrecords` and tensorflow_datasets write it), else inferred from up to
            1000 records of the first 8 files (:func:`tfrec.infer_features`).
        columns: read only these columns; nothing else is decoded.
        compression: ``"auto"`` (from each file's suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        verify_checksums: check both CRCs of every record (default).
        on_error: ``"raise"``, ``"skip"`` or ``"warn"`` on a damaged record.
        batch_size: records decoded into one Arrow table.
        filesystem: a ``pyarrow.fs.FileSystem`` or an fsspec filesystem holding ``paths``.
        **ray_kwargs: passed to ``ray.data.read_datasource`` (``override_num_blocks``,
            ``ray_remote_args``, ``concurrency``, ...).

    Returns:
        A ``ray.data.Dataset`` with Arrow blocks.

    Raises:
        NoFilesFoundError: a pattern matched no file.
        SchemaError: a column is not in the features.

    Errors in read tasks (a damaged record, a record that does not fit the features) reach the
    driver as Ray task errors that are also the tfrec error (``except tfrec.ChecksumError``), with
    the file, record number and byte offset in the message.

    Example:
        >>> ds = tfrec.ray.read_tfrecords("gs://bucket/train-*-of-00016.tfrecord", columns=["label"])
        >>> ds.schema()
    """
    if filesystem is None:
        files = expand_paths(paths)
    else:
        files = _list_with(
            filesystem, [os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
        )
        if not files:
            raise MissingFileError(f"{paths}: no file found", path=str(paths))
    if features is None:
        features = saved_or_inferred_features(files, filesystem, compression)
    elif not isinstance(features, (FeaturesDict, Mapping)):
        raise SchemaError(
            f"features must be a FeaturesDict, a spec dict or None, not {type(features).__name__}"
        )
    decoder = ArrowDecoder(features, columns, make_tensor=_tensor)
    datasource = TFRecordDatasource(
        files,
        decoder=decoder,
        compression=compression,
        verify_checksums=verify_checksums,
        on_error=on_error,
        batch_size=batch_size,
        filesystem=filesystem,
    )
    return ray.data.read_datasource(datasource, **ray_kwargs)


# -- writing -------------------------------------------------------------------------------------------


class TFRecordDatasink(Datasink):  # type: ignore[misc,type-arg]
    """Writes a Ray Dataset as TFRecord shards (see :func:`write_tfrecords`)."""

    def __init__(
        self,
        path_prefix: str | os.PathLike[str],
        features: FeaturesDict | None = None,
        *,
        compression: str | None = None,
        overwrite: bool = False,
    ) -> None:
        self._prefix = os.path.abspath(os.fspath(path_prefix))
        self._overwrite = overwrite
        self._features = features
        self._codec = resolve_compression(compression, None)
        self._suffix = shard_suffix(self._codec)
        self._token = secrets.token_hex(4)
        self.paths: list[str] = []

    def _pending(self, task: int) -> str:
        return pending_name(self._prefix, task, self._token)

    def check_free(self) -> None:
        """Refuse an earlier output of the prefix unless ``overwrite``: its shards in any count and
        compression, temporary files of the prefix, a ``features.json`` of other features."""
        check_free(self._prefix, self._suffix, self._overwrite, features=self._features)

    def on_write_start(self, schema: Any = None) -> None:
        os.makedirs(os.path.dirname(self._prefix), exist_ok=True)
        if self._features is None and schema is not None:
            self._features = features_from_arrow(_arrow_schema(schema))
        self.check_free()

    def write(self, blocks: Iterable[Any], ctx: Any) -> int:
        pending = self._pending(ctx.task_idx)
        features = self._features
        count = 0
        with RecordWriter(pending, self._codec) as writer:
            for block in blocks:
                table = BlockAccessor.for_block(block).to_arrow()
                if not table.num_rows:
                    continue
                if features is None:
                    features = features_from_arrow(table.schema)
                writer.write_many(serialize_table(table, features))
                count += table.num_rows
        return count

    def on_write_complete(self, write_result: Any) -> Any:
        # The shards are found by this sink's token rather than from the tasks' return values:
        # Ray before 2.39 hands the driver row counts only. The driver must see the directory.
        result = super().on_write_complete(write_result)  # Ray < 2.39 returns its WriteResult
        # Task numbers are zero-padded: name order is task order.
        written = sorted(glob.glob(pending_pattern(self._prefix, self._token)))
        if not written:  # an empty dataset: one empty shard, so the dataset exists
            with RecordWriter(self._pending(0), self._codec):
                pass
            written = [self._pending(0)]
        total = len(written)
        paths = [shard_name(self._prefix, i, total, self._suffix) for i in range(total)]
        renames = [[(pending, final)] for pending, final in zip(written, paths, strict=True)]
        try:
            publish_shards(self._prefix, self._suffix, renames, overwrite=self._overwrite)
        except Exception as exc:
            self.on_write_failed(exc)
            raise
        self.paths = paths
        if self._features is not None:
            self._features.save(os.path.dirname(self._prefix))
        return result

    def on_write_failed(self, error: Exception) -> None:
        for pending in glob.glob(pending_pattern(self._prefix, self._token, ".*")):
            with contextlib.suppress(OSError):
                os.remove(pending)

    def get_name(self) -> str:
        return "WriteTFRecord(tfrec)"


def _arrow_schema(schema: Any) -> pa.Schema:
    if isinstance(schema, pa.Schema):
        return schema
    base = getattr(schema, "base_schema", None)
    if isinstance(base, pa.Schema):
        return base
    raise SchemaError(f"cannot infer features from a {type(schema).__name__} schema; give features=")


def write_tfrecords(
    ds: ray.data.Dataset,
    path: str | os.PathLike[str],
    features: FeaturesDict | None = None,
    num_shards: int | None = None,
    compression: str | None = None,
    *,
    overwrite: bool = False,
) -> list[str]:
    """Write a Ray Dataset as TFRecord shards ``{path}-{i:05d}-of-{n:05d}.tfrecord``, without TensorFlow.

    Args:
        ds: the dataset; columns named ``a/b`` are written as the nested feature ``a/b``.
        path: the shards' prefix (a local or shared directory the driver and workers see).
        features: the FeaturesDict that serializes each row; ``None``: inferred from the
            dataset's Arrow schema (scalars, fixed and varying lists, tensors, bytes, text).
            Written once as ``features.json`` beside the shards.
        num_shards: the number of shards (the dataset is repartitioned); ``None``: one shard
            per write task (per block).
        compression: ``None``, ``"gzip"`` or ``"zlib"`` (the suffix gets ``.gz`` / ``.zz``).
        overwrite: replace an earlier output of the prefix. Without it, shards of the prefix
            in any count or compression, temporary files of the prefix (``.NAME-*.tmp``) or a
            ``features.json`` of other features beside it are an
            :class:`~tfrec.OutputExistsError`, raised before any task runs.

    Returns:
        The shards' paths, in order.

    Each shard is written under a hidden name and renamed once every task has finished
    (in index order; with ``overwrite``, the earlier set is removed once the new one is
    whole); a failed write removes them.

    Example:
        >>> tfrec.ray.write_tfrecords(ds, "out/train", num_shards=16)
        ['out/train-00000-of-00016.tfrecord', ...]
    """
    if num_shards is not None:
        ds = ds.repartition(check_count("num_shards", num_shards))
    if features is not None and not isinstance(features, FeaturesDict):
        raise SchemaError(f"features must be a FeaturesDict, not {type(features).__name__}")
    if features is None:  # on the driver, so that features.json is written (and the same everywhere)
        schema = ds.schema()
        if schema is not None:
            features = features_from_arrow(_arrow_schema(schema))
    sink = TFRecordDatasink(path, features, compression=compression, overwrite=overwrite)
    sink.check_free()  # on the driver, before any task runs
    ds.write_datasink(sink)
    return sink.paths
