"""Propose a FeaturesDict from the records of anything a dataset reads (data layer).

:func:`infer_features` takes the sources of :class:`~tfrec.TFRecordDataset`:
paths, globs, brace patterns, directories and ``scheme://`` URLs (fsspec,
``storage_options=``), or a list of them, each file's compression inferred
from its suffix; or an iterable of serialized Examples. It is the one public
``infer_features``. The sample is read file after file, in the order of
:func:`~tfrec.data.expand_paths`, and looked at by the features layer's
:class:`~tfrec.features.infer.RecordSurvey`.

Example:
    >>> features = tfrec.infer_features("data/train-*.tfrecord.gz", sample=1000)
    >>> print(tfrec.features.describe_features(features))
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..features import FeaturesDict
from ..features.infer import INFER_SAMPLE, RecordSurvey, check_records_source
from .paths import expand_paths
from .pipeline.interleave import ReadOptions

__all__ = ["infer_features"]

Source = str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | Iterable[bytes]


def infer_features(
    source: Source,
    *,
    sample: int | None = INFER_SAMPLE,
    compression: str | None = "auto",
    storage_options: Mapping[str, Any] | None = None,
) -> FeaturesDict:
    """Propose a FeaturesDict that reads the tf.train.Example records of ``source``.

    Per key: int64/float values give ``Tensor(shape=())`` when every record has
    one value, ``(n,)`` when always ``n``, ``(None,)`` when counts vary or the
    key is missing in some records; single UTF-8 bytes values give ``Text()``,
    single PNG/JPEG values ``Image``, other bytes ``Tensor(dtype=str)``. Keys
    with ``/`` become nested dicts; ``k/ragged_flat_values`` +
    ``k/ragged_row_lengths_0`` become ``Sequence(Sequence(...))`` under ``k`` (one more
    ``Sequence`` for each further ``ragged_row_lengths_{i}``).
    A key that never holds a kind (only empty Features) is left out: its dtype
    is unknown. The proposal is a starting point: check it (ClassLabels,
    ``encoding="bytes"`` tensors and fixed image sizes are not guessed).

    Args:
        source: a path, glob, brace pattern (``{00000..00015}``), directory or
            URL, or a list of them (see :func:`tfrec.data.expand_paths`); or an
            iterable of serialized Examples.
        sample: how many records to read, from the first file on (``None``: all).
        compression: ``"auto"`` (from each file's suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        storage_options: passed to fsspec for URLs.

    Raises:
        MissingFileError: a pattern matched no file.
        DecodeError: a record is not a tf.train.Example (names the file and record number).
        SchemaError: a key holds different kinds of lists in different records.
        RecordError: a record is damaged (names the file, record number and offset).
        InvalidArgumentError: ``source`` is neither paths nor records (one record
            alone, say), or ``sample`` is below 1.

    Example:
        >>> features = tfrec.infer_features(["data/train/", "s3://bucket/extra/*.tfrecord"], sample=500)
        >>> features = tfrec.infer_features([tfrec.encode_example({"id": 1})])
    """
    survey = RecordSurvey(sample)
    paths, records = _paths_or_records(source)
    if records is not None:
        survey.add(records, "<records>")
        return survey.features()
    options = ReadOptions(compression, storage_options=storage_options)
    for path in expand_paths(paths, storage_options=storage_options):
        if survey.full:
            break
        reader, stream = options.open(path)
        try:
            survey.add(reader, path)
        finally:
            reader.close()
            if stream is not None:
                stream.close()
    return survey.features()


def _paths_or_records(source: Source) -> tuple[Any, Iterable[bytes] | None]:
    """``(paths, None)`` when ``source`` names files, else ``(None, records)``; looks at the first item."""
    if isinstance(source, (str, os.PathLike)):
        return source, None
    items = iter(check_records_source(source))
    first = next(items, _EMPTY)
    if first is _EMPTY:
        return None, ()
    if isinstance(first, (str, os.PathLike)):
        return itertools.chain([first], items), None
    return None, itertools.chain([first], items)


_EMPTY: Any = object()
