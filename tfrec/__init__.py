"""tfrec: read and write TFRecord files without TensorFlow, byte for byte compatible.

Example:
    >>> import tfrec
    >>> tfrec.write_records("x.tfrecord", [b"hello", b"world"])
    2
    >>> list(tfrec.read_records("x.tfrecord"))
    [b'hello', b'world']
"""

from __future__ import annotations

from .errors import (
    ChecksumError,
    DecodeError,
    EncodeError,
    MissingFeatureError,
    OptionalDependencyError,
    RecordError,
    SchemaError,
    TfrecError,
    TfrecWarning,
    TruncatedRecordError,
)
from .record import RecordReader, RecordWriter, read_records, write_records

__version__ = "0.1.0"

__all__ = [
    "ChecksumError",
    "DecodeError",
    "EncodeError",
    "MissingFeatureError",
    "OptionalDependencyError",
    "RecordError",
    "RecordReader",
    "RecordWriter",
    "SchemaError",
    "TfrecError",
    "TfrecWarning",
    "TruncatedRecordError",
    "__version__",
    "read_records",
    "write_records",
]
