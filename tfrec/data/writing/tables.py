"""Tables as :func:`~tfrec.write_dataset`'s input, written column by column (data layer).

A table is never turned into one dict per row: its rows are taken a batch at a time (a slice of
every column) and each batch is encoded by the features' column encoder
(:func:`~tfrec.features.serializer.compile_column_encoder`), numpy columns as they are.

Two kinds of table reach here:

* a dict of numpy arrays, the first axis being the record (read here: numpy is all it needs);
* Arrow-backed tables (pyarrow Tables and RecordBatch streams, pandas DataFrames, Hugging Face
  datasets), read by :mod:`tfrec.integrations.tables`. The data layer may not import the
  integrations, so that module hands its reader to :func:`register_table_reader` when
  ``tfrec`` is imported, and :func:`table_records` asks each registered reader in turn.

Column names are feature names as ``tfrec convert`` takes them from a CSV header: kept as
written (spaces, dots, any character), a ``/`` nests (``od280/od315`` is the feature ``od280``
holding ``od315``), and an empty name or part, a name given twice or a name that is both a value
and a group is a SchemaError naming the column.

Example:
    >>> tfrec.write_dataset({"id": np.arange(3), "emb": np.ones((3, 4), np.float32)}, "out/train",
    ...                     num_shards=1)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import SchemaError
from ...features import FeatureConnector, FeaturesDict, Tensor, Text
from ...features.infer import nest_features
from ...features.serializer import compile_column_encoder
from ...features.values import EXACT_FLOATS
from .chunks import CHUNK_BYTES

__all__ = [
    "BATCH_ROWS",
    "EncodedTable",
    "TableColumns",
    "TableReader",
    "batch_rows",
    "check_column_names",
    "feature_leaves",
    "numpy_features",
    "register_table_reader",
    "table_records",
]

BATCH_ROWS = 8192  # rows encoded together at most (fewer when rows are large: CHUNK_BYTES bounds a batch)
_OBJECT_BYTES = 64  # the guessed size of one str or bytes value, to size batches


@dataclass(frozen=True)
class TableColumns:
    """A table ready to write: its features and its rows as batches of columns.

    Attributes:
        features: the features that store the rows (given, or inferred from the table).
        batches: each a mapping of feature name (``a/b`` for a nested one) to the values of
            the batch's rows: a numpy array (first axis the row) or a list of per-row values.
        rows: the number of rows, when known before reading them.
    """

    features: FeaturesDict
    batches: Iterable[Mapping[str, Any]]
    rows: int | None = None


TableReader = Callable[[Any, "FeaturesDict | None"], "TableColumns | None"]
_READERS: list[TableReader] = []


def register_table_reader(reader: TableReader) -> None:
    """Let :func:`table_records` read another kind of table: ``reader(data, features)`` returns a
    :class:`TableColumns`, or None for data that is not its kind of table.

    Example:
        >>> register_table_reader(arrow_table_columns)   # tfrec/__init__.py does this
    """
    if reader not in _READERS:
        _READERS.append(reader)


@dataclass(frozen=True)
class EncodedTable:
    """A table's records, encoded a batch of rows at a time.

    Attributes:
        features: the features that stored them (given, or inferred from the table).
        chunks: the Example bytes of each batch of rows, in order (lazily encoded): a list, or
            with ``framed=True`` their TFRecord frames in one buffer (:class:`Frames`).
        rows: the number of rows, when known before reading them.
    """

    features: FeaturesDict
    chunks: Iterable[Sequence[bytes]]
    rows: int | None


def table_records(data: Any, features: FeaturesDict | None, *, framed: bool = False) -> EncodedTable | None:
    """``data``'s records when it is a table, encoded column by column; None when it is not.

    ``features`` None: inferred from the table's columns. ``framed``: each batch's records as their
    frames, in one buffer, for a writer (no bytes object per record).

    Raises:
        SchemaError: a column name breaks the naming rule, a column has no feature (given
            features), or no feature can be inferred for it.
        OptionalDependencyError: the table needs a package that is not installed.

    Example:
        >>> table = table_records({"id": np.arange(3)}, None)
        >>> [len(records) for records in table.chunks]
        [3]
    """
    table = numpy_columns(data, features)
    for reader in _READERS:
        if table is not None:
            break
        table = reader(data, features)
    if table is None:
        return None
    encode = compile_column_encoder(table.features, exact_floats=table.features.exact_floats, framed=framed)
    names = {name for name, _ in feature_leaves(table.features)}
    exact = table.features.exact_floats

    def chunks(batches: Iterable[Mapping[str, Any]]) -> Iterator[Sequence[bytes]]:
        for batch in batches:
            extra = sorted(set(batch) - names)
            if extra:
                raise SchemaError(
                    f"columns {extra} have no feature; the features hold {sorted(names)} "
                    "(drop the columns, or give features that hold them)"
                )
            count = len(next(iter(batch.values()), ()))
            token = EXACT_FLOATS.set(True) if exact else None  # read by the Tensors' reference path
            try:
                yield encode(batch, count)
            finally:
                if token is not None:
                    EXACT_FLOATS.reset(token)

    return EncodedTable(table.features, chunks(table.batches), table.rows)


def feature_leaves(features: FeatureConnector, prefix: str = "") -> Iterator[tuple[str, FeatureConnector]]:
    """The columns ``features`` stores: ``(name, feature)`` of its leaves, nested names joined by ``/``.

    Example:
        >>> [name for name, _ in feature_leaves(FeaturesDict({"id": np.int64, "meta": {"lang": Text()}}))]
        ['id', 'meta/lang']
    """
    children = None if features.custom else features.children()
    if children is None:
        yield prefix, features
        return
    for name, child in children.items():
        yield from feature_leaves(child, f"{prefix}/{name}" if prefix else name)


def check_column_names(names: Sequence[Any]) -> None:
    """Refuse column names that do not make features: not a string, empty (or an empty part between
    ``/``), given twice, or both a value and a group (``a`` and ``a/b``).

    Example:
        >>> check_column_names(["alcohol", "od280/od315_of_diluted_wines"])
    """
    seen: set[str] = set()
    for number, name in enumerate(names, 1):
        if not isinstance(name, str):
            raise SchemaError(f"column {number} is named {name!r}; name columns with strings")
        if not name or any(not part for part in name.split("/")):
            raise SchemaError(f"column {number} has an empty name{f' ({name!r})' if name else ''}; name it")
        if name in seen:
            raise SchemaError(f"column name {name!r} is given twice; names must be unique")
        seen.add(name)
    for name in names:
        parts = name.split("/")
        for end in range(1, len(parts)):
            if "/".join(parts[:end]) in seen:
                raise SchemaError(
                    f"column {'/'.join(parts[:end])!r} is a value and also a group of {name!r} "
                    "('/' nests, as in tensorflow_datasets); rename one of them"
                )


def batch_rows(row_bytes: float) -> int:
    """How many rows of ``row_bytes`` each to encode together: up to :data:`BATCH_ROWS`, and
    about :data:`~tfrec.data.writing.chunks.CHUNK_BYTES` of values."""
    return max(1, min(BATCH_ROWS, int(CHUNK_BYTES // max(row_bytes, 1))))


# -- numpy columns -------------------------------------------------------------------------------------


def numpy_columns(data: Any, features: FeaturesDict | None) -> TableColumns | None:
    """A dict of numpy arrays of one length as a table; None for anything else."""
    if not isinstance(data, Mapping) or not data:
        return None
    if not all(isinstance(value, np.ndarray) and value.ndim >= 1 for value in data.values()):
        return None
    names = list(data)
    check_column_names(names)
    lengths = {name: len(value) for name, value in data.items()}
    if len(set(lengths.values())) > 1:
        raise SchemaError(f"numpy columns differ in length (the first axis is the record): {lengths}")
    rows = next(iter(lengths.values()))
    features = numpy_features(data) if features is None else features
    row_bytes = sum(
        math.prod(value.shape[1:]) * (_OBJECT_BYTES if value.dtype.kind in "OUS" else value.itemsize)
        for value in data.values()
    )
    step = batch_rows(row_bytes)

    def batches() -> Iterator[dict[str, Any]]:
        for start in range(0, rows, step):
            # str and bytes as Python values: the text and bytes columns take lists of them whole
            yield {
                name: value[start : start + step].tolist()
                if value.dtype.kind in "OUS"
                else value[start : start + step]
                for name, value in data.items()
            }

    return TableColumns(features, batches(), rows)


def numpy_features(columns: Mapping[str, np.ndarray]) -> FeaturesDict:
    """Features for numpy columns: numbers as Tensors of the per-row shape and the array's dtype,
    strings (``str`` or ``U`` arrays) as ``Text``, bytes as ``Tensor(shape=(), dtype=str)``.

    Raises:
        SchemaError: a column of strings with more than one axis, or of other Python objects.

    Example:
        >>> numpy_features({"image": np.zeros((10, 8, 8)), "label": np.arange(10)})
        FeaturesDict({'image': Tensor(shape=(8, 8), dtype=float64), 'label': Tensor(shape=(), dtype=int64)})
    """
    return nest_features({name: _numpy_feature(name, value) for name, value in columns.items()})


def _numpy_feature(name: str, values: np.ndarray) -> FeatureConnector:
    kind = values.dtype.kind
    if kind in "biuf":
        return Tensor(shape=values.shape[1:], dtype=values.dtype)
    first = next(itertools.islice(values.flat, 1), None) if kind == "O" else None
    if kind in "OUS" and values.ndim == 1:
        if kind == "U" or isinstance(first, str):
            return Text()
        if kind == "S" or isinstance(first, bytes):
            return Tensor(shape=(), dtype=str)
    raise SchemaError(
        f"column {name!r}: no feature is inferred for a numpy array of {values.dtype} and shape "
        f"{values.shape}; give the features"
    )
