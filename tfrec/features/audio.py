"""The Audio connector (features layer): a waveform, as tensorflow_datasets stores it.

Samples are a :class:`Tensor` of shape ``(length,)`` or ``(length, channels)``
(int64 by default), stored as a list or as raw bytes like any Tensor. A value
is an array of samples, or an audio file (a path, a file object or its bytes):
WAV files are read with the standard library (:mod:`tfrec.features.wav`, the
samples tfds' pydub gives); other formats need their own decoder, so decode
them to samples first. With ``lazy_decode=True`` the file itself is stored and
decoded on read (WAV only). The sample rate and file format are metadata,
saved in features.json.

Example:
    >>> speech = Audio(file_format="wav", sample_rate=16_000)
    >>> speech.encode_flat(np.array([0, 5, -3]), "audio")[""]
    array([ 0,  5, -3])
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import DecodeError, EncodeError, SchemaError
from ..example import RaggedArray
from .base import TFDS_PREFIX, Documentation, TensorInfo, dtype_name, json_shape, shape_json
from .tensor import Encoding, Tensor
from .wav import WAV_MAGIC, read_wav

__all__ = ["Audio"]


class Audio(Tensor):
    """Audio samples: an array, or a WAV file (path, file object or bytes), in; an array out.

    Args:
        file_format: the files' format (``"wav"``, ...); ``None`` infers it from a
            path's suffix.
        shape: ``(length,)`` or ``(length, channels)``, ``None`` for unknown sizes.
        dtype: the samples' dtype (int64 by default, as tfds).
        sample_rate: samples per second, metadata only.
        encoding: how samples are stored, as for :class:`Tensor`.
        lazy_decode: store the file's bytes and decode them on read.
        doc: a description, saved in features.json.

    Example:
        >>> Audio(shape=(None, 2), dtype=np.int16, sample_rate=44_100).channels
        2
    """

    _tfds_name = TFDS_PREFIX + "audio_feature.Audio"
    _json_field = "audio"

    def __init__(
        self,
        *,
        file_format: str | None = None,
        shape: Any = (None,),
        dtype: Any = np.int64,
        sample_rate: int | None = None,
        encoding: Encoding | str = Encoding.NONE,
        lazy_decode: bool = False,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        if len(tuple(shape)) not in (1, 2):
            raise SchemaError(f"Audio shape is (length,) or (length, channels), not {shape}")
        encoding = encoding.lower() if isinstance(encoding, str) else encoding  # tfds writes "NONE"
        super().__init__(shape=shape, dtype=dtype, encoding=encoding, doc=doc, value_range=value_range)
        self.file_format = file_format or None
        self.sample_rate = int(sample_rate) if sample_rate else None
        self.lazy_decode = bool(lazy_decode)

    @property
    def channels(self) -> int:
        """The number of channels (1 for a shape ``(length,)``)."""
        return self.shape[1] or 1 if len(self.shape) == 2 else 1

    def __repr__(self) -> str:
        extra = f", sample_rate={self.sample_rate}" if self.sample_rate else ""
        extra += ", lazy_decode=True" if self.lazy_decode else ""
        return f"Audio(shape={self.shape}, dtype={dtype_name(self.dtype)}{extra})"

    def flat_infos(self) -> dict[str, TensorInfo]:
        if self.lazy_decode:
            return {"": TensorInfo((), np.dtype(object))}
        return super().flat_infos()

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        data = self._file_bytes(value)
        if self.lazy_decode:
            if data is None:
                raise EncodeError(
                    f"{path} ({self!r}): lazy_decode stores audio files: give a path, file object or bytes",
                    key=path,
                )
            return {"": data}
        if data is not None:
            try:
                value = self._samples(data, self._format(value))
            except ValueError as exc:
                raise EncodeError(f"{path} ({self!r}): {exc}", key=path) from None
        return super().encode_flat(value, path)

    def _file_bytes(self, value: Any) -> bytes | None:
        """The bytes of an audio file given as a path, file object or bytes; None for samples."""
        if isinstance(value, (str, os.PathLike)):
            with open(value, "rb") as file:
                return file.read()
        if isinstance(value, bytes):
            return value
        if hasattr(value, "read"):
            return bytes(value.read())
        return None

    def _format(self, value: Any) -> str | None:
        if self.file_format or not isinstance(value, (str, os.PathLike)):
            return self.file_format
        suffix = os.path.splitext(os.fspath(value))[1]
        return suffix[1:].lower() or None

    def _samples(self, data: bytes, file_format: str | None) -> np.ndarray:
        """Decode an audio file to samples of this feature's dtype (WAV only)."""
        if file_format not in (None, "wav") or not data.startswith(WAV_MAGIC):
            raise ValueError(
                f"only WAV files are decoded here (found {file_format or 'an unknown format'}): "
                "decode the file to samples first"
            )
        return read_wav(data, self.channels).astype(self.dtype)

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        if not self.lazy_decode:
            return super().decode_flat(flat, path, batched)
        if not batched:
            return self._decode_file(flat[""], path)
        arrays = [self._decode_file(data, path) for data in flat[""]]
        if arrays and all(a.shape == arrays[0].shape for a in arrays):
            return np.stack(arrays)
        if not arrays:
            return np.empty((0, *(d or 0 for d in self.shape)), self.dtype)
        splits = np.cumsum([0] + [len(a) for a in arrays], dtype=np.int64)
        return RaggedArray(np.concatenate(arrays), splits)

    def _decode_file(self, data: bytes, path: str) -> np.ndarray:
        try:
            return self._samples(data, self.file_format)
        except ValueError as exc:
            raise DecodeError(f"{path} ({self!r}): {exc}", key=path) from None

    def _json_content(self) -> dict[str, Any]:
        content: dict[str, Any] = {"shape": shape_json(self.shape), "dtype": dtype_name(self.dtype)}
        if self.file_format:
            content["fileFormat"] = self.file_format
        if self.sample_rate:
            content["sampleRate"] = str(self.sample_rate)
        content["encoding"] = self.encoding.name  # tfds writes the enum's name here ("NONE")
        if self.lazy_decode:
            content["lazyDecode"] = True
        return content

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> Audio:
        return cls(
            shape=json_shape(content.get("shape", {})),
            dtype=content.get("dtype", "int64"),
            file_format=content.get("fileFormat") or None,
            sample_rate=int(content.get("sampleRate", 0)) or None,
            encoding=content.get("encoding") or "none",
            lazy_decode=bool(content.get("lazyDecode")),
        )

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> Audio:
        return cls(
            shape=tuple(content.get("shape", (None,))),
            dtype=content.get("dtype", "int64"),
            file_format=content.get("file_format"),
            sample_rate=content.get("sample_rate"),
            lazy_decode=content.get("lazy_decode", False),
        )
