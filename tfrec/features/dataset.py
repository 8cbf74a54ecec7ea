"""The Dataset connector (features layer): a nested dataset, stored as a Sequence.

tensorflow_datasets stores ``Dataset(feature)`` exactly as ``Sequence(feature)``
and gives back a nested ``tf.data.Dataset`` of elements; tfrec gives back the
elements as a list (of dicts, for a dict of features), decoded in numpy.

Example:
    >>> episode = Dataset({"reward": np.float32, "done": np.bool_})
    >>> flat = episode.encode_flat([{"reward": 1.0, "done": False}, {"reward": 0.5, "done": True}], "ep")
    >>> episode.decode_flat(flat, "ep", batched=False)[1]["done"]
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import TFDS_PREFIX
from .rows import count, row
from .sequence import Sequence

__all__ = ["Dataset"]


class Dataset(Sequence):
    """A nested dataset of ``feature`` elements: an iterable of elements (or a dict of lists) in, a
    list of elements out.

    Example:
        >>> Dataset({"observation": Image(shape=(64, 64, 3)), "action": np.int64})
        Dataset(FeaturesDict({'observation': Image(...), 'action': Scalar(dtype=int64)}))
    """

    _tfds_name = TFDS_PREFIX + "dataset_feature.Dataset"
    _json_field = "sequence"

    def __repr__(self) -> str:
        return "Dataset" + super().__repr__()[len("Sequence") :]

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, (dict, list, tuple, np.ndarray)):
            value = list(value)  # a generator of elements, as tfds takes it
        return super().encode_flat(value, path)

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        items = super().decode_flat(flat, path, batched)
        if not batched:
            return elements(items)
        out = np.empty(count(items), object)
        for b in range(len(out)):
            out[b] = elements(row(items, b))  # record b's items, then its elements
        return out


def elements(items: Any) -> list[Any]:
    """Stacked items (arrays or dicts of them, leading dimension = the element) as a list of elements."""
    return [row(items, i) for i in range(count(items))]
