"""Type names for converters (``cls=int64,jpg=image``), how a text or bytes value becomes one, and the
connector that stores it (convert layer).

Example:
    >>> parse_types("cls=int64,jpg=image")
    {'cls': 'int64', 'jpg': 'image'}
    >>> coerce(b" 7\\n", "int64", where="sample '000001', key 'cls'")
    7
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ConvertError, InvalidArgumentError
from ..features import ClassLabel, FeatureConnector, FeaturesDict, Image, Tensor, Text, labels_file
from ..features.image import image_channels

__all__ = [
    "TYPE_NAMES",
    "coerce",
    "connector_for",
    "load_features",
    "parse_pairs",
    "parse_types",
]

# Each type name: what a value becomes, and how it is stored.
TYPE_NAMES = {
    "int64": "an integer (int64_list)",
    "float32": "a number (float_list)",
    "text": "UTF-8 text (bytes_list)",
    "bytes": "raw bytes (bytes_list)",
    "image": "PNG or JPEG bytes, stored as they are (an Image feature)",
}


def parse_pairs(spec: str | None, what: str) -> dict[str, str]:
    """``"a=1,b=x"`` -> ``{"a": "1", "b": "x"}``; a malformed pair is a :class:`InvalidArgumentError`."""
    pairs: dict[str, str] = {}
    if not spec:
        return pairs
    for item in spec.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InvalidArgumentError(
                f"{what}: expected NAME=VALUE pairs separated by commas, found {item!r}"
            )
        pairs[name.strip()] = value.strip()
    return pairs


def parse_types(spec: str | Mapping[str, str] | None) -> dict[str, str]:
    """Parse ``"key=type,..."`` (or check a mapping); unknown type names are a :class:`InvalidArgumentError`.

    Example:
        >>> parse_types({"age": "int64"})
        {'age': 'int64'}
    """
    types = dict(spec) if isinstance(spec, Mapping) else parse_pairs(spec, "types")
    for key, name in types.items():
        if name not in TYPE_NAMES:
            known = ", ".join(TYPE_NAMES)
            raise InvalidArgumentError(f"types: unknown type {name!r} for {key!r}; known types: {known}")
    return types


def coerce(value: Any, type_name: str, *, where: str) -> Any:
    """A text or bytes value as ``type_name`` wants it; :class:`ConvertError` naming ``where`` if not."""
    if type_name in ("bytes", "image"):
        return value.encode() if isinstance(value, str) else bytes(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise ConvertError(f"not UTF-8 text, cannot be {type_name}", where=where) from None
    if type_name == "text":
        return value
    text = value.strip()
    try:
        return int(text) if type_name == "int64" else float(text)
    except ValueError:
        noun = "an integer (int64)" if type_name == "int64" else "a number (float32)"
        raise ConvertError(f"{text[:40]!r} is not {noun}", where=where) from None


def connector_for(type_name: str, example: Any = None) -> FeatureConnector:
    """The connector that stores values of ``type_name`` (``example``: a first value, for images)."""
    if type_name == "int64":
        return Tensor(shape=(), dtype=np.int64)
    if type_name == "float32":
        return Tensor(shape=(), dtype=np.float32)
    if type_name == "text":
        return Text()
    if type_name == "bytes":
        return Tensor(shape=(), dtype=object)
    if type_name == "image":
        channels = image_channels(example) if isinstance(example, bytes) else 3
        # Grey+alpha PNGs have no Image connector: they are kept as RGBA-sized for the shape only.
        return Image(shape=(None, None, channels if channels in (1, 3, 4) else 4))
    raise InvalidArgumentError(f"unknown type {type_name!r}; known types: {', '.join(TYPE_NAMES)}")


def load_features(path: str | os.PathLike[str]) -> FeaturesDict:
    """A FeaturesDict from a features.json file or a directory holding one (tfds' layout).

    Class names in ``{key}.labels.txt`` next to the file are read too.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        return FeaturesDict.load(path)
    try:
        with open(path, encoding="utf-8") as file:
            content = json.load(file)
    except FileNotFoundError:
        raise InvalidArgumentError(f"{path}: no such features file") from None
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(f"{path}: not a features.json file: {exc}") from None
    features = FeatureConnector.from_json(content)
    if not isinstance(features, FeaturesDict):
        raise InvalidArgumentError(f"{path} does not hold a FeaturesDict")
    directory = os.path.dirname(path)
    for name, child in features.children().items():
        labels = labels_file(directory, name)
        if isinstance(child, ClassLabel) and os.path.exists(labels):
            features.features[name] = ClassLabel(names_file=labels, doc=child.doc)
    return features
