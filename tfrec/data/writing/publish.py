"""Publishing a set of shards whole: the renames that give written shards their final names (data layer).

A set of ``N`` shards is published so that it is whole or visibly incomplete,
whenever the process stops:

1. every shard (and its index file) is complete under a temporary name;
2. any earlier set of the same name and suffix, whatever its shard count, is
   removed (its shards in index order, each one's index file first);
3. the new shards are renamed in index order, each one's index file first.

A set cut short at any step holds fewer than ``N`` shards, which readers
notice (:func:`tfrec.data.expand_paths`), and never a mix of an old and a new
set. The last shard, ``{name}-(N-1)-of-N``, appears last: it is the set's
completion record. Sets that TensorFlow, tfds or older tfrec versions wrote
read as before: only missing shards are an error.

Example:
    >>> publish_shards("out/train", ".tfrecord", [[(pending, "out/train-00000-of-00001.tfrecord")]])
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from ...errors import InvalidArgumentError
from ..index.format import INDEX_SUFFIX
from .names import parse_shard_name

__all__ = ["make_directory", "publish_shards", "remove_shard_set"]


def make_directory(directory: str, who: str) -> None:
    """Create ``directory`` and its parents; a regular file in the way is an InvalidArgumentError.

    Example:
        >>> make_directory("out/train", "write_dataset")
    """
    try:
        os.makedirs(directory, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = directory
        while blocking and not os.path.exists(blocking):
            blocking = os.path.dirname(blocking)
        raise InvalidArgumentError(
            f"{who}: cannot create the directory {directory}: {blocking or directory} is a file, "
            "not a directory; choose another output path"
        ) from None


def remove_shard_set(prefix: str, suffix: str) -> list[str]:
    """Remove every shard ``{prefix}-I-of-N{suffix}`` (any ``N``) and its index file, in index order.

    Returns:
        The shards removed.

    Example:
        >>> remove_shard_set("out/train", ".tfrecord")
        ['out/train-00000-of-00002.tfrecord', 'out/train-00001-of-00002.tfrecord']
    """
    directory, name = os.path.split(prefix)
    try:
        with os.scandir(directory or ".") as entries:
            found = [(parse_shard_name(entry.name), entry.name) for entry in entries]
    except FileNotFoundError:
        return []
    old = sorted(
        (parsed.index, parsed.count, file)
        for parsed, file in found
        if parsed is not None and parsed.name == name and parsed.suffix == suffix
    )
    removed = []
    for _, _, file in old:
        path = os.path.join(directory, file)
        with contextlib.suppress(FileNotFoundError):
            os.remove(path + INDEX_SUFFIX)
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        removed.append(path)
    return removed


def publish_shards(prefix: str, suffix: str, renames: Sequence[Sequence[tuple[str, str]]]) -> None:
    """Give a set of written shards their final names, whole or visibly incomplete.

    Args:
        prefix: the set's ``{directory}/{name}``.
        suffix: its shards' suffix (``.tfrecord``, ``.tfrecord.gz``, ``""``...).
        renames: per shard in index order, the ``(temporary, final)`` pairs to rename, the
            shard itself last (its index file before it).

    If a rename fails, the files already renamed are removed again (in index
    order) and the error goes on; the temporary files are the caller's.
    """
    remove_shard_set(prefix, suffix)
    published: list[str] = []
    try:
        for shard in renames:
            for temporary, final in shard:
                os.replace(temporary, final)
                published.append(final)
    except BaseException:
        for path in published:
            with contextlib.suppress(OSError):
                os.remove(path)
        raise
