"""Decoded TFRecord batches as Arrow tables, and Arrow tables back as samples (integration layer).

Shared by the engine integrations (:mod:`tfrec.ray`, :mod:`tfrec.dask`). Every column gets its
Arrow type from the declared schema (a tf.io-style spec or a FeaturesDict), never from the values of
one batch, so all blocks of a dataset agree:

============================  ==========================================================
declared                      Arrow
============================  ==========================================================
scalar int / float / bool     int64, float32, ... (numpy's own dtype)
string (bytes)                binary
``Text``                      string (UTF-8)
fixed shape ``(2, 3)``        a tensor (``make_tensor``, e.g. Ray's tensor extension type),
                              or ``fixed_size_list<fixed_size_list<T, 3>, 2>``
a ``None`` dimension          ``list<...>`` at that dimension
============================  ==========================================================

Example:
    >>> decoder = ArrowDecoder({"label": tfrec.FixedLenFeature([], tfrec.int64)})
    >>> for batch in tfrec.read_batches("train.tfrecord", 4096):
    ...     table = decoder.decode(batch)
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, cast

import numpy as np

from ..data import infer_features, open_binary
from ..data.paths import is_url
from ..data.writing.tables import table_records
from ..errors import OptionalDependencyError, SchemaError, TfrecError
from ..example import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedArray,
    RaggedFeature,
    SparseArray,
    VarLenFeature,
    parse_example,
)
from ..features import (
    FEATURES_FILE,
    INFER_SAMPLE,
    ClassLabel,
    FeatureConnector,
    FeaturesDict,
    Image,
    Tensor,
    Text,
)
from ..features import Sequence as SequenceFeature
from ..features.infer import nest_features
from ..record import RecordBatch, RecordReader, resolve_compression
from ..record.frame import FRAMING

try:
    import pyarrow as pa
except ImportError:  # pragma: no cover - exercised only without pyarrow
    raise OptionalDependencyError("pyarrow", "arrow", "tfrec.arrow") from None

__all__ = [
    "BATCH_SIZE",
    "ArrowDecoder",
    "ColumnType",
    "NamedStream",
    "arrow_columns",
    "arrow_filesystem",
    "column_types",
    "features_from_arrow",
    "flatten",
    "record_offsets",
    "rows",
    "saved_or_inferred_features",
    "schema_of",
    "serialize_table",
    "stored_column_types",
    "to_arrow",
    "unflatten",
]

Spec = Mapping[str, Any]
MakeTensor = Callable[[np.ndarray], "pa.Array"]  # [n, *shape] numeric -> one Arrow array
BATCH_SIZE = 4096  # records the engines decode into one Arrow table at a time
INFER_FILES = 8  # the INFER_SAMPLE records that infer a schema are spread over this many first files


@dataclass(frozen=True)
class ColumnType:
    """What one output column holds per record.

    Attributes:
        shape: the per-record shape; ``None`` for a dimension whose size varies.
        dtype: numpy dtype of the values; ``object`` for bytes and text.
        text: values are ``str`` (a ``Text`` feature) rather than bytes.
    """

    shape: tuple[int | None, ...]
    dtype: np.dtype
    text: bool = False

    @property
    def fixed_tensor(self) -> bool:
        """Whether values are numeric arrays of one fixed shape (rank >= 1)."""
        return bool(self.shape) and None not in self.shape and self.dtype.kind != "O"

    def value_type(self) -> pa.DataType:
        """The Arrow type of one value (the innermost elements)."""
        if self.dtype.kind == "O":
            return pa.string() if self.text else pa.binary()
        return pa.from_numpy_dtype(self.dtype)

    def arrow_type(self) -> pa.DataType:
        """The column's Arrow type without tensor extension types (nested fixed-size lists)."""
        arrow = self.value_type()
        for size in reversed(self.shape):
            arrow = pa.list_(arrow) if size is None else pa.list_(arrow, size)
        return arrow


# -- column types from the declared schema -----------------------------------------------------------


