"""source -> samples -> transforms -> features -> the sharded writer (convert layer).

:func:`write_samples` writes a :class:`~tfrec.convert.Samples` stream as TFRecord shards (or one
file) and the dataset's ``features.json`` beside them. It streams: samples are serialized and
written in chunks of at most 1024 records and 16 MiB, so memory stays flat whatever the input
size. Nothing is left under the output names when anything fails: shards are written under
hidden temporary names and published together at the end, whole or visibly incomplete
(:func:`tfrec.data.write_dataset`: an earlier set of the same name goes first, then the shards
in index order, so readers refuse a set cut short); ``features.json`` is written last, and if
that fails the shards are removed again in index order.

An earlier output is replaced only with ``overwrite=True`` (:func:`check_output` says what
counts); OUT may be a URL (``memory://``, ``s3://``, ``gs://``... through fsspec), and
``features.json`` then goes beside the shards in the same bucket.

Example:
    >>> summary = write_samples(read_csv("iris.csv"), "out/iris", num_shards=2)
    >>> summary.paths
    ['out/iris-00000-of-00002.tfrecord', 'out/iris-00001-of-00002.tfrecord']
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ..data import ShardInfo, WriteSummary, build_index, write_dataset
from ..data.writing.chunks import record_chunks
from ..data.writing.destination import (
    differing_features_file,
    file_size,
    make_directory,
    parent_directory,
)
from ..data.writing.destination import save_features as store_features  # the argument has its name
from ..data.writing.names import TFRECORD_SUFFIXES, shard_suffix
from ..data.writing.publish import check_free, refuse_existing
from ..errors import ConvertError, EncodeError, TfrecError
from ..features import FeaturesDict
from ..record import RecordWriter, resolve_compression
from ..record.compression import GZIP_MEMBER_BYTES
from ..record.files import exists, remove_file
from .samples import Samples
from .transforms import KEY

__all__ = ["check_output", "is_single_file", "write_samples"]


def is_single_file(out: str, num_shards: int | None, max_records: int | None) -> bool:
    """Whether ``out`` names one TFRecord file rather than a shard prefix."""
    return num_shards is None and max_records is None and out.endswith(TFRECORD_SUFFIXES)


def check_output(
    out: str,
    features: FeaturesDict | None,
    *,
    single: bool,
    compression: str | None = None,
    overwrite: bool = False,
    option: str = "overwrite=True",
) -> None:
    """Refuse to write over an earlier output unless ``overwrite``; nothing is written before.

    What counts: for one file, a file of that name; for a prefix, its shards in any count
    and compression (and index files) and temporary files of the prefix; and, when
    ``features`` is saved, a ``features.json`` beside OUT that describes other features (one
    with the same features is no conflict: ``train`` and ``test`` share a directory).

    Raises:
        OutputExistsError: naming what was found and ``option``.
    """
    if not single:
        check_free(out, shard_suffix(resolve_compression(compression, None)), overwrite, option, features)
    elif not overwrite:
        conflict = differing_features_file(features, parent_directory(out)) if features is not None else None
        refuse_existing(out, [path for path in (out if exists(out) else None, conflict) if path], option)


def _serialized(samples: Samples, features: FeaturesDict) -> Iterator[bytes]:
    """Each sample's bytes; an encoding error names the sample."""
    for number, sample in enumerate(samples):
        try:
            yield features.serialize_example({k: v for k, v in sample.items() if k != KEY})
        except (EncodeError, TfrecError, MemoryError) as exc:
            name = sample.get(KEY)
            where = f"sample {number}" + (f" ({name!r})" if name is not None else "")
            problem = str(exc) if not isinstance(exc, MemoryError) else "the sample does not fit in memory"
            raise ConvertError(problem, path=samples.source, where=where) from None


