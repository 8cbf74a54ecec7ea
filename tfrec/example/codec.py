"""Schema-less Example and SequenceExample codec (example layer).

``encode_example`` turns a flat mapping of Python/numpy values into the bytes
of a ``tf.train.Example``; ``decode_example`` turns them back into numpy. Ints
and bools go to ``int64_list``, floats to ``float_list``, str (UTF-8) and bytes
to ``bytes_list``; arrays of any shape are flattened row-major. Nothing is
converted lossily except floats, which an Example stores as float32: they are
rounded to the nearest float32 as TensorFlow does (``exact_floats=True``
refuses instead); a finite float beyond float32's range is refused.

Example:
    >>> data = encode_example({"label": 3, "emb": np.ones(2, np.float32), "text": "hi"})
    >>> decode_example(data)
    {'label': array([3]), 'emb': array([1., 1.], dtype=float32), 'text': [b'hi']}
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from ..cache import BoundedCache
from ..errors import DecodeError, EncodeError, WireError
from ..proto import feature_pb2
from . import wire

__all__ = [
    "Value",
    "decode_example",
    "decode_sequence_example",
    "encode_entries",
    "encode_example",
    "encode_sequence_example",
]

Value = int | float | bool | str | bytes | np.ndarray | Sequence[Any] | np.generic
Decoded = np.ndarray | list[bytes] | None

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Little-endian float32 / int64, the wire's own layouts (a native array's dtype is this very object
# on little-endian machines; any other dtype takes the general path).
_F4, _I8 = np.dtype("<f4"), np.dtype("<i8")


def varint(value: int) -> bytes:
    """Encode a non-negative int < 2**64 as a varint."""
    if value < _CACHED_VARINTS:
        return _SMALL_VARINTS[value]
    if value < 1 << 21:  # three bytes: common for ids and token numbers
        return bytes((value & 0x7F | 0x80, (value >> 7) & 0x7F | 0x80, value >> 14))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_CACHED_VARINTS = 1 << 14  # one or two bytes: lengths of most fields, small ints
_SMALL_VARINTS = [
    bytes((v,)) if v < 0x80 else bytes((v & 0x7F | 0x80, v >> 7)) for v in range(_CACHED_VARINTS)
]
_CONTINUED = [bytes((v | 0x80,)) for v in range(0x80)]  # a varint's first byte when more follow


def _length_delimited(tag: int, payload: bytes) -> bytes:
    return bytes((tag,)) + varint(len(payload)) + payload


def encode_varints(values: np.ndarray) -> bytes:
    """Packed varints of int64 values (negatives take 10 bytes, as two's complement), flattened row-major."""
    if values.dtype is not _I8:
        values = values.astype(np.int64)
    flat = values if values.ndim == 1 else values.ravel()
    if wire.C_PROTOBUF and 0 < flat.size <= _PROTOBUF_VARINTS:
        field = _Int64List(value=flat.tolist()).SerializeToString()  # the packed field, head and all
        return field[_field_head_size(len(field)) :]
    unsigned = flat.view(np.uint64)
    if unsigned.size < 512:  # measured: below this a Python loop beats numpy's per-call cost
        items = unsigned.tolist()
        top = max(items, default=0)
        if top < _CACHED_VARINTS:  # the usual case: a table lookup per value, in C
            return b"".join(map(_SMALL_VARINTS.__getitem__, items))
        if top < 1 << 21:  # three bytes at most (token ids): the low 7 bits, then a cached varint
            small, low = _SMALL_VARINTS, _CONTINUED
            return b"".join(
                [small[v] if v < _CACHED_VARINTS else low[v & 0x7F] + small[v >> 7] for v in items]
            )
        return b"".join(map(varint, items))
    # Vectorised: 7 bits per byte, continuation bit on every byte but the last.
    lengths = np.ones(unsigned.size, np.int64)
    for i in range(1, 10):
        lengths += unsigned >= np.uint64(1 << (7 * i))
    out = np.empty(int(lengths.sum()), np.uint8)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    for i in range(10):
        present = np.flatnonzero(lengths > i)
        if not present.size:
            break
        byte = (unsigned[present] >> np.uint64(7 * i)) & np.uint64(0x7F)
        more = (lengths[present] > i + 1).astype(np.uint64) << np.uint64(7)
        out[starts[present] + i] = (byte | more).astype(np.uint8)
    return out.tobytes()


# Up to this many values, protobuf's C serializer (upb) writes varints faster than anything here,
# even counting the Python ints it takes (measured: 3x a table lookup per value for 32 token ids
# and for 600; even at 10,000, where the vectorised encoder catches up).
_PROTOBUF_VARINTS = 4096
_Int64List = feature_pb2.Int64List


def _field_head_size(size: int) -> int:
    """The bytes of the tag and length that start a length-delimited field of ``size`` bytes in all."""
    length_bytes = 1
    while len(varint(size - 1 - length_bytes)) != length_bytes:
        length_bytes += 1
    return 1 + length_bytes


def _kind_of(key: str, value: Any, exact: bool) -> tuple[int, Any]:
    """Classify ``value``: return ``(kind, normalised values)``, or raise EncodeError."""
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return wire.BYTES, [_as_bytes(key, value)]
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return wire.INT64, _int_array(key, np.asarray([value]) if isinstance(value, np.generic) else [value])
    if isinstance(value, (float, np.floating)):
        return wire.FLOAT, _float_array(key, np.asarray([value]), exact)
    if isinstance(value, np.ndarray):
        return _array_kind(key, value, exact)
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        items = list(value)
        if not items:
            return wire.NONE, None  # no values, no kind: stored as an empty Feature
        kinds = {_scalar_kind(item) for item in items}
        if len(kinds) != 1 or None in kinds:
            found = ", ".join(sorted({type(item).__name__ for item in items}))
            raise EncodeError(
                f"key {key!r}: a list must hold one kind of value (ints/bools, floats or str/bytes); "
                f"found {found}",
                key=key,
            )
        kind = cast(int, kinds.pop())
        if kind == wire.BYTES:
            return kind, [_as_bytes(key, item) for item in items]
        if kind == wire.INT64:
            return kind, _int_array(key, items)
        return kind, _float_array(key, np.asarray(items, np.float64), exact)
    raise EncodeError(
        f"key {key!r}: cannot store a {type(value).__name__} in an Example "
        "(expected int, float, bool, str, bytes, a list of them or a numpy array)",
        key=key,
    )


def _scalar_kind(item: Any) -> int | None:
    if isinstance(item, (str, bytes, bytearray, memoryview)):
        return wire.BYTES
    if isinstance(item, (bool, np.bool_, int, np.integer)):
        return wire.INT64
    if isinstance(item, (float, np.floating)):
        return wire.FLOAT
    return None


def _as_bytes(key: str, value: Any) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EncodeError(
                f"key {key!r}: text is not valid UTF-8 ({exc.reason}); pass bytes", key=key
            ) from None
    return bytes(value)


def _int_array(key: str, values: Any) -> np.ndarray:
    """int64 array of ``values``; refuse anything outside int64."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biu":
        # int(): numpy 1.x compares uint64 with a Python int through float64, which rounds.
        if values.dtype.kind == "u" and values.size and int(values.max()) > _INT64_MAX:
            raise EncodeError(f"key {key!r}: {int(values.max())} (uint64) does not fit in int64", key=key)
        return values.astype(np.int64).ravel()
    ints = [int(v) for v in values]
    too_big = next((v for v in ints if not _INT64_MIN <= v <= _INT64_MAX), None)
    if too_big is not None:
        raise EncodeError(f"key {key!r}: {too_big} does not fit in int64", key=key)
    return np.array(ints, np.int64)


def _float_array(key: str, values: np.ndarray, exact: bool) -> np.ndarray:
    """float32 array of ``values``, rounded to nearest as TensorFlow stores them. Refused: a finite
    value beyond float32's range (it would become inf), and with ``exact`` any value rounding changes."""
    if values.dtype.itemsize <= 4:
        return values.astype(np.float32).ravel()  # float16/float32: exact
    wide = values.ravel()
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below; sNaN quietens
        narrow = wide.astype(np.float32)
    infinite = np.isinf(narrow)
    if infinite.any():
        lost = infinite & np.isfinite(wide)
        if lost.any():
            first = wide[np.flatnonzero(lost)[0]]
            raise EncodeError(
                f"key {key!r}: {float(first)!r} is beyond float32's range (Examples store float32; "
                "it would be stored as inf)",
                key=key,
            )
    if exact:
        with np.errstate(invalid="ignore"):
            changed = (narrow.astype(wide.dtype) != wide) & ~(np.isnan(wide) & np.isnan(narrow))
        if changed.any():
            first = wide[np.flatnonzero(changed)[0]]
            raise EncodeError(
                f"key {key!r}: {float(first)!r} is not exactly representable as float32 "
                "(Examples store float32); pass float32 values, or leave exact_floats off to round",
                key=key,
            )
    return narrow


def _array_kind(key: str, array: np.ndarray, exact: bool) -> tuple[int, Any]:
    kind = array.dtype.kind
    if kind in "biu":
        return wire.INT64, _int_array(key, array.ravel())
    if kind == "f":
        return wire.FLOAT, _float_array(key, array, exact)
    if kind in "SUO":
        items = array.ravel().tolist()
        if kind == "O" and not all(isinstance(v, (str, bytes)) for v in items):
            return _kind_of(key, items, exact) if items else (wire.BYTES, [])  # object ints/floats
        return wire.BYTES, [_as_bytes(key, v) for v in items]
    raise EncodeError(
        f"key {key!r}: cannot store a numpy array of dtype {array.dtype} in an Example", key=key
    )


def _encode_feature(kind: int, values: Any) -> bytes:
    """The bytes of a Feature message holding ``values`` of ``kind``."""
    if kind == wire.NONE:
        return b""
    if kind == wire.BYTES:
        body = b"".join(_length_delimited(wire.FIELD_1, v) for v in values)
    elif kind == wire.FLOAT:
        body = _length_delimited(wire.FIELD_1, values.astype("<f4").tobytes()) if values.size else b""
    else:
        body = _length_delimited(wire.FIELD_1, encode_varints(values)) if values.size else b""
    return _length_delimited(wire.KIND_TAG[kind], body)


def _encode_key(key: Any) -> bytes:
    if not isinstance(key, str):
        raise EncodeError(f"feature keys must be str, not {type(key).__name__} ({key!r})", key=str(key))
    try:
        return key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"key {key!r} is not valid UTF-8 ({exc.reason})", key=key) from None


