"""The Sequence connector (features layer): a variable (or fixed) number of items of one feature.

Items are stacked along a new leading dimension and stored flattened, as
tensorflow_datasets does; a value inside several Sequences is stored ragged, as
``key/ragged_row_lengths_0`` (one list per inner level) plus ``key/ragged_flat_values``.

Example:
    >>> tokens = Sequence(Tensor(shape=(), dtype=np.int64))
    >>> tokens.encode_flat([1, 2, 3], "tokens")
    {'': array([1, 2, 3])}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import DecodeError, EncodeError, SchemaError
from ..example import RaggedArray
from .base import TFDS_PREFIX, Documentation, FeatureConnector, TensorInfo, documented, json_int, to_connector

__all__ = ["Sequence"]

FLAT_VALUES = "ragged_flat_values"
ROW_LENGTHS = "ragged_row_lengths_0"


_LENGTH = TensorInfo((), np.dtype(np.int64))


def row_lengths(level: int) -> str:
    """The key of the row lengths of ragged ``level`` (0: the items of the outer sequence)."""
    return f"ragged_row_lengths_{level}"


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _leaves(feature: FeatureConnector) -> dict[str, tuple[int, TensorInfo]]:
    """Each value ``feature`` stores, by its key without ragged suffixes: the number of
    Sequences it sits in (within ``feature``) and how one innermost item is stored."""
    if isinstance(feature, Sequence):
        return {key: (rank + 1, info) for key, (rank, info) in _leaves(feature.feature).items()}
    children = feature.children()
    if children is not None:
        return {
            _join(name, key): leaf for name, child in children.items() for key, leaf in _leaves(child).items()
        }
    return {key: (0, info) for key, info in feature.flat_infos().items()}


def _nested_sequences(feature: FeatureConnector) -> list[Sequence]:
    """The Sequences directly below ``feature``, through dicts but not through other Sequences."""
    if isinstance(feature, Sequence):
        return [feature]
    children = feature.children() or {}
    return [found for child in children.values() for found in _nested_sequences(child)]


class Sequence(FeatureConnector):
    """A sequence of items of ``feature`` (a connector, a dict of them, or a dtype).

    Items are stacked along a new leading dimension. A value inside more than
    one Sequence (``Sequence(Sequence(...))``, or a Sequence of dicts that hold
    Sequences) is stored ragged, as tensorflow_datasets does:
    ``key/ragged_row_lengths_{i}`` for each inner level, then
    ``key/ragged_flat_values``; it decodes to a :class:`~tfrec.RaggedArray`.

    Args:
        feature: what each item is.
        length: the fixed number of items, or ``None`` for any number.

    Example:
        >>> Sequence({"word": Text(), "tag": ClassLabel(names=["N", "V"])})
        Sequence(FeaturesDict({'word': Text(), 'tag': ClassLabel(num_classes=2)}))
        >>> sorted(Sequence({"x": Sequence(np.int64)}).flat_infos())
        ['x/ragged_flat_values', 'x/ragged_row_lengths_0']
    """

    _tfds_name = TFDS_PREFIX + "sequence_feature.Sequence"
    _json_field = "sequence"

    def __init__(
        self,
        feature: Any,
        length: int | None = None,
        *,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        self.feature = to_connector(feature)
        self.length = None if length is None or length == -1 else int(length)
        # key -> (rank, item info): rank 1 is stacked here, rank r > 1 is stored ragged
        self._leaves = {key: (rank + 1, info) for key, (rank, info) in _leaves(self.feature).items()}
        self.ragged = any(rank > 1 for rank, _ in self._leaves.values())
        if self.ragged and (
            self.length is not None or any(s.length is not None for s in _nested_sequences(self.feature))
        ):
            raise SchemaError(
                f"Sequence({self.feature!r}): Sequences inside a Sequence are stored ragged: "
                "neither may have a fixed length"
            )
        if any(None in info.shape for _, info in self._leaves.values()):
            raise SchemaError(
                f"Sequence({self.feature!r}): items with an unknown dimension cannot be stacked; "
                "use Sequence(Sequence(...)) or encoding='bytes'"
            )
        if any(0 in info.shape for _, info in self._leaves.values()):
            raise SchemaError(f"Sequence({self.feature!r}): items of no values cannot be counted once stored")
        self.doc, self.value_range = documented(doc, value_range)

    def __repr__(self) -> str:
        return f"Sequence({self.feature!r}" + (f", length={self.length})" if self.length is not None else ")")

    def flat_infos(self) -> dict[str, TensorInfo]:
        infos = {}
        for key, (rank, info) in self._leaves.items():
            if rank == 1:
                infos[key] = TensorInfo((self.length, *info.shape), info.dtype)
                continue
            for level in range(rank - 1):  # row lengths first, as tfds writes them
                infos[_join(key, row_lengths(level))] = TensorInfo((None,), np.dtype(np.int64))
            infos[_join(key, FLAT_VALUES)] = TensorInfo((None, *info.shape), info.dtype)
        return infos

    def _items(self, value: Any, path: str) -> list[Any]:
        if isinstance(value, Mapping):  # a dict of sequences, tfds' other spelling
            children = self.feature.children()
            names = set(children) if children is not None else None
            if names is not None and set(value) != names:  # checked here too: there may be no items
                raise EncodeError(
                    f"{path} (Sequence): the dict's keys {sorted(value)} are not the items' {sorted(names)}",
                    key=path,
                )
            lengths = {len(v) for v in value.values()}
            if len(lengths) > 1:
                raise EncodeError(f"{path} (Sequence): the dict's sequences differ in length", key=path)
            count = lengths.pop() if lengths else 0
            items = [{k: v[i] for k, v in value.items()} for i in range(count)]
        elif isinstance(value, (str, bytes)):
            raise EncodeError(
                f"{path} (Sequence): expected a sequence of items, found {type(value).__name__}", key=path
            )
        else:
            items = list(value)
        if self.length is not None and len(items) != self.length:
            raise EncodeError(
                f"{path} (Sequence): expected {self.length} items, found {len(items)}", key=path
            )
        return items

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        items = self._items(value, path)
        encoded = [self.feature.encode_flat(item, f"{path}[{i}]") for i, item in enumerate(items)]
        out: dict[str, Any] = {}
        for key, (rank, info) in self._leaves.items():
            if rank == 1:
                out[key] = _stack([e[key] for e in encoded], info)
                continue
            # Each item stores this value itself: stacked (rank 2) or ragged. One level more here.
            levels = [_join(key, row_lengths(level)) for level in range(rank - 2)]
            values = _join(key, FLAT_VALUES) if levels else key
            counted = levels[0] if levels else values
            out[_join(key, row_lengths(0))] = np.array([len(e[counted]) for e in encoded], np.int64)
            for level, inner in enumerate(levels, 1):
                out[_join(key, row_lengths(level))] = _concat([e[inner] for e in encoded], _LENGTH)
            out[_join(key, FLAT_VALUES)] = _concat([e[values] for e in encoded], info)
        return out

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        # The items decode as a batch of the inner feature: hand it its own layout, items as rows.
        inner: dict[str, Any] = {}
        splits = leading = None  # with batched: the records' items, as splits or a dense (B, n)
        items_of: list[np.ndarray] = []  # per stored value: its items per record (splits), or its count
        for key, (rank, _) in self._leaves.items():
            if rank == 1:
                value = flat[key]
                if batched and isinstance(value, RaggedArray):
                    splits, value = value.row_splits, value.values
                    items_of.append(splits)
                elif batched:  # equal lengths: a dense (B, n, ...)
                    leading, value = value.shape[:2], _merge_leading(value)
                    items_of.append(np.arange(leading[0] + 1, dtype=np.int64) * leading[1])
                else:
                    items_of.append(np.array([len(value)]))
                inner[key] = value
                continue
            # row_lengths_0 counts each item's entries of the next part: row_lengths_1, ... then
            # the flat values. The inner feature gets every further part grouped by item.
            stored = [flat[_join(key, row_lengths(level))] for level in range(rank - 1)]
            stored.append(flat[_join(key, FLAT_VALUES)])
            if batched:
                splits = stored[0].row_splits
            items_of.append(np.asarray(splits) if batched else np.array([len(stored[0])]))
            where = _join(path, key)
            parts = [p.values for p in stored] if batched else stored
            bounds = _splits(parts[0], len(parts[1]), where)  # item -> its entries of parts[1]
            for level in range(1, len(parts)):
                if batched and not np.array_equal(stored[level].row_splits, bounds[splits]):
                    raise DecodeError(
                        f"{where}: the stored row lengths do not split each record's values", key=where
                    )
                if level == len(parts) - 1:
                    inner[_join(key, FLAT_VALUES) if rank > 2 else key] = RaggedArray(parts[level], bounds)
                else:
                    inner[_join(key, row_lengths(level - 1))] = RaggedArray(parts[level], bounds)
                    bounds = _splits(parts[level], len(parts[level + 1]), where)[bounds]
        if any(not np.array_equal(counts, items_of[0]) for counts in items_of[1:]):
            raise DecodeError(f"{path}: the values of one Sequence hold different numbers of items", key=path)
        items = self.feature.decode_flat(inner, path, True)
        if not batched:
            return items
        return _rows(items, splits, leading)

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


def _stack(values: list[Any], info: TensorInfo) -> Any:
    """Encoded items stacked along a new leading dimension."""
    if info.dtype.kind == "O" and not info.shape:
        array = np.empty(len(values), object)
        array[:] = [v[()] if isinstance(v, np.ndarray) else v for v in values]  # 0-d strings
        return array
    return np.stack(values) if values else np.empty((0, *info.shape), info.dtype)


def _concat(values: list[Any], info: TensorInfo) -> np.ndarray:
    """Encoded rows of items of ``info`` joined end to end."""
    return np.concatenate(values) if values else np.empty((0, *(d or 0 for d in info.shape)), info.dtype)


def _splits(lengths: np.ndarray, count: int, where: str) -> np.ndarray:
    """Row lengths as row splits, checked against the ``count`` values they split."""
    lengths = np.asarray(lengths, np.int64)
    if (lengths < 0).any() or (lengths > count).any():  # bounded first: the sum cannot wrap around
        raise DecodeError(
            f"{where}: the stored row lengths do not split {count} values (one is below 0 or above it)",
            key=where,
        )
    if lengths.sum() != count:
        raise DecodeError(
            f"{where}: the stored row lengths (total {lengths.sum()}) do not split {count} values", key=where
        )
    return np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)


def _rows(items: Any, splits: Any, leading: Any) -> Any:
    """Decoded items grouped by record: dense where they came dense, else a RaggedArray."""
    if isinstance(items, dict):
        return {k: _rows(v, splits, leading) for k, v in items.items()}
    if leading is not None and not isinstance(items, RaggedArray):
        return items.reshape((*leading, *items.shape[1:]))
    if splits is None:  # dense (B, n) items, grouped as ragged rows of equal length
        splits = np.arange(leading[0] + 1, dtype=np.int64) * leading[1]
    return RaggedArray(items, np.asarray(splits, np.int64))


def _merge_leading(array: np.ndarray) -> np.ndarray:
    return array.reshape((-1, *array.shape[2:]))
