"""Load a prepared tensorflow_datasets dataset by name and split, without TensorFlow (data layer).

:func:`load_tfds` finds ``{data_dir}/{name}[/{config}]/{version}`` (the newest
version unless one is asked for), reads ``dataset_info.json`` (splits, shard
lengths, file name template) and ``features.json``, and turns tfds' split
syntax (:mod:`tfrec.data.tfds.splits`) into record ranges of the shards. The
result gives the records as a :class:`TFRecordDataset`, a
:class:`RecordFileSource` (random access) or a plain iterator.

Example:
    >>> mnist = tfrec.data.load_tfds("mnist", split="train[:10%]", data_dir="~/tensorflow_datasets")
    >>> for batch in mnist.dataset().batch(256):
    ...     batch["image"].shape
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, SupportsIndex

import numpy as np

from ...errors import InvalidArgumentError, MissingFileError
from ...features import FeaturesDict
from ...record import read_records
from ..pipeline.dataset import TFRecordDataset
from ..random_access.source import RecordFileSource
from .directory import DATASET_INFO_FILE, read_dataset_info, shard_file
from .splits import SplitRange, select

__all__ = ["FileRange", "LoadedSplit", "RangeSource", "load_tfds"]

_DEFAULT_DATA_DIR = os.path.join("~", "tensorflow_datasets")
_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_NAME = re.compile(r"(?P<name>[\w-]+)(/(?P<config>[\w.-]+))?(:(?P<version>[\d.*]+))?")


@dataclass(frozen=True)
class FileRange:
    """Records ``start:stop`` of one shard file.

    Example:
        >>> FileRange("mnist-train.tfrecord-00000-of-00002", 0, 100, 30_000).whole
        False
    """

    path: str
    start: int
    stop: int
    length: int  # the records in the whole file

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.stop == self.length


@dataclass(frozen=True)
class LoadedSplit:
    """A selection of a tfds dataset: its record ranges, features and ``dataset_info.json``.

    Attributes:
        directory: the version directory.
        files: the shard record ranges, in reading order.
        features: the dataset's FeaturesDict (features.json and label files).
        info: ``dataset_info.json`` as a dict.

    Example:
        >>> test = tfrec.data.load_tfds("mnist", split="test[:50%]")
        >>> len(test), test.paths[:1], test.source()[0]["label"]
    """

    directory: str
    files: tuple[FileRange, ...]
    features: FeaturesDict
    info: dict[str, Any]

    @property
    def paths(self) -> list[str]:
        """The shard files the selection reads (each once, in order)."""
        return list(dict.fromkeys(f.path for f in self.files if f.stop > f.start))

    def __len__(self) -> int:
        return sum(f.stop - f.start for f in self.files)

    def _parts(self) -> list[FileRange]:
        parts = [f for f in self.files if f.stop > f.start]
        if not parts:
            raise InvalidArgumentError(
                "load_tfds: the split selects no records (read .records(), or widen it)"
            )
        return parts

    def records(self) -> Iterator[bytes]:
        """The selected serialized records, in order."""
        for part in self.files:
            if part.stop > part.start:
                yield from itertools.islice(read_records(part.path), part.start, part.stop)

    def dataset(self, **options: Any) -> TFRecordDataset:
        """A :class:`TFRecordDataset` of the selection, decoded with the features.

        ``options`` go to TFRecordDataset. A selection of whole shards takes any
        (``shuffle_files``, ``num_workers``, ...); one that cuts shards is read in
        order (one contiguous range, read as ``skip`` + ``take``).
        """
        options.setdefault("features", self.features)
        parts = self._parts()
        if all(f.whole for f in parts) and len(set(self.paths)) == len(parts):
            return TFRecordDataset(self.paths, **options)
        contiguous = all(
            a.stop == a.length and b.start == 0 and a.path != b.path for a, b in itertools.pairwise(parts)
        )
        ordered = (
            not options.get("shuffle_files") and not options.get("num_workers") and not options.get("shard")
        )
        if not (contiguous and ordered and options.get("cycle_length", 1) == 1):
            raise InvalidArgumentError(
                "load_tfds: this selection cuts shards in several places; read it with .source() or "
                ".records(), or as a dataset without shuffle_files, num_workers, shard or cycle_length"
            )
        return TFRecordDataset(self.paths, **options).skip(parts[0].start).take(len(self))

    def source(self) -> RecordFileSource | RangeSource:
        """Random access to the selection: ``source[i]`` is its record ``i``, decoded."""
        parts = self._parts()
        source = RecordFileSource(self.paths, features=self.features)
        if all(f.whole for f in parts) and len(set(self.paths)) == len(parts):
            return source
        first = dict(
            zip(self.paths, np.cumsum([0] + [f.length for f in _unique(parts)]).tolist(), strict=False)
        )
        keys = np.concatenate(
            [np.arange(f.start, f.stop) + first[f.path] for f in parts] or [np.zeros(0, int)]
        )
        return RangeSource(source, keys)


def _unique(parts: Sequence[FileRange]) -> list[FileRange]:
    return list({f.path: f for f in parts}.values())


class RangeSource:
    """Some records of a :class:`RecordFileSource`, by their position there (a split slice).

    Example:
        >>> part = RangeSource(RecordFileSource(paths, features=features), np.arange(100, 200))
        >>> len(part), part[0] == part.source[100]
        (100, True)
    """

    def __init__(self, source: RecordFileSource, keys: np.ndarray) -> None:
        self.source, self.keys = source, keys.astype(np.int64)

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: SupportsIndex) -> Any:
        return self.source[int(self.keys[index])]

    def __getitems__(self, indices: Sequence[SupportsIndex]) -> list[Any]:
        return self.source.__getitems__([int(self.keys[i]) for i in indices])


def load_tfds(
    name: str,
    split: str = "train",
    *,
    data_dir: str | os.PathLike[str] | None = None,
    version: str | None = None,
    rounding: str = "closest",
) -> LoadedSplit:
    """The records of ``split`` of a prepared tfds dataset, and its features.

    Args:
        name: the dataset, ``"mnist"``, ``"wmt19_translate/de-en"`` (with its
            config) or ``"mnist:3.0.1"`` (with its version).
        split: tfds' split syntax: ``"train"``, ``"train[:10%]"``,
            ``"train[100:200]"``, ``"train[-5%:]"``, ``"train[:2shard]"``,
            ``"train+test"``, ``"all"``.
        data_dir: where datasets are prepared (tfds' ``data_dir``);
            ``$TFDS_DATA_DIR`` or ``~/tensorflow_datasets`` by default.
        version: the version directory to read; the newest when omitted.
        rounding: percent boundaries: ``"closest"`` (tfds' default) or ``"pct1_dropremainder"``.

    Raises:
        MissingFileError: no such dataset, version, dataset_info.json or shard.
        InvalidArgumentError: a malformed or unknown split, or shards that are not TFRecord.

    Example:
        >>> train = tfrec.data.load_tfds("mnist", split="train[:10%]", data_dir="~/tensorflow_datasets")
        >>> len(train), train.features["label"].names[:2]
        (6000, ['0', '1'])
        >>> source = train.source()          # random access; train.dataset() to iterate
    """
    match = _NAME.fullmatch(name)
    if match is None:
        raise InvalidArgumentError(f"load_tfds: {name!r} is not a dataset name ('name', 'name/config:1.0.0')")
    version = version or match["version"]
    root = os.path.expanduser(os.fspath(data_dir or os.environ.get("TFDS_DATA_DIR") or _DEFAULT_DATA_DIR))
    base = os.path.join(root, match["name"], *([match["config"]] if match["config"] else []))
    directory = os.path.join(base, version or _newest_version(base))
    if not os.path.isdir(directory):
        raise MissingFileError(f"{directory}: no such dataset version directory", path=directory)
    info = read_dataset_info(directory)
    info_path = os.path.join(directory, DATASET_INFO_FILE)
    file_format = info.get("fileFormat") or "tfrecord"
    if file_format != "tfrecord":
        raise InvalidArgumentError(
            f"{info_path}: the shards are {file_format}; tfrec reads TFRecord shards only"
        )
    entries = {entry["name"]: entry for entry in info.get("splits", [])}
    lengths = {split_name: [int(n) for n in e.get("shardLengths", [])] for split_name, e in entries.items()}
    ranges = select(split, lengths, rounding)
    files = [
        part
        for selected in ranges
        for part in _file_ranges(
            directory, str(info.get("name", match["name"])), entries[selected.split], selected
        )
    ]
    missing = sorted({f.path for f in files if not os.path.exists(f.path)})
    if missing:
        raise MissingFileError(f"{missing[0]}: no such shard ({len(missing)} missing)", path=missing[0])
    return LoadedSplit(directory, tuple(files), FeaturesDict.load(directory), info)


def _newest_version(base: str) -> str:
    try:
        versions = [
            v for v in os.listdir(base) if _VERSION.fullmatch(v) and os.path.isdir(os.path.join(base, v))
        ]
    except FileNotFoundError:
        raise MissingFileError(
            f"{base}: no such dataset (is it prepared in this data_dir?)", path=base
        ) from None
    if not versions:
        raise MissingFileError(f"{base}: no version directory (such as 1.0.0) in it", path=base)
    return max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))


def _file_ranges(
    directory: str, dataset: str, entry: dict[str, Any], selected: SplitRange
) -> list[FileRange]:
    """The shards of one split that hold records ``selected.start:selected.stop``, with their ranges."""
    lengths = [int(n) for n in entry.get("shardLengths", [])]
    template = entry.get("filepathTemplate") or _TEMPLATE
    out, first = [], 0
    for index, length in enumerate(lengths):
        start, stop = max(selected.start - first, 0), min(selected.stop - first, length)
        if start < stop:
            path = shard_file(template, dataset, selected.split, "tfrecord", index, len(lengths))
            out.append(FileRange(os.path.join(directory, path), start, stop, length))
        first += length
    return out
