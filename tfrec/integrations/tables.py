"""Arrow-backed tables in and out: DataFrames, Arrow tables and Hugging Face datasets (integration layer).

In: :func:`arrow_table_columns` is the reader :func:`~tfrec.write_dataset` uses for pyarrow Tables,
RecordBatches and RecordBatch streams (a ``RecordBatchReader``, a list of RecordBatches, anything
with ``__arrow_c_stream__``), pandas DataFrames (the index is not written: ``reset_index()`` keeps
it) and Hugging Face ``datasets.Dataset`` (its Arrow table, never a dict per row). The data layer
may not import this layer, so ``tfrec/__init__.py`` registers the reader
(:func:`tfrec.data.writing.tables.register_table_reader`). Every input becomes Arrow record
batches, sliced into batches of rows whose columns go to the column encoder as numpy arrays
(:func:`tfrec.integrations.arrow.arrow_columns`). Struct columns nest (``a/b``), dictionary
(categorical) columns are written as their values.

Features not given come from the Arrow schema (:func:`tfrec.integrations.arrow.features_from_arrow`).
Nulls follow the JSON Lines converter's rule: a column holding a null (anywhere in a table; in the
first batch of a stream) is declared so that it may be missing (a number as
``Tensor(shape=(None,))``, 0 or 1 values; a text as ``Sequence(Text())``; a list as it is) and a null
is stored as no value, read back as an empty list.

Out: :func:`read_arrow` decodes shards into one pyarrow Table through the batched decoder.

Example:
    >>> tfrec.write_dataset(df, "out/wine/train", num_shards=2)
    >>> tfrec.read_arrow("out/wine/train-*.tfrecord").to_pandas()
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..data import expand_paths
from ..data.writing.tables import TableColumns, batch_rows, check_column_names, feature_leaves
from ..errors import OptionalDependencyError, SchemaError
from ..features import FeatureConnector, FeaturesDict, Tensor
from ..features import Sequence as SequenceFeature
from ..record import read_batches

__all__ = ["arrow_table_columns", "read_arrow"]


def _is_table(data: Any) -> bool:
    """Whether ``data`` looks like a table this module reads, without importing anything."""
    root = type(data).__module__.split(".")[0]
    if root == "pyarrow":
        return hasattr(data, "schema")  # a Table, RecordBatch or RecordBatchReader
    if root == "pandas":
        return hasattr(data, "columns")  # a DataFrame, not a Series
    if root == "datasets":
        return hasattr(data, "with_format") and hasattr(data, "data")  # a Dataset (Arrow-backed)
    if root == "polars" and callable(getattr(data, "to_arrow", None)):
        return True
    if hasattr(data, "__arrow_c_stream__"):
        return True
    return (
        isinstance(data, (list, tuple))
        and bool(data)
        and type(data[0]).__module__.split(".")[0] == "pyarrow"
        and hasattr(data[0], "schema")
    )


def _pyarrow(what: str, extra: str = "arrow") -> Any:
    try:
        import pyarrow
    except ImportError:
        raise OptionalDependencyError("pyarrow", extra, what) from None
    return pyarrow


def _source(data: Any) -> tuple[Any, int | None]:
    """``data`` as ``(a pyarrow Table or RecordBatchReader, its row count when known)``."""
    module = type(data).__module__.split(".")[0]
    extra = {"pandas": "pandas", "datasets": "datasets"}.get(module, "arrow")
    pa = _pyarrow(f"Writing a {type(data).__name__}", extra)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif isinstance(data, (list, tuple)):
        data = pa.Table.from_batches(list(data))
    elif module == "datasets":
        data = data.with_format("arrow")[:]  # its selection and order (indices), as a pyarrow Table
    elif module == "pandas":
        check_column_names(list(data.columns))  # before pyarrow turns names into strings
        data = pa.Table.from_pandas(data, preserve_index=False)
    elif module == "polars":
        data = data.to_arrow()
    elif not isinstance(data, (pa.Table, pa.RecordBatchReader)) and hasattr(data, "__arrow_c_stream__"):
        if not hasattr(pa.RecordBatchReader, "from_stream"):
            raise SchemaError(f"reading a {type(data).__name__} (__arrow_c_stream__) needs pyarrow >= 15")
        data = pa.RecordBatchReader.from_stream(data)
    if isinstance(data, pa.Table):
        return data, data.num_rows
    if isinstance(data, pa.RecordBatchReader):
        return data, None
    raise SchemaError(f"{type(data).__name__} is not a table tfrec can write; pass a pyarrow Table")


def _plain(batch: Any) -> Any:
    """``batch`` (a Table or RecordBatch) with structs as ``a/b`` columns and dictionaries decoded."""
    pa = _pyarrow("Reading tables")
    names: list[str] = []
    arrays: list[Any] = []

    def add(name: str, array: Any) -> None:
        if pa.types.is_struct(array.type):
            for field, child in zip(array.type, array.flatten(), strict=True):
                add(f"{name}/{field.name}", child)
            return
        if pa.types.is_dictionary(array.type):
            array = array.cast(array.type.value_type)
        names.append(name)
        arrays.append(array)

    for name, column in zip(batch.column_names, batch.columns, strict=True):
        add(name, column)
    return pa.Table.from_arrays(arrays, names=names)


def _may_be_missing(feature: FeatureConnector) -> bool:
    """Whether ``feature`` can hold no value (a null): a Sequence or a Tensor of varying length."""
    return isinstance(feature, SequenceFeature) or (
        isinstance(feature, Tensor) and bool(feature.shape) and feature.shape[0] is None
    )


def _batch_values(table: Any, leaves: Mapping[str, FeatureConnector], first_row: int) -> dict[str, Any]:
    """The columns of ``table`` (one batch of rows) as the column encoder takes them."""
    from .arrow import arrow_columns

    pa = _pyarrow("Reading tables")
    plain: list[str] = []
    odd: dict[str, Any] = {}
    for name in table.column_names:
        array = table.column(name).combine_chunks()
        feature = leaves.get(name)
        scalar = not pa.types.is_nested(array.type) and not isinstance(array.type, pa.ExtensionType)
        wrap = scalar and feature is not None and _may_be_missing(feature)  # one value as a list of one
        if array.null_count and feature is not None and not _may_be_missing(feature):
            row = first_row + int(array.is_null().to_numpy(zero_copy_only=False).argmax())
            raise SchemaError(
                f"column {name!r}, row {row}: null, and its feature {feature!r} cannot be missing; "
                "declare it so that it may (Tensor(shape=(None,)) holds 0 or 1 values; "
                "Sequence(Text()) for text), or fill the nulls"
            )
        if array.null_count or (wrap and not _is_number(array.type)):
            values = array.to_pylist()
            wrapped = [[] if v is None else [v] for v in values] if wrap else None
            odd[name] = wrapped if wrapped is not None else [[] if v is None else v for v in values]
        elif wrap:  # numbers, none missing here: one value each, as a (rows, 1) array
            odd[name] = array.to_numpy(zero_copy_only=False).reshape(-1, 1)
        elif (even := _even_lists(array)) is not None:
            odd[name] = even
        else:
            plain.append(name)
    out = arrow_columns(table.select(plain))
    out.update(odd)
    return out


def _is_number(kind: Any) -> bool:
    pa = _pyarrow("Reading tables")
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind))


def _even_lists(array: Any) -> np.ndarray | None:
    """A list column of numbers whose rows all have one length as a ``(rows, length)`` array (the
    column encoder takes it whole, as a fixed shape); None for any other column."""
    pa = _pyarrow("Reading tables")
    kind = array.type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) or not _is_number(kind.value_type):
        return None
    lengths = np.diff(array.offsets.to_numpy())
    if not len(lengths) or (lengths != lengths[0]).any():
        return None
    flat = array.flatten()
    if flat.null_count:
        return None
    return flat.to_numpy(zero_copy_only=False).reshape(len(array), int(lengths[0]))


def arrow_table_columns(data: Any, features: FeaturesDict | None) -> TableColumns | None:
    """An Arrow-backed table as batches of columns (``None`` for anything else): the reader
    :func:`~tfrec.write_dataset` asks for tables (registered by ``tfrec/__init__.py``).

    Raises:
        SchemaError: a column name breaks the naming rule, or no feature can be inferred.
        OptionalDependencyError: pyarrow is not installed.

    Example:
        >>> table = arrow_table_columns(pa.table({"id": [1, 2]}), None)
        >>> table.features, table.rows
        (FeaturesDict({'id': Tensor(shape=(), dtype=int64)}), 2)
    """
    if not _is_table(data):
        return None
    source, rows = _source(data)  # first: its message names the extra for this kind of table
    from .arrow import features_from_arrow

    if rows is not None:  # a whole table: nulls counted over every row
        table = _plain(source)
        schema, nulls = table.schema, _null_columns(table)
        step = batch_rows(table.nbytes / max(rows, 1))
        pieces: Iterable[Any] = (table.slice(start, step) for start in range(0, rows, step))
    else:  # a stream: nulls seen in its first batch
        first = next(iter(source), None)
        if first is None:
            raise SchemaError("the RecordBatch stream holds no batch: nothing to infer features from")
        head = _plain(first)
        schema, nulls = head.schema, _null_columns(head)
        step = batch_rows(head.nbytes / max(head.num_rows, 1))
        pieces = _sliced(head, source, step)
    check_column_names(schema.names)
    if features is None:
        features = features_from_arrow(schema, nullable=nulls)
    leaves = dict(feature_leaves(features))

    def batches() -> Iterator[dict[str, Any]]:
        row = 0
        for piece in pieces:
            yield _batch_values(piece, leaves, row)
            row += piece.num_rows

    return TableColumns(features, batches(), rows)


def _null_columns(table: Any) -> set[str]:
    return {name for name, column in zip(table.column_names, table.columns, strict=True) if column.null_count}


def _sliced(head: Any, rest: Iterable[Any], step: int) -> Iterator[Any]:
    """The stream's batches (the first already read) in pieces of at most ``step`` rows."""
    yield from (head.slice(start, step) for start in range(0, head.num_rows, step))
    for batch in rest:
        table = _plain(batch)
        yield from (table.slice(start, step) for start in range(0, table.num_rows, step))


