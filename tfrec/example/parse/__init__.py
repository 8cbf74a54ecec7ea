"""tf.io-style parsing: parse specs in, numpy out, with TensorFlow's values and errors (example layer).

:mod:`.specs` holds the spec classes and the sparse/ragged results; :mod:`.plan` validates specs
once; :mod:`.outputs` turns a batch's columns into each spec's value (:mod:`.ragged` assembles a
RaggedFeature's partitions) and :mod:`.checks` raises the data error TensorFlow would;
:mod:`.examples` and :mod:`.sequences` are the entry points.

Example:
    >>> parse_example([data], {"label": FixedLenFeature([], int64)})
    {'label': array([3])}
"""

from __future__ import annotations

from .examples import parse_example, parse_example_packed, parse_single_example, single_example_parser
from .sequences import parse_sequence_example, parse_single_sequence_example
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