def _spec_type(key: str, entry: Any) -> ColumnType:
    if isinstance(entry, FixedLenFeature):
        return ColumnType(tuple(entry.shape), np.dtype(entry.dtype))
    if isinstance(entry, VarLenFeature):
        return ColumnType((None,), np.dtype(entry.dtype))
    if isinstance(entry, FixedLenSequenceFeature):
        return ColumnType((None, *entry.shape), np.dtype(entry.dtype))
    if isinstance(entry, RaggedFeature):
        return ColumnType((None,) * (1 + len(entry.partitions)), np.dtype(entry.dtype))
    raise SchemaError(
        f"{key}: {type(entry).__name__} has no Arrow column form; "
        "read the values with VarLenFeature (and the indices as their own column)"
    )


def _connector_types(
    feature: FeatureConnector, name: str, outer: tuple[int | None, ...]
) -> Iterator[tuple[str, ColumnType]]:
    """The output columns of ``feature`` as deserialize_batch decodes it, nested names joined by "/"."""
    if isinstance(feature, FeaturesDict):
        for key, child in feature.features.items():
            yield from _connector_types(child, f"{name}/{key}" if name else key, outer)
    elif isinstance(feature, SequenceFeature):
        yield from _connector_types(feature.feature, name, (*outer, feature.length))
    elif isinstance(feature, Text):
        yield name, ColumnType(outer, np.dtype(object), text=True)
    elif isinstance(feature, ClassLabel):
        yield name, ColumnType(outer, np.dtype(np.int64))
    elif isinstance(feature, (Tensor, Image)):
        yield name, ColumnType((*outer, *feature.shape), np.dtype(feature.dtype))
    else:
        raise SchemaError(f"{name}: {type(feature).__name__} has no Arrow column form")


def column_types(features: FeaturesDict | Spec) -> dict[str, ColumnType]:
    """The output columns of a FeaturesDict (decoded values) or a tf.io-style spec, with their types.

    Example:
        >>> column_types({"emb": tfrec.FixedLenFeature([4], tfrec.float32)})
        {'emb': ColumnType(shape=(4,), dtype=dtype('float32'), text=False)}
    """
    if isinstance(features, FeaturesDict):
        return dict(_connector_types(features, "", ()))
    return {key: _spec_type(key, entry) for key, entry in features.items()}


def schema_of(columns: Mapping[str, ColumnType]) -> pa.Schema:
    """The Arrow schema of ``columns`` (fixed-size lists for tensors).

    Example:
        >>> schema_of(column_types({"id": tfrec.FixedLenFeature([], tfrec.int64)}))
        id: int64
    """
    return pa.schema([(name, column.arrow_type()) for name, column in columns.items()])


def _text_keys(feature: FeatureConnector, prefix: str) -> Iterator[str]:
    if isinstance(feature, Text):
        yield prefix
    if isinstance(feature, SequenceFeature):  # a list of texts is stored under the same key: strings too
        yield from _text_keys(feature.feature, prefix)
    for name, child in (feature.children() or {}).items():
        yield from _text_keys(child, f"{prefix}/{name}" if prefix else name)


def stored_column_types(features: FeaturesDict) -> dict[str, ColumnType]:
    """The stored (flat) keys of ``features`` as columns of the values ``tfrec.decode_example`` gives.

    A scalar stays a scalar and a fixed shape ``(n,)`` a fixed-size list; every other shape is
    stored flat, so it is a list of any length. The columns of Parquet export.

    Example:
        >>> stored_column_types(FeaturesDict({"mat": Tensor(shape=(2, 3), dtype=np.int64)}))
        {'mat': ColumnType(shape=(None,), dtype=dtype('int64'), text=False)}
    """
    text = set(_text_keys(features, ""))
    columns = {}
    for key, spec in features.parse_spec().items():
        fixed = isinstance(spec, FixedLenFeature) and len(spec.shape) <= 1
        shape = tuple(spec.shape) if fixed else (None,)
        columns[key] = ColumnType(shape, np.dtype(spec.dtype), text=key in text)
    return columns


def _project_features(features: FeaturesDict, names: Sequence[str], prefix: str = "") -> FeaturesDict:
    """The part of ``features`` that produces the columns ``names`` (and nothing else)."""
    chosen: dict[str, FeatureConnector] = {}
    for key, child in features.features.items():
        path = f"{prefix}{key}"
        if path in names:
            chosen[key] = child
        elif isinstance(child, FeaturesDict) and any(n.startswith(path + "/") for n in names):
            chosen[key] = _project_features(child, names, path + "/")
    return FeaturesDict(chosen)