def read_arrow(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    features: FeaturesDict | Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    *,
    compression: str | None = "auto",
    batch_size: int = 4096,
) -> Any:
    """TFRecord files as one pyarrow Table, decoded a batch of records at a time.

    ``.to_pandas()`` makes it a DataFrame and ``datasets.Dataset(table)`` a Hugging Face dataset.

    Args:
        paths: files, globs, brace patterns or directories (as for ``TFRecordDataset``).
        features: a FeaturesDict (columns are its values, nested names joined by ``/``) or a
            tf.io-style spec; None: the ``features.json`` beside the files (as ``write_dataset``
            saves it), else features inferred from the first records.
        columns: the columns to decode (nothing else is); None: every one.
        compression: ``"auto"`` (from the suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        batch_size: records decoded together.

    Returns:
        A ``pyarrow.Table``: numbers as int64/float32/..., text as string, bytes as binary,
        fixed shapes as fixed-size lists, varying ones as lists (a missing value: an empty list).

    Raises:
        OptionalDependencyError: pyarrow is not installed.
        SchemaError: a column is not in the features.

    Example:
        >>> table = tfrec.read_arrow("out/wine/train-*.tfrecord")
        >>> df = table.to_pandas()
    """
    pa = _pyarrow("tfrec.read_arrow")
    from .arrow import ArrowDecoder, saved_or_inferred_features

    files = expand_paths(paths)
    if features is None:
        features = saved_or_inferred_features(files, None, compression)
    decoder = ArrowDecoder(features, columns)
    tables = [
        decoder.decode(batch) for path in files for batch in read_batches(path, batch_size, compression)
    ]
    return pa.concat_tables(tables) if tables else decoder.schema().empty_table()
