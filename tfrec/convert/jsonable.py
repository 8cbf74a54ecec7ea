"""Records and decoded values as JSON (convert layer): what ``tfrec head`` prints and JSONL export writes.

Numbers stay numbers (a float32 as the shortest decimal that reads back as it: ``17.99``); bytes
become UTF-8 text when they decode, else ``{"b64": "..."}`` (base64, so a reader can tell them apart
from text). Without features, an Example is ``{key: [values]}`` (lists, as stored) and a
SequenceExample ``{"context": {...}, "feature_lists": {key: [[step values], ...]}}``;
with features, the values the FeaturesDict decodes (scalars as scalars, nested dicts).

Example:
    >>> record_to_json(tfrec.encode_example({"label": 3, "raw": b"\\xff"}))
    {'label': [3], 'raw': [{'b64': '/w=='}]}
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..example import RaggedArray, SparseArray, decode_sequence_example
from ..features import FeaturesDict

__all__ = ["jsonable", "record_to_json"]


def jsonable(value: Any) -> Any:
    """``value`` (numpy, bytes, nested dicts and lists) as plain JSON types.

    Example:
        >>> jsonable({"a": np.arange(2), "b": b"hi", "c": b"\\x80"})
        {'a': [0, 1], 'b': 'hi', 'c': {'b64': 'gA=='}}
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(data).decode("ascii")}
    if isinstance(value, np.ndarray):
        if value.ndim == 0:  # a parsed scalar (0-d array): its one value (a numpy scalar: float32 kept)
            return jsonable(value[()])
        if value.dtype.kind == "O":
            return [jsonable(v) for v in value.tolist()]
        if value.dtype == np.float32:  # the shortest decimal that reads back as the same float32
            return jsonable(value.astype(str).astype(np.float64).tolist())
        if value.dtype.kind == "f":
            return jsonable(value.tolist())
        return value.tolist()
    if isinstance(value, np.float32):
        return jsonable(float(str(value)))  # 17.99, not 17.989999771118164
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN or infinity: "nan", "inf", "-inf"
    if isinstance(value, RaggedArray):
        return jsonable(value.to_list())
    if isinstance(value, SparseArray):
        return {
            "indices": jsonable(value.indices),
            "values": jsonable(value.values),
            "dense_shape": jsonable(value.dense_shape),
        }
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def record_to_json(
    record: bytes, features: FeaturesDict | None = None, *, sequence: bool = False
) -> dict[str, Any]:
    """One serialized Example or SequenceExample as a JSON-ready dict.

    Without ``features`` the record is read without a schema: a record with feature lists is
    shown as a SequenceExample, any other as an Example. With ``features``, ``sequence`` says
    whether records are SequenceExamples.

    Raises:
        DecodeError: the bytes are not an Example or SequenceExample.
    """
    if features is not None:
        return jsonable(features.deserialize_example(record, sequence_example=sequence))
    context, lists = decode_sequence_example(record)
    if lists:
        return {"context": jsonable(context), "feature_lists": jsonable(lists)}
    return jsonable({k: [] if v is None else v for k, v in context.items()})
