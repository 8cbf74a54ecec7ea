"""encode_example's inline paths (values classified by exact type, entry heads cached by key, kind and
size; int64 varints by protobuf's C serializer) give the bytes an independent wire builder gives."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from wirebuild import entry, example, float_feature, ints, ld, packed_ints, strs

import tfrec
from tfrec import EncodeError
from tfrec.example import codec, wire

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def reference_feature(value: Any) -> bytes:
    """The Feature bytes of ``value``, built from the wire format's rules alone."""
    if isinstance(value, str):
        return strs(value.encode())
    if isinstance(value, bytes):
        return strs(value)
    if isinstance(value, (bool, int)):
        return ints(int(value))
    if isinstance(value, float):
        return float_feature(ld(1, np.array([value]).astype(np.float32).tobytes()))
    flat = np.ravel(value)
    if flat.dtype.kind == "f":
        data = flat.astype("<f4").tobytes()  # bit for bit: NaN payloads and -0.0 kept
        return float_feature(ld(1, data) if data else b"")
    return ints(*flat.astype(np.int64).tolist())


def reference_entries(mapping: dict[str, Any]) -> bytes:
    return b"".join(entry(key, reference_feature(value)) for key, value in mapping.items())


int64s = st.integers(INT64_MIN, INT64_MAX)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
float32_arrays = st.one_of(
    hnp.arrays(np.dtype("<f4"), shapes, elements=st.floats(width=32)),
    hnp.arrays(np.dtype(">f4"), shapes, elements=st.floats(width=32)),  # big-endian: swapped on the wire
)
int64_arrays = st.one_of(
    hnp.arrays(np.dtype("<i8"), shapes, elements=int64s),
    hnp.arrays(np.dtype(">i8"), shapes),
    hnp.arrays(np.dtype("<i8"), shapes, elements=st.integers(0, (1 << 21) - 1)),  # token ids
    hnp.arrays(np.bool_, shapes),
)
fast_values = st.one_of(
    st.binary(max_size=200),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),  # unicode, never surrogates
    int64s,
    st.integers(-1, 1 << 15),
    st.integers(-1, 1 << 22),
    st.booleans(),
    st.floats(width=32),  # NaN, infinities, -0.0, subnormals: exact in float32
    st.floats(allow_nan=False, min_value=-3e38, max_value=3e38),  # rounded to float32
    float32_arrays,
    int64_arrays,
    # Strided views: a row-major copy of what they show is what is stored.
    float32_arrays.map(lambda a: a.T if a.ndim != 1 else a[::-1]),
    int64_arrays.map(lambda a: a[::2] if a.ndim == 1 else a.T),
)
keys = st.text(st.characters(blacklist_categories=("Cs",)), max_size=4)


@settings(max_examples=400)
@given(st.dictionaries(keys, fast_values, max_size=5))
def test_inline_paths_match_the_wire_rules(mapping: dict[str, Any]) -> None:
    entries = reference_entries(mapping)
    assert tfrec.encode_example(mapping) == example(entries)
    assert tfrec.encode_example(mapping) == example(entries)  # again, from the cached heads
    assert codec.encode_entries(mapping) == entries


@pytest.mark.parametrize(
    "value",
    [
        np.array([], np.float32),
        np.array([], np.int64),
        np.zeros((2, 0), np.float32),
        np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 1e-45, 3.4028235e38], np.float32),
        np.frombuffer(struct.pack("<2I", 0x7FC00001, 0xFFA00000), np.float32),  # NaN payloads
        np.array([INT64_MIN, -1, 0, 1, INT64_MAX], np.int64),
        np.array([0, 127, 128, 16_383, 16_384, (1 << 21) - 1, 1 << 21, 1 << 35], np.int64),
        np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2],
        np.arange(12, dtype=np.float32).reshape(3, 4).T,
        np.arange(6, dtype=">i8"),
        np.arange(6, dtype=">f4"),
        np.array([True, False, True]),
        np.float32(1.5),
        np.int64(-3),
        -0.0,
        float("inf"),
        float("-inf"),
        1e-46,  # rounds to 0 in float32
        0.1,
        -1,
        INT64_MIN,
        INT64_MAX,
        16_383,
        16_384,
        (1 << 21) - 1,
        1 << 21,
        True,
        "",
        "é 漢字 \U0001f600",
        b"",
        b"\xff\xfe\x00",  # not UTF-8: bytes are bytes
    ],
    ids=repr,
)
def test_edge_values_match_the_wire_rules(value: Any) -> None:
    assert tfrec.encode_example({"k": value}) == example(entry("k", reference_feature(value)))


@pytest.mark.parametrize("count", [1, 63, 64, 65, 127, 128, 4095, 4096, 4097, 20_000])
@pytest.mark.parametrize("top", [1 << 7, 1 << 14, 1 << 21, 1 << 62])
def test_int64_varints_of_every_length_and_size(count: int, top: int) -> None:
    values = np.random.default_rng([count, top.bit_length()]).integers(-top, top, count)
    assert ld(1, codec.encode_varints(values)) == packed_ints(values.tolist())
    assert tfrec.encode_example({"k": values}) == example(entry("k", ints(*values.tolist())))


def test_int64_varints_without_protobufs_c_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "C_PROTOBUF", False)
    for count in (1, 32, 600, 5000):
        values = np.random.default_rng(count).integers(-(1 << 40), 1 << 40, count)
        small = values[values >= 0] >> 20
        for array in (values, small):
            assert ld(1, codec.encode_varints(array)) == packed_ints(array.tolist())


def test_a_key_changing_kind_and_size_between_records() -> None:
    records = [1, 1.5, b"x", "yz", 300, np.ones(3, np.float32), np.arange(4), True, 2.0**200]
    for value in records[:-1]:
        assert tfrec.encode_example({"k": value}) == example(entry("k", reference_feature(value)))
    with pytest.raises(EncodeError, match="'k'"):
        tfrec.encode_example({"k": records[-1]})  # beyond float32's range


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (2**63, "does not fit in int64"),
        (-(2**63) - 1, "does not fit in int64"),
        ("\udcff", "UTF-8"),
        (1e39, "beyond float32's range"),
        (np.array([1e39]), "beyond float32's range"),
        (object(), "cannot store"),
    ],
    ids=repr,
)
def test_values_the_inline_paths_leave_are_refused_naming_the_key(value: Any, words: str) -> None:
    with pytest.raises(EncodeError, match=words) as caught:
        tfrec.encode_example({"ok": 1, "bad key": value})
    assert caught.value.key == "bad key"


def test_exact_floats_still_refuses_a_rounded_python_float() -> None:
    assert tfrec.encode_example({"f": 0.5}, exact_floats=True) == tfrec.encode_example({"f": 0.5})
    with pytest.raises(EncodeError, match="not exactly representable"):
        tfrec.encode_example({"f": 0.1}, exact_floats=True)


def test_keys_that_are_not_str_are_refused_before_any_cache() -> None:
    with pytest.raises(EncodeError, match="keys must be str"):
        tfrec.encode_example({b"k": 1})  # type: ignore[dict-item]
    with pytest.raises(EncodeError, match="not valid UTF-8"):
        tfrec.encode_example({"\udcff": 1})
