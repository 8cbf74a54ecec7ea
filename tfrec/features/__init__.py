"""Features layer: describe each feature once; write records and read them back into the same values.

Connectors follow tensorflow_datasets' (same on-disk layout and features.json), so
datasets prepared by tfds read without TensorFlow and files written here read in tfds.

Example:
    >>> import numpy as np
    >>> from tfrec.features import FeaturesDict, ClassLabel, Tensor, Text
    >>> features = FeaturesDict({"label": ClassLabel(names=["no", "yes"]),
    ...                          "emb": Tensor(shape=(4,), dtype=np.float32), "text": Text()})
    >>> blob = features.serialize_example({"label": "yes", "emb": np.zeros(4, np.float32), "text": "hi"})
    >>> features.deserialize_example(blob)["label"]
    1
"""

from __future__ import annotations

from .base import FeatureConnector, TensorInfo
from .features_dict import FEATURES_FILE, FeaturesDict, labels_file
from .image import Image
from .infer import INFER_SAMPLE, describe_features
from .sequence import Sequence
from .tensor import Encoding, Scalar, Tensor
from .text import ClassLabel, Text

__all__ = [
    "FEATURES_FILE",
    "INFER_SAMPLE",
    "ClassLabel",
    "Encoding",
    "FeatureConnector",
    "FeaturesDict",
    "Image",
    "Scalar",
    "Sequence",
    "Tensor",
    "TensorInfo",
    "Text",
    "describe_features",
    "labels_file",
]
