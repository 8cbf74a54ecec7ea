"""Propose a FeaturesDict for existing tf.train.Example records (features layer).

:func:`propose_features` (behind :func:`tfrec.infer_features`) decodes a sample of records without a schema
(:func:`tfrec.decode_example`) and proposes, per key, the connector that reads
what it saw: scalars, fixed or variable-length tensors, text, PNG/JPEG images,
nested dicts (``a/b`` keys) and ragged sequences (tfds' ``ragged_*`` keys).
Each proposed connector's ``doc`` says what was seen. :func:`describe_features`
prints any FeaturesDict as Python source, to copy into a dataset's code; its
JSON form is ``features.to_json()``.

Example:
    >>> features = propose_features(tfrec.read_records("train.tfrecord"))
    >>> print(describe_features(features))
    FeaturesDict({
        "label": Tensor(shape=(), dtype=np.int64, doc="inferred from 1000 records: 1 value each"),
    })
"""

from __future__ import annotations

import io
import itertools
import json
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DecodeError, InvalidArgumentError, SchemaError
from ..example import decode_example
from .base import FeatureConnector, dtype_name
from .features_dict import FeaturesDict
from .image import Image, image_channels
from .sequence import FLAT_VALUES, Sequence
from .tensor import Encoding, Scalar, Tensor
from .text import ClassLabel, Text

__all__ = [
    "INFER_SAMPLE",
    "RecordSurvey",
    "check_records_source",
    "describe_features",
    "nest_features",
    "propose_features",
]

INFER_SAMPLE = 1000  # records features are inferred from, unless told otherwise (every reader's default)

_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"
_ROW_LENGTHS_PREFIX = "ragged_row_lengths_"
_DTYPES = {
    "int64_list": np.dtype(np.int64),
    "float_list": np.dtype(np.float32),
    "bytes_list": np.dtype(object),
}


@dataclass
class _Seen:
    """What the sample held under one key."""

    kinds: set[str] = field(default_factory=set)
    counts: set[int] = field(default_factory=set)
    present: int = 0
    formats: set[str] = field(default_factory=set)  # of single bytes values: text, binary, png, jpeg
    pixels: set[tuple[int, str]] = field(default_factory=set)  # (channels, dtype) of single images
    widths: set[int] = field(default_factory=set)  # ragged flat values: values per innermost item (-1: odd)


def propose_features(records: Iterable[bytes], *, sample: int | None = INFER_SAMPLE) -> FeaturesDict:
    """A FeaturesDict proposed from serialized Examples (the rules: :func:`tfrec.infer_features`).

    The features layer's half of :func:`tfrec.infer_features`, which finds the
    records (paths, globs, URLs, or records as they are) and hands them here.

    Example:
        >>> propose_features([tfrec.encode_example({"id": 1})])["id"]
        Tensor(shape=(), dtype=int64)
    """
    survey = RecordSurvey(sample)
    survey.add(check_records_source(records), "<records>")
    return survey.features()


