"""Example layer: the tf.train.Example / SequenceExample wire codec and TF-compatible parsing.

Never touches files: bytes in, numpy out (and back). The sub-packages follow the data:
:mod:`.wire` reads the bytes (with :mod:`.codec`, the schema-less encoder and decoder, beside
it), :mod:`.columns` decodes a batch into one column per feature, and :mod:`.parse` applies
tf.io's specs to the columns.

Example:
    >>> from tfrec.example import encode_example, decode_example
    >>> decode_example(encode_example({"label": 3}))
    {'label': array([3])}
"""

from __future__ import annotations

from .batch_encode import encode_examples
from .codec import (
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    encode_typed_example,
)
from .parse import (
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
    parse_example,
    parse_example_packed,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
    single_example_parser,
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
    "encode_examples",
    "encode_sequence_example",
    "encode_typed_example",
    "float32",
    "int64",
    "parse_example",
    "parse_example_packed",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "single_example_parser",
    "string",
]