# -- values -> Arrow ---------------------------------------------------------------------------------


def _levels(value: Any) -> tuple[np.ndarray, list[tuple[bool, Any]]]:
    """Flat values and the per-record dimensions, outermost first: ``(True, row_splits)`` for a
    varying one, ``(False, size)`` for a fixed one."""
    if isinstance(value, RaggedArray):
        flat, inner = _levels(value.values)
        return flat, [(True, np.asarray(value.row_splits, np.int64)), *inner]
    if isinstance(value, SparseArray):
        if len(value.dense_shape) != 2:
            raise SchemaError(f"a sparse value of rank {len(value.dense_shape)} has no list form")
        rows = int(value.dense_shape[0])
        counts = np.bincount(value.indices[:, 0], minlength=rows) if len(value.values) else np.zeros(rows)
        splits = np.zeros(rows + 1, np.int64)
        np.cumsum(counts, out=splits[1:])
        return np.asarray(value.values), [(True, splits)]
    array = np.asarray(value)
    return array.reshape(-1), [(False, size) for size in array.shape[1:]]


def _flat_array(flat: np.ndarray, column: ColumnType) -> pa.Array:
    if column.dtype.kind == "O":
        return pa.array(flat.tolist(), type=column.value_type())
    return pa.array(np.ascontiguousarray(flat, dtype=column.dtype))


def to_arrow(value: Any, column: ColumnType, name: str, *, make_tensor: MakeTensor | None = None) -> pa.Array:
    """One decoded column (numpy array, RaggedArray or SparseArray; batch first) as an Arrow array.

    A fixed-shape numeric column goes through ``make_tensor`` when given; varying dimensions become
    lists even when every record of this batch happens to have the same length.

    Raises:
        SchemaError: the values do not have the declared rank, or a fixed dimension varies.
    """
    if (
        isinstance(value, np.ndarray)
        and value.dtype.kind == "O"
        and column.dtype.kind != "O"
        and value.ndim == 1
    ):
        # one array per record (several unknown dimensions): Arrow walks the nested lists
        return pa.array([np.asarray(item).tolist() for item in value], type=column.arrow_type())
    if make_tensor is not None and column.fixed_tensor and isinstance(value, np.ndarray):
        return make_tensor(np.ascontiguousarray(value, dtype=column.dtype))
    flat, levels = _levels(value)
    if len(levels) != len(column.shape):
        raise SchemaError(f"{name}: values of rank {len(levels)} per record, expected shape {column.shape}")
    count = int(value.dense_shape[0]) if isinstance(value, SparseArray) else len(value)
    resolved: list[tuple[bool, Any]] = []
    for (varies, size), declared in zip(levels, column.shape, strict=True):
        if declared is None and not varies:  # an even batch of a varying dimension: still a list
            splits = np.arange(count + 1, dtype=np.int64) * size
            resolved.append((True, splits))
            count = int(splits[-1])
        elif declared is not None and varies:
            lengths = np.diff(size)
            if lengths.size and not np.all(lengths == declared):
                raise SchemaError(
                    f"{name}: a dimension declared {declared} holds {sorted(set(lengths.tolist()))}"
                )
            resolved.append((False, declared))
            count = len(lengths) * declared
        else:
            resolved.append((varies, size))
            count = int(size[-1]) if varies else count * size
    array = _flat_array(flat, column)
    for varies, size in reversed(resolved):
        if varies:
            splits = np.asarray(size)
            offsets = pa.array(splits - splits[0], pa.int64() if splits[-1] >= 2**31 else pa.int32())
            lists = pa.LargeListArray if offsets.type == pa.int64() else pa.ListArray
            array = lists.from_arrays(offsets, array)
        else:
            array = pa.FixedSizeListArray.from_arrays(array, size)
    return array


