"""Converters: existing data -> samples -> TFRecord shards, and TFRecord -> JSON Lines or Parquet.

Sources: tar/webdataset, CSV, JSON Lines, Parquet, fixed-length binary records, image folders.

Each converter is a function returning :class:`Samples` (sample dicts, read lazily, plus the
FeaturesDict that stores them); :func:`write_samples` writes them through the sharded writer.
Everything streams: memory stays flat whatever the input size.

Example:
    >>> from tfrec.convert import read_webdataset, keep, write_samples
    >>> samples = read_webdataset("digits.tar", types="cls=int64", transforms=[keep(names=["png", "cls"])])
    >>> write_samples(samples, "out/digits", num_shards=4).paths
"""

from __future__ import annotations

from ..features import FEATURES_FILE  # kept importable here: write_samples saves it beside the shards
from .csv_table import infer_column_type, read_csv
from .export import arrow_schema, records_to_jsonl, records_to_parquet
from .fixed import Field, Layout, parse_layout, read_fixed_records
from .image_folder import read_image_folder
from .jsonable import jsonable, record_to_json
from .jsonl import MAX_NESTING, read_jsonl, samples_from_objects
from .names import check_names, clean_name, nest
from .parquet_table import read_parquet
from .pipeline import write_samples
from .samples import Samples, connector_from_value, features_from_values
from .transforms import KEY, Transform, apply, drop_empty, keep, load_function, rename
from .types import TYPE_NAMES, load_features, parse_types
from .webdataset import MAX_MEMBER_BYTES, read_members, read_webdataset

__all__ = [
    "FEATURES_FILE",
    "KEY",
    "MAX_MEMBER_BYTES",
    "MAX_NESTING",
    "TYPE_NAMES",
    "Field",
    "Layout",
    "Samples",
    "Transform",
    "apply",
    "arrow_schema",
    "check_names",
    "clean_name",
    "connector_from_value",
    "drop_empty",
    "features_from_values",
    "infer_column_type",
    "jsonable",
    "keep",
    "load_features",
    "load_function",
    "nest",
    "parse_layout",
    "parse_types",
    "read_csv",
    "read_fixed_records",
    "read_image_folder",
    "read_jsonl",
    "read_members",
    "read_parquet",
    "read_webdataset",
    "record_to_json",
    "records_to_jsonl",
    "records_to_parquet",
    "rename",
    "samples_from_objects",
    "write_samples",
]
