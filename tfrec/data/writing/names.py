"""Shard names, ``{name}-00003-of-00016{suffix}``, made and read back (data layer).

Writers name shards with :func:`shard_name`; readers use :func:`parse_shard_name`
to group the files they matched into ``-of-N`` sets and notice missing shards.

Example:
    >>> shard_name("out/train", 3, 16)
    'out/train-00003-of-00016.tfrecord'
    >>> parse_shard_name("train-00003-of-00016.tfrecord")
    ShardName(name='train', index=3, count=16, suffix='.tfrecord')
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

__all__ = [
    "TFRECORD_SUFFIXES",
    "ShardName",
    "parse_shard_name",
    "pending_name",
    "pending_pattern",
    "shard_name",
    "shard_suffix",
    "shard_x_of_y",
]

_EXTENSIONS = {"gzip": ".gz", "zlib": ".zz"}  # what each compression adds to a file's suffix

# Both numbers have the same width (5 digits, or more past 99999 shards); the suffix does not start
# with a digit, so "-of-000100" is never read as count 10 plus suffix "0".
_SHARD = re.compile(r"(?P<name>.+)-(?P<index>\d{5,})-of-(?P<count>\d{5,})(?P<suffix>(?!\d).*)", re.DOTALL)


@dataclass(slots=True)
class ShardName:
    """A shard's file name taken apart: ``{name}-{index}-of-{count}{suffix}``."""

    name: str
    index: int
    count: int
    suffix: str


def shard_name(prefix: str | os.PathLike[str], index: int, count: int, suffix: str = ".tfrecord") -> str:
    """The name of shard ``index`` of ``count``: ``{prefix}-{index:05d}-of-{count:05d}{suffix}``.

    Example:
        >>> shard_name("out/train", 3, 16)
        'out/train-00003-of-00016.tfrecord'
    """
    return f"{os.fspath(prefix)}-{shard_x_of_y(index, count)}{suffix}"


def shard_x_of_y(index: int, count: int) -> str:
    """``"00003-of-00016"``; past 99999 shards both numbers widen together, as tfds names them."""
    width = max(5, len(str(count)))
    return f"{index:0{width}d}-of-{count:0{width}d}"


def shard_suffix(compression: str | None, suffix: str = ".tfrecord") -> str:
    """``suffix`` with the extension of ``compression`` (``None``, ``"gzip"`` or ``"zlib"``).

    Example:
        >>> shard_suffix("gzip")
        '.tfrecord.gz'
    """
    return suffix + _EXTENSIONS.get(compression or "", "")


# The names TFRecord files are written under, uncompressed or compressed.
TFRECORD_SUFFIXES = tuple(shard_suffix(compression) for compression in (None, *_EXTENSIONS))


def pending_name(prefix: str | os.PathLike[str], index: int, token: str) -> str:
    """The hidden name shard ``index`` of the engine writer ``token`` (Ray, Dask) has until the whole
    set is published; it ends in ``.tmp`` as every writer's temporary file does.

    Example:
        >>> pending_name("out/train", 3, "9f0c1a2b")
        'out/.train-00003.9f0c1a2b.tmp'
    """
    directory, name = os.path.split(os.fspath(prefix))
    return os.path.join(directory, f".{name}-{index:05d}.{token}.tmp")


def pending_pattern(prefix: str | os.PathLike[str], token: str, ending: str = ".tmp") -> str:
    """A glob of the :func:`pending_name` files of the writer ``token``; ``ending=".*"`` also matches
    what an aborted write leaves beside them (``.tmp.partial``).

    Example:
        >>> pending_pattern("out/train", "9f0c1a2b")
        'out/.train-*.9f0c1a2b.tmp'
    """
    directory, name = os.path.split(os.fspath(prefix))
    return os.path.join(glob.escape(directory), f".{glob.escape(name)}-*.{token}{ending}")


def parse_shard_name(basename: str) -> ShardName | None:
    """The parts of a shard's file name (no directory), or ``None`` when it is not one.

    A name counts only as :func:`shard_name` writes it: both numbers of one width, the
    index below the count.

    Example:
        >>> parse_shard_name("mnist-train.tfrecord-00000-of-00004")
        ShardName(name='mnist-train.tfrecord', index=0, count=4, suffix='')
    """
    found = _SHARD.fullmatch(basename)
    if found is None:
        return None
    name, index, count, suffix = found.groups()
    # Digit strings of one width compare as their numbers; past 5 digits no zero padding is added.
    if len(index) != len(count) or (len(count) > 5 and count[0] == "0") or index >= count:
        return None
    return ShardName(name, int(index), int(count), suffix)
