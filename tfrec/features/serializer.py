"""Compiled encoders: a FeaturesDict's values straight to Example bytes (features layer).

:func:`compile_encoder` walks a schema once and returns one function for it,
made of one closure per feature. Each closure checks its value and appends
the pieces of its ``Features`` map entries to a shared list, which is joined
once at the end. The closures take the common well-typed values themselves
(numpy arrays of the declared dtype and shape, Python ints and floats, str and
bytes) and hand anything else to the connector's ``encode_flat``: the
reference path, which converts what it can and raises the usual errors.
Connectors without a closure of their own (Image, Sequence, bytes-encoded or
per-channel tensors) always take that path.

The bytes are those of the reference path, ``encode_flat`` then the codec's
``encode_typed_example`` (a property test compares both); the wire format
itself stays in :mod:`tfrec.example.codec`.

Example:
    >>> encode = compile_encoder(FeaturesDict({"id": np.int64}))
    >>> encode({"id": 7}) == tfrec.encode_example({"id": 7})
    True
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np

from ..errors import MissingFeatureError
from ..example import wire
from ..example.batch_encode import RAW, Column, RecordParts, encode_columns
from ..example.codec import PackedHeads, append_entry, encode_varints, join_entries, varint
from ..record.framing_batch import Frames, frame_parts, frame_records
from .base import FeatureConnector, check_keys
from .tensor import Encoding, Scalar, Tensor
from .text import ClassLabel, Text
from .values import fits

__all__ = [
    "compile_batch_encoder",
    "compile_column_encoder",
    "compile_encoder",
    "compile_frame_encoder",
    "stored_values",
]

Encoder = Callable[[Any, list[bytes]], None]  # (value, parts): append the value's entries to parts

_MASK64 = (1 << 64) - 1  # an int64 is stored as the varint of its two's complement bits
_F4 = np.dtype("<f4")
_pack_f4, _unpack_f4 = struct.Struct("<f").pack, struct.Struct("<f").unpack


def stored_values(value: Any, kind: int) -> Any:
    """A checked flat value in the form its list stores: int64 array (uint64 bit-cast, as tfds),
    float32 array (float64 values rounded; checked to be within range), or a sequence of bytes."""
    if kind == wire.BYTES:
        return [value] if isinstance(value, bytes) else np.asarray(value, object).ravel()
    array = np.asarray(value)
    if kind == wire.FLOAT:
        with np.errstate(invalid="ignore"):  # a float64 signalling NaN quietens, as TF stores it
            return array.astype(np.float32, copy=False).ravel()
    if array.dtype == np.uint64:
        return array.view(np.int64).ravel()
    return array.astype(np.int64, copy=False).ravel()


def compile_encoder(features: FeatureConnector, *, exact_floats: bool = False) -> Callable[[Any], bytes]:
    """One function: a nested value of ``features`` -> the bytes of its tf.train.Example.

    With ``exact_floats``, floats that float32 cannot hold exactly are left to the reference path
    (the caller sets :data:`~tfrec.features.tensor.EXACT_FLOATS` for it to refuse them); otherwise
    they are rounded to the nearest float32, as TensorFlow stores them.

    Raises (from the returned function):
        EncodeError: a value does not fit its feature; names the key path.
    """
    encode = _encoder(features, "", exact_floats)

    def serialize(value: Any) -> bytes:
        parts: list[bytes] = []
        encode(value, parts)
        return join_entries(parts)

    return serialize


def _encoder(feature: FeatureConnector, path: str, exact_floats: bool) -> Encoder:
    """The closure for ``feature`` at ``path`` (its flat key: also the key path in errors)."""
    if feature.custom:  # a tfds-style connector (its own encode_example): always its encode_flat
        return _reference_encoder(feature, path)
    children = feature.children()
    if children is not None:  # a dict of features: its children's entries, in order
        return _dict_encoder(children, path, exact_floats)
    # Exact types: a subclass may encode differently, so it gets the reference path.
    if (
        isinstance(feature, Tensor)
        and type(feature) in (Tensor, Scalar)
        and feature.encoding is Encoding.NONE
        and feature.channel_names is None
    ):
        return _tensor_encoder(feature, path, exact_floats)
    if type(feature) is ClassLabel:
        return _label_encoder(feature, path)
    if type(feature) is Text:
        return _text_encoder(feature, path)
    return _reference_encoder(feature, path)


def _reference_encoder(feature: FeatureConnector, path: str) -> Encoder:
    """``encode_flat`` and the codec, for every value: the path every other closure falls back to."""
    stored = [
        (sub, "/".join(p for p in (path, sub) if p).encode(), wire.kind_of_dtype(info.dtype))
        for sub, info in feature.flat_infos().items()
    ]

    def encode(value: Any, parts: list[bytes]) -> None:
        flat = feature.encode_flat(value, path)
        for sub, key, kind in stored:
            append_entry(parts, key, kind, stored_values(flat[sub], kind))

    return encode


def _dict_encoder(features: Mapping[str, FeatureConnector], path: str, exact_floats: bool) -> Encoder:
    children = [
        (name, _encoder(child, f"{path}/{name}" if path else name, exact_floats))
        for name, child in features.items()
    ]
    names = features.keys()

    def encode(value: Any, parts: list[bytes]) -> None:
        if type(value) is not dict or value.keys() != names:
            check_keys(value, features, path)  # raises, unless an other Mapping with the right keys
        for name, child in children:
            child(value[name], parts)

    return encode


def _tensor_encoder(tensor: Tensor, path: str, exact_floats: bool) -> Encoder:
    """A Tensor stored as a list: arrays of its dtype and shape, or Python scalars for shape ()."""
    slow = _reference_encoder(tensor, path)
    key, dtype, shape = path.encode(), tensor.dtype, tensor.shape
    kind = wire.kind_of_dtype(dtype)
    known = None not in shape
    scalar = shape == ()

    def array_fits(value: Any) -> bool:
        return (
            type(value) is np.ndarray
            and value.dtype == dtype
            and (value.shape == shape if known else fits(shape, value.shape))
        )

    if kind == wire.BYTES:
        if not scalar:
            return slow

        heads = PackedHeads(key, kind)

        def encode_bytes(value: Any, parts: list[bytes]) -> None:
            if isinstance(value, str):  # numpy's str_ and bytes_ too
                try:
                    value = value.encode("utf-8")
                except UnicodeEncodeError:
                    return slow(value, parts)
            elif not isinstance(value, bytes):
                return slow(value, parts)
            parts += (heads[len(value)], value)

        return encode_bytes

    if kind == wire.FLOAT:
        if dtype == np.float64:  # stored as float32: rounding and its range check left to to_array
            return slow
        heads = PackedHeads(key, kind)

        def encode_floats(value: Any, parts: list[bytes]) -> None:
            if array_fits(value):
                data = value.astype(_F4, copy=False).tobytes()
            elif scalar and type(value) is np.float32 and dtype == np.float32:
                data = value.astype(_F4).tobytes()  # bit for bit, NaN payloads included
            elif scalar and type(value) is float and dtype == np.float32 and value == value:
                try:
                    data = _pack_f4(value)  # rounds to nearest, as numpy and TensorFlow do
                except OverflowError:  # finite beyond float32's range: to_array refuses it
                    return slow(value, parts)
                if exact_floats and _unpack_f4(data)[0] != value:  # inexact: to_array refuses it
                    return slow(value, parts)
            else:
                return slow(value, parts)  # NaN too: numpy keeps its payload bits as TF does
            parts += (heads[len(data)], data)

        return encode_floats

    # Ints and bools: varints of their int64 values (uint64 bit-cast). Python scalars within range.
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    low, high = (int(info.min), int(info.max)) if info is not None else (0, 1)

    heads = PackedHeads(key, kind)

    def encode_ints(value: Any, parts: list[bytes]) -> None:
        if array_fits(value):
            data = encode_varints(value.ravel())  # uint64 cast to int64 keeps its bits, as tfds stores it
        elif (
            scalar and (type(value) is bool if info is None else type(value) is int) and low <= value <= high
        ):
            data = varint(value & _MASK64)
        elif scalar and isinstance(value, np.generic) and value.dtype == dtype:  # a numpy scalar
            data = varint(int(value) & _MASK64)
        else:
            return slow(value, parts)
        parts += (heads[len(data)], data)

    return encode_ints


def _label_encoder(label: ClassLabel, path: str) -> Encoder:
    """A class index given as int or name. Names are looked up on each call: ``load`` sets them later."""
    slow = _reference_encoder(label, path)
    key = path.encode()

    heads = PackedHeads(key, wire.INT64)

    def encode(value: Any, parts: list[bytes]) -> None:
        if type(value) is int or isinstance(value, np.integer):
            index: int | None = int(value) if -1 <= value < label.num_classes else None
        else:
            index = label.name_index.get(value) if type(value) is str else None
        if index is None:
            return slow(value, parts)
        data = varint(index & _MASK64)
        parts += (heads[len(data)], data)

    return encode


def _text_encoder(text: Text, path: str) -> Encoder:
    slow = _reference_encoder(text, path)
    key = path.encode()

    heads = PackedHeads(key, wire.BYTES)

    def encode(value: Any, parts: list[bytes]) -> None:
        data = None
        try:
            if isinstance(value, str):  # numpy's str_ too
                data = value.encode("utf-8")
            elif isinstance(value, bytes):
                value.decode("utf-8")  # checked, stored as given
                data = bytes(value)
        except UnicodeError:
            pass  # the reference path words the error
        if data is None:
            return slow(value, parts)
        parts += (heads[len(data)], data)

    return encode


# -- batches: one column per feature ------------------------------------------------------------------

Columnizer = Callable[[list[Any]], list[Column]]  # one feature's values of every record -> its columns


def compile_batch_encoder(
    features: FeatureConnector, *, exact_floats: bool = False
) -> Callable[[Iterable[Any]], list[bytes]]:
    """One function: a batch of nested values of ``features`` -> the Example bytes of each.

    A feature whose values in the batch are all of one common well-typed form (arrays of its dtype
    and shape, Python ints, floats, str or bytes) is encoded as a numpy column; any other feature's
    values go one by one through :func:`compile_encoder`'s closure, so the bytes are those of the
    per-record encoder.

    Raises (from the returned function):
        EncodeError: a value does not fit its feature; names the key path.
    """
    columnize = _columnizer(features, "", exact_floats)

    def serialize_batch(values: Iterable[Any]) -> list[bytes]:
        rows = values if isinstance(values, list) else list(values)
        return encode_columns(columnize(rows), len(rows))

    return serialize_batch


def compile_column_encoder(
    features: FeatureConnector, *, exact_floats: bool = False, framed: bool = False
) -> Callable[[Mapping[str, Any], int], Sequence[bytes]]:
    """One function: ``(columns, count)`` -> the Example bytes of each of ``count`` records (with
    ``framed``: their TFRecord frames in one buffer, as :func:`compile_frame_encoder` gives them).

    ``columns`` maps each stored key (``"meta/lang"``) to that feature's values for every record:
    a numpy array whose first axis is the record, or any sequence of per-record values. An array
    of a Tensor's dtype (or a wider float, rounded to float32 as one record would be) and shape
    is one column as it is, with no value taken apart; anything else goes through
    :func:`compile_batch_encoder`'s per-feature path, so the bytes are those of the per-record
    encoder.

    Raises (from the returned function):
        EncodeError: a value does not fit its feature; names the key path.
        MissingFeatureError: a feature has no column.

    Example:
        >>> encode = compile_column_encoder(FeaturesDict({"id": np.int64}))
        >>> encode({"id": np.arange(3)}, 3)[2] == tfrec.encode_example({"id": 2})
        True
    """
    leaves = list(_leaves(features, "", exact_floats))

    def serialize_columns(columns: Mapping[str, Any], count: int) -> Sequence[bytes]:
        batch: list[Column] = []
        for path, feature, columnize in leaves:
            if path not in columns:
                raise MissingFeatureError(f"no column {path!r} for the feature {feature!r}", key=path)
            values = columns[path]
            found = _array_column(feature, path, values, exact_floats)
            batch += [found] if found is not None else columnize(list(values))
        return _frames(batch, count) if framed else encode_columns(batch, count)

    return serialize_columns


def _leaves(
    feature: FeatureConnector, path: str, exact_floats: bool
) -> Iterator[tuple[str, FeatureConnector, Columnizer]]:
    """``(stored key, feature, its columnizer)`` of each leaf, in the order _columnizer encodes them."""
    children = None if feature.custom else feature.children()
    if children is None:
        yield path, feature, _columnizer(feature, path, exact_floats)
        return
    for name, child in children.items():
        yield from _leaves(child, f"{path}/{name}" if path else name, exact_floats)


def _array_column(feature: FeatureConnector, path: str, values: Any, exact_floats: bool) -> Column | None:
    """A numpy column of a plain Tensor's shape as one Column without copying rows; None otherwise.

    A dimension of unknown size takes the column's size: a Tensor with at most one such dimension
    stores its values flat, as a fixed shape does."""
    if not (
        isinstance(values, np.ndarray)
        and type(feature) in (Tensor, Scalar)
        and isinstance(feature, Tensor)
        and feature.encoding is Encoding.NONE
        and feature.channel_names is None
        and feature.shape.count(None) <= 1
        and len(values.shape) == len(feature.shape) + 1
        and all(want in (None, have) for want, have in zip(feature.shape, values.shape[1:], strict=True))
    ):
        return None
    dtype, have = feature.dtype, values.dtype
    flat = values.reshape(len(values), int(np.prod(values.shape[1:])))
    if dtype.kind == "f" and dtype.itemsize >= 4 and have.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            narrow = flat.astype(_F4, copy=False)
        if have.itemsize > 4 and (np.isinf(narrow) & np.isfinite(flat)).any():
            return None  # beyond float32's range: the per-record path raises, naming the key
        if exact_floats and have.itemsize > 4 and (narrow != flat).any():
            return None
        return Column(path.encode(), wire.FLOAT, narrow)
    same_ints = have == dtype or (have.kind in "iu" and dtype.kind in "iu" and np.can_cast(have, dtype))
    if dtype.kind in "iub" and same_ints:
        return Column(path.encode(), wire.INT64, flat.view(np.int64) if have == np.uint64 else flat)
    return None


def compile_frame_encoder(
    features: FeatureConnector, *, exact_floats: bool = False
) -> Callable[[Iterable[Any]], Frames]:
    """:func:`compile_batch_encoder`, whose function returns the records' TFRecord frames, in one
    buffer for a writer.

    Example:
        >>> frames = compile_frame_encoder(FeaturesDict({"id": np.int64}))([{"id": 1}, {"id": 2}])
        >>> frames[1] == tfrec.encode_example({"id": 2})
        True
    """
    columnize = _columnizer(features, "", exact_floats)

    def serialize_frames(values: Iterable[Any]) -> Frames:
        rows = values if isinstance(values, list) else list(values)
        return _frames(columnize(rows), len(rows))

    return serialize_frames


def _frames(columns: list[Column], count: int) -> Frames:
    """The frames of the records of ``columns``: short records framed as rows of one array (no
    bytes object or CRC call per record); longer ones joined one by one, then framed (a CRC of a
    record where it lies in one buffer costs a numpy slice per record, more than a second copy of
    its bytes, even for records of 4 KiB)."""
    parts = RecordParts(columns, count)
    framed = frame_parts(parts.parts, parts.lengths)
    return framed if framed is not None else frame_records(parts.records(), parts.lengths)


def _columnizer(feature: FeatureConnector, path: str, exact_floats: bool) -> Columnizer:
    children = None if feature.custom else feature.children()
    if children is not None:
        return _dict_columnizer(children, path, exact_floats)
    one = _encoder(feature, path, exact_floats)

    def raw(values: list[Any]) -> list[Column]:  # the per-record closure, value by value
        entries = []
        for value in values:
            parts: list[bytes] = []
            one(value, parts)
            entries.append(b"".join(parts))
        return [Column(b"", RAW, entries)]

    if feature.custom:
        return raw
    if (
        isinstance(feature, Tensor)
        and type(feature) in (Tensor, Scalar)
        and feature.encoding is Encoding.NONE
        and feature.channel_names is None
        and None not in feature.shape
    ):
        column = _tensor_column(feature, path.encode(), exact_floats)
    elif type(feature) is ClassLabel:
        column = _label_column(feature, path.encode())
    elif type(feature) is Text:
        column = _text_column(path.encode())
    else:
        return raw

    def columnize(values: list[Any]) -> list[Column]:
        found = column(values)
        return raw(values) if found is None else [found]

    return columnize


def _dict_columnizer(features: Mapping[str, FeatureConnector], path: str, exact_floats: bool) -> Columnizer:
    children = [
        (name, _columnizer(child, f"{path}/{name}" if path else name, exact_floats))
        for name, child in features.items()
    ]
    names = features.keys()
    getters = [operator.itemgetter(name) for name in names]

    def columnize(values: list[Any]) -> list[Column]:
        # dicts of as many keys as the features, each of which they have: their keys are the features'
        count = len(values)
        if list(map(type, values)).count(dict) == count and list(map(len, values)).count(len(names)) == count:
            try:
                picked = [list(map(getter, values)) for getter in getters]
            except KeyError:
                picked = []
        else:
            picked = []
        if len(picked) != len(children):
            for value in values:
                if type(value) is not dict or value.keys() != names:
                    check_keys(value, features, path)  # raises, unless an other Mapping with the right keys
            picked = [[value[name] for value in values] for name in names]
        columns: list[Column] = []
        for (_, child), column in zip(children, picked, strict=True):
            columns += child(column)
        return columns

    return columnize


def _tensor_column(tensor: Tensor, key: bytes, exact_floats: bool) -> Callable[[list[Any]], Column | None]:
    """A Tensor of known shape as one column, when its values are all arrays of its dtype and shape,
    or (shape ``()``) all Python values of one type; None otherwise (the per-record path takes them)."""
    dtype, shape = tensor.dtype, tensor.shape
    kind = wire.kind_of_dtype(dtype)
    scalar = shape == ()
    info = np.iinfo(dtype) if dtype.kind in "iu" else None

    def column(values: list[Any]) -> Column | None:
        if not values:
            return None
        if kind == wire.BYTES:
            return _bytes_column(key, values) if scalar else None
        types = _one_type(values)
        stacked = _stacked(values, dtype, shape) if types == {np.ndarray} else None
        if kind == wire.FLOAT:
            if stacked is not None and dtype != np.float64:
                return Column(key, kind, stacked.astype(_F4, copy=False))
            if scalar and dtype == np.float32 and types == {float}:
                return _python_floats(key, values, exact_floats)
            return None
        if stacked is not None:
            return Column(key, kind, stacked.view(np.int64) if dtype == np.uint64 else stacked)
        if scalar and info is not None and types == {int}:
            return _python_ints(key, values, int(info.min), int(info.max))
        if scalar and info is None and types == {bool}:
            return Column(key, kind, np.array(values, np.int64)[:, None])
        return None

    return column


def _one_type(values: list[Any]) -> set[type]:
    """``{T}`` when every value is of type ``T`` exactly, else an empty set: one pass that compares
    types by identity (a set of them hashes each)."""
    first = type(values[0])
    return {first} if list(map(type, values)).count(first) == len(values) else set()


_INT64_RANGE = (-(2**63), 2**63 - 1)
_dtype_of, _shape_of, _ndim_of = (operator.attrgetter(name) for name in ("dtype", "shape", "ndim"))


def _stacked(values: list[np.ndarray], dtype: np.dtype, shape: tuple[int | None, ...]) -> np.ndarray | None:
    """Arrays all of ``dtype`` and ``shape`` as the rows of one array (one row per array, flat);
    None when one is not."""
    # list.count compares by identity first: one dtype object (and small ints) need no hashing.
    count = len(values)
    if list(map(_dtype_of, values)).count(dtype) != count:
        return None
    if len(shape) == 1:  # 1-D arrays of that length (cheaper to check than shapes, made on each access)
        sizes: list[int | None] = list(map(len, values))
        if list(map(_ndim_of, values)).count(1) != count or sizes.count(shape[0]) != count:
            return None
    elif list(map(_shape_of, values)).count(shape) != count:
        return None
    try:
        joined = b"".join(cast(list[bytes], values))  # their bytes, in C order: one copy, no call per array
    except (BufferError, TypeError):  # not C-contiguous
        return np.stack(values).reshape(len(values), -1)
    return np.frombuffer(joined, dtype).reshape(len(values), -1)


def _python_ints(key: bytes, values: list[int], low: int, high: int) -> Column | None:
    try:
        array = np.fromiter(values, np.int64, len(values))
    except OverflowError:
        return None  # beyond int64: the per-record path words the error
    if (low, high) != _INT64_RANGE and (int(array.min()) < low or int(array.max()) > high):
        return None
    return Column(key, wire.INT64, array[:, None])


def _python_floats(key: bytes, values: list[float], exact_floats: bool) -> Column | None:
    wide = np.fromiter(values, np.float64, len(values))
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = wide.astype(np.float32)
    if not np.isfinite(narrow).all():  # NaN, inf or a finite value beyond float32: one by one
        return None
    if exact_floats and (narrow.astype(np.float64) != wide).any():
        return None
    return Column(key, wire.FLOAT, narrow[:, None])


def _bytes_column(key: bytes, values: list[Any]) -> Column | None:
    """str (as UTF-8) or bytes, one per record; None for anything else."""
    types = _one_type(values)
    if types == {bytes}:
        return Column(key, wire.BYTES, values)
    return _utf8_column(key, values) if types == {str} else None


def _utf8_column(key: bytes, values: list[str]) -> Column | None:
    """str values as UTF-8; None when one cannot be (the per-record path words the error)."""
    try:
        return Column(key, wire.BYTES, list(map(str.encode, values)))
    except UnicodeEncodeError:
        return None


def _label_column(label: ClassLabel, key: bytes) -> Callable[[list[Any]], Column | None]:
    def column(values: list[Any]) -> Column | None:
        if not values:
            return None
        types = _one_type(values)
        if types == {int}:
            try:
                array: np.ndarray | None = np.fromiter(values, np.int64, len(values))
            except OverflowError:
                return None
            if int(array.min()) < -1 or int(array.max()) >= label.num_classes:  # type: ignore[union-attr]
                array = None
        elif types == {str}:
            lookup = label.name_index
            indexes = list(map(lookup.get, values))
            array = None if None in indexes else np.array(indexes, np.int64)
        else:
            array = None
        return None if array is None else Column(key, wire.INT64, array[:, None])

    return column


def _text_column(key: bytes) -> Callable[[list[Any]], Column | None]:
    def column(values: list[Any]) -> Column | None:
        if not values:
            return None
        types = _one_type(values)
        if types == {bytes}:
            try:
                for v in values:
                    v.decode("utf-8")  # checked, stored as given
            except UnicodeDecodeError:
                return None
            return Column(key, wire.BYTES, values)
        return _utf8_column(key, values) if types == {str} else None

    return column