def write_samples(
    samples: Samples,
    out: str | os.PathLike[str],
    *,
    num_shards: int | None = None,
    max_records: int | None = None,
    compression: str | None = None,
    progress: bool | None = None,
    save_features: bool = True,
    index: bool = False,
    overwrite: bool = False,
) -> WriteSummary:
    """Write ``samples`` as TFRecord files; returns what was written.

    Args:
        samples: from a converter (``read_csv``, ``read_webdataset``, ...).
        out: a shard prefix (``out/train`` -> ``out/train-00000-of-00004.tfrecord``), or a single
            file's name ending in ``.tfrecord`` (``.gz``/``.zz`` for compression) when neither
            ``num_shards`` nor ``max_records`` is given; a path or a URL.
        num_shards, max_records: as for :class:`tfrec.data.ShardedWriter` (default: one shard).
        compression: ``None``, ``"gzip"`` or ``"zlib"``. Gzip is written as a series of gzip
            members of 1 MiB of records (one gzip stream to every reader), so that it can be
            indexed (``tfrec index``) and read at random.
        progress: a progress bar (tqdm): ``None`` on a terminal only.
        index: also write an index beside each file (``tfrec.build_index``'s format).
        save_features: write ``features.json`` (and class names) into the output's directory,
            as tensorflow_datasets lays a dataset out.
        overwrite: replace an earlier output (see :func:`check_output`): the old set stays until
            the new one is whole. Without it, one is an :class:`~tfrec.OutputExistsError`.

    Raises:
        ConvertError: a sample cannot be read or stored (names the input and the sample).
        OutputExistsError: an earlier output is there and ``overwrite`` is not given.
    """
    out = os.fspath(out)
    features = samples.features
    single = is_single_file(out, num_shards, max_records)
    try:
        check_output(
            out,
            features if save_features else None,
            single=single,
            compression=compression,
            overwrite=overwrite,
        )
    except BaseException:
        samples.close()
        raise
    if single:
        summary = _write_one(_serialized(samples, features), out, compression, progress, index, overwrite)
    else:
        limit: dict[str, Any] = (
            {"max_records": max_records} if max_records else {"num_shards": num_shards or 1}
        )
        summary = write_dataset(
            _serialized(samples, features),
            out,
            compression=compression,
            progress=progress,
            index=index,
            gzip_member_bytes=member_bytes(compression, None),
            overwrite=overwrite,
            **limit,
        )
    if save_features:
        try:
            store_features(features, parent_directory(out))
        except BaseException:
            for path in summary.paths:  # in index order: stopped on the way, the set stays visibly incomplete
                with contextlib.suppress(OSError):
                    remove_file(path)
            raise
    return summary


def member_bytes(compression: str | None, path: str | None) -> int | None:
    """The gzip member size converters write gzip with: members make a file indexable later."""
    codec = resolve_compression(compression if compression is not None else "auto", path)
    return GZIP_MEMBER_BYTES if codec == "gzip" else None


def _write_one(
    records: Iterator[bytes],
    out: str,
    compression: str | None,
    progress: bool | None,
    index: bool,
    overwrite: bool,
) -> WriteSummary:
    bar = _bar(progress)
    count = data_bytes = 0
    make_directory(parent_directory(out), "write_samples")
    writer = RecordWriter(
        out,
        compression if compression is not None else "auto",
        gzip_member_bytes=member_bytes(compression, out),
        overwrite=overwrite,
    )
    try:
        for chunk in record_chunks(records):
            writer.write_many(chunk)
            count += len(chunk)
            data_bytes += sum(map(len, chunk))
            if bar is not None:
                bar.update(len(chunk))
    except BaseException:
        partial = writer.abort()
        if partial is not None:
            with contextlib.suppress(OSError):
                remove_file(partial)
        raise
    finally:
        if bar is not None:
            bar.close()
    writer.close()
    summary = WriteSummary((ShardInfo(out, count, file_size(out), data_bytes),))
    if index:
        build_index(out)
    return summary


def _bar(progress: bool | None) -> Any:
    import sys

    if progress is False or (progress is None and not sys.stderr.isatty()):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        if progress:
            from ..errors import OptionalDependencyError

            raise OptionalDependencyError("tqdm", "progress", "Progress bars") from None
        return None
    return tqdm(unit=" rec", unit_scale=True, desc="writing")
