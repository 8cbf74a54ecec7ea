"""Data layer: datasets over many TFRecord files (sources, the reading pipeline, sharding, reading
processes), sharded writing, tensorflow_datasets directories, index files and random access.

Example:
    >>> tfrec.write_dataset(samples, "out/train", features, num_shards=4, index=True)
    >>> ds = tfrec.TFRecordDataset("out/train-*.tfrecord", features=features, seed=0)
    >>> for batch in ds.shuffle(10_000).batch(1024):
    ...     ...
    >>> source = tfrec.RecordFileSource("out/train-*.tfrecord", features=features)
    >>> tfrec.infer_features("out/train-*.tfrecord")    # a FeaturesDict proposed from 1000 records
"""

from __future__ import annotations

from .index.format import read_index
from .index.scan import build_index
from .infer import infer_features
from .paths import expand_paths, open_binary
from .pipeline.dataset import TFRecordDataset
from .pipeline.interleave import ReadOptions
from .pipeline.iterator import DatasetIterator
from .random_access.shuffled_batches import ShuffledBatches
from .random_access.source import RecordFileSource
from .sharding.consumers import ShardOptions
from .tfds.directory import TfdsSplit, from_tfds_dir, write_tfds_dir
from .tfds.load import LoadedSplit, load_tfds
from .writing.one_call import write_dataset
from .writing.shards import ShardedWriter, ShardInfo, WriteSummary, shard_name

__all__ = [
    "DatasetIterator",
    "LoadedSplit",
    "ReadOptions",
    "RecordFileSource",
    "ShardInfo",
    "ShardOptions",
    "ShardedWriter",
    "ShuffledBatches",
    "TFRecordDataset",
    "TfdsSplit",
    "WriteSummary",
    "build_index",
    "expand_paths",
    "from_tfds_dir",
    "infer_features",
    "load_tfds",
    "open_binary",
    "read_index",
    "shard_name",
    "write_dataset",
    "write_tfds_dir",
]
