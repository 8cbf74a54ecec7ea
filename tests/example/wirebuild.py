"""Hand-built protobuf wire bytes for Example tests (independent of tfrec's encoder).

Each helper returns the bytes of one field or message, so a test can spell out
the exact wire form it feeds to tfrec: packed or not, split, duplicated, odd.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import numpy as np

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


def varint(value: int) -> bytes:
    """A varint; negative ints as 64-bit two's complement (10 bytes), as protobuf writes int64."""
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return tag(field, LEN) + varint(len(payload)) + payload


def vfield(field: int, value: int) -> bytes:
    """A varint field."""
    return tag(field, VARINT) + varint(value)


# -- list bodies (Int64List / FloatList / BytesList messages) --


def packed_ints(values: Iterable[int]) -> bytes:
    return ld(1, b"".join(varint(v) for v in values))


def loose_ints(values: Iterable[int]) -> bytes:
    """Unpacked: one tag per value."""
    return b"".join(vfield(1, v) for v in values)


def packed_floats(values: Iterable[float]) -> bytes:
    values = list(values)
    return ld(1, struct.pack(f"<{len(values)}f", *values))


def loose_floats(values: Iterable[float]) -> bytes:
    return b"".join(tag(1, FIXED32) + struct.pack("<f", v) for v in values)


def bytes_items(values: Iterable[bytes]) -> bytes:
    return b"".join(ld(1, v) for v in values)


# -- Feature messages --


def int64_feature(body: bytes) -> bytes:
    return ld(3, body)


def float_feature(body: bytes) -> bytes:
    return ld(2, body)


def bytes_feature(body: bytes) -> bytes:
    return ld(1, body)


def ints(*values: int) -> bytes:
    """Feature{int64_list{packed values}}; no values: an empty list (packed field omitted)."""
    return int64_feature(packed_ints(values) if values else b"")


def floats(*values: float) -> bytes:
    return float_feature(packed_floats(values) if values else b"")


def strs(*values: bytes) -> bytes:
    return bytes_feature(bytes_items(values))


# -- Example / SequenceExample --


def entry(key: bytes | str, feature: bytes) -> bytes:
    """One map entry of Features.feature (or FeatureLists.feature_list)."""
    raw = key.encode() if isinstance(key, str) else key
    return ld(1, ld(1, raw) + ld(2, feature))


def example(*entries: bytes) -> bytes:
    return ld(1, b"".join(entries))


def feature_list(*features: bytes) -> bytes:
    return b"".join(ld(1, f) for f in features)


def sequence_example(context: Iterable[bytes] = (), lists: Iterable[bytes] = ()) -> bytes:
    return ld(1, b"".join(context)) + ld(2, b"".join(lists))


# -- an independent decoder (protobuf's) and a comparison of decoded values --


def proto_decode(data: bytes) -> dict[str, Any]:
    """What protobuf reads from ``data``, in decode_example's form."""
    from tfrec.proto import example_pb2

    message = example_pb2.Example.FromString(data)
    return {key: proto_feature(feature) for key, feature in message.features.feature.items()}


def proto_feature(feature: Any) -> Any:
    kind = feature.WhichOneof("kind")
    if kind == "bytes_list":
        return list(feature.bytes_list.value)
    if kind == "float_list":
        return np.array(feature.float_list.value, np.float32)
    if kind == "int64_list":
        return np.array(feature.int64_list.value, np.int64)
    return None


def same_value(a: Any, b: Any) -> bool:
    """Equal decoded values: None, lists of exact bytes, or arrays of one dtype (floats bit for bit)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and all(type(v) is bytes for v in a + b) and a == b
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a.view(np.uint32), b.view(np.uint32)))
    return bool(np.array_equal(a, b))


def same_decoded(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
