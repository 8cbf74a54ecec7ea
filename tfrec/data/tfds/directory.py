"""tensorflow_datasets dataset directories, written and read without TensorFlow (data layer).

A prepared tfds dataset is one directory (``{data_dir}/{name}/{version}``)
holding ``dataset_info.json``, ``features.json``, a ``{label}.labels.txt`` per
ClassLabel with names, and the shards ``{name}-{split}.tfrecord-00000-of-00004``.
:func:`write_tfds_dir` writes one that ``tfds.builder_from_directory`` reads;
:func:`from_tfds_dir` gives the shards of a split and the features to decode them.

Example:
    >>> tfrec.data.write_tfds_dir("data/mnist/1.0.0", {"train": train, "test": test}, features,
    ...                           name="mnist", max_records=10_000)
    >>> paths, features = tfrec.data.from_tfds_dir("data/mnist/1.0.0", split="train")
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ...errors import InvalidArgumentError, MissingFileError
from ...features import FEATURES_FILE, FeaturesDict
from ...record.files import move_file, open_new, remove_file
from ...record.writer import temporary_path
from ..index.format import INDEX_SUFFIX
from ..writing.destination import (
    join_location,
    list_names,
    make_directory,
    remove_directory,
    save_features,
)
from ..writing.names import parse_shard_name, shard_x_of_y
from ..writing.one_call import write_dataset
from ..writing.publish import refuse_existing
from ..writing.shards import WriteSummary

__all__ = [
    "DATASET_INFO_FILE",
    "TfdsSplit",
    "from_tfds_dir",
    "read_dataset_info",
    "shard_file",
    "write_tfds_dir",
]

DATASET_INFO_FILE = "dataset_info.json"
_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"  # tfds' default file name template
_FILE_FORMAT = "tfrecord"
_NAME = re.compile(r"[a-z0-9_]+")  # tfds' dataset names: snake_case
_SPLIT = re.compile(r"[\w.]+")  # tfds' split names: letters, digits, _ and . (no '-', no slicing)


class TfdsSplit(NamedTuple):
    """The shards of one split of a tfds directory, and the features that decode their records."""

    paths: list[str]
    features: FeaturesDict


def write_tfds_dir(
    directory: str | os.PathLike[str],
    splits: Mapping[str, Iterable[Any]],
    features: FeaturesDict,
    *,
    name: str,
    version: str = "1.0.0",
    description: str = "",
    num_shards: int | None = None,
    max_records: int | None = None,
    max_bytes: int | None = None,
    progress: bool | None = None,
    overwrite: bool = False,
) -> dict[str, WriteSummary]:
    """Write a dataset directory that ``tfds.builder_from_directory(directory)`` reads.

    Args:
        directory: the version directory (tfds lays datasets out as
            ``{data_dir}/{name}/{version}``); created when missing. A path or a URL
            (``memory://``, ``s3://``, ``gs://``... through fsspec).
        splits: split name -> its samples (nested dicts that ``features`` serializes).
        features: the dataset's FeaturesDict; saved as ``features.json`` and label files.
        name: the dataset's name (snake_case), used in the shard names.
        version: the dataset's version, ``"MAJOR.MINOR.PATCH"``.
        description: the dataset's description in ``dataset_info.json``.
        num_shards, max_records, max_bytes: how each split is sharded (one of
            them; default one shard per split), as for :class:`ShardedWriter`.
        progress: a progress bar per split, as for :func:`write_dataset`.
        overwrite: replace an earlier dataset in ``directory``: its ``dataset_info.json``,
            ``features.json``, class-name files and every shard (``*-NNNNN-of-NNNNN``, any
            dataset, split or count). Without it, any of them is an
            :class:`~tfrec.OutputExistsError`, raised before anything is written.

    Returns:
        Split name -> the :class:`WriteSummary` of its shards.

    ``dataset_info.json`` is written last: a directory without it is not a
    dataset for tfds (nor for :func:`from_tfds_dir`), so an interrupted write
    never looks complete. With ``overwrite``, the new dataset is written whole
    into a hidden directory inside ``directory`` first; then the old dataset's
    files are moved aside to hidden names (its ``dataset_info.json`` first), the
    new ones moved in, its ``dataset_info.json`` written, and only then the old
    files removed: stopped at any point, ``directory`` holds the old dataset, the
    new one, or no ``dataset_info.json`` (the old files then kept as ``.NAME.<hex>.tmp``).

    Raises:
        InvalidArgumentError: an argument is invalid, or ``directory`` is under a regular file.
        OutputExistsError: a dataset is there and ``overwrite`` is not given.

    Example:
        >>> tfrec.data.write_tfds_dir("data/toy/1.0.0", {"train": samples}, features, name="toy")
        >>> tfds.builder_from_directory("data/toy/1.0.0").as_dataset(split="train")
    """
    directory = os.fspath(directory)
    if not isinstance(features, FeaturesDict):
        raise InvalidArgumentError(
            f"write_tfds_dir: features must be a FeaturesDict, not {type(features).__name__}"
        )
    if not _NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"write_tfds_dir: name {name!r} is not a tfds dataset name (snake_case: a-z, 0-9, _)"
        )
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise InvalidArgumentError(f"write_tfds_dir: version {version!r} is not 'MAJOR.MINOR.PATCH'")
    for split in splits:
        if not _SPLIT.fullmatch(split):
            raise InvalidArgumentError(
                f"write_tfds_dir: split name {split!r} is not one tfds accepts (letters, digits, '_' and '.')"
            )
    if num_shards is None and max_records is None and max_bytes is None:
        num_shards = 1
    make_directory(directory, "write_tfds_dir")
    old = dataset_files(directory)
    if old and not overwrite:
        refuse_existing(directory, old)
    limits = {"num_shards": num_shards, "max_records": max_records, "max_bytes": max_bytes}
    info_path = join_location(directory, DATASET_INFO_FILE)
    if not old:
        summaries = _write_splits(directory, splits, features, name, limits, progress)
        _write_json(info_path, _dataset_info(name, version, description, summaries))
        return summaries
    staging = temporary_path(join_location(directory, "tfds-new"))
    aside: list[str] = []
    try:
        summaries = _write_splits(staging, splits, features, name, limits, progress)
        for path in old:  # dataset_info.json first: from then on the directory is no dataset
            aside.append(temporary_path(path))
            move_file(path, aside[-1])
        for entry in list_names(staging):
            move_file(join_location(staging, entry), join_location(directory, entry))
    finally:
        for entry in list_names(staging):
            remove_file(join_location(staging, entry))
        remove_directory(staging)
    _write_json(info_path, _dataset_info(name, version, description, summaries))
    for path in aside:  # the new dataset whole: the old one's files go
        remove_file(path)
    return {split: _moved(summary, directory) for split, summary in summaries.items()}


def dataset_files(directory: str) -> list[str]:
    """The files of a dataset in ``directory``: ``dataset_info.json`` first, then ``features.json``,
    class-name files, shards (``*-NNNNN-of-NNNNN``, any name) and their index files.

    Example:
        >>> dataset_files("data/toy/1.0.0")
        ['data/toy/1.0.0/dataset_info.json', 'data/toy/1.0.0/features.json', ...]
    """
    names = list_names(directory)
    first = [name for name in (DATASET_INFO_FILE, FEATURES_FILE) if name in names]
    rest = [
        name
        for name in names
        if name.endswith(".labels.txt") or parse_shard_name(name.removesuffix(INDEX_SUFFIX)) is not None
    ]
    return [join_location(directory, name) for name in first + rest]


def _write_splits(
    directory: str,
    splits: Mapping[str, Iterable[Any]],
    features: FeaturesDict,
    name: str,
    limits: dict[str, Any],
    progress: bool | None,
) -> dict[str, WriteSummary]:
    """Write ``features.json`` and every split's shards into ``directory`` (no dataset_info.json)."""
    save_features(features, directory)
    summaries: dict[str, WriteSummary] = {}
    for split, samples in splits.items():
        prefix = join_location(directory, f"{name}-{split}.{_FILE_FORMAT}")
        summaries[split] = write_dataset(samples, prefix, features, suffix="", progress=progress, **limits)
    return summaries


def _moved(summary: WriteSummary, directory: str) -> WriteSummary:
    """``summary`` of shards written elsewhere, with their paths in ``directory``."""
    return WriteSummary(
        tuple(
            dataclasses.replace(shard, path=join_location(directory, os.path.basename(shard.path)))
            for shard in summary.shards
        )
    )


def _dataset_info(
    name: str, version: str, description: str, summaries: dict[str, WriteSummary]
) -> dict[str, Any]:
    """``dataset_info.json``'s content, as tfds writes it."""
    return {
        "name": name,
        "version": version,
        "description": description,
        "fileFormat": _FILE_FORMAT,
        "moduleName": "tfrec",
        "splits": [
            {
                "name": split,
                "filepathTemplate": _TEMPLATE,
                # int64 fields are strings in proto3 JSON, as tfds writes them.
                "numBytes": str(summary.data_bytes),
                "shardLengths": [str(length) for length in summary.shard_lengths],
            }
            for split, summary in summaries.items()
        ],
    }


def _write_json(path: str, content: dict[str, Any]) -> None:
    """Write JSON (a path or a URL) through a temporary file renamed into place."""
    temp = temporary_path(path)
    try:
        with open_new(temp) as file:
            file.write(json.dumps(content, indent=2).encode("utf-8"))
        move_file(temp, path)
    except BaseException:
        remove_file(temp)
        raise


def from_tfds_dir(directory: str | os.PathLike[str], split: str = "train") -> TfdsSplit:
    """The shard paths of ``split`` in a tfds dataset directory, and its features.

    Reads ``dataset_info.json`` (split names, shard counts, file name template)
    and ``features.json`` with its label files; checks that every shard exists.

    Args:
        directory: a prepared dataset's version directory (``{data_dir}/{name}/{version}``).
        split: a split name, e.g. ``"train"`` (tfds' slicing, ``"train[:10%]"``, is not supported).

    Returns:
        ``TfdsSplit(paths, features)``: unpack it as ``paths, features = ...``.

    Raises:
        MissingFileError: no dataset_info.json, or a shard is missing.
        InvalidArgumentError: the split is not in the dataset, or its files are
            not TFRecord (e.g. ArrayRecord).

    Example:
        >>> paths, features = tfrec.data.from_tfds_dir("~/tensorflow_datasets/mnist/3.0.1", "test")
        >>> source = tfrec.data.RecordFileSource(paths, features=features)
    """
    directory = os.path.expanduser(os.fspath(directory))
    info = read_dataset_info(directory)
    info_path = os.path.join(directory, DATASET_INFO_FILE)
    splits = {entry.get("name"): entry for entry in info.get("splits", [])}
    if split not in splits:
        raise InvalidArgumentError(
            f"{info_path}: no split {split!r}; the dataset has {sorted(s for s in splits if s) or 'none'}"
        )
    file_format = info.get("fileFormat") or _FILE_FORMAT
    if file_format != _FILE_FORMAT:
        raise InvalidArgumentError(
            f"{info_path}: the shards are {file_format}, not tfrecord; tfrec reads TFRecord shards only"
        )
    entry = splits[split]
    counts = entry.get("shardLengths", [])
    template = entry.get("filepathTemplate") or _TEMPLATE
    paths = [
        os.path.join(
            directory, shard_file(template, info.get("name", ""), split, file_format, i, len(counts))
        )
        for i in range(len(counts))
    ]
    missing = [path for path in paths if not os.path.exists(path)]
    if missing:
        raise MissingFileError(
            f"{missing[0]}: no such shard ({len(missing)} of the {len(paths)} shards of split {split!r} "
            "are missing)"
        )
    return TfdsSplit(paths, FeaturesDict.load(directory))


def read_dataset_info(directory: str) -> dict[str, Any]:
    """The ``dataset_info.json`` of a prepared tfds version directory, as a dict.

    Example:
        >>> read_dataset_info(os.path.expanduser("~/tensorflow_datasets/mnist/3.0.1"))["splits"][0]["name"]
        'test'
    """
    info_path = os.path.join(directory, DATASET_INFO_FILE)
    try:
        with open(info_path, encoding="utf-8") as file:
            info: dict[str, Any] = json.load(file)
    except FileNotFoundError:
        raise MissingFileError(
            f"{info_path}: no such file; is {directory} a prepared tfds dataset version directory "
            "({data_dir}/{name}/{version})?",
            path=info_path,
        ) from None
    return info


def shard_file(template: str, dataset: str, split: str, file_format: str, index: int, count: int) -> str:
    """A shard's file name from tfds' template (``{DATASET}``, ``{SPLIT}``, ``{SHARD_X_OF_Y}``...)."""
    x_of_y = shard_x_of_y(index, count)
    shard_index, num_shards = x_of_y.split("-of-")
    values = {
        "DATASET": dataset,
        "SPLIT": split,
        "FILEFORMAT": file_format,
        "SHARD_INDEX": shard_index,
        "NUM_SHARDS": num_shards,
        "SHARD_X_OF_Y": x_of_y,
    }
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError) as exc:
        raise InvalidArgumentError(
            f"the file name template {template!r} of split {split!r} cannot be filled: {exc}"
        ) from None
