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

from .audio import Audio
from .base import Documentation, FeatureConnector, TensorInfo
from .bbox import BBox, BBoxFeature
from .dataset import Dataset
from .features_dict import FEATURES_FILE, FeaturesDict, labels_file
from .image import Image
from .infer import INFER_SAMPLE, describe_features
from .labeled_image import LabeledImage
from .sequence import Sequence
from .tensor import Encoding, Scalar, Tensor
from .text import ClassLabel, Text
from .translation import Translation, TranslationVariableLanguages
from .video import Video

__all__ = [
    "FEATURES_FILE",
    "INFER_SAMPLE",
    "Audio",
    "BBox",
    "BBoxFeature",
    "ClassLabel",
    "Dataset",
    "Documentation",
    "Encoding",
    "FeatureConnector",
    "FeaturesDict",
    "Image",
    "LabeledImage",
    "Scalar",
    "Sequence",
    "Tensor",
    "TensorInfo",
    "Text",
    "Translation",
    "TranslationVariableLanguages",
    "Video",
    "describe_features",
    "labels_file",
]
