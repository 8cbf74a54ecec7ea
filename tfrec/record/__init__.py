"""Record layer: TFRecord framing with masked CRC32C, gzip/zlib compression, positioned frame reads.

Knows nothing of protobuf: records are ``bytes`` in and ``bytes`` out.

Example:
    >>> from tfrec.record import write_records, read_records
    >>> write_records("x.tfrecord", [b"a", b"b"])
    2
    >>> list(read_records("x.tfrecord"))
    [b'a', b'b']
"""

from __future__ import annotations

from .batch import RecordBatch
from .compression import resolve_compression
from .crc import crc_backend, masked_crc
from .reader import RecordReader, read_batches, read_records
from .writer import RecordWriter, write_records

__all__ = [
    "RecordBatch",
    "RecordReader",
    "RecordWriter",
    "crc_backend",
    "masked_crc",
    "read_batches",
    "read_records",
    "resolve_compression",
    "write_records",
]