_KIND_TAGS = {kind: bytes((tag,)) for kind, tag in wire.KIND_TAG.items()}
_FIELD_1, _FIELD_2 = bytes((wire.FIELD_1,)), bytes((wire.FIELD_2,))


@functools.lru_cache(maxsize=4096)  # one writer's entries repeat a few keys, kinds and sizes
def entry_head(key: bytes, kind: int, size: int) -> bytes:
    """The bytes of a ``Features`` map entry (``key`` -> a Feature of ``kind``) before its list's
    fields, which take ``size`` bytes. The features layer's compiled encoders write entries with it."""
    feature = _KIND_TAGS[kind] + varint(size) if kind != wire.NONE else b""  # NONE: an empty Feature
    value = _FIELD_2 + varint(len(feature) + size)
    key_field = _key_field(key)
    return _FIELD_1 + varint(len(key_field) + len(value) + len(feature) + size) + key_field + value + feature


def packed_head(key: bytes, kind: int, size: int) -> bytes:
    """The bytes of a map entry before its values, when they are one field of ``size`` bytes: the
    packed float32s or varints of a FLOAT or INT64 list, or the single value of a BYTES list.

    An empty packed field is left out (as protobuf does); an empty bytes value is still a field.
    """
    field = _FIELD_1 + varint(size) if size or kind == wire.BYTES else b""
    return entry_head(key, kind, len(field) + size) + field


