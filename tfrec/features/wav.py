"""WAV files to samples, as tensorflow_datasets' Audio reads them (features layer, standard library only).

tfds reads audio files with pydub, which gives a WAV's integer samples as
stored, except that 8-bit samples (unsigned in WAV) are shifted to signed
(``u - 128``) and 24-bit ones widened to 32 bits (the sample shifted left 8
bits, the low byte 0xFF for negative samples). A mono file read for two
channels is duplicated; a stereo one read for one channel is averaged, rounded
down. :func:`read_wav` does the same with the :mod:`wave` module.

Example:
    >>> samples = read_wav(data, channels=1)   # (n,) for one channel, (n, channels) otherwise
"""

from __future__ import annotations

import io
import wave
from typing import Any

import numpy as np

__all__ = ["WAV_MAGIC", "read_wav"]

WAV_MAGIC = b"RIFF"
_TYPES: dict[int, np.dtype[Any]] = {1: np.dtype("<u1"), 2: np.dtype("<i2"), 4: np.dtype("<i4")}


def read_wav(data: bytes, channels: int) -> np.ndarray:
    """The samples of a WAV file: ``(n,)`` for ``channels == 1``, else ``(n, channels)``.

    Raises:
        ValueError: not a PCM WAV file, or channels that cannot be converted (only 1 <-> 2).
    """
    try:
        with wave.open(io.BytesIO(data), "rb") as file:
            found, width = file.getnchannels(), file.getsampwidth()
            raw = file.readframes(file.getnframes())
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"not a readable WAV file: {exc}") from None
    if width == 3:
        triples = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        value = triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2] << 16)
        value = np.where(value >= 1 << 23, value - (1 << 24), value)  # sign-extend the 24-bit sample
        samples = (value << 8) | np.where(value < 0, 0xFF, 0)
    elif width in _TYPES:
        samples = np.frombuffer(raw, _TYPES[width]).astype(np.int64 if width > 1 else np.int16)
        if width == 1:
            samples = samples - 128
    else:
        raise ValueError(f"WAV samples of {width} bytes are not supported")
    samples = samples.reshape(-1, found)
    if found != channels:
        if (found, channels) == (1, 2):
            samples = np.repeat(samples, 2, axis=1)
        elif (found, channels) == (2, 1):
            samples = np.floor((samples[:, :1] + samples[:, 1:]) / 2).astype(np.int64)
        else:
            raise ValueError(f"a WAV file of {found} channels cannot be read as {channels}")
    return samples[:, 0] if channels == 1 else samples
