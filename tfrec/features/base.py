"""The FeatureConnector protocol and the flat layout shared by every connector (features layer).

A connector describes one feature once. It turns a user value into flat
numpy values (``encode_flat``), says how they are stored (``flat_infos``:
relative key -> shape and dtype), and turns the parsed values back
(``decode_flat``). Containers prefix their children's keys (``parent/child``),
exactly as tensorflow_datasets lays them out. This layer never builds protos:
:mod:`tfrec.features.serializer` hands flat arrays to :mod:`tfrec.example`.

Round trip::

    value => encode_flat() => {key: ndarray} => Example bytes
          => parse_spec() + tfrec.parse_example => {key: ndarray} => decode_flat() => value
"""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple, cast

import numpy as np

from ..errors import EncodeError, SchemaError

__all__ = [
    "TFDS_PREFIX",
    "Documentation",
    "FeatureConnector",
    "TensorInfo",
    "as_numpy_dtype",
    "check_keys",
    "documented",
    "dtype_name",
    "to_connector",
]

# tensorflow_datasets' class names: features.json files name connectors by them.
TFDS_PREFIX = "tensorflow_datasets.core.features."


@dataclasses.dataclass
class Documentation:
    """A feature's description and value range, as tfds' ``Documentation`` (``doc=`` of any connector).

    Example:
        >>> Scalar(np.int32, doc=Documentation(desc="Age of the person", value_range="0-150")).value_range
        '0-150'
    """

    desc: str | None = None
    value_range: str | None = None


def documented(doc: Any, value_range: str | None = None) -> tuple[str | None, str | None]:
    """``doc=`` (a str or a :class:`Documentation`) and ``value_range=`` as (description, value range)."""
    if isinstance(doc, Documentation):
        return doc.desc or None, value_range or doc.value_range or None
    if doc is not None and not isinstance(doc, str):
        raise SchemaError(f"doc must be a str or a Documentation, not {type(doc).__name__}")
    return doc or None, value_range or None


class TensorInfo(NamedTuple):
    """How one flat value is stored: its shape (``None`` = unknown) and declared dtype."""

    shape: tuple[int | None, ...]
    dtype: np.dtype


def as_numpy_dtype(dtype: Any) -> np.dtype:
    """Normalise a connector dtype: numpy dtypes and names, ``str``/``"string"`` -> object (bytes).

    Example:
        >>> as_numpy_dtype("uint8")
        dtype('uint8')
    """
    if isinstance(dtype, str) and dtype in ("string", "str", "bytes"):
        return np.dtype(object)
    if dtype in (str, bytes, object, np.str_, np.bytes_):
        return np.dtype(object)
    name = getattr(dtype, "name", None)
    if type(dtype).__module__.startswith("tensorflow") and isinstance(name, str):
        dtype = "object" if name == "string" else name  # a tf.DType, without importing TensorFlow
    try:
        found = np.dtype(dtype)
    except TypeError:
        raise SchemaError(f"not a dtype: {dtype!r}") from None
    if found.kind not in "biufO":
        raise SchemaError(f"unsupported dtype {found}: use bool, ints, floats or string")
    return found


def dtype_name(dtype: np.dtype) -> str:
    """The dtype as written in features.json (``"string"`` for object)."""
    return "string" if dtype.kind == "O" else dtype.name


def fits(shape: tuple[int | None, ...], found: tuple[int, ...]) -> bool:
    """Whether an array of shape ``found`` fits ``shape`` (``None`` matches any size)."""
    return len(found) == len(shape) and all(s is None or s == d for s, d in zip(shape, found, strict=True))


def check_shape(shape: Any) -> tuple[int | None, ...]:
    try:
        dims = tuple(None if d is None or d == -1 else int(d) for d in shape)
    except TypeError:
        raise SchemaError(f"shape must be a sequence of ints or None, not {shape!r}") from None
    if any(d is not None and d < 0 for d in dims):
        raise SchemaError(f"shape dimensions must be >= 0 or None, not {shape!r}")
    return dims


