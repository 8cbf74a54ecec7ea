"""Shared helpers for the features-layer tests: value comparison, batch rows, Example wire bytes.

The wire helpers build and split Example bytes by hand, so golden tests do not
trust tfrec's own encoder or decoder.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfrec import RaggedArray

# -- comparing decoded values --------------------------------------------------------------------------


def ragged(rows: list[Any], dtype: Any) -> RaggedArray:
    """The RaggedArray a Sequence(Sequence(...)) decodes to, from its rows (lists of items)."""
    items = [np.asarray(item, dtype) for row in rows for item in row]
    lengths = [len(row) for row in rows]
    if dtype is object:
        values = np.empty(len(items), object)
        values[:] = [item.item() for item in items]
    elif items:
        values = np.stack(items)
    else:
        values = np.empty((0,), dtype)
    return RaggedArray(values, np.concatenate(([0], np.cumsum(lengths))).astype(np.int64))


def strs(*values: str) -> np.ndarray:
    """A 1-D object array of str (how Text items decode)."""
    out = np.empty(len(values), object)
    out[:] = list(values)
    return out


def blobs(*values: bytes) -> np.ndarray:
    """A 1-D object array of bytes (how string Tensor items decode)."""
    out = np.empty(len(values), object)
    out[:] = list(values)
    return out


def _same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    # NaN equals NaN and -0.0 differs from 0.0: the bits that matter survive a round trip.
    return bool(np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b)))


def assert_same(actual: Any, expected: Any, where: str = "value") -> None:
    """Same structure, type family, dtype, shape and values (floats: NaN == NaN, signed zeros)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected a dict, found {type(actual).__name__}"
        assert sorted(actual) == sorted(expected), f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}/{key}")
    elif isinstance(expected, RaggedArray):
        assert isinstance(actual, RaggedArray), f"{where}: expected a RaggedArray, found {actual!r}"
        assert np.array_equal(actual.row_splits, expected.row_splits), f"{where}: {actual} != {expected}"
        assert_same(actual.values, expected.values, f"{where}.values")
    elif isinstance(expected, (str, bytes)):
        assert type(actual) is type(expected), (
            f"{where}: expected {type(expected).__name__}, found {actual!r}"
        )
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"
    else:
        expected = np.asarray(expected)
        assert isinstance(actual, (np.ndarray, np.generic)), f"{where}: not numpy: {actual!r}"
        got = np.asarray(actual)
        assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype} != {expected.dtype}"
        assert got.shape == expected.shape, f"{where}: shape {got.shape} != {expected.shape}"
        if expected.dtype.kind == "O":
            assert [type(v) for v in got.ravel()] == [type(v) for v in expected.ravel()], where
            assert got.tolist() == expected.tolist(), f"{where}: {got!r} != {expected!r}"
        elif expected.dtype.kind == "f":
            assert _same_floats(got, expected), f"{where}: {got!r} != {expected!r}"
        else:
            assert np.array_equal(got, expected), f"{where}: {got!r} != {expected!r}"


def _take(values: Any, start: int, stop: int) -> Any:
    if isinstance(values, RaggedArray):
        splits = values.row_splits[start : stop + 1]
        return RaggedArray(_take(values.values, int(splits[0]), int(splits[-1])), splits - splits[0])
    return values[start:stop]


def row(batch: Any, i: int) -> Any:
    """Row ``i`` of a deserialize_batch result (dicts, RaggedArrays, dense or object arrays)."""
    if isinstance(batch, dict):
        return {key: row(value, i) for key, value in batch.items()}
    if isinstance(batch, RaggedArray):
        return _take(batch.values, int(batch.row_splits[i]), int(batch.row_splits[i + 1]))
    return batch[i]


def leaves(value: Any) -> list[Any]:
    """The non-dict values of a nested dict."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in leaves(v)]
    return [value]


# -- Example wire bytes, by hand -----------------------------------------------------------------------


def varint(value: int) -> bytes:
    """A protobuf varint; negative ints as 64-bit two's complement (10 bytes)."""
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def int64_feature(*values: int) -> bytes:
    """A Feature holding a packed int64_list."""
    return ld(3, ld(1, b"".join(varint(v) for v in values)) if values else b"")


def float_feature(*values: float) -> bytes:
    """A Feature holding a packed float_list."""
    return ld(2, ld(1, np.array(values, "<f4").tobytes()) if values else b"")


def bytes_feature(*values: bytes) -> bytes:
    """A Feature holding a bytes_list."""
    return ld(1, b"".join(ld(1, v) for v in values))


def example(*entries: tuple[str, bytes]) -> bytes:
    """Example bytes with map entries in the given order: (key, Feature bytes)."""
    body = b"".join(ld(1, ld(1, key.encode()) + ld(2, feature)) for key, feature in entries)
    return ld(1, body)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields of a message (the only kind Example maps use)."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        assert key & 7 == 2, f"unexpected wire type in {data.hex()}"
        size, pos = _read_varint(data, pos)
        out.append((key >> 3, data[pos : pos + size]))
        pos += size
    return out


def feature_entries(data: bytes) -> list[tuple[str, bytes]]:
    """(key, Feature bytes) of every map entry of Example bytes, in wire order."""
    entries = []
    for field, features in _fields(data):
        assert field == 1
        for entry_field, entry in _fields(features):
            assert entry_field == 1
            parts = dict(_fields(entry))
            entries.append((parts[1].decode(), parts.get(2, b"")))
    return entries
