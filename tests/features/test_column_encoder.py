"""compile_column_encoder: columns in, the bytes serialize_example makes of each row out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfrec
from tfrec.features import FeaturesDict, Sequence, Tensor, Text
from tfrec.features.serializer import compile_column_encoder

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]
DTYPES += ["float16", "float32", "float64"]


@st.composite
def _columns(draw: Any) -> tuple[FeaturesDict, dict[str, np.ndarray], int]:
    rows = draw(st.integers(0, 12))
    features: dict[str, Any] = {}
    columns: dict[str, np.ndarray] = {}
    for i in range(draw(st.integers(1, 4))):
        dtype = np.dtype(draw(st.sampled_from(DTYPES)))
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        declared = shape
        if shape and draw(st.booleans()):
            declared = (None, *shape[1:])  # the column's size fills the unknown dimension
        stored = dtype if draw(st.booleans()) else np.dtype(draw(st.sampled_from(DTYPES)))
        features[f"c{i}"] = Tensor(shape=declared, dtype=stored)
        columns[f"c{i}"] = draw(hnp.arrays(dtype, (rows, *shape)))
    return FeaturesDict(features), columns, rows


@settings(max_examples=200, deadline=None)
@given(_columns())
def test_columns_encode_as_each_row_serializes(case: tuple[FeaturesDict, dict[str, np.ndarray], int]) -> None:
    features, columns, rows = case
    try:
        expected = [features.serialize_example({k: v[i] for k, v in columns.items()}) for i in range(rows)]
    except tfrec.TfrecError as exc:
        with pytest.raises(type(exc)):
            compile_column_encoder(features)(columns, rows)
        return
    assert compile_column_encoder(features)(columns, rows) == expected


def test_nested_text_and_lists_of_values_take_the_per_feature_path() -> None:
    features = FeaturesDict({"meta": {"lang": Text(), "n": np.int64}, "words": Sequence(Text())})
    columns = {"meta/lang": ["en", "日本語"], "meta/n": np.array([1, 2]), "words": [["a"], []]}
    samples = [
        {"meta": {"lang": "en", "n": 1}, "words": ["a"]},
        {"meta": {"lang": "日本語", "n": 2}, "words": []},
    ]
    assert compile_column_encoder(features)(columns, 2) == [features.serialize_example(s) for s in samples]


def test_a_missing_column_names_its_feature() -> None:
    encode = compile_column_encoder(FeaturesDict({"a": np.int64, "b": np.int64}))
    with pytest.raises(tfrec.MissingFeatureError, match="no column 'b'"):
        encode({"a": np.arange(2)}, 2)


def test_a_float_beyond_float32_raises_as_one_row_does() -> None:
    features = FeaturesDict({"x": np.float32})
    with pytest.raises(tfrec.EncodeError):
        features.serialize_example({"x": np.float64(1e300)})
    with pytest.raises(tfrec.EncodeError):
        compile_column_encoder(features)({"x": np.array([1.0, 1e300])}, 2)
