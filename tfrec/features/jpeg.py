"""JPEG decoding with TensorFlow's pixels (features layer).

TensorFlow's ``decode_jpeg`` (and so tensorflow_datasets) runs libjpeg with
its fast integer DCT and "fancy" (smooth) chroma upsampling; Pillow uses the
accurate DCT, so the same JPEG decodes to pixels up to about 13 levels apart.
The ``simplejpeg`` package (the ``jpeg`` extra), called with
``fastdct=True, fastupsample=False``, gives TensorFlow's pixels bit for bit.
It is imported on first use; without it :func:`decode_jpeg` returns ``None``
and the caller decodes with Pillow.

Example:
    >>> pixels = decode_jpeg(data, channels=3)  # (h, w, 3) uint8, or None without simplejpeg
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["JPEG_MAGIC", "decode_jpeg", "simplejpeg_module"]

JPEG_MAGIC = b"\xff\xd8\xff"
_COLORSPACES = {1: "GRAY", 3: "RGB"}  # what TF's decode_jpeg gives for 1 and 3 channels


@functools.cache
def simplejpeg_module() -> Any:
    """The simplejpeg module, or None when it is not installed (looked up once)."""
    try:
        import simplejpeg
    except ImportError:
        return None
    return simplejpeg


def decode_jpeg(data: bytes, channels: int) -> np.ndarray | None:
    """TensorFlow's pixels of a JPEG as a ``(h, w, channels)`` uint8 array.

    None when simplejpeg is not installed, for channel counts TF's decoder does not give (4), and
    for JPEGs simplejpeg does not take (CMYK): the caller decodes those with Pillow.
    """
    module = simplejpeg_module()
    colorspace = _COLORSPACES.get(channels)
    if module is None or colorspace is None or not data.startswith(JPEG_MAGIC):
        return None
    try:
        pixels = module.decode_jpeg(data, colorspace=colorspace, fastdct=True, fastupsample=False)
    except (ValueError, RuntimeError, OSError):
        return None  # damaged or of a kind it does not decode: Pillow decides (and words the error)
    return pixels.reshape((*pixels.shape[:2], channels))
