"""The direct one-record path of ``parse_single_example`` (example layer).

A record in the usual form needs none of a batch's machinery. The usual form:
every key the specs read is present (or absent with a default to give), of its
kind, with the number of values its spec asks for, and the record is laid out as
writers lay it out (one Features field; map entries of a key, then a Feature of
one list; packed numbers).
:func:`parse_one` reads such a record in one pass and gives up (returns None) on
anything else, which the batch path then parses: so results and errors are
those of the batch path by construction.

Each plan is compiled once into a decoder (cached by plan, and plans are cached
by spec): the wanted keys map to slots, and each slot has a small function that
turns its list body into the output array with as few numpy calls as the kind
allows (one ``frombuffer`` and a copy for floats, one ``array`` for a scalar).

Example:
    >>> parse_one(plan_of({"label": FixedLenFeature([], int64)}), data)
    {'label': array(3)}
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf.internal import api_implementation
from google.protobuf.message import DecodeError as ProtobufDecodeError

from ...cache import BoundedCache
from ...errors import WireError
from ...proto import feature_pb2
from .. import wire
from .plan import Plan
from .specs import FixedLenFeature, FixedLenSequenceFeature, raw_key

__all__ = ["parse_one"]

_FIELD_1, _FIELD_2 = wire.FIELD_1, wire.FIELD_2
_read_varint = wire.read_varint
# Many varints: protobuf's C parser reads a list body (an Int64List message) faster than a Python
# loop, up to about 1 KiB; beyond, numpy's vectorised decoder. Not with protobuf's pure Python.
_C_PROTOBUF = api_implementation.Type() != "python"
_FEW_VARINT_BYTES = 8
_PROTOBUF_VARINT_BYTES = 1024
_INT64_WRAP = 1 << 64
_INT64_MAX = (1 << 63) - 1
# Packed floats are little-endian float32: on such a machine a copy of the bytes is the array.
_FLOATS_AS_IS = sys.byteorder == "little"

# A slot's decoder: (data, start, end of the list body) -> the output array, or None when unusual.
_Finish = Callable[[bytes, int, int], "np.ndarray | None"]
_Decoder = Callable[[bytes], "dict[Any, np.ndarray] | None"]


def parse_one(plan: Plan, data: bytes) -> dict[str, Any] | None:
    """``data`` parsed by ``plan`` as ``parse_single_example`` parses it, or None when the record is
    not in the usual form (a key missing, another kind, another count, another layout, malformed)."""
    decode = _DECODERS[plan]
    return None if decode is None else decode(data)


def _compile(plan: Plan) -> _Decoder | None:
    """The one-record decoder of ``plan``, or None when it holds a spec left to the batch path."""
    slots: dict[bytes, tuple[int, int, _Finish]] = {}  # raw key -> (slot, tag of its list, finisher)
    keys: list[Any] = []
    absent: list[Callable[[], np.ndarray] | None] = []  # each slot's value when its key is absent
    for key, spec in plan.specs.items():  # the plan's order, which is the batch path's
        if not isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
            return None
        raw = raw_key(key)
        if raw in slots:
            return None
        kind = wire.kind_of_dtype(spec.dtype)
        shape = tuple(spec.shape)
        steps = isinstance(spec, FixedLenSequenceFeature)
        slots[raw] = (len(keys), wire.KIND_TAG[kind], _finisher(kind, shape, steps))
        keys.append(key)
        absent.append(_absent_value(spec, shape, steps))
    count = len(keys)

    def decode(data: bytes) -> dict[Any, np.ndarray] | None:
        try:
            values = _walk(data, slots, count)
        except (WireError, IndexError):
            return None
        if values is None:
            return None
        if values[-1] is not _ABSENT:  # the slot that counts the others: all found
            values.pop()
            return dict(zip(keys, values, strict=True))
        values.pop()
        for index, value in enumerate(values):
            if value is _ABSENT:
                fill = absent[index]
                if fill is None:
                    return None  # a required key is missing: the batch path reports it
                values[index] = fill()
        return dict(zip(keys, values, strict=True))

    return decode


_ABSENT: Any = object()  # a key the record does not hold (None: one it holds in an unusual form)


def _absent_value(spec: Any, shape: tuple[int, ...], steps: bool) -> Callable[[], np.ndarray] | None:
    """What the batch path gives for the spec's key absent from a record: a FixedLenFeature's default
    (a fresh copy: outputs are the caller's), a FixedLenSequenceFeature's zero steps; None when the
    key is required (an error to report)."""
    if steps:
        return lambda: np.empty((0, *shape), spec.dtype)
    default = spec.default_value
    return None if default is None else default.copy


# Compiled per plan; keyed by the plan object (plans are cached, so the same few come back).
_DECODERS: BoundedCache[Plan, _Decoder | None] = BoundedCache(64, compute=_compile)


def _walk(data: bytes, slots: dict[bytes, tuple[int, int, _Finish]], count: int) -> list[Any] | None:
    """The output of each slot, read in one pass over a record laid out as writers lay it out, then
    whether every slot was found (not ``_ABSENT``); None for any other layout, a wanted Feature empty
    or of another kind, or a list its slot's finisher finds unusual (the batch path then decides).
    Lengths of one or two bytes are read inline: a call costs more than the rest."""
    size = len(data)
    if data[0] != _FIELD_1:
        return None
    length, pos = _read_varint(data, 1)
    if pos + length != size:
        return None
    values: list[Any] = [_ABSENT] * (count + 1)  # and, last, whether every slot was found
    found = 0
    while pos < size:
        if data[pos] != _FIELD_1:  # a map entry
            return None
        end = data[pos + 1]
        if end < 0x80:
            pos += 2
        elif data[pos + 2] < 0x80:
            end = (end & 0x7F) | data[pos + 2] << 7
            pos += 3
        else:
            end, pos = _read_varint(data, pos + 1)
        end += pos
        if data[pos] != _FIELD_1:  # its key
            return None
        length = data[pos + 1]
        if length >= 0x80:
            return None  # a key of 128 bytes or more: rare, left to the batch path
        pos += 2 + length
        if data[pos] != _FIELD_2:  # its value, a Feature
            return None
        slot = slots.get(data[pos - length : pos])
        length = data[pos + 1]
        if length < 0x80:
            pos += 2
        elif data[pos + 2] < 0x80:
            length = (length & 0x7F) | data[pos + 2] << 7
            pos += 3
        else:
            length, pos = _read_varint(data, pos + 1)
        if pos + length != end or end > size:
            return None
        if slot is None:
            pos = end  # a Feature not asked for is never looked into
            continue
        index, wanted, finish = slot
        if not length or data[pos] != wanted:
            return None  # an empty Feature, or a list of another kind: the batch path decides
        length = data[pos + 1]
        if length < 0x80:
            pos += 2
        elif data[pos + 2] < 0x80:
            length = (length & 0x7F) | data[pos + 2] << 7
            pos += 3
        else:
            length, pos = _read_varint(data, pos + 1)
        if pos + length != end:
            return None
        value = finish(data, pos, end)
        if value is None:
            return None
        if values[index] is _ABSENT:
            found += 1
        values[index] = value  # a key's last entry wins, as in protobuf
        pos = end
    if found == count:
        values[count] = True
    return values


def _finisher(kind: int, shape: tuple[int, ...], steps: bool) -> _Finish:
    """The decoder of one spec's list body: ``shape`` for a FixedLenFeature, ``(steps, *shape)``
    for a FixedLenSequenceFeature (``steps`` > 0, as the batch path's usual form)."""
    size = math.prod(shape)
    if steps:
        values = _VALUES[kind]

        def finish_steps(data: bytes, start: int, end: int) -> np.ndarray | None:
            array = values(data, start, end)
            if array is None or not len(array) or len(array) % size:
                return None
            return array.reshape((-1, *shape))

        return finish_steps
    if kind == wire.FLOAT:
        return _fixed_floats(size, shape)
    if size == 1 and kind == wire.INT64:
        return _scalar_int if shape == () else _reshaping(_scalar_int, shape)
    if size == 1 and kind == wire.BYTES:
        return _scalar_bytes if shape == () else _reshaping(_scalar_bytes, shape)
    values = _VALUES[kind]
    flat = shape == (size,)

    def finish(data: bytes, start: int, end: int) -> np.ndarray | None:
        array = values(data, start, end)
        if array is None or len(array) != size:
            return None
        return array if flat else array.reshape(shape)

    return finish


def _reshaping(finish: _Finish, shape: tuple[int, ...]) -> _Finish:
    def reshaped(data: bytes, start: int, end: int) -> np.ndarray | None:
        array = finish(data, start, end)
        return None if array is None else array.reshape(shape)

    return reshaped


def _fixed_floats(size: int, shape: tuple[int, ...]) -> _Finish:
    """Exactly ``size`` packed floats, as an array of ``shape``."""
    flat = shape == (size,)
    nbytes = 4 * size

    def finish(data: bytes, start: int, end: int) -> np.ndarray | None:
        if data[start] != _FIELD_1:
            return None  # loose values
        length, pos = _read_varint(data, start + 1)
        if length != nbytes or pos + length != end:
            return None
        array = np.frombuffer(data, "<f4", size, pos)
        array = array.copy() if _FLOATS_AS_IS else array.astype(np.float32)  # writable, as the batch's
        return array if flat else array.reshape(shape)

    return finish


def _scalar_int(data: bytes, start: int, end: int) -> np.ndarray | None:
    """One packed varint as a 0-d int64 array."""
    if data[start] != _FIELD_1 or data[start + 1] != end - start - 2:
        return None
    if end - start == 3 and data[start + 2] < 0x80:  # one byte, below 128: the value itself
        return np.array(data[start + 2], np.int64)
    value, pos = _read_varint(data, start + 2)
    if pos != end:
        return None
    if value > _INT64_MAX:
        value -= _INT64_WRAP
    return np.array(value, np.int64)


def _scalar_bytes(data: bytes, start: int, end: int) -> np.ndarray | None:
    """One bytes value as a 0-d object array."""
    if data[start] != _FIELD_1:
        return None
    length, pos = _read_varint(data, start + 1)
    if pos + length != end:
        return None
    return np.array(data[pos:end], object)  # bytes are a scalar to numpy: a 0-d array holding them


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
    values = np.frombuffer(data, "<f4", length // 4, pos)
    return values.copy() if _FLOATS_AS_IS else values.astype(np.float32)


def _ints(data: bytes, start: int, end: int) -> np.ndarray | None:
    """Packed varints as int64: a Python loop when few, protobuf's C parser when many, numpy beyond."""
    if data[start] != _FIELD_1:
        return None  # loose values
    length, pos = _read_varint(data, start + 1)
    if pos + length != end:
        return None
    if length > _FEW_VARINT_BYTES and _C_PROTOBUF:
        if length > _PROTOBUF_VARINT_BYTES:
            return wire.decode_varints(data, pos, end).view(np.int64)
        try:
            listed = feature_pb2.Int64List.FromString(data[start:end]).value
        except ProtobufDecodeError:
            return None
        return np.array(listed[:], np.int64)  # a slice is a list: numpy reads it faster than the container
    ints = []
    while pos < end:
        value, pos = _read_varint(data, pos)
        ints.append(value)
    if pos != end:
        return None
    return np.array(ints, np.uint64).view(np.int64)


_VALUES: dict[int, Callable[[bytes, int, int], np.ndarray | None]] = {
    wire.BYTES: _bytes,
    wire.FLOAT: _floats,
    wire.INT64: _ints,
}
