"""Tensor and Scalar connectors (features layer).

A Tensor of any rank and dtype. With the default encoding its values are
stored flattened row-major in the list of their kind (ints and bools in
``int64_list``, floats in ``float_list``, strings in ``bytes_list``); with
``encoding="bytes"`` or ``"zlib"`` they are stored as raw little-endian bytes
(compressed with zlib for ``"zlib"``), with a ``key/shape`` beside them when
the shape is not fully known. Nothing is converted lossily, except floats
stored in a float list: an Example holds float32, so they round to the nearest
float32 as TensorFlow stores them (unless ``FeaturesDict(exact_floats=True)``).

Example:
    >>> emb = Tensor(shape=(None, 3), dtype=np.float32)
    >>> emb.encode_flat(np.zeros((2, 3), np.float32), "emb")[""].shape
    (2, 3)
"""

from __future__ import annotations

import math
import sys
import zlib
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

import numpy as np

from ..errors import DecodeError, SchemaError
from ..example import RaggedArray
from .base import (
    TFDS_PREFIX,
    Documentation,
    FeatureConnector,
    TensorInfo,
    as_numpy_dtype,
    check_shape,
    documented,
    dtype_name,
    json_shape,
    shape_json,
)
from .values import to_array

__all__ = ["Encoding", "Scalar", "Tensor"]


class Encoding(str, Enum):
    """How a Tensor's values are stored: as a list of values, or as raw (compressed) bytes."""

    NONE = "none"
    BYTES = "bytes"
    ZLIB = "zlib"


