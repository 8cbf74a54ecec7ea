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
import importlib
import json
from abc import ABC
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple, cast

import numpy as np

from ..errors import EncodeError, SchemaError
from .rows import apply_rows
from .values import to_array

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

    tfrec's connectors implement :meth:`flat_infos`, :meth:`encode_flat`,
    :meth:`decode_flat` and the JSON content methods; they are frozen value
    objects (``==``, ``repr``, pickling).

    Connectors written the tensorflow_datasets way port with an import change:
    subclass this class (or :class:`Tensor`, :class:`FeaturesDict`, ...) and
    implement ``get_tensor_info`` (and ``get_serialized_info`` when what is
    stored differs), ``encode_example``, ``decode_example`` (in numpy: it gets
    one record's numpy values) and ``to_json_content`` / ``from_json_content``.
    features.json names such a class by its module path, as tfds does, and
    loading imports that module.

    Example:
        >>> class Celsius(FeatureConnector):
        ...     def get_tensor_info(self):
        ...         return TensorInfo(shape=(), dtype=np.float32)
        ...     def encode_example(self, kelvin):
        ...         return kelvin - 273.15
        ...     def decode_example(self, celsius):
        ...         return celsius + 273.15
    """

    _tfds_name: ClassVar[str]  # pythonClassName in features.json
    _json_field: ClassVar[str] = "jsonFeature"  # the oneof field of the Feature proto that holds the content
    _registry: ClassVar[dict[str, type[FeatureConnector]]] = {}
    custom: ClassVar[bool] = False  # defined outside tfrec (a tfds-style connector)

    doc: str | None = None
    value_range: str | None = None

    def __init__(self, *, doc: str | Documentation | None = None, value_range: str | None = None) -> None:
        self.doc, self.value_range = documented(doc, value_range)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_tfds_name" in cls.__dict__:
            FeatureConnector._registry[cls._tfds_name] = cls
            FeatureConnector._registry[cls.__name__] = cls
            return
        # A connector defined elsewhere: named by its module path in features.json, as tfds names it.
        cls.custom = True
        cls._tfds_name = f"{cls.__module__}.{cls.__qualname__}"
        FeatureConnector._registry[cls._tfds_name] = cls
        builtin = next(k for k in cls.__mro__ if k.__module__.startswith(__package__ + "."))
        if builtin is not FeatureConnector:  # a subclass of Tensor, FeaturesDict, ...: theirs, then its own
            if (
                cls.encode_example is not FeatureConnector.encode_example
                and "encode_flat" not in cls.__dict__
            ):
                cls.encode_flat = _encode_through(builtin)  # type: ignore[method-assign]
            if (
                cls.decode_example is not FeatureConnector.decode_example
                and "decode_flat" not in cls.__dict__
            ):
                cls.decode_flat = _decode_through(builtin)  # type: ignore[method-assign]

    # -- tensorflow_datasets' connector surface (for connectors written the tfds way) ----------------

    def get_tensor_info(self) -> TensorInfo | dict[str, Any]:
        """The decoded value's shape and dtype (a TensorInfo, or a dict of them)."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_tensor_info()")

    def get_serialized_info(self) -> TensorInfo | dict[str, Any]:
        """How the value is stored (a TensorInfo, or a dict of them); the tensor info by default."""
        return self.get_tensor_info()

    def encode_example(self, example_data: Any) -> Any:
        """A user value -> the value(s) to store (arrays, scalars, bytes; a dict for a dict of infos)."""
        return example_data

    def decode_example(self, tfexample_data: Any) -> Any:
        """One record's stored value(s), as numpy -> the user's value."""
        return tfexample_data

    def to_json_content(self) -> dict[str, Any]:
        """This connector's arguments, saved in features.json for :meth:`from_json_content`."""
        return self._json_content()

    @classmethod
    def from_json_content(cls, value: dict[str, Any]) -> FeatureConnector:
        """The connector from what :meth:`to_json_content` saved."""
        return cls._from_json_content(value)

    # -- layout ---------------------------------------------------------------------------------

    def children(self) -> Mapping[str, FeatureConnector] | None:
        """The named sub-features of a dict of features (a value is a dict of their values); None for
        every other connector."""
        return None

    def flat_infos(self) -> dict[str, TensorInfo]:
        """Relative flat key (``""`` = this feature) -> how that value is stored."""
        return {
            key: TensorInfo(check_shape(info.shape), as_numpy_dtype(info.dtype))
            for key, info in self._infos()
        }

    def _infos(self) -> list[tuple[str, Any]]:
        """The serialized infos by relative flat key (a tfds-style connector's layout)."""
        return _flat_items(self.get_serialized_info(), "")

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        """Encode a user value into relative flat key -> numpy value; ``path`` names it in errors."""
        encoded = self.encode_example(value)
        out = {}
        for key, info in self._infos():
            item = encoded
            for part in key.split("/") if key else ():
                if not isinstance(item, Mapping) or part not in item:
                    raise EncodeError(
                        f"{path} ({type(self).__name__}): encode_example gave no {key!r}", key=path
                    )
                item = item[part]
            where = "/".join(p for p in (path, key) if p)
            shape, dtype = check_shape(info.shape), as_numpy_dtype(info.dtype)
            out[key] = to_array(item, dtype, shape, where, type(self).__name__)
        return out

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        """Turn parsed flat values (relative keys) back into the user's value."""
        stored = _nest(self.get_serialized_info(), flat, "")
        return apply_rows(self.decode_example, stored, batched)

    def one_record_decoder(self, path: str) -> Callable[[Any], Any] | None:
        """What :meth:`decode_flat` does to one record's value of a feature stored under its own name
        alone, as a function chosen once (FeaturesDict calls it per record); None: nothing, the
        parsed value is the feature's value.

        Example:
            >>> Tensor(shape=(3,), dtype=np.float32).one_record_decoder("x") is None
            True
        """
        return lambda value: self.decode_flat({"": value}, path, False)

    # -- metadata -------------------------------------------------------------------------------

    def _json_content(self) -> dict[str, Any]:
        """The content message of this connector, as features.json writes it."""
        return {}

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> FeatureConnector:
        """Build the connector from its content message."""
        return cls()

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
        field, content = self._json_field, self.to_json_content()
        if self.custom and (field == "jsonFeature" or type(self).to_json_content is not _BASE_TO_JSON):
            field, content = "jsonFeature", {"json": json.dumps(content)}  # tfds wraps a dict this way
        out: dict[str, Any] = {"pythonClassName": self._tfds_name, field: content}
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
        cls = connector_class(value.get("pythonClassName", ""))
        content = value.get(cls._json_field)
        if content is None or cls._json_field == "jsonFeature":
            fields = [k for k in value if k not in ("pythonClassName", "description", "valueRange")]
            content = value[fields[0]] if fields else {}
            if isinstance(content, dict) and "json" in content and len(content) == 1:
                content = json.loads(content["json"])
        feature = cls.from_json_content(content)
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
    content = value.get("content", {})
    if isinstance(content, str):
        content = json.loads(content)
    cls = connector_class(value["type"])
    if "proto_cls" in value or cls.custom:
        return cls.from_json_content(content)
    return cls._from_legacy_content(content)


def connector_class(name: str) -> type[FeatureConnector]:
    """The connector class features.json names: tfrec's, or (tfds' way) one whose module it imports."""
    registry = FeatureConnector._registry
    if name in registry:
        return registry[name]
    if name.startswith("tensorflow_datasets."):  # tfds' classes, also under their older module paths
        found = registry.get(name.rsplit(".", 1)[-1])
        if found is not None and not found.custom:
            return found
    elif "." in name:
        try:
            importlib.import_module(name.rsplit(".", 1)[0])  # defining the class registers it
        except ImportError as exc:
            raise SchemaError(
                f"features.json names connector {name!r}, whose module does not import: {exc}"
            ) from None
        if name in registry:
            return registry[name]
    raise SchemaError(f"unknown feature connector {name!r} in features.json")


_BASE_TO_JSON = FeatureConnector.to_json_content


def _flat_items(info: Any, prefix: str) -> list[tuple[str, Any]]:
    """A TensorInfo (``prefix`` itself) or a nested dict of them, by flat key."""
    if isinstance(info, Mapping):
        return [
            item
            for name, sub in info.items()
            for item in _flat_items(sub, f"{prefix}/{name}" if prefix else name)
        ]
    return [(prefix, info)]


def _nest(info: Any, flat: dict[str, Any], prefix: str) -> Any:
    """Parsed flat values back in the nesting of a (dict of) TensorInfo."""
    if isinstance(info, Mapping):
        return {name: _nest(sub, flat, f"{prefix}/{name}" if prefix else name) for name, sub in info.items()}
    return flat[prefix]


def _encode_through(builtin: type[FeatureConnector]) -> Any:
    """encode_flat of a subclass of a tfrec connector: its own encode_example, then the connector's."""

    def encode_flat(self: FeatureConnector, value: Any, path: str) -> dict[str, Any]:
        return builtin.encode_flat(self, self.encode_example(value), path)

    return encode_flat


def _decode_through(builtin: type[FeatureConnector]) -> Any:
    """decode_flat of a subclass of a tfrec connector: the connector's, then its own decode_example."""

    def decode_flat(self: FeatureConnector, flat: dict[str, Any], path: str, batched: bool) -> Any:
        return apply_rows(self.decode_example, builtin.decode_flat(self, flat, path, batched), batched)

    return decode_flat


def json_int(value: Any) -> int:
    """proto-JSON writes int64 as strings; plain numbers are accepted too."""
    return int(value)


def json_shape(shape: Any) -> tuple[int | None, ...]:
    """A Shape message ``{"dimensions": ["-1", "3"]}`` (or a legacy list) as a tuple."""
    dims = shape.get("dimensions", []) if isinstance(shape, dict) else list(shape or [])
    return tuple(None if d is None or int(d) == -1 else int(d) for d in dims)


def shape_json(shape: tuple[int | None, ...]) -> dict[str, Any]:
    return {"dimensions": [str(-1 if d is None else d) for d in shape]} if shape else {}