class FeatureConnector(ABC):
    """A feature described once: how its values are encoded, stored, parsed and decoded.

    Subclasses implement :meth:`flat_infos`, :meth:`encode_flat`,
    :meth:`decode_flat` and the JSON content methods; they are frozen value
    objects (``==``, ``repr``, pickling).
    """

    _tfds_name: ClassVar[str]  # pythonClassName in features.json
    _json_field: ClassVar[str]  # the oneof field of the Feature proto that holds the content
    _registry: ClassVar[dict[str, type[FeatureConnector]]] = {}

    doc: str | None = None
    value_range: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_tfds_name" in cls.__dict__:
            FeatureConnector._registry[cls._tfds_name] = cls
            FeatureConnector._registry[cls.__name__] = cls

    # -- layout ---------------------------------------------------------------------------------

    def children(self) -> Mapping[str, FeatureConnector] | None:
        """The named sub-features of a dict of features (a value is a dict of their values); None for
        every other connector."""
        return None

    @abstractmethod
    def flat_infos(self) -> dict[str, TensorInfo]:
        """Relative flat key (``""`` = this feature) -> how that value is stored."""

    @abstractmethod
    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        """Encode a user value into relative flat key -> numpy value; ``path`` names it in errors."""

    @abstractmethod
    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        """Turn parsed flat values (relative keys) back into the user's value."""

    # -- metadata -------------------------------------------------------------------------------

    @abstractmethod
    def _json_content(self) -> dict[str, Any]:
        """The content message of this connector, as features.json writes it."""

    @classmethod
    @abstractmethod
    def _from_json_content(cls, content: dict[str, Any]) -> FeatureConnector:
        """Build the connector from its content message."""

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> FeatureConnector:
        """Build the connector from tfds' older plain-JSON content."""
        raise SchemaError(f"{cls.__name__} has no legacy features.json layout")

    def to_json(self) -> dict[str, Any]:
        """This feature as tensorflow_datasets' features.json writes it (proto-JSON).

        Example:
            >>> Text().to_json()
            {'pythonClassName': 'tensorflow_datasets.core.features.text_feature.Text', 'text': {}}
        """
        out: dict[str, Any] = {"pythonClassName": self._tfds_name, self._json_field: self._json_content()}
        if self.doc:
            out["description"] = self.doc
        if self.value_range:
            out["valueRange"] = self.value_range
        return out

    @staticmethod
    def from_json(value: dict[str, Any] | str) -> FeatureConnector:
        """Rebuild any connector from :meth:`to_json` output or a tfds features.json document.

        Example:
            >>> FeatureConnector.from_json(Text().to_json()) == Text()
            True
        """
        if isinstance(value, str):
            value = json.loads(value)
        assert isinstance(value, dict)
        if "type" in value:  # tfds' other layouts: {"type": class, "content": ...}
            return _from_typed_json(value)
        name = value.get("pythonClassName", "")
        cls = FeatureConnector._registry.get(name) or FeatureConnector._registry.get(name.rsplit(".", 1)[-1])
        if cls is None:
            raise SchemaError(f"unknown feature connector {name!r} in features.json")
        content = value.get(cls._json_field)
        if content is None:
            fields = [k for k in value if k not in ("pythonClassName", "description", "valueRange")]
            content = value[fields[0]] if fields else {}
            if isinstance(content, dict) and "json" in content and len(content) == 1:
                content = json.loads(content["json"])
        feature = cls._from_json_content(content)
        feature.doc = value.get("description") or None
        feature.value_range = value.get("valueRange") or None
        return feature

    # -- value object -----------------------------------------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        return (type(self), json.dumps(self.to_json(), sort_keys=True))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FeatureConnector):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def to_connector(feature: Any) -> FeatureConnector:
    """A connector from a connector, a (nested) dict of them (a FeaturesDict), or a dtype (a scalar
    Tensor).

    The two classes are looked up in the registry every connector class joins when it is defined
    (features.json names them the same way), so that any container can nest dicts.

    Example:
        >>> to_connector({"id": np.int64})
        FeaturesDict({'id': Scalar(dtype=int64)})
    """
    if isinstance(feature, FeatureConnector):
        return feature
    make = cast(Any, FeatureConnector._registry)
    if isinstance(feature, Mapping):
        return make["FeaturesDict"](feature)
    try:
        return make["Tensor"](shape=(), dtype=feature)
    except SchemaError:
        raise SchemaError(f"not a feature: {feature!r} (expected a connector, a dict or a dtype)") from None


def check_keys(value: Any, names: Mapping[str, Any], path: str) -> None:
    """Raise EncodeError unless ``value`` is a mapping with exactly the keys of ``names`` (a dict of
    features' children), naming the key path."""
    if not isinstance(value, Mapping):
        raise EncodeError(
            f"{path or '<root>'} (FeaturesDict): expected a dict, found {type(value).__name__}", key=path
        )
    if len(value) != len(names) or any(name not in value for name in names):
        missing = [name for name in names if name not in value]
        extra = [name for name in value if name not in names]
        raise EncodeError(
            f"{path or '<root>'} (FeaturesDict): keys differ from the schema; "
            f"missing {missing or 'none'}, unexpected {extra or 'none'}",
            key=path,
        )


def _from_typed_json(value: dict[str, Any]) -> FeatureConnector:
    """tfds' ``{"type": ..., "content": ...}`` layouts: ``to_json()``'s (with ``proto_cls``,
    proto-JSON content) and the older plain-JSON one."""
    name = value["type"]
    content = value.get("content", {})
    if isinstance(content, str):
        content = json.loads(content)
    cls = FeatureConnector._registry.get(name) or FeatureConnector._registry.get(name.rsplit(".", 1)[-1])
    if cls is None:
        raise SchemaError(f"unknown feature connector {name!r} in features.json")
    if "proto_cls" in value:
        return cls._from_json_content(content)
    return cls._from_legacy_content(content)


def json_int(value: Any) -> int:
    """proto-JSON writes int64 as strings; plain numbers are accepted too."""
    return int(value)


def json_shape(shape: Any) -> tuple[int | None, ...]:
    """A Shape message ``{"dimensions": ["-1", "3"]}`` (or a legacy list) as a tuple."""
    dims = shape.get("dimensions", []) if isinstance(shape, dict) else list(shape or [])
    return tuple(None if d is None or int(d) == -1 else int(d) for d in dims)


def shape_json(shape: tuple[int | None, ...]) -> dict[str, Any]:
    return {"dimensions": [str(-1 if d is None else d) for d in shape]} if shape else {}
