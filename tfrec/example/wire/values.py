"""Decoding the values of a Feature's list: packed varints, floats, bytes (example layer).

Example:
    >>> int64_values(data, scan_example(data)[b"label"])
    array([3])
"""

from __future__ import annotations

import numpy as np
from google.protobuf.internal import api_implementation
from google.protobuf.message import DecodeError as ProtobufDecodeError

from ...errors import WireError
from ...proto import feature_pb2
from .fields import fields, read_varint
from .kinds import BYTES, FIELD_1, FIXED32, FLOAT, LEN, VARINT
from .scan import Feature

__all__ = [
    "C_PROTOBUF",
    "bytes_values",
    "decode_values",
    "decode_varints",
    "float_values",
    "int64_values",
    "varints_between",
    "varints_of",
]

_SMALL_VARINT_PAYLOAD = 24  # below this many bytes a Python loop beats numpy's call overhead

# ... and below this many, protobuf's C parser (upb) beats numpy: measured 2 us against 14 us for 32
# varints, even at ~1 KiB; beyond, making Python ints costs more. Not with protobuf's pure Python.
_PROTOBUF_VARINT_PAYLOAD = 1024

C_PROTOBUF = api_implementation.Type() != "python"  # upb (or the old C++ backend): varints in C


def bytes_values(data: bytes, feature: Feature) -> list[bytes]:
    """The values of a ``bytes_list`` feature."""
    values = []
    for start, end in feature.spans:
        for number, wire_type, span in fields(data, start, end):
            if number == 1 and wire_type == LEN:
                values.append(data[span[0] : span[1]])
    return values


def float_values(data: bytes, feature: Feature) -> np.ndarray:
    """The values of a ``float_list`` feature, packed or not, as float32."""
    pieces = []
    for start, end in feature.spans:
        for number, wire_type, value in fields(data, start, end):
            if number != 1:
                continue
            if wire_type == LEN:
                first, last = value
                if (last - first) % 4:
                    raise WireError(f"a packed float list has {last - first} bytes, not a multiple of 4")
                pieces.append(np.frombuffer(data, "<f4", (last - first) // 4, first))
            elif wire_type == FIXED32:
                pieces.append(np.frombuffer(data, "<f4", 1, value[0]))
    if len(pieces) == 1:
        return pieces[0].astype(np.float32)  # a copy: never a view into the record
    return np.concatenate(pieces).astype(np.float32, copy=False) if pieces else np.empty(0, np.float32)


def int64_values(data: bytes, feature: Feature) -> np.ndarray:
    """The values of an ``int64_list`` feature, packed or not, as int64."""
    pieces: list[np.ndarray] = []
    loose: list[int] = []
    for start, end in feature.spans:
        for number, wire_type, value in fields(data, start, end):
            if number != 1:
                continue
            if wire_type == LEN:
                if loose:
                    pieces.append(np.array(loose, np.uint64))
                    loose = []
                pieces.append(decode_varints(data, *value))
            elif wire_type == VARINT:
                loose.append(value)
    if loose:
        pieces.append(np.array(loose, np.uint64))
    if not pieces:
        return np.empty(0, np.int64)
    values = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    return values.view(np.int64)


def decode_values(data: bytes, feature: Feature) -> np.ndarray | list[bytes]:
    """The values of a Feature of any kind set (int64 or float32 array, or list of bytes)."""
    if feature.kind == BYTES:
        return bytes_values(data, feature)
    if feature.kind == FLOAT:
        return float_values(data, feature)
    return int64_values(data, feature)


def decode_varints(data: bytes, start: int, end: int) -> np.ndarray:
    """Decode the packed varints in ``data[start:end]`` as uint64 (view as int64 for signed)."""
    if end - start < _SMALL_VARINT_PAYLOAD:
        small = []
        pos = start
        try:
            while pos < end:
                value, pos = read_varint(data, pos)
                small.append(value)
        except IndexError:
            raise WireError("a packed varint list is truncated") from None
        if pos != end:
            raise WireError("a packed varint list is truncated")
        return np.array(small, np.uint64)
    if end - start < _PROTOBUF_VARINT_PAYLOAD and C_PROTOBUF:
        values = _protobuf_varints(data, start, end)
        if values is not None:
            return values
    raw = np.frombuffer(data, np.uint8, end - start, start)
    return varints_of(raw)


def _protobuf_varints(data: bytes, start: int, end: int) -> np.ndarray | None:
    """The packed varints as protobuf's C parser reads them, or None when it refuses them."""
    size = end - start
    field = bytes((FIELD_1,)) + (bytes((size,)) if size < 0x80 else bytes((size & 0x7F | 0x80, size >> 7)))
    message = feature_pb2.Int64List()
    try:
        message.ParseFromString(field + data[start:end])
    except ProtobufDecodeError:
        return None  # malformed: the numpy decoder raises, saying how
    return np.fromiter(message.value, np.int64, len(message.value)).view(np.uint64)


def varints_of(raw: np.ndarray, last: np.ndarray | None = None) -> np.ndarray:
    """Decode the packed varints that fill the uint8 array ``raw``, as uint64.

    ``last``: the positions of the bytes below 0x80 (each varint's final byte), if known.
    """
    if last is None:
        last = np.flatnonzero(raw < 0x80)
    if not last.size or last[-1] != raw.size - 1:
        # As a reader going byte by byte would say: an overlong varint before the cut, or as the tail.
        tail = raw.size - (int(last[-1]) + 1 if last.size else 0)
        if tail >= 10 or (last.size and int(np.diff(last, prepend=-1).max()) > 10):
            raise WireError("a varint is longer than 10 bytes")
        raise WireError("a packed varint list is truncated")
    if last.size == raw.size:
        return raw.astype(np.uint64)  # every value below 128: one byte each
    first = np.empty_like(last)
    first[0] = 0
    first[1:] = last[:-1] + 1
    return varints_between(raw, first, last)


def varints_between(raw: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Decode the varints at ``raw[first[i] : last[i] + 1]`` as uint64.

    The caller has found each one's final byte (the only one below 0x80); the
    bytes between varints may be anything.
    """
    extra = last - first  # continuation bytes of each varint
    longest = int(extra.max()) if extra.size else 0
    if longest >= 10:
        raise WireError("a varint is longer than 10 bytes")
    # The 7-bit groups, padded so that byte i past any varint's first stays in bounds.
    low = np.zeros(raw.size + longest, np.uint8)
    np.bitwise_and(raw, 0x7F, out=low[: raw.size])
    word = np.uint32 if longest < 4 else np.uint64  # up to 4 bytes (28 bits) fit in 32
    values = low[first].astype(word)
    at = first.copy()
    # Byte i of every varint at once; the bytes past a shorter varint's end are masked out.
    for i in range(1, longest + 1):
        at += 1
        byte = low[at]
        byte *= extra >= i
        values |= byte.astype(word) << word(7 * i)
    return values.astype(np.uint64, copy=False)
