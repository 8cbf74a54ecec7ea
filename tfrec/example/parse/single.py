"""The direct one-record path of ``parse_single_example`` (example layer).

A record in the usual form needs none of a batch's machinery. The usual form:
every key the specs read is present, of its kind, with the number of values its
spec asks for, and the record is laid out as writers lay it out (one Features
field; map entries of a key, then a Feature of one list; packed numbers).
:func:`parse_one` reads such a record in one pass with the varints inlined, and
gives up (returns None) on anything else, which the batch path then parses: so
results and errors are those of the batch path by construction.

Example:
    >>> parse_one(plan_of({"label": FixedLenFeature([], int64)}), data)
    {'label': array(3)}
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from google.protobuf.internal import api_implementation
from google.protobuf.message import DecodeError as ProtobufDecodeError

from ...cache import BoundedCache
from ...errors import WireError
from ...proto import feature_pb2
from .. import wire
from ..columns import as_array
from .plan import Plan
from .specs import FixedLenFeature, FixedLenSequenceFeature, raw_key

__all__ = ["parse_one"]

_FIELD_1, _FIELD_2 = wire.FIELD_1, wire.FIELD_2
_TAGS = {wire.KIND_TAG[kind]: kind for kind in (wire.BYTES, wire.FLOAT, wire.INT64)}
_read_varint = wire.read_varint
# Many varints: protobuf's C parser reads a list body (an Int64List message) faster than a Python
# loop; not with protobuf's pure-Python implementation.
_C_PROTOBUF = api_implementation.Type() != "python"
_FEW_VARINT_BYTES = 8


class _Dense(NamedTuple):
    """What the direct path needs of one dense spec."""

    key: Any  # as given (str or bytes)
    kind: int
    shape: tuple[int, ...]
    size: int  # values per record (FixedLen) or per step (FixedLenSequence)
    steps: bool  # a FixedLenSequenceFeature: (steps, *shape)


_Compiled = dict[bytes, _Dense]


def _compile(plan: Plan) -> _Compiled | None:
    """The dense specs of ``plan`` by raw key, or None when it holds a spec left to the batch path."""
    dense = {}
    for key, spec in plan.specs.items():
        if not isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
            return None
        shape = tuple(spec.shape)
        steps = isinstance(spec, FixedLenSequenceFeature)
        dense[raw_key(key)] = _Dense(key, wire.kind_of_dtype(spec.dtype), shape, math.prod(shape), steps)
    return dense


# Compiled per plan; keyed by the plan object (plans are cached, so the same few come back).
_COMPILED: BoundedCache[Plan, _Compiled | None] = BoundedCache(64, compute=_compile)


def parse_one(plan: Plan, data: bytes) -> dict[str, Any] | None:
    """``data`` parsed by ``plan`` as ``parse_single_example`` parses it, or None when the record is
    not in the usual form (a key missing, another kind, another count, another layout, malformed)."""
    dense = _COMPILED[plan]
    if dense is None:
        return None
    try:
        found = _scan(data, dense)
        if found is None:
            return None
        out = {}
        for raw, spec in dense.items():
            span = found.get(raw)
            if span is None:
                return None  # absent, or another kind: a default to fill or an error to report
            values = _values(data, spec.kind, span[0], span[1])
            if values is None:
                return None
            count = len(values)
            if spec.steps:
                if count == 0 or count % spec.size:
                    return None
                out[spec.key] = as_array(values).reshape((-1, *spec.shape))
            elif count != spec.size:
                return None
            else:
                out[spec.key] = as_array(values).reshape(spec.shape)
    except (WireError, IndexError):
        return None
    # The batch path returns keys in the plan's order, which is the order of ``dense``.
    return {spec.key: out[spec.key] for spec in dense.values()}


def _scan(data: bytes, dense: _Compiled) -> dict[bytes, tuple[int, int]] | None:
    """Where the list body of each wanted key of its spec's kind is, for a record laid out as writers
    lay it out (None for any other layout). A wanted key of another kind is left out; the last entry
    of a key wins, as in protobuf."""
    size = len(data)
    if data[0] != _FIELD_1:
        return None
    length = data[1]
    pos = 2
    if length >= 0x80:
        length, pos = _read_varint(data, 1)
    if pos + length != size:
        return None
    found: dict[bytes, tuple[int, int]] = {}
    while pos < size:
        if data[pos] != _FIELD_1:  # a map entry
            return None
        length = data[pos + 1]
        pos += 2
        if length >= 0x80:
            length, pos = _read_varint(data, pos - 1)
        end = pos + length
        if data[pos] != _FIELD_1:  # its key
            return None
        length = data[pos + 1]
        pos += 2
        if length >= 0x80:
            length, pos = _read_varint(data, pos - 1)
        key = data[pos : pos + length]
        pos += length
        if data[pos] != _FIELD_2:  # its value, a Feature
            return None
        length = data[pos + 1]
        pos += 2
        if length >= 0x80:
            length, pos = _read_varint(data, pos - 1)
        if pos + length != end or end > size:
            return None
        spec = dense.get(key)
        if spec is None:
            pos = end  # a Feature not asked for is never looked into
            continue
        found.pop(key, None)
        if length:
            kind = _TAGS.get(data[pos])
            length = data[pos + 1]
            pos += 2
            if length >= 0x80:
                length, pos = _read_varint(data, pos - 1)
            if kind is None or pos + length != end:
                return None
            if kind == spec.kind:
                found[key] = (pos, end)
        pos = end
    return found


def _values(data: bytes, kind: int, start: int, end: int) -> list[bytes] | np.ndarray | None:
    """The values of a list body as the batch path decodes them, or None for an unusual layout."""
    if kind == wire.BYTES:
        values = []
        pos = start
        while pos < end:
            if data[pos] != _FIELD_1:
                return None
            length, pos = _read_varint(data, pos + 1)
            values.append(data[pos : pos + length])
            pos += length
        return values if pos == end else None
    if start == end:
        return None  # no values: the batch path's empty arrays
    if data[start] != _FIELD_1:  # not packed
        return None
    length, pos = _read_varint(data, start + 1)
    if pos + length != end:
        return None
    if kind == wire.FLOAT:
        if length % 4:
            return None
        return np.frombuffer(data, "<f4", length // 4, pos).astype(np.float32)  # a copy, as the batch's
    if length > _FEW_VARINT_BYTES and _C_PROTOBUF:
        message = feature_pb2.Int64List()
        try:
            message.ParseFromString(data[start:end])
        except ProtobufDecodeError:
            return None
        return np.fromiter(message.value, np.int64, len(message.value))
    ints = []
    while pos < end:
        value, pos = _read_varint(data, pos)
        ints.append(value)
    if pos != end:
        return None
    return np.array(ints, np.uint64).view(np.int64)