_MAX_HEADS = 1024  # entry heads remembered per feature


class PackedHeads(BoundedCache[int, bytes]):
    """``packed_head`` of one key and kind by payload size, for encoders compiled per schema: one
    feature's entries repeat a few sizes.

    Example:
        >>> heads = PackedHeads(b"label", wire.INT64)
        >>> heads[1] + varint(7) == encode_example({"label": 7})[2:]
        True
    """

    def __init__(self, key: bytes, kind: int) -> None:
        super().__init__(_MAX_HEADS, compute=functools.partial(packed_head, key, kind))
        self.key, self.kind = key, kind

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.key, self.kind))


def append_entry(parts: list[bytes], key: bytes, kind: int, values: Any) -> None:
    """Append the pieces of one ``Features`` map entry (key -> Feature) to ``parts``.

    Lengths are computed, not measured on nested copies: each value is copied
    once, by the final join.
    """
    pieces: list[bytes] = []
    if kind == wire.BYTES:
        for value in values:
            pieces += (_FIELD_1 + varint(len(value)), value)
    elif kind != wire.NONE:
        data = values.astype("<f4").tobytes() if kind == wire.FLOAT else encode_varints(values)
        if data:
            pieces += (_FIELD_1 + varint(len(data)), data)
    parts.append(entry_head(key, kind, sum(map(len, pieces))))
    parts += pieces


def join_entries(parts: list[bytes]) -> bytes:
    """The bytes of the Example whose map entries are ``parts`` (pieces, concatenated in order)."""
    return b"".join([_FIELD_1 + varint(sum(map(len, parts))), *parts])


