"""tfrec: read and write TFRecord files without TensorFlow, byte for byte compatible.

Example:
    >>> import tfrec
    >>> tfrec.write_records("x.tfrecord", [b"hello", b"world"])
    2
    >>> list(tfrec.read_records("x.tfrecord"))
    [b'hello', b'world']
"""

from __future__ import annotations

from . import data, features
from .data import (
    ReadOptions,
    RecordFileSource,
    ShardedWriter,
    ShardOptions,
    TFRecordDataset,
    build_index,
    infer_features,
    read_index,
    write_dataset,
)
from .data.writing.tables import register_table_reader
from .errors import (
    ChecksumError,
    ConvertError,
    DatasetStateError,
    DecodeError,
    EncodeError,
    InvalidArgumentError,
    MissingFeatureError,
    MissingFileError,
    OptionalDependencyError,
    OutOfRangeError,
    OutputExistsError,
    RecordError,
    RecordTypeError,
    SchemaError,
    ShardingError,
    TfrecError,
    TfrecWarning,
    TruncatedRecordError,
    WorkerError,
)
from .example import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedArray,
    RaggedFeature,
    SparseArray,
    SparseFeature,
    VarLenFeature,
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    float32,
    int64,
    parse_example,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
    string,
)
from .features import FeaturesDict
from .integrations.tables import arrow_table_columns, read_arrow
from .record import RecordBatch, RecordReader, RecordWriter, read_batches, read_records, write_records

__version__ = "0.1.0"

# write_dataset (data layer) reads DataFrames, Arrow tables and Hugging Face datasets through this
# integration, which the data layer may not import: it is handed the reader instead.
register_table_reader(arrow_table_columns)

__all__ = [
    "ChecksumError",
    "ConvertError",
    "DatasetStateError",
    "DecodeError",
    "EncodeError",
    "FeaturesDict",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "InvalidArgumentError",
    "MissingFeatureError",
    "MissingFileError",
    "OptionalDependencyError",
    "OutOfRangeError",
    "OutputExistsError",
    "RaggedArray",
    "RaggedFeature",
    "ReadOptions",
    "RecordBatch",
    "RecordError",
    "RecordFileSource",
    "RecordReader",
    "RecordTypeError",
    "RecordWriter",
    "SchemaError",
    "ShardOptions",
    "ShardedWriter",
    "ShardingError",
    "SparseArray",
    "SparseFeature",
    "TFRecordDataset",
    "TfrecError",
    "TfrecWarning",
    "TruncatedRecordError",
    "VarLenFeature",
    "WorkerError",
    "__version__",
    "build_index",
    "data",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "features",
    "float32",
    "infer_features",
    "int64",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "read_arrow",
    "read_batches",
    "read_index",
    "read_records",
    "string",
    "write_dataset",
    "write_records",
]
