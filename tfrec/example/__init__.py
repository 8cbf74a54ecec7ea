"""Example layer: the tf.train.Example / SequenceExample wire codec and TF-compatible parsing.

Never touches files: bytes in, numpy out (and back).

Example:
    >>> from tfrec.example import encode_example, decode_example
    >>> decode_example(encode_example({"label": 3}))
    {'label': array([3])}
"""

from __future__ import annotations

from .codec import (
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    encode_typed_example,
)
from .parsing import parse_example, parse_single_example
from .sequence_parsing import parse_sequence_example, parse_single_sequence_example
from .specs import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedArray,
    RaggedFeature,
    SparseArray,
    SparseFeature,
    VarLenFeature,
    as_dtype,
    float32,
    int64,
    string,
)

__all__ = [
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "RaggedArray",
    "RaggedFeature",
    "SparseArray",
    "SparseFeature",
    "VarLenFeature",
    "as_dtype",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "encode_typed_example",
    "float32",
    "int64",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "string",
]
