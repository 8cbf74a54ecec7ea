"""Custom feature connectors written the way tensorflow_datasets' guide writes them.

The tfds version of this module differs by one line: ``from tensorflow_datasets import features``
instead of the import below (tests/conformance/test_custom_connectors_tfds.py makes it by replacing
that line). Decoding uses arithmetic only, which TensorFlow tensors and numpy arrays both take.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfrec import features  # PORT: the only line that differs from the tfds version


class Temperature(features.FeatureConnector):
    """A temperature given in kelvin, stored as degrees and an offset, decoded back to kelvin."""

    def __init__(self, *, unit: str = "C", doc: Any = None) -> None:
        super().__init__(doc=doc)
        self.unit = unit

    def get_tensor_info(self) -> Any:
        return features.TensorInfo(shape=(), dtype=np.float32)

    def get_serialized_info(self) -> Any:
        return {
            "degrees": features.TensorInfo(shape=(), dtype=np.float32),
            "offset": features.TensorInfo(shape=(), dtype=np.float32),
        }

    def encode_example(self, kelvin: float) -> Any:
        offset = 273.0 if self.unit == "C" else 0.0
        return {"degrees": np.float32(kelvin - offset), "offset": np.float32(offset)}

    def decode_example(self, tfexample_data: Any) -> Any:
        return tfexample_data["degrees"] + tfexample_data["offset"]

    def to_json_content(self) -> dict[str, Any]:
        return {"unit": self.unit}

    @classmethod
    def from_json_content(cls, value: dict[str, Any]) -> Temperature:
        return cls(**value)


class Point(features.Tensor):
    """A 2-D point given as {"x": ..., "y": ...}, stored as a float32 Tensor of 2, scaled on decoding."""

    def __init__(self, *, scale: float = 1.0, doc: Any = None) -> None:
        super().__init__(shape=(2,), dtype=np.float32, doc=doc)
        self.scale = scale

    def encode_example(self, example_data: Any) -> Any:
        return super().encode_example(np.array([example_data["x"], example_data["y"]], np.float32))

    def decode_example(self, tfexample_data: Any) -> Any:
        return super().decode_example(tfexample_data) * self.scale

    def to_json_content(self) -> dict[str, Any]:
        return {"scale": self.scale}

    @classmethod
    def from_json_content(cls, value: dict[str, Any]) -> Point:
        return cls(scale=value["scale"])


class Pair(features.FeaturesDict):
    """A (name, count) tuple, stored as a dict of a Text and an int64."""

    def __init__(self) -> None:
        super().__init__({"name": features.Text(), "count": np.int64})

    def encode_example(self, example_data: Any) -> Any:
        name, count = example_data
        return super().encode_example({"name": name, "count": count})

    # No decode_example: tfds never calls that of a FeaturesDict nested in another (it decodes the
    # leaves itself); tfrec would (tests/features/test_custom_connectors.py checks it).

    def to_json_content(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_json_content(cls, value: dict[str, Any]) -> Pair:
        return cls()