def encode_entries(mapping: Mapping[str, Any], *, exact_floats: bool = False) -> bytes:
    """The ``Features`` map entries of ``mapping`` (an Example's body, less its own head), as
    :func:`encode_example` encodes them. The batched encoder takes rows it cannot batch here.

    Example:
        >>> encode_example({"id": 7})[2:] == encode_entries({"id": 7})
        True
    """
    parts: list[bytes] = []
    _append_entries(parts, mapping, exact_floats)
    return b"".join(parts)


def _append_entries(parts: list[bytes], mapping: Mapping[str, Any], exact: bool) -> int:
    """Append the map entries of ``mapping`` to ``parts``; return how many bytes they take.

    The values whose exact type says all (bytes, str, int, float, bool, a native float32 or int64
    array) are encoded inline, each entry as its cached head and one field's bytes; the rest, and
    every value that may be refused, take :func:`_kind_of`, which checks and words the errors.
    Both give the same bytes.
    """
    size = 0
    heads = _HEADS
    for key, value in mapping.items():
        cls = type(value)
        data: Any = None
        if cls is bytes:
            kind, data = wire.BYTES, value
        elif cls is np.ndarray:
            dtype = value.dtype
            if dtype is _F4 and value.size:  # float32 cannot leave float32's range: nothing to check
                kind, data = wire.FLOAT, value.tobytes()  # row-major, whatever the strides
            elif dtype is _I8 and value.size:
                kind, data = wire.INT64, encode_varints(value)
        elif cls is int:
            if 0 <= value < _CACHED_VARINTS:
                kind, data = wire.INT64, _SMALL_VARINTS[value]
            elif 0 <= value < 1 << 21:  # three bytes (ids): the low 7 bits, then a cached varint
                kind, data = wire.INT64, _CONTINUED[value & 0x7F] + _SMALL_VARINTS[value >> 7]
            elif _INT64_MIN <= value <= _INT64_MAX:
                kind, data = wire.INT64, varint(value & _MASK64)
        elif cls is str:
            try:
                kind, data = wire.BYTES, value.encode("utf-8")
            except UnicodeEncodeError:
                data = None  # lone surrogates: refused by the general path, naming the key
        elif cls is float:
            kind, data = wire.FLOAT, _float32_bytes(value, exact)
        elif cls is bool:
            kind, data = wire.INT64, _SMALL_VARINTS[value]
        if data is None or type(key) is not str:
            start = len(parts)
            append_entry(parts, _raw_key(key), *_kind_of(key, value, exact))
            size += sum(map(len, parts[start:]))
            continue
        head = heads.get((key, kind, len(data)))
        if head is None:
            head = heads.put((key, kind, len(data)), packed_head(_raw_key(key), kind, len(data)))
        parts += (head, data)
        size += len(head) + len(data)
    return size


def _raw_key(key: Any) -> bytes:
    raw_key = _KEYS.get(key) if type(key) is str else None
    if raw_key is None:
        raw_key = _encode_key(key)
        if len(_KEYS) < _MAX_KEYS:
            _KEYS[key] = raw_key
    return raw_key


def _float32_bytes(value: float, exact: bool) -> bytes | None:
    """A Python float's float32 bytes, rounded to nearest as numpy and TensorFlow round; None for
    NaN (numpy's cast keeps its payload bits, as TensorFlow does), a finite value beyond float32's
    range and, with ``exact``, a value rounding changes: :func:`_kind_of` encodes or refuses those."""
    if value != value:
        return None
    try:
        data = _pack_f4(value)
    except OverflowError:
        return None
    return None if exact and _unpack_f4(data)[0] != value else data


_KEYS: dict[str, bytes] = {}  # str key -> its UTF-8 bytes: a writer's records repeat a few keys
_MAX_KEYS = 4096
# (str key, kind, field size) -> the entry's bytes before its field's: keys, kinds and sizes repeat.
_HEADS: BoundedCache[tuple[str, int, int], bytes] = BoundedCache(8192)
_MASK64 = (1 << 64) - 1
_pack_f4, _unpack_f4 = struct.Struct("<f").pack, struct.Struct("<f").unpack


def _map_entry(key: bytes, value: bytes) -> bytes:
    """A map entry (field 1 of its map): key in field 1, value message in field 2."""
    return _length_delimited(wire.FIELD_1, _key_field(key) + _length_delimited(wire.FIELD_2, value))


@functools.lru_cache(maxsize=4096)
def _key_field(key: bytes) -> bytes:
    return _length_delimited(wire.FIELD_1, key)  # the same few keys recur in every record


