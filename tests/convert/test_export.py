"""Parquet export types its columns with the integrations' Arrow mapping: the types are pinned here."""

from __future__ import annotations

import io

import numpy as np
import pytest

import tfrec
from tfrec.convert import arrow_schema, records_to_parquet
from tfrec.features import ClassLabel, FeaturesDict, Image, Sequence, Tensor, Text

pq = pytest.importorskip("pyarrow.parquet")

FEATURES = FeaturesDict(
    {
        "id": np.int64,
        "score": np.float32,
        "flag": np.bool_,
        "text": Text(),
        "raw": Tensor(shape=(), dtype=object),
        "label": ClassLabel(names=["a", "b"]),
        "emb": Tensor(shape=(4,), dtype=np.float32),
        "mat": Tensor(shape=(2, 3), dtype=np.int64),
        "var": Tensor(shape=(None,), dtype=np.int64),
        "var2": Tensor(shape=(None, 2), dtype=np.float32),
        "many": Tensor(shape=(None, None), dtype=np.int64, encoding="bytes"),
        "img": Image(shape=(None, None, 3)),
        "words": Sequence(Text()),
        "meta": {"lang": Text(), "deep": {"b": Tensor(shape=(3,), dtype=object)}},
    }
)


def test_parquet_columns_are_the_stored_keys_with_their_arrow_types() -> None:
    assert {field.name: str(field.type) for field in arrow_schema(FEATURES)} == {
        "id": "int64",
        "score": "float",
        "flag": "int64",
        "text": "string",
        "raw": "binary",
        "label": "int64",
        "emb": "fixed_size_list<item: float>[4]",
        "mat": "list<item: int64>",
        "var": "list<item: int64>",
        "var2": "list<item: float>",
        "many/shape": "fixed_size_list<item: int64>[2]",
        "many/value": "binary",
        "img": "binary",
        "words": "list<item: string>",  # Sequence(Text()): text, as Text is (was binary)
        "meta/lang": "string",
        "meta/deep/b": "fixed_size_list<item: binary>[3]",
    }


def test_parquet_rows_hold_text_as_str_and_a_missing_key_as_null() -> None:
    features = FeaturesDict({"id": np.int64, "text": Text(), "mat": Tensor(shape=(2, 2), dtype=np.int64)})
    records = [
        features.serialize_example({"id": 1, "text": "é", "mat": np.arange(4).reshape(2, 2)}),
        tfrec.encode_example({"id": 2}),
    ]
    out = io.BytesIO()
    assert records_to_parquet([("p", i, r) for i, r in enumerate(records)], out, features) == 2
    out.seek(0)
    assert pq.read_table(out).to_pylist() == [
        {"id": 1, "text": "é", "mat": [0, 1, 2, 3]},
        {"id": 2, "text": None, "mat": None},
    ]