def flatten(nested: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one dict with ``/``-joined keys."""
    out: dict[str, Any] = {}
    for key, value in nested.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "/"))
        else:
            out[name] = value
    return out


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``/``-joined keys back as nested dicts (the inverse of :func:`flatten`)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split("/")
        node = out
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    return out


def record_offsets(batch: RecordBatch) -> np.ndarray:
    """The byte offset of each record's frame in its file (records read in one run, no damage skipped)."""
    frames = batch.lengths + FRAMING
    return batch.end_offset - np.cumsum(frames[::-1])[::-1]


class ArrowDecoder:
    """Decodes RecordBatches of tf.train.Examples into Arrow tables of the asked columns only.

    Args:
        features: a FeaturesDict (columns are its decoded values, nested names joined by ``/``)
            or a tf.io-style spec (columns are its keys, values as ``tfrec.parse_example`` gives them).
        columns: the columns to produce; the spec or FeaturesDict is cut down to them before
            decoding, so nothing else is decoded. ``None``: every column.
        make_tensor: how a fixed-shape numeric column becomes an Arrow array (default: nested
            fixed-size lists).

    Raises:
        SchemaError: a column is not in the features.

    Example:
        >>> decoder = ArrowDecoder(features, columns=["label"])
        >>> decoder.decode(batch).column_names
        ['label']
    """

    def __init__(
        self,
        features: FeaturesDict | Spec,
        columns: Sequence[str] | None = None,
        *,
        make_tensor: MakeTensor | None = None,
    ) -> None:
        every = column_types(features)
        if columns is not None:
            if isinstance(columns, str):
                raise SchemaError(f"columns must be a list of names, not the string {columns!r}")
            missing = [name for name in columns if name not in every]
            if missing:
                raise SchemaError(f"columns {missing} are not in the features; they have {sorted(every)}")
        names = list(every) if columns is None else list(dict.fromkeys(columns))
        self.types = {name: every[name] for name in names}
        if isinstance(features, FeaturesDict):
            self._features: FeaturesDict | None = (
                features if columns is None else _project_features(features, names)
            )
            self._spec: dict[str, Any] | None = None
        else:
            self._features = None
            self._spec = {name: features[name] for name in names}
        self.make_tensor = make_tensor

    def schema(self) -> pa.Schema:
        """The Arrow schema of the tables (fixed-size lists for tensors)."""
        return schema_of(self.types)

    def columns(self, records: Sequence[bytes]) -> dict[str, Any]:
        """The decoded columns of ``records`` (numpy arrays, RaggedArray, SparseArray)."""
        if self._features is not None:
            return flatten(self._features.deserialize_batch(records))
        assert self._spec is not None
        return parse_example(records, self._spec)

    def decode(self, records: Sequence[bytes]) -> pa.Table:
        """``records`` as one Arrow table (a RecordBatch is read as it is, without copying records).

        A decoding error is noted with the file, the record number and its byte offset.
        """
        try:
            values = self.columns(records)
        except TfrecError as exc:
            if isinstance(records, RecordBatch) and hasattr(exc, "add_note"):
                exc.add_note(_where(records, getattr(exc, "index", None)))
            raise
        arrays = [
            to_arrow(values[name], column, name, make_tensor=self.make_tensor)
            for name, column in self.types.items()
        ]
        if not arrays:
            return pa.table({}).append_column("_", pa.nulls(len(records))).drop(["_"])
        return pa.Table.from_arrays(arrays, names=list(self.types))


def _where(batch: RecordBatch, index: int | None) -> str:
    path = os.fspath(batch.path) if batch.path is not None else "<stream>"
    if index is None or not 0 <= index < len(batch):
        last = batch.start_index + len(batch) - 1
        return f"tfrec: while decoding {path}, records {batch.start_index}..{last}"
    offset = int(record_offsets(batch)[index])
    return f"tfrec: while decoding {path}, record {batch.start_index + index} (frame at byte offset {offset})"


# -- files ---------------------------------------------------------------------------------------------


class NamedStream:
    """A binary stream that tells the reader its file name (so errors name the file)."""

    def __init__(self, stream: Any, name: str) -> None:
        self._stream = stream
        self.name = name

    def read(self, size: int = -1) -> bytes:
        return bytes(self._stream.read(size))

    def close(self) -> None:
        self._stream.close()


def arrow_filesystem(filesystem: Any) -> Any:
    """``filesystem`` as a ``pyarrow.fs.FileSystem`` (an fsspec filesystem is wrapped).

    Example:
        >>> arrow_filesystem(fsspec.filesystem("memory")).type_name
        'py::fsspec+memory'
    """
    import pyarrow.fs as pafs

    if isinstance(filesystem, pafs.FileSystem):
        return filesystem
    return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))


