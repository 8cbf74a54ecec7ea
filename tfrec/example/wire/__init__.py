"""The wire layer of the example package: Example and SequenceExample bytes, read without protobuf
objects (example layer).

:mod:`.kinds` holds the format's facts (feature kinds, tags, the dtype of each kind),
:mod:`.fields` reads varints and message fields, :mod:`.scan` locates features, and
:mod:`.values` decodes a feature's list into numpy.

Example:
    >>> from tfrec.example import wire
    >>> features = wire.scan_example(data)
    >>> wire.decode_values(data, features[b"label"])
    array([3])
"""

from __future__ import annotations

from .fields import fields, message_spans, read_varint
from .kinds import (
    BYTES,
    FIELD_1,
    FIELD_2,
    FIXED32,
    FIXED64,
    FLOAT,
    INT64,
    KIND_TAG,
    LEN,
    LIST_TAGS,
    NONE,
    STORED_DTYPE,
    VARINT,
    kind_of_dtype,
    tag,
)
from .scan import Feature, scan_example, scan_sequence_example
from .values import (
    C_PROTOBUF,
    bytes_values,
    decode_values,
    decode_varints,
    float_values,
    int64_values,
    varints_between,
    varints_of,
)

__all__ = [
    "BYTES",
    "C_PROTOBUF",
    "FIELD_1",
    "FIELD_2",
    "FIXED32",
    "FIXED64",
    "FLOAT",
    "INT64",
    "KIND_TAG",
    "LEN",
    "LIST_TAGS",
    "NONE",
    "STORED_DTYPE",
    "VARINT",
    "Feature",
    "bytes_values",
    "decode_values",
    "decode_varints",
    "fields",
    "float_values",
    "int64_values",
    "kind_of_dtype",
    "message_spans",
    "read_varint",
    "scan_example",
    "scan_sequence_example",
    "tag",
    "varints_between",
    "varints_of",
]
