"""A stream of samples with the features that store them, and features proposed from Python values
(convert layer).

Every converter returns :class:`Samples`: an iterator of nested dicts, read lazily, and the
:class:`~tfrec.features.FeaturesDict` that serializes them. Only a bounded look-ahead (the first
sample, or the first ``sample`` rows for CSV and JSON Lines type inference) is ever held.

Example:
    >>> samples = Samples(features_from_values({"label": 3, "text": "hi"}), iter([...]))
    >>> samples.features
    FeaturesDict({'label': Tensor(shape=(), dtype=int64), 'text': Text()})
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConvertError
from ..features import FeatureConnector, FeaturesDict, Sequence, Tensor, Text

__all__ = ["Samples", "connector_from_value", "features_from_values", "merge_connectors"]


@dataclass
class Samples:
    """Samples read lazily from a source, and the features that store them.

    Attributes:
        features: the FeaturesDict every sample fits.
        samples: the samples (nested dicts), consumed once.
        source: where they come from, for messages.
        closer: releases what the converter opened (a file), for samples that will not be read.
    """

    features: FeaturesDict
    samples: Iterator[dict[str, Any]]
    source: str = "<samples>"
    closer: Callable[[], None] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.samples

    def close(self) -> None:
        """Release the source without reading the samples (a writer refused the output first)."""
        close = getattr(self.samples, "close", None)
        if close is not None:
            close()
        if self.closer is not None:
            self.closer()


def connector_from_value(
    value: Any, key: str, *, fixed_shapes: bool = True
) -> FeatureConnector | dict[str, Any]:
    """The connector that stores ``value``: ints -> int64, floats -> float32, str -> Text, bytes,
    numpy arrays and (nested) lists -> Tensor, dicts -> nested features.

    ``fixed_shapes=False`` gives lists and arrays unknown (``None``) dimensions, for sources
    whose lengths vary from sample to sample (JSON Lines).
    """
    if isinstance(value, Mapping):
        return {k: connector_from_value(v, f"{key}/{k}", fixed_shapes=fixed_shapes) for k, v in value.items()}
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return Tensor(shape=(), dtype=np.int64)
    if isinstance(value, (float, np.floating)):
        return Tensor(shape=(), dtype=np.float32)
    if isinstance(value, str):
        return Text()
    if isinstance(value, (bytes, bytearray)):
        return Tensor(shape=(), dtype=object)
    if isinstance(value, (list, tuple, np.ndarray)):
        array = value if isinstance(value, np.ndarray) else _list_array(value, key)
        dtype = _stored_dtype(array, key)
        if fixed_shapes:
            return Tensor(shape=array.shape, dtype=dtype)
        if array.ndim == 1 and array.dtype.kind == "U":  # a list of strings: text, as Arrow reads it
            return Sequence(Text())
        if array.ndim > 1:  # several unknown dimensions: stored as bytes + shape, as tfds does
            return Tensor(shape=(None,) * array.ndim, dtype=dtype, encoding="bytes")
        return Tensor(shape=(None,), dtype=dtype)
    if value is None:
        raise ConvertError(f"key {key!r}: null has no type; give the key a type or leave it out")
    raise ConvertError(f"key {key!r}: cannot store a {type(value).__name__}")


def _list_array(value: list[Any] | tuple[Any, ...], key: str) -> np.ndarray:
    try:
        array = np.asarray(value)
    except ValueError:
        raise ConvertError(f"key {key!r}: nested lists of different lengths cannot be stored") from None
    if array.size == 0:
        raise ConvertError(f"key {key!r}: an empty list has no type; give the key a type")
    return array


def _stored_dtype(array: np.ndarray, key: str) -> Any:
    kind = array.dtype.kind
    if kind in "biu":
        return array.dtype if kind == "u" and array.dtype.itemsize <= 4 else np.int64
    if kind == "f":
        return np.float32
    if kind in "USO":
        return object
    raise ConvertError(f"key {key!r}: cannot store values of dtype {array.dtype}")


def merge_connectors(first: Any, second: Any, key: str) -> Any:
    """One connector for two proposals of the same key: int64 and float32 give float32."""
    if isinstance(first, dict) and isinstance(second, dict):
        merged = dict(first)
        for name, value in second.items():
            merged[name] = merge_connectors(first[name], value, f"{key}/{name}") if name in first else value
        return merged
    if first == second:
        return first
    if isinstance(first, Tensor) and isinstance(second, Tensor) and first.shape == second.shape:
        kinds = {np.dtype(first.dtype).kind, np.dtype(second.dtype).kind}
        if kinds <= set("biuf"):
            return Tensor(shape=first.shape, dtype=np.float32)
    raise ConvertError(f"key {key!r} holds different types in different samples: {first!r} and {second!r}")


def features_from_values(sample: Mapping[str, Any], *, fixed_shapes: bool = True) -> FeaturesDict:
    """A FeaturesDict that stores ``sample`` (its ``__key__`` is left out).

    Example:
        >>> features_from_values({"label": 3})
        FeaturesDict({'label': Tensor(shape=(), dtype=int64)})
    """
    return FeaturesDict(
        {
            key: connector_from_value(value, key, fixed_shapes=fixed_shapes)
            for key, value in sample.items()
            if key != "__key__"
        }
    )
