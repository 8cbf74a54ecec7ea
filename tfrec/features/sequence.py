"""The Sequence connector (features layer): a variable (or fixed) number of items of one feature.

Items are stacked along a new leading dimension and stored flattened, as
tensorflow_datasets does; a sequence of sequences is stored ragged, as
``key/ragged_flat_values`` plus ``key/ragged_row_lengths_0``.

Example:
    >>> tokens = Sequence(Tensor(shape=(), dtype=np.int64))
    >>> tokens.encode_flat([1, 2, 3], "tokens")
    {'': array([1, 2, 3])}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import EncodeError, SchemaError
from ..example import RaggedArray
from .base import _TFDS, FeatureConnector, TensorInfo, json_int

__all__ = ["Sequence"]

FLAT_VALUES = "ragged_flat_values"
ROW_LENGTHS = "ragged_row_lengths_0"


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


class Sequence(FeatureConnector):
    """A sequence of items of ``feature`` (a connector, a dict of them, or a dtype).

    Args:
        feature: what each item is.
        length: the fixed number of items, or ``None`` for any number.

    Example:
        >>> Sequence({"word": Text(), "tag": ClassLabel(names=["N", "V"])})
        Sequence(FeaturesDict({'word': Text(), 'tag': ClassLabel(num_classes=2)}))
    """

    _tfds_name = _TFDS + "sequence_feature.Sequence"
    _json_field = "sequence"

    def __init__(
        self,
        feature: Any,
        length: int | None = None,
        *,
        doc: str | None = None,
        value_range: str | None = None,
    ) -> None:
        from .features_dict import to_connector

        self.feature = to_connector(feature)
        self.length = None if length is None or length == -1 else int(length)
        self.ragged = isinstance(self.feature, Sequence)
        if self.ragged:
            inner = self.feature.feature  # type: ignore[attr-defined]
            if self.length is not None or self.feature.length is not None:  # type: ignore[attr-defined]
                raise SchemaError("a Sequence of Sequence is ragged: neither may have a fixed length")
            if isinstance(inner, Sequence) or any(None in i.shape for i in inner.flat_infos().values()):
                raise SchemaError(
                    "only two levels of Sequence are supported (stored ragged, one row-length list)"
                )
        elif any(None in info.shape for info in self.feature.flat_infos().values()):
            raise SchemaError(
                f"Sequence({self.feature!r}): items with an unknown dimension cannot be stacked; "
                "use Sequence(Sequence(...)) or encoding='bytes'"
            )
        self.doc, self.value_range = doc, value_range

    def __repr__(self) -> str:
        return f"Sequence({self.feature!r}" + (f", length={self.length})" if self.length is not None else ")")

    def flat_infos(self) -> dict[str, TensorInfo]:
        if self.ragged:
            inner = self.feature.feature  # type: ignore[attr-defined]
            infos = {}
            for key, info in inner.flat_infos().items():  # row lengths first, as tfds writes them
                infos[_join(key, ROW_LENGTHS)] = TensorInfo((None,), np.dtype(np.int64))
                infos[_join(key, FLAT_VALUES)] = TensorInfo((None, *info.shape), info.dtype)
            return infos
        return {
            key: TensorInfo((self.length, *i.shape), i.dtype) for key, i in self.feature.flat_infos().items()
        }

    def _items(self, value: Any, path: str) -> list[Any]:
        if isinstance(value, Mapping):  # a dict of sequences, tfds' other spelling
            lengths = {len(v) for v in value.values()}
            if len(lengths) > 1:
                raise EncodeError(f"{path} (Sequence): the dict's sequences differ in length", key=path)
            count = lengths.pop() if lengths else 0
            return [{k: v[i] for k, v in value.items()} for i in range(count)]
        if isinstance(value, (str, bytes)):
            raise EncodeError(
                f"{path} (Sequence): expected a sequence of items, found {type(value).__name__}", key=path
            )
        items = list(value)
        if self.length is not None and len(items) != self.length:
            raise EncodeError(
                f"{path} (Sequence): expected {self.length} items, found {len(items)}", key=path
            )
        return items

    def _stack(self, encoded: list[dict[str, Any]], infos: dict[str, TensorInfo]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, info in infos.items():
            values = [e[key] for e in encoded]
            if info.dtype.kind == "O" and not info.shape:
                array = np.empty(len(values), object)
                array[:] = [v[()] if isinstance(v, np.ndarray) else v for v in values]  # 0-d strings
                out[key] = array
            else:
                out[key] = np.stack(values) if values else np.empty((0, *info.shape), info.dtype)
        return out

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        items = self._items(value, path)
        if not self.ragged:
            encoded = [self.feature.encode_flat(item, f"{path}[{i}]") for i, item in enumerate(items)]
            return self._stack(encoded, self.feature.flat_infos())
        inner = self.feature.feature  # type: ignore[attr-defined]
        rows = [self.feature._items(item, f"{path}[{i}]") for i, item in enumerate(items)]  # type: ignore[attr-defined]
        leaves = [
            inner.encode_flat(leaf, f"{path}[{i}][{j}]")
            for i, row in enumerate(rows)
            for j, leaf in enumerate(row)
        ]
        stacked = self._stack(leaves, inner.flat_infos())
        lengths = np.array([len(row) for row in rows], np.int64)
        out = {}
        for key, values in stacked.items():
            out[_join(key, FLAT_VALUES)] = values
            out[_join(key, ROW_LENGTHS)] = lengths
        return out

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        if self.ragged:
            return self._decode_ragged(flat, path, batched)
        keys = list(self.feature.flat_infos())
        if not batched or not isinstance(flat[keys[0]], RaggedArray):
            if batched:  # fixed-length sequences: fold the batch into the items, then split back
                first = flat[keys[0]]
                merged = {k: _merge_leading(flat[k]) for k in keys}
                items = self.feature.decode_flat(merged, path, True)
                return _split_leading(items, first.shape[:2])
            return self.feature.decode_flat(flat, path, True)  # the items decode like a batch
        splits = flat[keys[0]].row_splits
        items = self.feature.decode_flat({k: flat[k].values for k in keys}, path, True)
        return _batch_of(items, splits)

    def _decode_ragged(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        inner = self.feature.feature  # type: ignore[attr-defined]
        keys = list(inner.flat_infos())
        lengths = flat[_join(keys[0], ROW_LENGTHS)]
        if not batched:
            leaves = inner.decode_flat({k: flat[_join(k, FLAT_VALUES)] for k in keys}, path, True)
            return _batch_of(leaves, _splits(lengths))
        values = {k: flat[_join(k, FLAT_VALUES)].values for k in keys}
        leaves = inner.decode_flat(values, path, True)
        rows = _batch_of(leaves, _splits(lengths.values))
        return _batch_of(rows, lengths.row_splits)

    def _key(self) -> tuple[Any, ...]:
        return (type(self), self.doc, self.value_range, self.length, self.feature._key())

    def _json_content(self) -> dict[str, Any]:
        return {"feature": self.feature.to_json(), "length": str(-1 if self.length is None else self.length)}

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> Sequence:
        return cls(FeatureConnector.from_json(content["feature"]), json_int(content.get("length", -1)))

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> Sequence:
        return cls(FeatureConnector.from_json(content["feature"]), content.get("length"))


def _splits(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)


def _batch_of(items: Any, splits: np.ndarray) -> Any:
    """Group decoded items into rows by ``splits``: a dict of them, or one RaggedArray."""
    if isinstance(items, dict):
        return {k: _batch_of(v, splits) for k, v in items.items()}
    return RaggedArray(items, np.asarray(splits, np.int64))


def _merge_leading(array: np.ndarray) -> np.ndarray:
    return array.reshape((-1, *array.shape[2:]))


def _split_leading(items: Any, leading: tuple[int, ...]) -> Any:
    if isinstance(items, dict):
        return {k: _split_leading(v, leading) for k, v in items.items()}
    return items.reshape((*leading, *items.shape[1:]))
