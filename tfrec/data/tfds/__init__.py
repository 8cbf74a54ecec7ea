"""tensorflow_datasets directories: reading and writing them without TensorFlow (data layer).

Example:
    >>> paths, features = tfrec.data.from_tfds_dir("~/tensorflow_datasets/mnist/3.0.1", split="test")
    >>> train = tfrec.data.load_tfds("mnist", split="train[:10%]", data_dir="~/tensorflow_datasets")
"""

from .directory import TfdsSplit, from_tfds_dir, write_tfds_dir
from .load import FileRange, LoadedSplit, RangeSource, load_tfds
from .splits import SplitRange, select

__all__ = [
    "FileRange",
    "LoadedSplit",
    "RangeSource",
    "SplitRange",
    "TfdsSplit",
    "from_tfds_dir",
    "load_tfds",
    "select",
    "write_tfds_dir",
]
