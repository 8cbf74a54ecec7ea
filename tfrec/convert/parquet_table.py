"""Parquet files -> samples, one per row (convert layer).

Rows are read a record batch at a time (``pyarrow``, ``pip install 'tfrec[parquet]'``, imported
only here) and typed as JSON Lines are (:func:`tfrec.convert.jsonl.samples_from_objects`): integers
-> int64, floats -> float32, strings -> Text, binary -> bytes, lists -> Tensors of unknown length,
structs -> nested features; a column that is null in one of the first ``sample`` rows is declared
so that it may be missing. Column names follow :mod:`tfrec.convert.names` (a ``/`` nests).

Example:
    >>> samples = read_parquet("wine.parquet")
    >>> samples.features["alcohol"]
    Tensor(shape=(), dtype=float32)
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

from ..errors import ConvertError, OptionalDependencyError
from .jsonl import samples_from_objects
from .samples import Samples

__all__ = ["read_parquet"]


def _rows(path: str, batch_rows: int) -> Generator[tuple[int, dict[str, Any]], None, None]:
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ConvertError(f"not a Parquet file: {exc}", path=path) from None
    number = 0
    with file:
        for batch in file.iter_batches(batch_size=batch_rows):
            for row in batch.to_pylist():
                number += 1
                yield number, row


def read_parquet(source: str | os.PathLike[str], *, sample: int = 1000, batch_rows: int = 4096) -> Samples:
    """Samples of a Parquet file, one per row: ``{column: value}``.

    Raises:
        OptionalDependencyError: pyarrow is not installed.
        ConvertError: not a Parquet file, or a value does not fit (names the row, 1 = the first).

    Example:
        >>> next(iter(read_parquet("wine.parquet")))["alcohol"]
        14.23
    """
    try:
        import pyarrow.parquet  # noqa: F401 (checked here: the message names the extra)
    except ImportError:
        raise OptionalDependencyError("pyarrow", "parquet", "Reading Parquet") from None
    path = os.fspath(source)
    if not os.path.exists(path):
        raise ConvertError("no such file", path=path)
    return samples_from_objects(_rows(path, batch_rows), path, sample=sample, unit="row")