def check_records_source(source: object) -> Iterable[bytes]:
    """``source`` when it can be an iterable of records.

    Raises:
        InvalidArgumentError: ``source`` is one record (bytes) or not iterable.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(
            "source must be a path or an iterable of serialized Examples, not one record "
            f"({type(source).__name__}); to read one record, pass [record]"
        )
    if not isinstance(source, Iterable):
        raise InvalidArgumentError(
            f"source must be a path or an iterable of serialized Examples, not {type(source).__name__}"
        )
    return source


class RecordSurvey:
    """What a sample of Example records holds, key by key, gathered source after source.

    Args:
        sample: how many records to look at in all (``None``: every record added).

    Example:
        >>> survey = RecordSurvey(sample=1000)
        >>> for path in paths:
        ...     if survey.full:
        ...         break
        ...     survey.add(tfrec.read_records(path), where=path)
        >>> features = survey.features()
    """

    def __init__(self, sample: int | None = INFER_SAMPLE) -> None:
        if sample is not None:
            try:
                if isinstance(sample, bool):
                    raise TypeError
                sample = operator.index(sample)
            except TypeError:
                raise InvalidArgumentError(
                    f"sample must be an int >= 1 or None, not {type(sample).__name__}"
                ) from None
            if sample < 1:
                raise InvalidArgumentError(f"sample must be >= 1 or None, not {sample}")
        self.sample = sample
        self.total = 0  # records looked at so far
        self._seen: dict[str, _Seen] = {}

    @property
    def full(self) -> bool:
        """Whether the sample is complete: more records would not be looked at."""
        return self.sample is not None and self.total >= self.sample

    def add(self, records: Iterable[bytes], where: str) -> int:
        """Look at ``records`` (those still needed for the sample); ``where`` names them in errors.

        Returns:
            How many records were looked at.

        Raises:
            DecodeError: a record is not a tf.train.Example (names ``where`` and its number there).
            SchemaError: a key holds different kinds of lists in different records.
            InvalidArgumentError: an item is not bytes (a path, say).
        """
        left = None if self.sample is None else max(self.sample - self.total, 0)
        before = self.total
        if left != 0:
            self._scan(itertools.islice(records, left), where)
        return self.total - before

    def features(self) -> FeaturesDict:
        """The proposed FeaturesDict of the records looked at."""
        return nest_features(_propose(self._seen, self.total))

    def _scan(self, records: Iterable[bytes], where: str) -> None:
        seen = self._seen
        for index, record in enumerate(records):
            if not isinstance(record, (bytes, bytearray, memoryview)):
                raise InvalidArgumentError(
                    f"{where}, record {index}: expected a serialized Example (bytes), found "
                    f"{type(record).__name__}; paths, globs and directories go to tfrec.infer_features"
                )
            try:
                decoded = decode_example(record)
            except DecodeError as exc:
                raise DecodeError(f"{where}, record {index}: {exc}") from None
            self.total += 1
            for key, values in decoded.items():
                stats = seen.setdefault(key, _Seen())
                if values is None:
                    continue  # a Feature with no kind: parse specs treat it as missing
                kind = "bytes_list" if isinstance(values, list) else f"{_kind_name(values)}_list"
                stats.kinds.add(kind)
                if len(stats.kinds) > 1:
                    raise SchemaError(
                        f"key {key!r} holds different kinds in different records: {sorted(stats.kinds)} "
                        f"(record {index} of {where})"
                    )
                stats.present += 1
                stats.counts.add(len(values))
                if kind == "bytes_list" and len(values) == 1:
                    _look_at_bytes(values[0], stats)
                if key.endswith("/" + FLAT_VALUES):
                    _look_at_ragged(key[: -len(FLAT_VALUES) - 1], len(values), decoded, stats)


def _look_at_ragged(parent: str, count: int, decoded: dict[str, Any], stats: _Seen) -> None:
    """Note how many flat values each innermost item of ``parent`` holds in this record."""
    level = 0
    while f"{parent}/{_ROW_LENGTHS_PREFIX}{level + 1}" in decoded:
        level += 1
    lengths = decoded.get(f"{parent}/{_ROW_LENGTHS_PREFIX}{level}")
    if isinstance(lengths, np.ndarray) and lengths.dtype.kind == "i":
        items = int(lengths.sum())
        if items:
            stats.widths.add(count // items if count % items == 0 else -1)


def _kind_name(values: np.ndarray) -> str:
    return "float" if values.dtype.kind == "f" else "int64"


def _look_at_bytes(value: bytes, stats: _Seen) -> None:
    if value.startswith(_PNG) or value.startswith(_JPEG):
        stats.formats.add("png" if value.startswith(_PNG) else "jpeg")
        stats.pixels.add(_pixels(value))
        return
    try:
        value.decode("utf-8")
        stats.formats.add("text")
    except UnicodeDecodeError:
        stats.formats.add("binary")


def _pixels(data: bytes) -> tuple[int, str]:
    """(channels, dtype) from the image header; (3, uint8) for an unreadable header."""
    try:
        from PIL import Image as PILImage
    except ImportError:  # the channel count is in the header; a 16-bit PNG is read with Pillow only
        return image_channels(data), "uint8"
    try:
        with PILImage.open(io.BytesIO(data)) as image:  # reads the header only
            mode = image.mode
    except (OSError, ValueError):
        return 3, "uint8"
    if mode.startswith("I"):  # 16-bit grey PNG
        return 1, "uint16"
    return {"1": 1, "L": 1, "LA": 4, "RGBA": 4, "PA": 4}.get(mode, 3), "uint8"


def _propose(seen: dict[str, _Seen], total: int) -> dict[str, FeatureConnector]:
    """Flat key -> proposed connector, ragged pairs merged under their parent key."""
    flat: dict[str, FeatureConnector] = {}
    for key, stats in sorted(seen.items()):  # sorted: writers' key order is arbitrary (tfds: random)
        if not stats.kinds:
            continue  # never held a kind: no dtype to propose
        parent, _, leaf = key.rpartition("/")
        if parent and (leaf == FLAT_VALUES or leaf.startswith(_ROW_LENGTHS_PREFIX)):
            ragged = _ragged(seen, parent, total)
            if ragged is not None:
                flat.setdefault(parent, ragged)
                continue
        flat[key] = _connector(stats, total)
    return flat


def _ragged(seen: dict[str, _Seen], parent: str, total: int) -> FeatureConnector | None:
    """``Sequence`` nested once per row-length list (``_0``, ``_1``, ...) around the flat values."""
    values = seen.get(f"{parent}/{FLAT_VALUES}")
    levels = 0
    while f"{parent}/{_ROW_LENGTHS_PREFIX}{levels}" in seen:
        if seen[f"{parent}/{_ROW_LENGTHS_PREFIX}{levels}"].kinds != {"int64_list"}:
            return None
        levels += 1
    others = [k for k in seen if k.startswith(f"{parent}/{_ROW_LENGTHS_PREFIX}")]
    if values is None or not levels or len(others) != levels or len(values.kinds) != 1:
        return None
    if len(values.widths - {1}) > 1 or -1 in values.widths:
        return None  # the values do not divide into items of one size: left as they are stored
    width = max(values.widths, default=1)
    kind = next(iter(values.kinds))
    doc = f"inferred from {total} records: ragged rows of {kind} values" + _missing(values, total)
    feature: FeatureConnector = Tensor(shape=() if width == 1 else (width,), dtype=_DTYPES[kind])
    for _ in range(levels):
        feature = Sequence(feature)
    return Sequence(feature, doc=doc)


def _connector(stats: _Seen, total: int) -> FeatureConnector:
    kind = next(iter(stats.kinds))
    everywhere = stats.present == total
    count = next(iter(stats.counts)) if len(stats.counts) == 1 and everywhere else None
    if count is None:
        low, high = min(stats.counts), max(stats.counts)
        what = f"{low} to {high} values" if low != high else f"{low} value{'s' * (low != 1)} each"
    else:
        what = f"{count} value{'s' * (count != 1)} each"
    doc = f"inferred from {total} records: {what}{_missing(stats, total)}"
    if count == 1 and stats.formats == {"text"}:
        return Text(doc=doc)
    if count == 1 and stats.formats and stats.formats <= {"png", "jpeg"}:
        fmt = next(iter(stats.formats)) if len(stats.formats) == 1 else None
        channels, dtype = next(iter(stats.pixels)) if len(stats.pixels) == 1 else (3, "uint8")
        if dtype == "uint16" and fmt != "png":
            channels, dtype = 3, "uint8"  # uint16 images are one-channel PNG only
        doc += f", {fmt or 'PNG/JPEG'} images"
        return Image(shape=(None, None, channels), encoding_format=fmt, dtype=dtype, doc=doc)
    shape = () if count == 1 else (count,)
    return Tensor(shape=shape, dtype=_DTYPES[kind], doc=doc)


def _missing(stats: _Seen, total: int) -> str:
    absent = total - stats.present
    return f", missing in {absent} record{'s' * (absent != 1)}" if absent else ""


def nest_features(flat: Mapping[str, FeatureConnector]) -> FeaturesDict:
    """A FeaturesDict of the connectors of ``flat``, ``a/b`` keys as nested dicts.

    Raises:
        SchemaError: a key holds values and also has keys nested under it.

    Example:
        >>> nest_features({"id": Tensor(shape=(), dtype=np.int64), "meta/lang": Text()})
        FeaturesDict({'id': Tensor(shape=(), dtype=int64), 'meta': FeaturesDict({'lang': Text()})})
    """
    root: dict[str, Any] = {}
    for key, connector in flat.items():
        *parents, name = key.split("/")
        node = root
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise SchemaError(f"key {key!r} nests under {part!r}, which also holds values itself")
            node = child
        if name in node:
            raise SchemaError(f"key {key!r} holds values and also has keys nested under it")
        node[name] = connector
    return FeaturesDict(root)


def describe_features(features: FeatureConnector) -> str:
    """Python source that rebuilds ``features``, given ``import numpy as np`` and
    ``from tfrec.features import *``.

    Example:
        >>> print(describe_features(FeaturesDict({"id": np.int64, "title": Text()})))
        FeaturesDict({
            "id": Tensor(shape=(), dtype=np.int64),
            "title": Text(),
        })
    """
    return _source(features, 0)


def _source(feature: FeatureConnector, depth: int) -> str:
    extra = _doc_args(feature)
    if isinstance(feature, FeaturesDict):
        pad = "    " * (depth + 1)
        items = "".join(f"{pad}{_quote(k)}: {_source(v, depth + 1)},\n" for k, v in feature.features.items())
        body = f"{{\n{items}{'    ' * depth}}}" if items else "{}"
        return f"FeaturesDict({body}{extra})" if depth == 0 or extra else body
    if isinstance(feature, Tensor) and (feature.minimum is not None or feature.maximum is not None):
        return _from_json(feature)  # tfds' value bounds have no constructor argument
    if isinstance(feature, Scalar):
        return f"Scalar({_dtype(feature.dtype)}{extra})"
    if isinstance(feature, Tensor):
        encoding = f", encoding={feature.encoding.value!r}" if feature.encoding is not Encoding.NONE else ""
        if feature.channel_names is not None:
            encoding += (
                f", channel_names={list(feature.channel_names)!r}, data_format={feature.data_format!r}"
            )
        return f"Tensor(shape={feature.shape!r}, dtype={_dtype(feature.dtype)}{encoding}{extra})"
    if isinstance(feature, Text):
        return f"Text({extra[2:]})"
    if isinstance(feature, ClassLabel):
        names = feature._names
        spec = (
            f"names={json.dumps(names, ensure_ascii=False)}"
            if names
            else f"num_classes={feature.num_classes}"
        )
        return f"ClassLabel({spec}{extra})"
    if isinstance(feature, Image):
        fmt = f", encoding_format={_quote(feature.encoding_format)}" if feature.encoding_format else ""
        dtype = f", dtype={_dtype(feature.dtype)}" if feature.dtype != np.uint8 else ""
        return f"Image(shape={feature.shape!r}{fmt}{dtype}{extra})"
    if isinstance(feature, Sequence):
        length = f", length={feature.length}" if feature.length is not None else ""
        return f"Sequence({_source(feature.feature, depth)}{length}{extra})"
    return _from_json(feature)


def _from_json(feature: FeatureConnector) -> str:
    """Any other connector, through its features.json form."""
    return f"FeatureConnector.from_json({json.dumps(feature.to_json())!r})"


def _doc_args(feature: FeatureConnector) -> str:
    out = f", doc={_quote(feature.doc)}" if feature.doc else ""
    return out + (f", value_range={_quote(feature.value_range)}" if feature.value_range else "")


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid Python literal


def _dtype(dtype: np.dtype) -> str:
    if dtype.kind == "O":
        return "str"
    if dtype.kind == "b":
        return "np.bool_"
    name = dtype_name(dtype)
    return f"np.{name}" if hasattr(np, name) else repr(name)
