"""parse_example_packed: strings of one length left packed for a reading process to hand over.

Whatever comes packed must become, once pickled (as it travels to the consumer) or through
``strings()``, exactly what parse_example gives: the same object arrays of ``bytes``, NULs kept,
in the same shapes, and the same errors for the same records.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.example import parse_example_packed
from tfrec.example.columns import PackedStrings


def delivered(parsed: dict[str, Any]) -> dict[str, Any]:
    """What the consumer receives: the pull pickled and unpickled."""
    out: dict[str, Any] = pickle.loads(pickle.dumps(parsed, protocol=5))
    return out


def assert_delivered_as_parsed(records: list[bytes], spec: dict[str, Any]) -> dict[str, Any]:
    expected = tfrec.parse_example(records, spec)
    packed = parse_example_packed(records, spec)
    got = delivered(packed)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, np.ndarray):
            assert type(got[key]) is np.ndarray, key
            assert got[key].dtype == value.dtype and got[key].shape == value.shape, key
            assert got[key].tolist() == value.tolist(), key
            if isinstance(packed[key], PackedStrings):  # packed stands for the same values
                assert packed[key].strings().tolist() == value.tolist()
        else:
            assert type(got[key]) is type(value) and repr(got[key]) == repr(value), key
    return packed


IMAGE = {"image": tfrec.FixedLenFeature([], tfrec.string)}


def test_images_of_one_length_come_packed_and_unpickle_to_bytes() -> None:
    rng = np.random.default_rng(0)
    images = [rng.bytes(700) + b"\x00" for _ in range(64)]  # a trailing NUL is a byte like any other
    records = [
        tfrec.encode_example({"image": image, "text": "x" * (i % 5)}) for i, image in enumerate(images)
    ]
    packed = assert_delivered_as_parsed(records, {**IMAGE, "text": tfrec.FixedLenFeature([], tfrec.string)})
    assert isinstance(packed["image"], PackedStrings) and packed["image"].shape == (64,)
    assert not isinstance(packed["text"], PackedStrings)  # lengths differ: bytes as usual


def test_records_of_one_layout_come_packed_too() -> None:
    # Records that repeat one layout byte for byte go through the fixed decoder.
    rng = np.random.default_rng(1)
    records = [tfrec.encode_example({"image": rng.bytes(40), "label": i % 7}) for i in range(64)]
    packed = assert_delivered_as_parsed(records, {**IMAGE, "label": tfrec.FixedLenFeature([], tfrec.int64)})
    assert isinstance(packed["image"], PackedStrings)


def test_scikit_learn_digits_as_packed_images() -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    records = [
        tfrec.encode_example({"image": image.astype(np.uint8).tobytes(), "label": int(target)})
        for image, target in zip(digits.images[:300], digits.target[:300], strict=True)
    ]
    spec = {**IMAGE, "label": tfrec.FixedLenFeature([], tfrec.int64)}
    packed = assert_delivered_as_parsed(records, spec)
    assert isinstance(packed["image"], PackedStrings)
    back = np.frombuffer(b"".join(delivered(packed)["image"].tolist()), np.uint8).reshape(-1, 8, 8)
    assert np.array_equal(back, digits.images[:300])


def test_several_values_per_record_come_packed_in_the_specs_shape() -> None:
    rng = np.random.default_rng(2)
    records = [tfrec.encode_example({"pair": [rng.bytes(2), rng.bytes(2)], "id": i}) for i in range(40)]
    packed = assert_delivered_as_parsed(records, {"pair": tfrec.FixedLenFeature([2], tfrec.string)})
    assert isinstance(packed["pair"], PackedStrings) and packed["pair"].shape == (40, 2)


def test_defaults_and_keys_other_specs_read_are_not_packed() -> None:
    rng = np.random.default_rng(3)
    records = [tfrec.encode_example({"image": rng.bytes(30), "id": i}) for i in range(40)]
    records.append(tfrec.encode_example({"id": 40}))  # no image: the default fills it
    spec = {"image": tfrec.FixedLenFeature([], tfrec.string, default_value=b"?" * 30)}
    assert not isinstance(assert_delivered_as_parsed(records, spec)["image"], PackedStrings)
    # The same key read by a FixedLenSequenceFeature too (named as bytes): that output needs bytes.
    both: dict[Any, Any] = {"image": spec["image"]}
    both[b"image"] = tfrec.FixedLenSequenceFeature([], tfrec.string, allow_missing=True)
    packed = assert_delivered_as_parsed(records[:40], both)
    assert not any(isinstance(value, PackedStrings) for value in packed.values())


def test_the_same_errors_as_parse_example() -> None:
    records = [tfrec.encode_example({"image": b"abc"}) for _ in range(40)] + [tfrec.encode_example({})]
    with pytest.raises(tfrec.MissingFeatureError) as expected:
        tfrec.parse_example(records, IMAGE)
    with pytest.raises(tfrec.MissingFeatureError) as got:
        parse_example_packed(records, IMAGE)
    assert str(got.value) == str(expected.value)


values = st.one_of(st.binary(min_size=1, max_size=3), st.binary(min_size=200, max_size=202))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.none(), values), min_size=1, max_size=70),
    st.booleans(),
    st.integers(1, 3),
)
def test_packed_values_are_delivered_as_parse_example_parses(
    images: list[bytes | None], with_default: bool, width: int
) -> None:
    # Values of one or a few lengths, some missing; a default or not (then missing is an error);
    # one value or several per record.
    records = [
        tfrec.encode_example({"id": i} if image is None else {"id": i, "image": [image] * width})
        for i, image in enumerate(images)
    ]
    default = [b"-"] * width if with_default else None
    spec = {
        "image": tfrec.FixedLenFeature([width], tfrec.string, default_value=default),
        "id": tfrec.FixedLenFeature([], tfrec.int64),
    }
    try:
        expected = tfrec.parse_example(records, spec)
    except tfrec.TfrecError as exc:
        with pytest.raises(type(exc)) as raised:
            parse_example_packed(records, spec)
        assert str(raised.value) == str(exc)
        return
    assert expected  # (the usual case: compared value for value)
    assert_delivered_as_parsed(records, spec)
