"""The list decoders of the one-record path: a list body in, one spec's array out (example layer).

:mod:`.single` finds each wanted Feature's list body in a record; :func:`list_decoder` gives, once
per spec, the function that turns such a body into the spec's array with as few numpy calls as the
kind allows (one ``frombuffer`` and a copy for floats, one ``array`` for a scalar), or None when the
list is not in the usual form (loose values, another count, malformed): the batch path then decides.

Example:
    >>> decode, payload = list_decoder(INT64, (), steps=False)
    >>> decode(b"\\x03", 0, 1), payload
    (array(3), True)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf.internal import api_implementation
from google.protobuf.message import DecodeError as ProtobufDecodeError

from ...proto import feature_pb2
from .. import wire

__all__ = [
    "C_PROTOBUF",
    "FEW_VARINT_BYTES",
    "ListDecoder",
    "list_decoder",
    "scalar_bytes",
    "scalar_bytes_as_is",
]

_FIELD_1 = wire.FIELD_1
_read_varint = wire.read_varint
# Many varints: protobuf's C parser reads a list body (an Int64List message) faster than a Python
# loop, up to about 1 KiB; beyond, numpy's vectorised decoder. Not with protobuf's pure Python.
C_PROTOBUF = api_implementation.Type() != "python"
FEW_VARINT_BYTES = 8
_PROTOBUF_VARINT_BYTES = 1024
_INT64_WRAP = 1 << 64
_INT64_MAX = (1 << 63) - 1
# Packed floats are little-endian float32: on such a machine a copy of the bytes is the array.
_FLOATS_AS_IS = sys.byteorder == "little"
# dtypes as objects: numpy converts "<f4" or np.int64 to one on every call otherwise.
_F4, _FLOAT32, _INT64, _UINT64, _OBJECT = map(np.dtype, ("<f4", "float32", "int64", "uint64", "object"))
_Int64List = feature_pb2.Int64List.FromString

# (data, start, end of a list body or payload) -> the spec's array (or a scalar's bytes, when asked
# for), or None when it is unusual.
ListDecoder = Callable[[bytes, int, int], Any]


def list_decoder(
    kind: int, shape: tuple[int, ...], steps: bool, bytes_scalars: bool = False
) -> tuple[ListDecoder, bool]:
    """The decoder of one spec's list: ``shape`` for a FixedLenFeature, ``(steps, *shape)`` for a
    FixedLenSequenceFeature (``steps`` > 0, as the batch path's usual form); and whether it takes
    the *payload* of the list's one field 1 (packed floats, one varint, one bytes value: the caller
    has checked that the list body is that field alone) rather than the list body.
    ``bytes_scalars``: a scalar bytes value comes back as the ``bytes`` themselves, not a 0-d array."""
    size = math.prod(shape)
    if bytes_scalars and kind == wire.BYTES and shape == () and not steps:
        return scalar_bytes_as_is, True
    if not steps and (kind == wire.FLOAT or size == 1):
        return _payload_decoder(kind, size, shape), True
    return _body_decoder(kind, size, shape, steps), False


def _payload_decoder(kind: int, size: int, shape: tuple[int, ...]) -> ListDecoder:
    if kind == wire.FLOAT:
        return _fixed_floats(size, shape)
    scalar = _scalar_int if kind == wire.INT64 else scalar_bytes
    return scalar if shape == () else _reshaping(scalar, shape)


def _body_decoder(kind: int, size: int, shape: tuple[int, ...], steps: bool) -> ListDecoder:
    if steps:
        values = _VALUES[kind]

        def finish_steps(data: bytes, start: int, end: int) -> np.ndarray | None:
            array = values(data, start, end)
            if array is None or not len(array) or len(array) % size:
                return None
            return array.reshape((-1, *shape))

        return finish_steps
    if kind == wire.INT64:
        return _fixed_ints(size, shape)
    values = _VALUES[kind]
    flat = shape == (size,)

    def finish(data: bytes, start: int, end: int) -> np.ndarray | None:
        array = values(data, start, end)
        if array is None or len(array) != size:
            return None
        return array if flat else array.reshape(shape)

    return finish


def _reshaping(finish: ListDecoder, shape: tuple[int, ...]) -> ListDecoder:
    def reshaped(data: bytes, start: int, end: int) -> np.ndarray | None:
        array = finish(data, start, end)
        return None if array is None else array.reshape(shape)

    return reshaped


def _fixed_floats(size: int, shape: tuple[int, ...]) -> ListDecoder:
    """Exactly ``size`` packed floats (a payload), as an array of ``shape``."""
    flat = shape == (size,)
    nbytes = 4 * size

    def finish(data: bytes, start: int, end: int) -> np.ndarray | None:
        if end - start != nbytes:
            return None  # another count
        array = np.frombuffer(data, _F4, size, start)
        array = array.copy() if _FLOATS_AS_IS else array.astype(_FLOAT32)  # writable, as the batch's
        return array if flat else array.reshape(shape)

    return finish


def _fixed_ints(size: int, shape: tuple[int, ...]) -> ListDecoder:
    """Exactly ``size`` packed varints, as an int64 array of ``shape``."""
    flat = shape == (size,)

    def finish(data: bytes, start: int, end: int) -> np.ndarray | None:
        if data[start] != _FIELD_1:
            return None  # loose values
        length = data[start + 1]
        if length < 0x80 and length > FEW_VARINT_BYTES and C_PROTOBUF:  # the usual list of tokens
            if start + 2 + length != end:
                return None
            try:
                listed = _Int64List(data[start:end]).value
            except ProtobufDecodeError:
                return None
            if len(listed) != size:
                return None
            # A slice of the container is a list of its ints: numpy reads a list faster.
            array: np.ndarray | None = np.fromiter(listed[:], _INT64, size)
        else:
            array = _ints(data, start, end)
            if array is None or len(array) != size:
                return None
        return array if flat else array.reshape(shape)  # type: ignore[union-attr]

    return finish


def _scalar_int(data: bytes, start: int, end: int) -> np.ndarray | None:
    """One varint (a payload) as a 0-d int64 array (one or two bytes, the usual labels, inline)."""
    byte = data[start]
    if end - start == 1:
        return np.array(byte, _INT64) if byte < 0x80 else None
    if end - start == 2 and byte >= 0x80 and data[start + 1] < 0x80:
        return np.array(byte & 0x7F | data[start + 1] << 7, _INT64)
    value, pos = _read_varint(data, start)
    if pos != end:
        return None
    if value > _INT64_MAX:
        value -= _INT64_WRAP
    return np.array(value, _INT64)


def scalar_bytes(data: bytes, start: int, end: int) -> np.ndarray | None:
    """One bytes value (a payload) as a 0-d object array. ``np.array(value, object)`` is the cheapest
    way to make it (numpy 2.x: ~0.1 us less than an empty one copied and filled, measured in turns)."""
    return np.array(data[start:end], _OBJECT)


def scalar_bytes_as_is(data: bytes, start: int, end: int) -> bytes:
    """One bytes value (a payload) as the bytes themselves (what a schema gives for a scalar string)."""
    return data[start:end]


def _bytes(data: bytes, start: int, end: int) -> np.ndarray | None:
    """The values of a bytes list as an object array (never numpy's "S": it drops trailing NULs)."""
    values = []
    pos = start
    while pos < end:
        if data[pos] != _FIELD_1:
            return None
        length, pos = _read_varint(data, pos + 1)
        values.append(data[pos : pos + length])
        pos += length
    if pos != end:
        return None
    return np.fromiter(values, object, len(values))


def _floats(data: bytes, start: int, end: int) -> np.ndarray | None:
    """Packed floats: a copy of their bytes (writable and owning its memory, as the batch path's)."""
    if data[start] != _FIELD_1:
        return None  # loose values
    length, pos = _read_varint(data, start + 1)
    if pos + length != end or length % 4:
        return None
    values = np.frombuffer(data, _F4, length // 4, pos)
    return values.copy() if _FLOATS_AS_IS else values.astype(_FLOAT32)


def _ints(data: bytes, start: int, end: int) -> np.ndarray | None:
    """Packed varints as int64: a Python loop when few, protobuf's C parser when many, numpy beyond."""
    if data[start] != _FIELD_1:
        return None  # loose values
    length, pos = _read_varint(data, start + 1)
    if pos + length != end:
        return None
    if length > FEW_VARINT_BYTES and C_PROTOBUF:
        if length > _PROTOBUF_VARINT_BYTES:
            return wire.decode_varints(data, pos, end).view(_INT64)
        try:
            listed = feature_pb2.Int64List.FromString(data[start:end]).value
        except ProtobufDecodeError:
            return None
        return np.array(listed[:], _INT64)  # a slice is a list: numpy reads it faster than the container
    ints = []
    while pos < end:
        value, pos = _read_varint(data, pos)
        ints.append(value)
    if pos != end:
        return None
    return np.array(ints, _UINT64).view(_INT64)


_VALUES: dict[int, ListDecoder] = {
    wire.BYTES: _bytes,
    wire.FLOAT: _floats,
    wire.INT64: _ints,
}
