"""The BBoxFeature connector and its BBox value (features layer).

A bounding box is four float32 coordinates, stored as a ``float_list`` of 4
(tensorflow_datasets' layout). Its format (``"REL_YXYX"`` by default:
``ymin, xmin, ymax, xmax`` relative to the image size) is metadata, saved in
features.json, and decides which values are accepted, as in tfds.

Example:
    >>> BBoxFeature().encode_flat(BBox(ymin=0.1, xmin=0.2, ymax=0.5, xmax=0.9), "box")[""]
    array([0.1, 0.2, 0.5, 0.9], dtype=float32)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..errors import EncodeError, SchemaError
from .base import TFDS_PREFIX, Documentation
from .tensor import Tensor

__all__ = ["BBOX_FORMATS", "BBox", "BBoxFeature"]

BBOX_FORMATS = ("XYXY", "YXYX", "XYWH", "REL_XYXY", "REL_YXYX")  # tfds' BBoxFormat values


class BBox(NamedTuple):
    """One bounding box, in tfds' field order (the stored order).

    Example:
        >>> BBox(ymin=0.1, xmin=0.2, ymax=0.5, xmax=0.9).ymax
        0.5
    """

    ymin: float
    xmin: float
    ymax: float
    xmax: float


class BBoxFeature(Tensor):
    """A bounding box: a :class:`BBox` or 4 numbers in, a float32 array of 4 out.

    Args:
        bbox_format: one of ``"REL_YXYX"`` (the default), ``"REL_XYXY"``,
            ``"YXYX"``, ``"XYXY"``, ``"XYWH"``, or ``None`` (unknown: only the
            count of 4 is checked). Relative formats need floats in [0, 1];
            ``*YXYX`` formats need ``ymin <= ymax`` and ``xmin <= xmax``.
        doc: a description, saved in features.json.

    Example:
        >>> boxes = Sequence(BBoxFeature())  # many boxes per image
    """

    _tfds_name = TFDS_PREFIX + "bounding_boxes.BBoxFeature"
    _json_field = "boundingBox"

    def __init__(
        self,
        *,
        bbox_format: str | None = "REL_YXYX",
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        bbox_format = getattr(bbox_format, "value", bbox_format)  # tfds' BBoxFormat enum
        if bbox_format is not None and bbox_format not in BBOX_FORMATS:
            raise SchemaError(f"bbox_format must be one of {BBOX_FORMATS} or None, not {bbox_format!r}")
        self.bbox_format = bbox_format
        super().__init__(shape=(4,), dtype=np.float32, doc=doc, value_range=value_range)

    def __repr__(self) -> str:
        return f"BBoxFeature(bbox_format={self.bbox_format!r})"

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        where = f"{path} ({self!r})"
        if not isinstance(value, BBox):
            if np.shape(value) != (4,):
                raise EncodeError(f"{where}: expected a BBox or 4 coordinates, found {value!r}", key=path)
            array = np.asarray(value)
            value = BBox(*(array.astype(np.float64) if isinstance(value, np.ndarray) else array).tolist())
        if self.bbox_format in ("REL_YXYX", "REL_XYXY"):
            for coordinate in value:
                if not isinstance(coordinate, (float, np.floating)):
                    raise EncodeError(f"{where}: relative coordinates are floats, found {value}", key=path)
                if not 0.0 <= coordinate <= 1.0:
                    raise EncodeError(f"{where}: relative coordinates are within [0, 1]: {value}", key=path)
        if self.bbox_format in ("YXYX", "REL_YXYX") and (value.xmax < value.xmin or value.ymax < value.ymin):
            raise EncodeError(f"{where}: min must not exceed max: {value}", key=path)
        return super().encode_flat(np.array(value, np.float64), path)

    def _json_content(self) -> dict[str, Any]:
        content: dict[str, Any] = {"shape": {"dimensions": ["4"]}, "dtype": "float32"}
        if self.bbox_format:
            content["bboxFormat"] = self.bbox_format
        return content

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> BBoxFeature:
        return cls(bbox_format=content.get("bboxFormat") or None)

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> BBoxFeature:
        return cls(bbox_format=content.get("bbox_format", "REL_YXYX"))