def encode_typed_example(entries: Iterable[tuple[bytes, int, Any]]) -> bytes:
    """Example bytes from ``(key, kind, values)`` whose kinds are already known and checked.

    ``values`` are an int64 array, a float32 array, or a sequence of bytes. The
    fast path for callers that validated their values (the features layer):
    nothing is classified or checked again.
    """
    parts: list[bytes] = []
    for key, kind, values in entries:
        append_entry(parts, key, kind, values)
    return join_entries(parts)


def encode_example(
    mapping: Mapping[str, Value], *, exact_floats: bool = False, allow_downcast: bool | None = None
) -> bytes:
    """Serialize a flat mapping of values as a ``tf.train.Example``.

    Args:
        mapping: feature key -> int, float, bool, str, bytes, a list of one of
            those kinds, or a numpy array (flattened row-major). An empty list
            has no kind: it is stored as a Feature with no kind set, which
            parse specs treat as missing.
        exact_floats: refuse a float that float32 cannot hold exactly, instead
            of rounding it to the nearest float32 (what TensorFlow stores).
        allow_downcast: deprecated and ignored: floats round unless
            ``exact_floats=True`` (accepted so that older calls keep working).

    Raises:
        EncodeError: names the key: a finite float beyond float32's range, an
            int beyond int64, text that is not valid UTF-8, a value of no
            Example kind; with ``exact_floats``, a float that rounding changes.

    Example:
        >>> tfrec.encode_example({"label": 1, "tokens": [4, 5]})
        b'...'
    """
    parts = [b""]  # the Example's head, known once its entries are
    size = _append_entries(parts, mapping, exact_floats)
    parts[0] = _FIELD_1 + varint(size)
    return b"".join(parts)  # the one copy of the values


def encode_sequence_example(
    context: Mapping[str, Value] | None = None,
    feature_lists: Mapping[str, Sequence[Value]] | None = None,
    *,
    exact_floats: bool = False,
    allow_downcast: bool | None = None,
) -> bytes:
    """Serialize a ``tf.train.SequenceExample``: context features and per-step feature lists.

    Values are stored as :func:`encode_example` stores them (floats rounded to
    float32 unless ``exact_floats=True``; ``allow_downcast`` is deprecated and
    ignored).

    Example:
        >>> tfrec.encode_sequence_example({"id": 7}, {"tokens": [[1, 2], [3]]})
        b'...'
    """
    out = _length_delimited(wire.FIELD_1, encode_entries(context or {}, exact_floats=exact_floats))
    lists = []
    for key, steps in (feature_lists or {}).items():
        raw_key = _encode_key(key)
        if isinstance(steps, (str, bytes, np.ndarray)) and not (
            isinstance(steps, np.ndarray) and steps.ndim > 1
        ):
            raise EncodeError(
                f"key {key!r}: a feature list is a sequence of steps (one value per step); "
                f"got a {type(steps).__name__}",
                key=key,
            )
        body = b"".join(
            _length_delimited(wire.FIELD_1, _encode_feature(*_kind_of(key, step, exact_floats)))
            for step in steps
        )
        lists.append(_map_entry(raw_key, body))
    return out + _length_delimited(wire.FIELD_2, b"".join(lists))


def _decode_feature(data: bytes, feature: wire.Feature) -> Decoded:
    return wire.decode_values(data, feature) if feature.kind != wire.NONE else None


def _key(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def decode_example(data: bytes) -> dict[str, Decoded]:
    """Decode a serialized ``tf.train.Example`` without a schema.

    Returns:
        key -> int64 array, float32 array, or list of bytes (``None`` for a
        Feature with no kind set).

    Raises:
        DecodeError: the bytes are not a well-formed Example.

    Example:
        >>> tfrec.decode_example(tfrec.encode_example({"x": [1, 2]}))
        {'x': array([1, 2])}
    """
    try:
        return {_key(key): _decode_feature(data, f) for key, f in wire.scan_example(bytes(data)).items()}
    except WireError as exc:
        raise DecodeError(f"not a valid Example: {exc}") from None


def decode_sequence_example(data: bytes) -> tuple[dict[str, Decoded], dict[str, list[Decoded]]]:
    """Decode a serialized ``tf.train.SequenceExample`` without a schema.

    Returns:
        ``(context, feature_lists)``: like :func:`decode_example`, and key ->
        one decoded value per step.

    Example:
        >>> context, lists = tfrec.decode_sequence_example(blob)
    """
    try:
        data = bytes(data)
        context, lists = wire.scan_sequence_example(data)
        return (
            {_key(k): _decode_feature(data, f) for k, f in context.items()},
            {_key(k): [_decode_feature(data, f) for f in steps] for k, steps in lists.items()},
        )
    except WireError as exc:
        raise DecodeError(f"not a valid SequenceExample: {exc}") from None
