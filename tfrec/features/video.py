"""The Video connector (features layer): frames stored as a sequence of encoded images.

As tensorflow_datasets stores a video: one PNG (or JPEG) per frame in a
``bytes_list``, decoded to a ``(frames, height, width, channels)`` array. A
value is a 4-D array, or a list of frames (arrays, image files or encoded
bytes). tfds also takes a video file and runs ffmpeg on it; tfrec runs no
external program, so decode such a file to frames first.

Example:
    >>> video = Video(shape=(None, 64, 64, 3))
    >>> video.encode_flat(np.zeros((2, 64, 64, 3), np.uint8), "clip")[""].shape
    (2,)
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence as Sequential
from typing import Any

import numpy as np

from ..errors import EncodeError, SchemaError
from ..example import RaggedArray
from .base import TFDS_PREFIX, Documentation, check_shape, json_shape, shape_json
from .image import Image
from .sequence import Sequence

__all__ = ["Video"]


class Video(Sequence):
    """A video: ``(frames, height, width, channels)`` uint8 (or uint16) pixels, frames stored as images.

    Args:
        shape: ``(frames, height, width, channels)``, ``None`` for unknown sizes;
            ``None`` means ``(None, None, None, 3)``.
        encoding_format: how each frame is stored, ``"png"`` (the default) or ``"jpeg"``.
        ffmpeg_extra_args: tfds' arguments for ffmpeg, kept in features.json (unused here).
        use_colormap, dtype, doc: as for :class:`Image`.

    Example:
        >>> Video(shape=(16, None, None, 3), encoding_format="jpeg").length
        16
    """

    _tfds_name = TFDS_PREFIX + "video_feature.Video"
    _json_field = "video"

    def __init__(
        self,
        shape: Any = None,
        encoding_format: str | None = "png",
        ffmpeg_extra_args: Sequential[str] = (),
        use_colormap: bool = False,
        dtype: Any = np.uint8,
        *,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        dims = check_shape(shape) if shape is not None else None
        if dims is not None and len(dims) != 4:
            raise SchemaError(f"Video shape is (frames, height, width, channels), not {shape}")
        self.encoding_format = encoding_format
        self.ffmpeg_extra_args = list(ffmpeg_extra_args or [])
        frame = Image(
            shape=dims[1:] if dims else None,
            dtype=dtype,
            encoding_format=encoding_format,
            use_colormap=use_colormap,
        )
        super().__init__(frame, length=dims[0] if dims else None, doc=doc, value_range=value_range)

    @property
    def frame(self) -> Image:
        """The connector of one frame."""
        assert isinstance(self.feature, Image)
        return self.feature

    @property
    def shape(self) -> tuple[int | None, ...]:
        return (self.length, *self.frame.shape)

    def __repr__(self) -> str:
        return (
            f"Video(shape={self.shape}, dtype={self.frame.dtype}, encoding_format={self.encoding_format!r})"
        )

    def _key(self) -> tuple[Any, ...]:
        return (*super()._key(), self.encoding_format, tuple(self.ffmpeg_extra_args))

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        if isinstance(value, (str, bytes, os.PathLike)) or hasattr(value, "read"):
            raise EncodeError(
                f"{path} ({self!r}): a video file is not decoded here (tfds runs ffmpeg on it); "
                "give its frames: a 4-D array, or a list of images, image files or encoded images",
                key=path,
            )
        if isinstance(value, np.ndarray) and value.ndim != 4:
            raise EncodeError(f"{path} ({self!r}): expected a 4-D array, found shape {value.shape}", key=path)
        return super().encode_flat(list(value), path)

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        frames = super().decode_flat(flat, path, batched)
        if not batched:
            return frames
        values = frames.values if isinstance(frames, RaggedArray) else frames
        if values.dtype != object:
            return frames  # every frame of the batch has one size: dense, or ragged in frame counts
        # Frames of different sizes in the batch: one (frames, h, w, c) array per record, as a video.
        if isinstance(frames, RaggedArray):
            bounds = frames.row_splits.tolist()
            records = [values[a:b] for a, b in itertools.pairwise(bounds)]
        else:
            records = list(values)
        out = np.empty(len(records), object)
        out[:] = [_stacked(list(record), self.frame) for record in records]
        return out

    def _json_content(self) -> dict[str, Any]:
        content: dict[str, Any] = {"shape": shape_json(self.shape), "dtype": self.frame.dtype.name}
        if self.encoding_format:
            content["encodingFormat"] = self.encoding_format
        if self.frame.use_colormap:
            content["useColormap"] = True
        if self.ffmpeg_extra_args:
            content["ffmpegExtraArgs"] = list(self.ffmpeg_extra_args)
        return content

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> Video:
        shape = json_shape(content["shape"]) if content.get("shape") else None
        return cls(
            shape=shape,
            dtype=content.get("dtype", "uint8"),
            encoding_format=content.get("encodingFormat") or None,
            use_colormap=bool(content.get("useColormap")),
            ffmpeg_extra_args=content.get("ffmpegExtraArgs", []),
        )

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> Video:
        return cls(
            shape=json_shape(content["shape"]) if content.get("shape") else None,
            encoding_format=content.get("encoding_format", "png"),
            ffmpeg_extra_args=content.get("ffmpeg_extra_args", []),
        )


def _stacked(frames: list[np.ndarray], frame: Image) -> Any:
    """One video's frames as a (frames, h, w, c) array; an object array when their sizes differ."""
    if not frames:
        return np.empty((0, *(d or 0 for d in frame.shape)), frame.dtype)
    if all(f.shape == frames[0].shape for f in frames):
        return np.stack(frames)
    out = np.empty(len(frames), object)
    out[:] = frames
    return out
