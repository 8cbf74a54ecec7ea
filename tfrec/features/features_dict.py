"""FeaturesDict: a nested schema, and the whole-schema operations (features layer).

``serialize_example`` turns a nested dict into Example bytes and
``deserialize_example`` / ``deserialize_batch`` turn them back, through the
parse spec of :meth:`FeaturesDict.parse_spec` and tfrec's batched parser: there
is no second decoder. ``save``/``load`` write and read ``features.json`` (and
the ``*.labels.txt`` of class labels) in tensorflow_datasets' format, so a
dataset written by either can be read by the other.

Example:
    >>> features = FeaturesDict({"id": np.int64, "text": Text()})
    >>> features.deserialize_example(features.serialize_example({"id": 7, "text": "hi"}))
    {'id': 7, 'text': 'hi'}
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import SchemaError, TfrecError
from ..example import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedArray,
    RaggedFeature,
    parse_example,
    single_example_parser,
    wire,
)
from ..record.framing_batch import Frames, frame_records
from . import sequence_storage
from .base import (
    TFDS_PREFIX,
    Documentation,
    FeatureConnector,
    TensorInfo,
    check_keys,
    documented,
    to_connector,
)
from .sequence import Sequence as SequenceConnector
from .serializer import compile_batch_encoder, compile_encoder, compile_frame_encoder
from .text import ClassLabel
from .values import EXACT_FLOATS, cast_stored

__all__ = ["FEATURES_FILE", "FeaturesDict", "labels_file"]

# A child's name, connector and keys (relative to the child, flat), as decode_flat splits them.
_ChildKeys = tuple[str, FeatureConnector, list[tuple[str, str]]]

FEATURES_FILE = "features.json"  # a dataset's features, in its directory (tensorflow_datasets' name)


def labels_file(directory: str | os.PathLike[str], key: str) -> str:
    """Where the class names of the ClassLabel at ``key`` are saved beside ``features.json``.

    Example:
        >>> labels_file("out", "label")
        'out/label.labels.txt'
    """
    return os.path.join(directory, f"{key}.labels.txt")


class FeaturesDict(FeatureConnector):
    """A dict of features (nested dicts and dtypes are coerced: ``{"id": np.int64}``).

    Args:
        features: name -> feature connector (or a dtype, or a nested dict).
        doc, value_range: descriptions, saved in features.json.
        exact_floats: refuse, in :meth:`serialize_example`, a float that float32
            cannot hold exactly (an Example stores float32) instead of rounding
            it to the nearest float32 as TensorFlow and tensorflow_datasets do.
            A setting of the schema object, not saved in features.json.

    Example:
        >>> features = FeaturesDict({
        ...     "image": Image(shape=(28, 28, 1)),
        ...     "label": ClassLabel(names=["no", "yes"]),
        ...     "meta": {"id": np.int64, "language": Text()},
        ... })
        >>> blob = features.serialize_example(sample)
        >>> features.deserialize_example(blob)
    """

    _tfds_name = TFDS_PREFIX + "features_dict.FeaturesDict"
    _json_field = "featuresDict"

    def __init__(
        self,
        features: Mapping[str, Any],
        *,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
        exact_floats: bool = False,
    ) -> None:
        self.features: dict[str, FeatureConnector] = {}
        for name, feature in features.items():
            if not isinstance(name, str) or not name or "/" in name:
                raise SchemaError(f"feature names must be non-empty str without '/', not {name!r}")
            try:
                self.features[name] = to_connector(feature)
            except SchemaError as exc:
                if hasattr(exc, "add_note"):  # Python >= 3.11
                    exc.add_note(f'In FeaturesDict with name "{name}"')
                raise
        self.doc, self.value_range = documented(doc, value_range)
        self.exact_floats = bool(exact_floats)

    def __repr__(self) -> str:
        return f"FeaturesDict({self.features!r})"

    def _key(self) -> tuple[Any, ...]:
        # The children's own keys (a ClassLabel's names are not in its JSON); key order is not the schema.
        children = tuple((name, self.features[name]._key()) for name in sorted(self.features))
        return (type(self), self.doc, self.value_range, children)

    def __getitem__(self, name: str) -> FeatureConnector:
        return self.features[name]

    def keys(self) -> Any:
        return self.features.keys()

    def children(self) -> dict[str, FeatureConnector]:
        return self.features

    # -- layout ---------------------------------------------------------------------------------

    def flat_infos(self) -> dict[str, TensorInfo]:
        return {
            "/".join(p for p in (name, key) if p): info
            for name, feature in self.features.items()
            for key, info in feature.flat_infos().items()
        }

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        check_keys(value, self.features, path)
        out = {}
        prefix = path + "/" if path else ""
        for name, feature in self.features.items():
            flat = feature.encode_flat(value[name], prefix + name)
            if len(flat) == 1 and "" in flat:  # a leaf: stored under the child's own name
                out[name] = flat[""]
            else:
                out.update((f"{name}/{key}" if key else name, v) for key, v in flat.items())
        return out

    def decode_flat(self, flat: dict[str, Any], path: str, batched: bool) -> Any:
        infos, groups = self._layout
        if flat.keys() == infos.keys() and groups.keys() == self.features.keys():  # each child's keys known
            return {
                name: feature.decode_flat(
                    {rel: flat[key] for rel, key in groups[name]}, f"{path}/{name}" if path else name, batched
                )
                for name, feature in self.features.items()
            }
        out = {}
        for name, feature in self.features.items():
            prefix = name + "/"
            own = {"": flat[name]} if name in flat else {}
            own.update((key[len(prefix) :], v) for key, v in flat.items() if key.startswith(prefix))
            out[name] = feature.decode_flat(own, "/".join(p for p in (path, name) if p), batched)
        return out

    # -- whole-schema operations ----------------------------------------------------------------

    def parse_spec(self, *, batched: bool = False) -> dict[str, Any]:
        """The tf.io-style parse spec of every stored key.

        One unknown leading dimension reads through FixedLenSequenceFeature
        (``allow_missing=True``), or, with ``batched=True``, through a
        RaggedFeature so that rows of different lengths stay apart.

        Example:
            >>> FeaturesDict({"x": Tensor(shape=(None,), dtype=np.int64)}).parse_spec()
            {'x': FixedLenSequenceFeature(shape=(), dtype=dtype('int64'), allow_missing=True, ...)}
        """
        spec: dict[str, Any] = {}
        for key, info in self.flat_infos().items():
            stored = wire.STORED_DTYPE[wire.kind_of_dtype(info.dtype)]
            unknown = info.shape.count(None)
            if unknown == 0:
                spec[key] = FixedLenFeature(info.shape, stored)
            elif unknown == 1:
                # The unknown dimension first: items of the other dims. Elsewhere (as tfds): items
                # of all known values, reshaped after parsing.
                inner = info.shape[1:] if info.shape[0] is None else (math.prod(d or 1 for d in info.shape),)
                if batched:
                    partitions = tuple(RaggedFeature.UniformRowLength(d) for d in inner)  # type: ignore[arg-type]
                    spec[key] = RaggedFeature(stored, partitions=partitions, row_splits_dtype=np.int64)
                else:
                    spec[key] = FixedLenSequenceFeature(inner, stored, allow_missing=True)
            else:
                raise SchemaError(
                    f"{key}: shape {info.shape} cannot be stored as a list (use encoding='bytes')"
                )
        return spec

    def serialize_example(self, example: Mapping[str, Any], *, sequence_example: bool = False) -> bytes:
        """A nested dict of values -> the bytes of one tf.train.Example.

        With ``sequence_example=True``, a tf.train.SequenceExample instead: the
        top-level Sequence features become feature lists, the rest the context.

        Floats stored as float32 are rounded to the nearest float32, as
        TensorFlow stores them, unless this FeaturesDict was made with
        ``exact_floats=True``.

        Raises:
            EncodeError: a value does not fit its feature; names the key path.
        """
        if not self.exact_floats:
            if sequence_example:
                return sequence_storage.serialize(self, example)
            return self._encoder(example)
        token = EXACT_FLOATS.set(True)  # read by the Tensors' reference path (to_array)
        try:
            if sequence_example:
                return sequence_storage.serialize(self, example)
            return self._encoder(example)
        finally:
            EXACT_FLOATS.reset(token)

    def serialize_batch(
        self, examples: Iterable[Mapping[str, Any]], *, sequence_example: bool = False
    ) -> list[bytes]:
        """The Example bytes of each nested dict of ``examples``, encoded together: the same bytes as
        :meth:`serialize_example` on each, made column by column in numpy (much faster for many).

        Raises:
            EncodeError: a value does not fit its feature; names the key path.

        Example:
            >>> features = FeaturesDict({"id": np.int64, "text": Text()})
            >>> records = features.serialize_batch([{"id": 1, "text": "a"}, {"id": 2, "text": "b"}])
            >>> records[1] == features.serialize_example({"id": 2, "text": "b"})
            True
        """
        if sequence_example:
            return [self.serialize_example(example, sequence_example=True) for example in examples]
        return _encoded(self._batch_encoder, examples, self.exact_floats)

    def serialize_frames(
        self, examples: Iterable[Mapping[str, Any]], *, sequence_example: bool = False
    ) -> Frames:
        """The TFRecord frames of :meth:`serialize_batch`'s records, in one buffer: what writers write.

        Raises:
            EncodeError: a value does not fit its feature; names the key path.

        Example:
            >>> frames = FeaturesDict({"id": np.int64}).serialize_frames([{"id": 1}, {"id": 2}])
            >>> len(frames), frames[1] == tfrec.encode_example({"id": 2})
            (2, True)
        """
        if sequence_example:
            return frame_records(self.serialize_batch(examples, sequence_example=True))
        return _encoded(self._frame_encoder, examples, self.exact_floats)

    @functools.cached_property
    def _frame_encoder(self) -> Callable[[Iterable[Any]], Frames]:
        """This schema's compiled frame encoder, built on first use (not pickled either)."""
        return compile_frame_encoder(self, exact_floats=self.exact_floats)

    @functools.cached_property
    def _batch_encoder(self) -> Callable[[Iterable[Any]], list[bytes]]:
        """This schema's compiled batch encoder, built on first use (not pickled either)."""
        return compile_batch_encoder(self, exact_floats=self.exact_floats)

    @functools.cached_property
    def _layout(self) -> tuple[dict[str, TensorInfo], dict[str, list[tuple[str, str]]]]:
        """The flat infos, and each child's keys (relative, flat): computed once, not on every record."""
        infos = self.flat_infos()
        groups = {}
        for name in self.features:
            prefix = name + "/"
            group = [("", name)] if name in infos else []
            groups[name] = group + [(key[len(prefix) :], key) for key in infos if key.startswith(prefix)]
        return infos, groups

    @functools.cached_property
    def _kept_as_parsed(self) -> dict[str, bool]:
        """Per key, whether :meth:`_reshaped` leaves one record's parsed value as it is: stored in its
        declared dtype (int64, float32), all dimensions known or only the first unknown."""
        return {
            key: info.dtype != object
            and info.dtype == wire.STORED_DTYPE[wire.kind_of_dtype(info.dtype)]
            and not (None in info.shape and info.shape[0] is not None)
            for key, info in self._layout[0].items()
        }

    @functools.cached_property
    def _single_decoder(self) -> Callable[[bytes], dict[str, Any]]:
        """``deserialize_example`` of one Example, built once (it runs per record): the parser of the
        schema's spec, then, when every child is stored under its own name, each child's value from
        its parsed one in place, touching only the children whose value is not the parsed one (the
        general path rebuilds the flat groups of every child per record). The parser gives a scalar
        string as its bytes, which is what a schema returns for it: no 0-d array made and undone."""
        groups = self._layout[1]
        if any(groups.get(name) != [("", name)] for name in self.features):
            parse = single_example_parser(self.parse_spec())
            return lambda data: self._decode_parsed(parse(data))
        parse = single_example_parser(self.parse_spec(), bytes_scalars=True)
        converting = []
        for name, feature in self.features.items():
            convert = _then(self._single_cast(name), feature.one_record_decoder(name))
            if convert is not None:
                converting.append((name, convert))
        if not converting:
            return parse  # the parsed dict (fresh, in the features' order) is the value

        def decode(data: bytes) -> dict[str, Any]:
            parsed = parse(data)  # in the features' order, as parse_spec lists them
            for name, convert in converting:
                parsed[name] = convert(parsed[name])
            return parsed

        return decode

    def _single_cast(self, key: str) -> Callable[[Any], Any] | None:
        """What :meth:`_reshaped` does to one record's parsed value at ``key`` (None: nothing); a
        scalar string comes as its bytes (``bytes_scalars``), which is the value :meth:`_reshaped`
        gives for a declared object dtype."""
        if self._kept_as_parsed[key]:
            return None
        info = self._layout[0][key]
        if info.shape == () and wire.kind_of_dtype(info.dtype) == wire.BYTES:
            if info.dtype.kind == "O":
                return None
            return lambda value: self._reshaped({key: np.array(value, object)}, False)[key]
        return lambda value: self._reshaped({key: value}, False)[key]

    @functools.cached_property
    def _encoder(self) -> Callable[[Any], bytes]:
        """This schema's compiled encoder, built on first use (and not pickled: see __getstate__)."""
        return compile_encoder(self, exact_floats=self.exact_floats)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        # Memos: closures do not pickle, and all are rebuilt on first use.
        memos = (
            "_encoder",
            "_batch_encoder",
            "_frame_encoder",
            "_layout",
            "_single_decoder",
            "_kept_as_parsed",
        )
        for memo in memos:
            state.pop(memo, None)
        return state

    def deserialize_example(self, data: bytes, *, sequence_example: bool = False) -> dict[str, Any]:
        """The bytes of one Example (or SequenceExample) -> the nested dict of values."""
        if sequence_example:
            parsed = sequence_storage.deserialize(self, self.parse_spec(batched=True), data, batched=False)
            return self.decode_flat(self._reshaped(parsed, False), "", False)
        return self._single_decoder(data)

    def _decode_parsed(self, parsed: dict[str, Any]) -> dict[str, Any]:
        """One record's parsed flat values -> the nested dict of values."""
        kept = self._kept_as_parsed
        if parsed.keys() == kept.keys():  # skip what would leave a value as it is
            parsed = {
                key: value if kept[key] else self._reshaped({key: value}, False)[key]
                for key, value in parsed.items()
            }
            return self.decode_flat(parsed, "", False)
        return self.decode_flat(self._reshaped(parsed, False), "", False)

    def deserialize_batch(
        self, records: Sequence[bytes], *, sequence_example: bool = False
    ) -> dict[str, Any]:
        """Many Example (or SequenceExample) bytes -> one nested dict of batched arrays.

        Rows of different lengths come back as a RaggedArray, equal ones as a dense array.
        """
        if sequence_example:
            parsed = sequence_storage.deserialize(
                self, self.parse_spec(batched=True), list(records), batched=True
            )
        else:
            parsed = parse_example(records, self.parse_spec(batched=True))  # a RecordBatch as it is
        return self.decode_flat(self._reshaped(parsed, True), "", True)

    def _reshaped(self, parsed: dict[str, Any], batched: bool) -> dict[str, Any]:
        """Parsed values in their declared dtypes and shapes (RaggedArray where batch rows differ)."""
        infos = self._layout[0]
        out = {}
        for key, value in parsed.items():
            info = infos[key]
            if isinstance(value, RaggedArray):
                value = RaggedArray(cast_stored(value.values, info.dtype, key), value.row_splits)
            elif not (info.dtype.kind == "O" and np.ndim(value) == 0):
                value = cast_stored(value, info.dtype, key)
            if np.ndim(value) == 0 and isinstance(value, np.ndarray) and value.dtype.kind == "O":
                value = value[()]  # a string scalar as bytes, as tfds gives it; numbers stay 0-d arrays
            if None in info.shape and info.shape[0] is not None:  # one unknown dimension, not the first
                value = _reshape_inner(value, info.shape, batched)
            elif batched and not _ragged_key(key):
                value = _dense_if_even(value)
            out[key] = value
        return out

    # -- metadata ---------------------------------------------------------------------------------

    def _json_content(self) -> dict[str, Any]:
        return {"features": {name: feature.to_json() for name, feature in self.features.items()}}

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> FeaturesDict:
        features = content.get("features", {})
        return cls({name: FeatureConnector.from_json(value) for name, value in features.items()})

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> FeaturesDict:
        return cls({name: FeatureConnector.from_json(value) for name, value in content.items()})

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``features.json`` and the class-name files into ``directory`` (tfds' layout)."""
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, FEATURES_FILE), "w", encoding="utf-8") as file:
            json.dump(self.to_json(), file, indent=4, sort_keys=True)
        for name, label in _class_labels(self, ""):
            if label._names is not None:
                with open(labels_file(directory, name), "w", encoding="utf-8") as file:
                    file.write("".join(f"{n}\n" for n in label.names))

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> FeaturesDict:
        """Read the features saved by :meth:`save` or by tensorflow_datasets.

        Example:
            >>> features = FeaturesDict.load("datasets/mnist/3.0.1")
        """
        path = os.path.join(directory, FEATURES_FILE)
        with open(path, encoding="utf-8") as file:
            try:
                features = FeatureConnector.from_json(json.load(file))
            except TfrecError:
                raise
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, AssertionError) as exc:
                # Not JSON, not UTF-8, or not the layout of a features.json.
                raise SchemaError(f"{path}: not a valid features.json: {type(exc).__name__}: {exc}") from None
        if not isinstance(features, FeaturesDict):
            raise SchemaError(f"{directory}/{FEATURES_FILE} does not hold a FeaturesDict")
        for name, label in _class_labels(features, ""):
            path = labels_file(directory, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as file:
                    names = [line.rstrip("\n") for line in file if line.rstrip("\n")]
                label.__init__(names=names, doc=label.doc, value_range=label.value_range)  # type: ignore[misc]
        return features


def _encoded(encode: Callable[[Iterable[Any]], Any], examples: Iterable[Any], exact_floats: bool) -> Any:
    """``encode(examples)``, with :data:`EXACT_FLOATS` set for ``exact_floats``."""
    if not exact_floats:
        return encode(examples)
    token = EXACT_FLOATS.set(True)  # read by the Tensors' reference path (to_array)
    try:
        return encode(examples)
    finally:
        EXACT_FLOATS.reset(token)


_Convert = Callable[[Any], Any]


def _then(first: _Convert | None, then: _Convert | None) -> _Convert | None:
    """``then(first(value))`` as one function; either may be None (nothing to do)."""
    if first is None or then is None:
        return first or then
    return lambda value: then(first(value))


def _class_labels(feature: FeatureConnector, name: str) -> list[tuple[str, ClassLabel]]:
    """Every ClassLabel (a LabeledImage's too) with the file name tfds gives its names (``parent-child``)."""
    if isinstance(feature, ClassLabel):
        return [(name.replace("/", "."), feature)]
    label = getattr(feature, "class_label", None)  # a LabeledImage's (not imported: it imports this layer)
    if isinstance(label, ClassLabel):
        return [(name.replace("/", "."), label)]
    if isinstance(feature, FeaturesDict):
        return [
            found
            for child, sub in feature.features.items()
            for found in _class_labels(sub, f"{name}-{child}" if name else child)
        ]
    if isinstance(feature, SequenceConnector):
        return _class_labels(feature.feature, name)
    return []


def _ragged_key(key: str) -> bool:
    """Ragged keys (values inside several Sequences): their rows are decoded by the Sequence itself."""
    return key.rsplit("/", 1)[-1].startswith("ragged_")


def _reshape_inner(value: Any, shape: tuple[int | None, ...], batched: bool) -> Any:
    """Give parsed items of a shape with one unknown inner dimension that shape (tfds' layout)."""
    target = tuple(-1 if d is None else d for d in shape)
    if not batched:
        return np.asarray(value).reshape(target)
    splits = value.row_splits
    rows = [np.asarray(value.values[a:b]).reshape(target) for a, b in itertools.pairwise(splits)]
    if rows and all(r.shape == rows[0].shape for r in rows):
        return np.stack(rows)
    out = np.empty(len(rows), object)
    out[:] = rows
    return out


def _dense_if_even(value: Any) -> Any:
    """A RaggedArray whose rows all have one length, as a dense array (B, n, ...)."""
    if not isinstance(value, RaggedArray) or isinstance(value.values, RaggedArray):
        return value
    lengths = np.diff(value.row_splits)
    if lengths.size and (lengths == lengths[0]).all():
        values = np.asarray(value.values)
        return values.reshape((lengths.size, int(lengths[0]), *values.shape[1:]))
    return value