def _sample_records(path: str, filesystem: Any, compression: str | None, count: int) -> list[bytes]:
    codec = resolve_compression(compression, path)
    stream: IO[bytes] | Any
    if filesystem is not None:
        fs = arrow_filesystem(filesystem)
        stream = cast("IO[bytes]", NamedStream(fs.open_input_stream(path, compression=None), path))
    else:
        stream = open_binary(path)
    try:
        with RecordReader(stream, codec) as reader:
            return list(itertools.islice(reader, count))
    finally:
        stream.close()


def _sample(files: Sequence[str], filesystem: Any, compression: str | None) -> list[bytes]:
    """The first records of the first few files (one file alone may hold one kind of sample)."""
    chosen = files[:INFER_FILES]
    each = max(1, INFER_SAMPLE // len(chosen))
    return [record for path in chosen for record in _sample_records(path, filesystem, compression, each)]


def saved_or_inferred_features(
    files: Sequence[str], filesystem: Any = None, compression: str | None = "auto"
) -> FeaturesDict:
    """The ``features.json`` beside the first (local) file, else features inferred from a sample."""
    directory = os.path.dirname(files[0])
    if filesystem is None and not is_url(files[0]) and os.path.exists(os.path.join(directory, FEATURES_FILE)):
        return FeaturesDict.load(directory)
    return infer_features(_sample(files, filesystem, compression))


# -- Arrow -> samples ----------------------------------------------------------------------------------


def _feature_of(arrow: pa.DataType, name: str) -> FeatureConnector:
    shape: list[int | None] = []
    while True:
        if pa.types.is_fixed_size_list(arrow):
            shape.append(arrow.list_size)
            inner = getattr(arrow, "value_type", None)
            arrow = inner if inner is not None else arrow.storage_type.value_type  # Ray's first tensor type
        elif pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
            shape.append(None)
            inner = getattr(arrow, "value_type", None)
            arrow = inner if inner is not None else arrow.storage_type.value_type  # Ray's first tensor type
        elif isinstance(arrow, pa.ExtensionType) and (hasattr(arrow, "shape") or hasattr(arrow, "ndim")):
            # a tensor extension type (Ray's fixed or variable shape ones, pyarrow's fixed_shape_tensor)
            dims = getattr(arrow, "shape", None)
            if dims is None:
                dims = (None,) * int(getattr(arrow, "ndim", 1))
            shape.extend(None if d is None or d < 0 else int(d) for d in dims)
            inner = getattr(arrow, "value_type", None)
            arrow = inner if inner is not None else arrow.storage_type.value_type  # Ray's first tensor type
        else:
            break
    if len([d for d in shape if d is None]) > 1:
        raise SchemaError(f"{name}: more than one varying dimension; give the features explicitly")
    if pa.types.is_string(arrow) or pa.types.is_large_string(arrow):
        return SequenceFeature(Text()) if shape == [None] else _plain(Text(), shape, name)
    if pa.types.is_binary(arrow) or pa.types.is_large_binary(arrow):
        return Tensor(shape=tuple(shape), dtype=str)
    try:
        dtype = np.dtype(arrow.to_pandas_dtype())
    except (NotImplementedError, TypeError):
        raise SchemaError(f"{name}: Arrow type {arrow} has no TFRecord form") from None
    return Tensor(shape=tuple(shape), dtype=dtype)


def _plain(feature: FeatureConnector, shape: list[int | None], name: str) -> FeatureConnector:
    if shape:
        raise SchemaError(f"{name}: text of shape {shape} has no feature; give the features explicitly")
    return feature


def features_from_arrow(schema: pa.Schema, nullable: Collection[str] = ()) -> FeaturesDict:
    """A FeaturesDict that writes the columns of ``schema`` (``/`` in a name nests a dict).

    The columns named in ``nullable`` hold nulls, so their features may be missing, as the JSON
    Lines converter declares them: a scalar as ``Tensor(shape=(None,))`` (0 or 1 values), a text
    as ``Sequence(Text())``, a list as it is (a fixed length ``(n,)`` becomes ``(None,)``).

    Example:
        >>> features_from_arrow(pa.schema([("id", pa.int64()), ("emb", pa.list_(pa.float32(), 4))]))
        FeaturesDict({'id': Tensor(shape=(), dtype=int64), 'emb': Tensor(shape=(4,), dtype=float32)})
    """
    flat = {}
    for field in schema:
        feature = _feature_of(field.type, field.name)
        flat[field.name] = _optional(feature, field.name) if field.name in nullable else feature
    return nest_features(flat)


def _optional(feature: FeatureConnector, name: str) -> FeatureConnector:
    """The feature of a column holding nulls: one that can hold no value."""
    if isinstance(feature, Text):
        return SequenceFeature(Text())
    if isinstance(feature, Tensor) and len(feature.shape) <= 1:
        return Tensor(shape=(None,), dtype=feature.dtype)
    if isinstance(feature, SequenceFeature) or (isinstance(feature, Tensor) and feature.shape[0] is None):
        return feature
    raise SchemaError(f"{name}: a null in a column of {feature!r} has no stored form; fill the nulls")


def rows(columns: Mapping[str, Any], count: int) -> Iterator[dict[str, Any]]:
    """Samples (nested dicts) from batched columns (anything indexable by row)."""
    names = list(columns)
    values = [columns[name] for name in names]
    for i in range(count):
        yield unflatten({name: column[i] for name, column in zip(names, values, strict=True)})


def serialize_table(table: pa.Table, features: FeaturesDict) -> Iterator[bytes]:
    """Each row of ``table`` as a serialized Example (``a/b`` columns are the nested feature ``a/b``),
    encoded column by column a batch of rows at a time, as ``tfrec.write_dataset`` writes a table.

    Example:
        >>> writer.write_many(serialize_table(table, features_from_arrow(table.schema)))
    """
    found = table_records(table, features)
    if found is None:  # pragma: no cover - a pyarrow Table always is one
        raise SchemaError(f"{type(table).__name__} is not an Arrow table")
    return (record for records in found.chunks for record in records)


def arrow_columns(table: pa.Table) -> dict[str, Any]:
    """The columns of ``table`` as per-row numpy values (lists of arrays where lengths vary)."""
    out: dict[str, Any] = {}
    for name in table.column_names:
        column = table.column(name).combine_chunks()
        out[name] = _column_values(column)
    return out


def _column_values(column: pa.Array) -> Any:
    arrow = column.type
    if pa.types.is_fixed_size_list(arrow):
        dims = []
        inner = column
        while pa.types.is_fixed_size_list(inner.type):
            dims.append(inner.type.list_size)
            inner = inner.flatten()
        if inner.type.num_fields == 0 and not (
            pa.types.is_binary(inner.type) or pa.types.is_string(inner.type)
        ):
            return inner.to_numpy(zero_copy_only=False).reshape(len(column), *dims)
        return np.array(inner.to_pylist(), dtype=object).reshape(len(column), *dims)
    if (pa.types.is_list(arrow) or pa.types.is_large_list(arrow)) and arrow.value_type.num_fields == 0:
        values = column.values
        if not (pa.types.is_binary(values.type) or pa.types.is_string(values.type)):
            flat = values.to_numpy(zero_copy_only=False)
            bounds = column.offsets.to_numpy()
            return [flat[a:b] for a, b in itertools.pairwise(bounds)]
        return column.to_pylist()
    if isinstance(arrow, pa.ExtensionType) and hasattr(column, "to_numpy"):
        return column.to_numpy()
    if pa.types.is_binary(arrow) or pa.types.is_string(arrow) or pa.types.is_large_binary(arrow):
        return column.to_pylist()
    if arrow.num_fields == 0:
        return column.to_numpy(zero_copy_only=False)
    return column.to_pylist()
