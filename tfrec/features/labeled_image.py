"""The LabeledImage connector (features layer): a one-channel image whose pixels are class indices.

Stored and decoded as an :class:`~tfrec.features.Image`; the class names are
metadata, saved as tensorflow_datasets saves them (the number of classes in
features.json, the names in ``{name}.labels.txt``).

Example:
    >>> mask = LabeledImage(labels=["background", "car"], shape=(None, None, 1))
    >>> mask.names, mask.num_classes
    (['background', 'car'], 2)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import SchemaError
from .base import TFDS_PREFIX, Documentation, json_int, json_shape
from .image import Image
from .text import ClassLabel

__all__ = ["LabeledImage"]


class LabeledImage(Image):
    """An image of class indices (segmentation masks), with its class names.

    Args:
        labels: the class names (a list), a file of them (one a line), their
            number (an int), or ``None`` when unknown.
        shape: ``(h, w, 1)``; ``None`` means ``(None, None, 1)``.
        dtype, encoding_format, doc: as for :class:`Image` (tfds always sets
            ``use_colormap`` on these images).

    Example:
        >>> LabeledImage(labels=5, shape=(32, 32, 1)).num_classes
        5
    """

    _tfds_name = TFDS_PREFIX + "labeled_image.LabeledImage"
    _json_field = "image"

    def __init__(
        self,
        *,
        labels: list[str] | str | os.PathLike[str] | int | None,
        shape: Any = None,
        dtype: Any = np.uint8,
        encoding_format: str | None = None,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        super().__init__(
            shape=(None, None, 1) if shape is None else shape,
            dtype=dtype,
            encoding_format=encoding_format,
            use_colormap=True,
            doc=doc,
            value_range=value_range,
        )
        if self.shape[2] != 1:
            raise SchemaError(f"LabeledImage has one channel, not shape {self.shape}")
        self.class_label: ClassLabel | None
        if labels is None:
            self.class_label = None
        elif isinstance(labels, bool) or not isinstance(labels, (int, list, tuple, str, os.PathLike)):
            raise SchemaError(f"labels must be a list of names, a file, a number or None, not {labels!r}")
        elif isinstance(labels, int):
            self.class_label = ClassLabel(num_classes=labels)
        elif isinstance(labels, (list, tuple)):
            self.class_label = ClassLabel(names=list(labels))
        else:
            self.class_label = ClassLabel(names_file=labels)

    @property
    def names(self) -> list[str] | None:
        """The class names (``"0"`` .. ``"n-1"`` when only their number is known), or None."""
        return self.class_label.names if self.class_label is not None else None

    @property
    def num_classes(self) -> int | None:
        return self.class_label.num_classes if self.class_label is not None else None

    def _key(self) -> tuple[Any, ...]:
        return (*super()._key(), tuple(self.names or ()))

    def _json_content(self) -> dict[str, Any]:
        content = super()._json_content()
        content["label"] = {} if self.num_classes is None else {"numClasses": str(self.num_classes)}
        return content

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> LabeledImage:
        return cls(
            labels=json_int(content.get("label", {}).get("numClasses", 0)) or None,
            shape=json_shape(content["shape"]) if content.get("shape") else None,
            dtype=content.get("dtype", "uint8"),
            encoding_format=content.get("encodingFormat") or None,
        )
