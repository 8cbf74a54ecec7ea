"""One record at a time gives the batched path's rows: deserialize_example and parse_single_example
against deserialize_batch and parse_example (hypothesis), on random schemas and on image-like records
with values at the edges (NaN payloads, signed zeros, int64 extremes, NUL bytes, empty text)."""

from __future__ import annotations

from typing import Any

import numpy as np
from featurecheck import assert_same, row
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_features_property import SCHEMAS, build, values

import tfrec
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
IMAGE_LIKE = FeaturesDict(
    {
        "image": Tensor(shape=(), dtype=str),
        "label": ClassLabel(num_classes=1000),
        "embedding": Tensor(shape=(8,), dtype=np.float32),
        "tokens": Tensor(shape=(5,), dtype=np.int64),
        "text": Text(),
    }
)
SPEC = IMAGE_LIKE.parse_spec()
# float32 bit patterns of every kind: NaNs with payloads (quiet and signalling), infinities, -0.0
EDGE_FLOATS = [0x7F800001, 0x7FC00000, 0xFFC00001, 0x80000000, 0x7F800000]
FLOAT_BITS = st.one_of(st.integers(0, 2**32 - 1), st.sampled_from(EDGE_FLOATS))
INTS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 300), st.sampled_from([-1, 2**63 - 1]))


@st.composite
def image_like(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "image": draw(st.binary(max_size=300)),
        "label": draw(st.integers(-1, 999)),
        "embedding": np.array(draw(st.lists(FLOAT_BITS, min_size=8, max_size=8)), np.uint32).view(np.float32),
        "tokens": draw(hnp.arrays(np.int64, 5, elements=INTS)),
        "text": draw(st.text(max_size=20)),
    }


def same_bits(a: Any, b: Any) -> bool:
    if isinstance(b, (bytes, str)) or np.asarray(b).dtype == object:  # a batch row's item: bytes or str
        return type(np.asarray(a, object)[()]) is type(b) and np.asarray(a, object).tolist() == b
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a.view(np.uint32), b.view(np.uint32)))
    return a.tolist() == b.tolist()


@SETTINGS
@given(data=st.data(), spec=SCHEMAS)
def test_one_record_is_its_batch_row_on_random_schemas(data: st.DataObject, spec: tuple[Any, ...]) -> None:
    features = build(spec)
    drawn = data.draw(st.lists(values(spec), min_size=1, max_size=3), label="values")
    records = [features.serialize_example(value) for value, _ in drawn]
    batch = features.deserialize_batch(records)
    for r, record in enumerate(records):
        assert_same(features.deserialize_example(record), row(batch, r), f"row {r}")


@SETTINGS
@given(samples=st.lists(image_like(), min_size=1, max_size=8))
def test_one_image_like_record_is_its_batch_row_bit_for_bit(samples: list[dict[str, Any]]) -> None:
    # Twice over: from the second record of a layout on, the decoder compiled for it is taken.
    records = [IMAGE_LIKE.serialize_example(sample) for sample in samples]
    batch = IMAGE_LIKE.deserialize_batch(records)
    parsed = tfrec.parse_example(records, SPEC)
    for _ in range(2):
        for r, record in enumerate(records):
            one, single = IMAGE_LIKE.deserialize_example(record), tfrec.parse_single_example(record, SPEC)
            for key in SPEC:
                assert same_bits(one[key], batch[key][r]), key
                assert same_bits(single[key], parsed[key][r]), key
                assert single[key].flags.writeable, key  # never a read-only view of the record
            assert type(one["image"]) is bytes and type(one["text"]) is str
            assert one["label"].shape == () and one["label"].dtype == np.int64


def test_one_record_arrays_do_not_share_the_record() -> None:
    record = IMAGE_LIKE.serialize_example(
        {"image": b"x", "label": 1, "embedding": np.ones(8, np.float32), "tokens": np.arange(5), "text": "t"}
    )
    one = IMAGE_LIKE.deserialize_example(record)
    one["embedding"][0] = 7.0  # writable, and a copy: the next decode of the same bytes is unchanged
    assert IMAGE_LIKE.deserialize_example(record)["embedding"][0] == 1.0


def test_single_example_parser_is_parse_single_example() -> None:
    parse = tfrec.example.single_example_parser(SPEC)
    good = IMAGE_LIKE.serialize_example(
        {"image": b"", "label": 0, "embedding": np.zeros(8, np.float32), "tokens": [0] * 5, "text": ""}
    )
    assert {k: v.tolist() for k, v in parse(good).items()} == {
        k: v.tolist() for k, v in tfrec.parse_single_example(good, SPEC).items()
    }
    short = tfrec.encode_example({"label": 3})
    for call in (parse, lambda data: tfrec.parse_single_example(data, SPEC)):
        try:
            call(short)
        except tfrec.TfrecError as exc:
            caught: Any = (type(exc), str(exc))
        assert caught == caught_for(short)


def caught_for(data: bytes) -> tuple[type, str]:
    try:
        tfrec.parse_single_example(data, SPEC)
    except tfrec.TfrecError as exc:
        return type(exc), str(exc)
    raise AssertionError("no error")
