"""The Image connector (features layer): arrays, files or encoded bytes in; arrays out.

Images are stored as PNG or JPEG bytes, as tensorflow_datasets stores them.
Encoded bytes and files are stored as they are, once their header (read with
Pillow) shows the declared size and channels; arrays are encoded with Pillow
(the optional ``image`` extra, imported on first use). JPEGs decode to
TensorFlow's own pixels when simplejpeg is installed (the ``jpeg`` extra, see
:mod:`tfrec.features.jpeg`), else with Pillow, whose pixels may differ by a few
levels. float32 images are stored as tfds stores them: one channel, its four
bytes per pixel as the four channels of an 8-bit RGBA PNG.

Example:
    >>> Image(shape=(28, 28, 1)).encode_flat(np.zeros((28, 28, 1), np.uint8), "image")[""][:4]
    b'\\x89PNG'
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from ..errors import DecodeError, EncodeError, OptionalDependencyError, SchemaError
from .base import (
    TFDS_PREFIX,
    Documentation,
    FeatureConnector,
    TensorInfo,
    check_shape,
    documented,
    dtype_name,
    json_shape,
    shape_json,
)
from .jpeg import decode_jpeg
from .values import fits as _fits

__all__ = ["Image", "image_channels"]

_FORMATS = ("png", "jpeg")
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}  # Pillow's modes for 8-bit images of 1, 3 or 4 channels
# The channels of an encoded image of each Pillow mode (palette modes are absent: any is accepted).
_MODE_CHANNELS = {
    **dict.fromkeys(("1", "L", "I", "I;16", "I;16B", "I;16L", "F"), 1),
    **dict.fromkeys(("LA", "La"), 2),
    **dict.fromkeys(("RGB", "YCbCr", "LAB", "HSV"), 3),
    **dict.fromkeys(("RGBA", "RGBa", "CMYK"), 4),
}


def _pillow() -> Any:
    try:
        from PIL import Image as pil
    except ImportError:
        raise OptionalDependencyError("pillow", "image", "Image features") from None
    return pil


class Image(FeatureConnector):
    """An image of ``shape`` ``(height, width, channels)`` (``None`` for unknown sizes).

    Args:
        shape: ``(h, w, c)`` with c in 1, 3 or 4 (``None`` allowed for h and w);
            ``None`` means ``(None, None, 3)``.
        encoding_format: ``"png"`` (the default, lossless) or ``"jpeg"``.
        dtype: ``uint8``, ``uint16`` (PNG, one channel) or ``float32`` (PNG, one
            channel, stored bit for bit as tfds stores it).
        use_colormap: tfds' display hint for one-channel integer PNG images; kept
            in features.json, no effect on the values.
        doc: a description (a str or a :class:`Documentation`), saved in features.json.

    Example:
        >>> Image(shape=(None, None, 3), encoding_format="jpeg")
        Image(shape=(None, None, 3), dtype=uint8)
    """

    _tfds_name = TFDS_PREFIX + "image_feature.Image"
    _json_field = "image"

    def __init__(
        self,
        *,
        shape: Any = (None, None, 3),
        encoding_format: str | None = None,
        dtype: Any = np.uint8,
        use_colormap: bool = False,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        self.shape = check_shape((None, None, 3) if shape is None else shape)
        if len(self.shape) != 3 or self.shape[2] not in (1, 3, 4):
            raise SchemaError(
                f"Image shape must be (height, width, channels) with 1, 3 or 4 channels: {shape}"
            )
        if encoding_format is not None and encoding_format not in _FORMATS:
            raise SchemaError(f"encoding_format must be 'png' or 'jpeg', not {encoding_format!r}")
        self.encoding_format = encoding_format
        self.dtype = np.dtype(np.uint8 if dtype is None else dtype)  # None: the default, as tfds
        if self.dtype not in (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32)):
            raise SchemaError(f"Image dtype must be uint8, uint16 or float32, not {self.dtype}")
        if self.dtype != np.uint8 and (encoding_format == "jpeg" or self.shape[2] != 1):
            raise SchemaError(f"{self.dtype} images are stored as one-channel PNG")
        self.use_colormap = bool(use_colormap)
        if self.use_colormap and (encoding_format == "jpeg" or self.shape[2] != 1 or self.dtype.kind != "u"):
            raise SchemaError("use_colormap is for one-channel integer PNG images")
        self.doc, self.value_range = documented(doc, value_range)

    def __repr__(self) -> str:
        encoding = f", encoding_format={self.encoding_format!r}" if self.encoding_format else ""
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}{encoding})"

    def flat_infos(self) -> dict[str, TensorInfo]:
        return {"": TensorInfo((), np.dtype(object))}

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        if type(value).__module__.startswith("PIL.") and hasattr(value, "save"):  # a Pillow image, as tfds
            out = io.BytesIO()
            value.save(out, format="JPEG" if self.encoding_format == "jpeg" else "PNG")
            value = out.getvalue()
        elif hasattr(value, "read"):  # a file object holding an encoded image, as tfds takes it
            value = bytes(value.read())
        if isinstance(value, (bytes, str, os.PathLike)):
            if self.dtype == np.float32:
                raise EncodeError(f"{path} ({self!r}): float32 images are given as arrays", key=path)
            if isinstance(value, bytes):
                data = value
            else:
                with open(value, "rb") as file:
                    data = file.read()
            self._check_header(data, path)
            return {"": data}  # already encoded: stored as it is, as tfds does
        array = np.asarray(value)
        if array.ndim == 2 and self.shape[2] == 1:
            array = array[:, :, None]
        if array.dtype != self.dtype:
            raise EncodeError(
                f"{path} ({self!r}): expected {self.dtype} pixels, found {array.dtype}", key=path
            )
        if array.ndim != 3 or not _fits(self.shape, array.shape):
            raise EncodeError(
                f"{path} ({self!r}): expected shape {self.shape}, found {array.shape}", key=path
            )
        pil = _pillow()
        if self.dtype == np.float32:  # as tfds: the float's 4 bytes as the 4 channels of an RGBA PNG
            array = np.ascontiguousarray(array, "<f4").view(np.uint8)
        pixels = array[:, :, 0] if array.shape[2] == 1 else array
        image = pil.fromarray(pixels.astype("<u2") if self.dtype == np.uint16 else pixels)
        out = io.BytesIO()
        image.save(out, format="JPEG" if self.encoding_format == "jpeg" else "PNG")
        return {"": out.getvalue()}

    def _check_header(self, data: bytes, path: str) -> None:
        """Refuse an encoded image whose size or channels differ from the declared shape (from its
        header only). Without Pillow the bytes are stored unchecked, as before it was installed."""
        try:
            pil = _pillow()
        except OptionalDependencyError:
            return
        try:
            with pil.open(io.BytesIO(data)) as image:
                (width, height), mode = image.size, image.mode
        except (OSError, ValueError) as exc:
            raise EncodeError(f"{path} ({self!r}): not a readable image: {exc}", key=path) from None
        channels = _MODE_CHANNELS.get(mode)  # None: a palette, converted to what is declared on read
        found = (height, width, channels)
        if not all(
            want is None or got is None or want == got for want, got in zip(self.shape, found, strict=True)
        ):
            raise EncodeError(
                f"{path} ({self!r}): the image has shape {found} ({width}x{height}, mode {mode}), "
                f"expected {self.shape}",
                key=path,
            )

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        if not batched:
            return self._decode(flat[""], path)
        images = [self._decode(data, path) for data in flat[""]]
        if not images:
            return np.empty((0, *(d or 0 for d in self.shape)), self.dtype)
        if all(i.shape == images[0].shape for i in images):
            return np.stack(images)
        out = np.empty(len(images), object)
        out[:] = images
        return out

    def _decode(self, data: bytes, path: str) -> np.ndarray:
        if self.dtype == np.uint8 and self.shape[2] != 4:  # TF's own pixels, when simplejpeg is here
            pixels = decode_jpeg(data, self.shape[2] or 3)
            if pixels is not None:
                if not _fits(self.shape, pixels.shape):
                    raise DecodeError(
                        f"{path} ({self!r}): decoded an image of shape {pixels.shape}", key=path
                    )
                return pixels
        pil = _pillow()
        try:
            with pil.open(io.BytesIO(data)) as image:
                if not _fits(self.shape[:2], (image.height, image.width)):  # checked before decoding
                    shape = (image.height, image.width, self.shape[2] or len(image.getbands()))
                    raise DecodeError(f"{path} ({self!r}): decoded an image of shape {shape}", key=path)
                if self.dtype == np.uint8:  # as tfds: decode to the declared channels (grey -> RGB, ...)
                    image = image.convert(_MODES[self.shape[2] or 3])
                elif self.dtype == np.float32:  # stored as RGBA bytes: the float's 4 bytes
                    image = image.convert("RGBA")
                array = np.asarray(image)
                if self.dtype == np.float32:
                    array = np.ascontiguousarray(array).view("<f4").astype(np.float32)
        except DecodeError:
            raise
        # Pillow reports damage as OSError, ValueError, SyntaxError ("broken PNG file"), EOFError, its
        # DecompressionBombError and more: whatever it raises on these bytes, they are not an image.
        except Exception as exc:
            raise DecodeError(f"{path} ({self!r}): not a readable image: {exc!r}", key=path) from None
        if array.ndim == 2:
            array = array[:, :, None]
        if not _fits(self.shape, array.shape):
            raise DecodeError(f"{path} ({self!r}): decoded an image of shape {array.shape}", key=path)
        return array.astype(self.dtype, copy=False)

    def _json_content(self) -> dict[str, Any]:
        content: dict[str, Any] = {"dtype": dtype_name(self.dtype), "shape": shape_json(self.shape)}
        if self.encoding_format:
            content["encodingFormat"] = self.encoding_format
        if self.use_colormap:
            content["useColormap"] = True
        return content

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> Image:
        return cls(
            shape=json_shape(content.get("shape", {})),
            dtype=content.get("dtype", "uint8"),
            encoding_format=content.get("encodingFormat") or None,
            use_colormap=bool(content.get("useColormap")),
        )

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> Image:
        return cls(
            shape=json_shape(content.get("shape", [])),
            dtype=content.get("dtype", "uint8"),
            encoding_format=content.get("encoding_format"),
        )


def image_channels(data: bytes) -> int:
    """The channel count of PNG or JPEG bytes from their header, without Pillow (3 when it cannot be told).

    Example:
        >>> image_channels(grey_png_bytes)
        1
    """
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 26:
        return {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}.get(data[25], 3)  # by the IHDR colour type
    if data.startswith(b"\xff\xd8"):
        pos = 2
        while pos + 9 < len(data) and data[pos] == 0xFF:
            marker, size = data[pos + 1], int.from_bytes(data[pos + 2 : pos + 4], "big")
            if marker in (0xC0, 0xC1, 0xC2):  # start of frame: the component count at byte 9
                return 1 if data[pos + 9] == 1 else 3
            pos += 2 + size
    return 3
