"""Text and ClassLabel connectors (features layer).

``Text`` stores UTF-8 in a ``bytes_list`` and gives back ``str``; ``ClassLabel``
stores an int64 class index and accepts class names or indices (``-1`` means
"no label").

Example:
    >>> label = ClassLabel(names=["no", "yes"])
    >>> label.str2int("yes"), label.int2str(0)
    (1, 'no')
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import DecodeError, EncodeError, SchemaError
from .base import TFDS_PREFIX, Documentation, FeatureConnector, TensorInfo, documented, json_int

__all__ = ["ClassLabel", "Text"]

_OBJECT = np.dtype(object)


class Text(FeatureConnector):
    """Text: ``str`` in, ``str`` out, stored as UTF-8 (checked both ways).

    Example:
        >>> Text().encode_flat("héllo", "title")
        {'': b'h\\xc3\\xa9llo'}
    """

    _tfds_name = TFDS_PREFIX + "text_feature.Text"
    _json_field = "text"

    def __init__(self, *, doc: str | Documentation | None = None, value_range: str | None = None) -> None:
        self.doc, self.value_range = documented(doc, value_range)

    def __repr__(self) -> str:
        return "Text()"

    def flat_infos(self) -> dict[str, TensorInfo]:
        return {"": TensorInfo((), _OBJECT)}

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        if isinstance(value, bytes):
            try:
                value.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EncodeError(
                    f"{path} (Text): bytes that are not UTF-8 ({exc.reason})", key=path
                ) from None
            return {"": value}
        if not isinstance(value, str):
            raise EncodeError(f"{path} (Text): expected str, found {type(value).__name__}", key=path)
        try:
            return {"": value.encode("utf-8")}
        except UnicodeEncodeError as exc:
            raise EncodeError(f"{path} (Text): not encodable as UTF-8 ({exc.reason})", key=path) from None

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        try:
            if not batched:
                return flat[""].decode("utf-8")
            out = np.empty(len(flat[""]), object)
            out[:] = [v.decode("utf-8") for v in flat[""]]
            return out
        except UnicodeDecodeError as exc:
            raise DecodeError(f"{path} (Text): stored bytes are not UTF-8 ({exc.reason})", key=path) from None

    def one_record_decoder(self, path: str) -> Callable[[Any], Any] | None:
        if type(self).decode_flat is not Text.decode_flat:
            return super().one_record_decoder(path)

        def decode(value: bytes) -> str:
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError as exc:
                message = f"{path} (Text): stored bytes are not UTF-8 ({exc.reason})"
                raise DecodeError(message, key=path) from None

        return decode

    def _json_content(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> Text:
        return cls()

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> Text:
        return cls()


class ClassLabel(FeatureConnector):
    """A class index (int64), given as the class name or its index; ``-1`` means no label.

    Exactly one of ``names``, ``names_file`` (one name per line) or
    ``num_classes`` (names ``"0"`` .. ``"n-1"``) is given.

    Example:
        >>> ClassLabel(num_classes=3).encode_flat(2, "label")
        {'': array(2)}
    """

    _tfds_name = TFDS_PREFIX + "class_label_feature.ClassLabel"
    _json_field = "classLabel"

    def __init__(
        self,
        *,
        names: list[str] | None = None,
        names_file: str | os.PathLike[str] | None = None,
        num_classes: int | None = None,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        if sum(x is not None for x in (names, names_file, num_classes)) != 1:
            raise SchemaError(
                "Only a single argument of ClassLabel() should be provided: names, names_file or num_classes"
            )
        if names_file is not None:
            with open(names_file, encoding="utf-8") as file:
                names = [line.strip() for line in file if line.strip()]
        self._names: list[str] | None = list(names) if names is not None else None
        if self._names is not None:
            if len(set(self._names)) != len(self._names):
                raise SchemaError("ClassLabel names must be unique")
            num_classes = len(self._names)
        assert num_classes is not None
        if num_classes < 0:
            raise SchemaError(f"num_classes must be >= 0, not {num_classes}")
        self.num_classes = int(num_classes)
        self.name_index = {name: i for i, name in enumerate(self.names)}  # class name -> index
        self.doc, self.value_range = documented(doc, value_range)

    @property
    def names(self) -> list[str]:
        """The class names (``"0"`` .. ``"n-1"`` when only ``num_classes`` was given)."""
        return self._names if self._names is not None else [str(i) for i in range(self.num_classes)]

    def __repr__(self) -> str:
        return f"ClassLabel(num_classes={self.num_classes})"

    def str2int(self, name: str) -> int:
        """The index of class ``name``."""
        try:
            return self.name_index[name]
        except KeyError:
            close = difflib.get_close_matches(name, self.names, n=3)
            hint = f"; closest: {', '.join(map(repr, close))}" if close else ""
            raise EncodeError(f"class {name!r} is not one of the {self.num_classes} names{hint}") from None

    def int2str(self, index: int) -> str:
        """The name of class ``index``."""
        if not 0 <= index < self.num_classes:
            raise EncodeError(f"class index {index} is outside 0..{self.num_classes - 1}")
        return self.names[index]

    def flat_infos(self) -> dict[str, TensorInfo]:
        return {"": TensorInfo((), np.dtype(np.int64))}

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        try:
            if isinstance(value, bytes):
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise EncodeError(f"a class name in bytes that are not UTF-8 ({exc.reason})") from None
            if isinstance(value, str):
                index = self.str2int(value)
            elif isinstance(value, (int, np.integer, np.ndarray)) and np.asarray(value).dtype.kind in "iu":
                if np.ndim(value):
                    raise EncodeError(f"expected one class, found an array of shape {np.shape(value)}")
                index = int(value)
                if not -1 <= index < self.num_classes:
                    raise EncodeError(f"class index {index} is outside -1..{self.num_classes - 1}")
            else:
                raise EncodeError(f"expected a class name or index, found {type(value).__name__}")
        except EncodeError as exc:
            raise EncodeError(f"{path} ({self!r}): {exc}", key=path) from None
        return {"": np.array(index, np.int64)}

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        return flat[""]

    def one_record_decoder(self, path: str) -> Callable[[Any], Any] | None:
        if type(self).decode_flat is ClassLabel.decode_flat:
            return None  # decode_flat returns the parsed value as it is
        return super().one_record_decoder(path)

    def _json_content(self) -> dict[str, Any]:
        return {"numClasses": str(self.num_classes)}

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> ClassLabel:
        return cls(num_classes=json_int(content.get("numClasses", 0)))

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> ClassLabel:
        return cls(num_classes=int(content.get("num_classes", 0)))

    def _key(self) -> tuple[Any, ...]:
        return (*super()._key(), tuple(self.names))