class Tensor(FeatureConnector):
    """A tensor of ``shape`` (``None`` for unknown dimensions) and ``dtype``.

    Args:
        shape: a tuple of ints or ``None``; at most one ``None`` unless
            ``encoding`` is ``"bytes"`` or ``"zlib"``.
        dtype: bool, an int or float dtype, or ``str`` / ``"string"`` for bytes.
        encoding: ``"none"`` (a list of values), ``"bytes"`` or ``"zlib"`` (raw
            little-endian bytes, for any dtype including float64).
        channel_names: store a rank-2 tensor one channel per key (``key/name``),
            recomposed on read; the channel dimension must have that many entries.
        data_format: ``"channels_last"`` (the default: shape ``(n, channels)``)
            or ``"channels_first"`` (``(channels, n)``).
        doc: a description, saved in features.json.

    Example:
        >>> Tensor(shape=(2,), dtype=np.int64).encode_flat([1, 2], "x")
        {'': array([1, 2])}
        >>> xyz = Tensor(shape=(None, 3), dtype=np.float32, channel_names=["x", "y", "z"])
        >>> sorted(xyz.flat_infos())
        ['x', 'y', 'z']
    """

    _tfds_name = TFDS_PREFIX + "tensor_feature.Tensor"
    _json_field = "tensor"

    def __init__(
        self,
        *,
        shape: Any,
        dtype: Any,
        encoding: Encoding | str = Encoding.NONE,
        channel_names: Sequence[str] | None = None,
        data_format: str = "channels_last",
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        self.shape = check_shape(shape)
        self.dtype = as_numpy_dtype(dtype)
        try:
            self.encoding = Encoding(encoding)
        except ValueError:
            raise SchemaError(f"encoding must be 'none', 'bytes' or 'zlib', not {encoding!r}") from None
        if self.encoding is Encoding.NONE and self.shape.count(None) > 1:
            raise SchemaError(
                f"Tensor(shape={self.shape}) has several unknown dimensions: use encoding='bytes' or 'zlib'"
            )
        if self.encoding is not Encoding.NONE and self.dtype.kind == "O":
            raise SchemaError("encoding='bytes'/'zlib' is for numeric tensors, not strings")
        self.channel_names = tuple(channel_names) if channel_names is not None else None
        self.data_format = data_format
        self._check_channels()
        self.doc, self.value_range = documented(doc, value_range)
        self.minimum: Any = None  # tfds' documented value bounds (not enforced)
        self.maximum: Any = None

    def _check_channels(self) -> None:
        if self.data_format not in ("channels_last", "channels_first"):
            raise SchemaError(
                f"data_format must be 'channels_last' or 'channels_first', not {self.data_format!r}"
            )
        names = self.channel_names
        if names is None:
            return
        if (
            len(self.shape) != 2
            or self.shape[self._channel_axis] != len(names)
            or self.encoding is not Encoding.NONE
        ):
            raise SchemaError(
                f"channel_names need a rank-2 tensor stored as lists, with {len(names)} entries in its "
                f"channel dimension ({self.data_format}); got shape {self.shape}"
            )
        if len(set(names)) != len(names) or not all(names) or any("/" in n for n in names):
            raise SchemaError(f"channel_names must be distinct non-empty names without '/': {names}")

    @property
    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_last" else 0

    def __repr__(self) -> str:
        extra = f", encoding={self.encoding.value!r}" if self.encoding is not Encoding.NONE else ""
        if self.channel_names is not None:
            extra += f", channel_names={list(self.channel_names)!r}, data_format={self.data_format!r}"
        return f"{type(self).__name__}(shape={self.shape}, dtype={dtype_name(self.dtype)}{extra})"

    def flat_infos(self) -> dict[str, TensorInfo]:
        if self.channel_names is not None:  # one list per channel, of the other dimension
            other = self.shape[1 - self._channel_axis]
            return {name: TensorInfo((other,), self.dtype) for name in self.channel_names}
        if self.encoding is Encoding.NONE:
            return {"": TensorInfo(self.shape, self.dtype)}
        if not self._stores_shape:
            return {"": TensorInfo((), np.dtype(object))}
        return {
            "shape": TensorInfo((len(self.shape),), np.dtype(np.int64)),
            "value": TensorInfo((), np.dtype(object)),
        }

    @property
    def _stores_shape(self) -> bool:
        # As tfds: raw bytes need their shape stored only when it has several unknown dimensions.
        return self.shape.count(None) > 1

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        array = to_array(value, self.dtype, self.shape, path, repr(self), self.encoding is Encoding.NONE)
        if self.channel_names is not None:
            channels = np.moveaxis(array, self._channel_axis, 0)
            return {name: np.ascontiguousarray(channels[i]) for i, name in enumerate(self.channel_names)}
        if self.encoding is Encoding.NONE:
            return {"": array}
        payload = np.ascontiguousarray(array, self.dtype.newbyteorder("<")).tobytes()
        if self.encoding is Encoding.ZLIB:
            payload = zlib.compress(payload)
        if not self._stores_shape:
            return {"": payload}
        return {"shape": np.array(array.shape, np.int64), "value": payload}

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        if self.channel_names is not None:
            return self._recompose([flat[name] for name in self.channel_names], batched)
        if self.encoding is Encoding.NONE:
            return flat[""]  # already in the declared dtype (FeaturesDict casts parsed values)
        payloads = flat["value"] if self._stores_shape else flat[""]
        if not batched:
            return self._from_bytes(payloads, flat.get("shape"), path)
        shapes = flat["shape"] if self._stores_shape else [None] * len(payloads)
        arrays = [self._from_bytes(p, s, path) for p, s in zip(payloads, shapes, strict=True)]
        if not arrays:
            return np.empty((0, *(d or 0 for d in self.shape)), self.dtype)
        if all(a.shape == arrays[0].shape for a in arrays):
            return np.stack(arrays)
        if self.shape[0] is None and None not in self.shape[1:]:  # rows of different lengths
            splits = np.cumsum([0] + [len(a) for a in arrays], dtype=np.int64)
            return RaggedArray(np.concatenate(arrays), splits)
        out = np.empty(len(arrays), object)
        out[:] = arrays
        return out

    def one_record_decoder(self, path: str) -> Callable[[Any], Any] | None:
        if (
            type(self).decode_flat is Tensor.decode_flat
            and self.channel_names is None
            and self.encoding is Encoding.NONE
        ):
            return None  # decode_flat returns the parsed value as it is
        return super().one_record_decoder(path)

    def _recompose(self, channels: list[Any], batched: bool) -> Any:
        """Stack the channels back along their axis (after the batch dimension, if any)."""
        axis = self._channel_axis + (1 if batched else 0)
        if not isinstance(channels[0], RaggedArray):
            return np.stack(channels, axis=axis)
        # Rows of different lengths: channels last keeps a RaggedArray of (n, channels) rows.
        splits = channels[0].row_splits
        if self.data_format == "channels_last":
            return RaggedArray(np.stack([c.values for c in channels], axis=-1), splits)
        bounds = zip(splits[:-1].tolist(), splits[1:].tolist(), strict=True)
        rows = [np.stack([c.values[a:b] for c in channels]) for a, b in bounds]
        out = np.empty(len(rows), object)
        out[:] = rows
        return out

    def _from_bytes(self, payload: bytes, shape: Any, path: str) -> np.ndarray:
        try:
            raw = self._inflate(payload, shape, path) if self.encoding is Encoding.ZLIB else payload
            flat = np.frombuffer(raw, self.dtype.newbyteorder("<")).astype(self.dtype)
            # Without a stored shape at most one dimension is unknown, and reshape infers it.
            unknown = tuple(-1 if d is None else d for d in self.shape)
            return flat.reshape(tuple(int(d) for d in shape) if shape is not None else unknown)
        except (zlib.error, ValueError) as exc:
            raise DecodeError(f"{path} ({self!r}): the stored bytes do not decode: {exc}", key=path) from None

    def _inflate(self, payload: bytes, shape: Any, path: str) -> bytes:
        """Inflate ``payload``, never past the size its stored or declared shape allows."""
        dims: Sequence[int | None] = [int(d) for d in shape] if shape is not None else self.shape
        known = [max(0, d) for d in dims if d is not None]
        limit = self.dtype.itemsize * math.prod(known) if len(known) == len(dims) else None
        inflater = zlib.decompressobj()
        raw = inflater.decompress(payload, 0 if limit is None else min(limit + 1, sys.maxsize))
        if limit is not None and len(raw) > limit:
            raise DecodeError(
                f"{path} ({self!r}): the stored zlib bytes inflate past the {limit} bytes "
                f"that shape {tuple(dims)} holds",
                key=path,
            )
        if not inflater.eof:
            raise zlib.error("incomplete or truncated stream")
        return raw

    def _json_content(self) -> dict[str, Any]:
        content: dict[str, Any] = {
            "dtype": dtype_name(self.dtype),
            "encoding": self.encoding.value,
            "shape": shape_json(self.shape),
        }
        if self.channel_names is not None:  # tfrec's own fields: tfds has no per-channel storage
            content["channelNames"] = list(self.channel_names)
            content["dataFormat"] = self.data_format
        # tfds' value bounds are documentation only: kept so that features.json round-trips.
        for name, bound in (("minimum", self.minimum), ("maximum", self.maximum)):
            if bound is not None:
                content[name] = str(bound)
        return content

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> Tensor:
        _refuse_unsupported(content)
        tensor = cls(
            shape=json_shape(content.get("shape", {})),
            dtype=content["dtype"],
            encoding=content.get("encoding") or "none",
            channel_names=content.get("channelNames"),
            data_format=content.get("dataFormat", "channels_last"),
        )
        tensor.minimum, tensor.maximum = content.get("minimum"), content.get("maximum")
        return tensor

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> Tensor:
        return cls(shape=json_shape(content.get("shape", [])), dtype=content["dtype"])


class Scalar(Tensor):
    """A single value of ``dtype`` (a Tensor of shape ``()``).

    Example:
        >>> Scalar(np.int64, doc="the age in years")
        Scalar(shape=(), dtype=int64)
    """

    _tfds_name = TFDS_PREFIX + "scalar.Scalar"

    def __init__(
        self, dtype: Any, *, doc: str | Documentation | None = None, value_range: str | None = None
    ) -> None:
        super().__init__(shape=(), dtype=dtype, doc=doc, value_range=value_range)

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> Scalar:
        _refuse_unsupported(content)
        return cls(content["dtype"])

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> Scalar:
        return cls(content["dtype"])


def _refuse_unsupported(content: dict[str, Any]) -> None:
    """A tfds option tfrec does not implement yet: refused, rather than reading records wrongly."""
    if content.get("optional"):
        raise SchemaError("optional tensors (tfds' optional=True) are not supported yet")
