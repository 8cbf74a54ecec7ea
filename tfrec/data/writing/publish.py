"""Publishing a set of shards whole: what is already there, and the renames that give written shards
their final names (data layer).

**What exists.** Before a writer writes anything, and again before it publishes, it looks for an
earlier set under its prefix (:func:`existing_shards`): any shard ``{name}-I-of-N`` in any count
``N``, with the writer's suffix or that suffix with another compression (``.tfrecord``,
``.tfrecord.gz``, ``.tfrecord.zz``), and their index files. Before writing it also looks for
temporary files of the prefix (:func:`temporary_files`, ``.{name}-*.tmp``): another writer may
be at work there, or a killed one left them. Either is an :class:`~tfrec.OutputExistsError`
naming the files, unless the writer was given ``overwrite=True`` (``--overwrite``).

**Publishing**, so that a set is whole or visibly incomplete whenever the process stops, and what
was there is kept until the new set is whole:

1. every shard (and its index file) is complete under a temporary name;
2. with ``overwrite``, the earlier set (any count, any compression) is moved aside to hidden
   temporary names, in index order: it is visibly incomplete from its first shard on, and its
   records are still on disk;
3. the new shards are renamed in index order, each one's index file first;
4. the new set whole, the files moved aside are removed.

A set cut short at any step holds fewer than ``N`` shards, which readers notice
(:func:`tfrec.data.expand_paths`), and never a mix of an old and a new set nor two counts of
one name. The last shard, ``{name}-(N-1)-of-N``, appears last: it is the set's completion
record. If a rename fails, the new files are removed and the old ones moved back. A writer
killed between steps 2 and 4 leaves the old records in ``.{shard name}.<hex>.tmp`` files.
Sets that TensorFlow, tfds or older tfrec versions wrote read as before: only missing shards
are an error.

Example:
    >>> publish_shards("out/train", ".tfrecord", [[(pending, "out/train-00000-of-00001.tfrecord")]])
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence

from ...errors import OutputExistsError
from ...features import FeaturesDict
from ...record.files import move_file, remove_file
from ...record.writer import temporary_path
from ..index.format import INDEX_SUFFIX
from .destination import differing_features_file, join_location, list_names, parent_directory, split_location
from .names import parse_shard_name, shard_suffix

__all__ = [
    "check_free",
    "existing_shards",
    "publish_shards",
    "refuse_existing",
    "temporary_files",
]

_SHOWN = 5  # files named in an OutputExistsError's message


def _family(suffix: str) -> set[str]:
    """``suffix`` without and with each compression's extension: the suffixes of one set's shards."""
    base = suffix
    for compression in ("gzip", "zlib"):
        extension = shard_suffix(compression, "")
        if suffix.endswith(extension):
            base = suffix[: -len(extension)]
    return {base, shard_suffix("gzip", base), shard_suffix("zlib", base)}


def existing_shards(prefix: str, suffix: str) -> list[str]:
    """The shards ``{prefix}-I-of-N`` of any count ``N`` (suffix ``suffix`` in any compression) and
    their index files, in index order, each one's index file first.

    Example:
        >>> existing_shards("out/train", ".tfrecord")
        ['out/train-00000-of-00002.tfrecord', 'out/train-00001-of-00002.tfrecord']
    """
    directory, name = split_location(prefix)
    family = _family(suffix)
    found = []
    for entry in list_names(directory):
        index_file = entry.endswith(INDEX_SUFFIX)
        parsed = parse_shard_name(entry[: -len(INDEX_SUFFIX)] if index_file else entry)
        if parsed is not None and parsed.name == name and parsed.suffix in family:
            found.append((parsed.index, parsed.count, parsed.suffix, not index_file, entry))
    return [join_location(directory, entry) for *_, entry in sorted(found)]


def temporary_files(prefix: str) -> list[str]:
    """Temporary files of writers of ``prefix``: ``.{name}-NNNNN...tmp`` (and ``.tmp.partial``).

    Example:
        >>> temporary_files("out/train")
        ['out/.train-00000.5f2a9c01.tmp']
    """
    directory, name = split_location(prefix)
    pattern = re.compile(r"\.+" + re.escape(name) + r"-\d{5,}.*\.tmp(\.partial)?", re.DOTALL)
    return [join_location(directory, entry) for entry in list_names(directory) if pattern.fullmatch(entry)]


def refuse_existing(where: str, found: Sequence[str], option: str = "overwrite=True") -> None:
    """Raise :class:`~tfrec.OutputExistsError` when ``found`` names any file.

    Example:
        >>> refuse_existing("out/train", ["out/train-00000-of-00002.tfrecord"], "--overwrite")
        Traceback (most recent call last):
        OutputExistsError: out/train: found out/train-00000-of-00002.tfrecord; pass --overwrite ...
    """
    if not found:
        return
    shown = ", ".join(found[:_SHOWN]) + (f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else "")
    temporary = any(split_location(path)[1].startswith(".") for path in found)
    why = (
        " (temporary files: a writer may be at work there, or a killed one left them; remove them "
        "if none runs)"
        if temporary
        else ""
    )
    raise OutputExistsError(
        f"{where}: found {shown}{why}; pass {option} to replace the earlier output (it is removed "
        "once the new one is whole), or write elsewhere",
        paths=list(found),
        option=option,
    )


def check_free(
    prefix: str,
    suffix: str,
    overwrite: bool,
    option: str = "overwrite=True",
    features: FeaturesDict | None = None,
) -> None:
    """Before writing: refuse an earlier set of ``prefix``, temporary files of it, and (given the
    ``features`` the writer saves beside the shards) a ``features.json`` of other features there,
    unless ``overwrite``.

    Example:
        >>> check_free("out/train", ".tfrecord", overwrite=False)
    """
    if overwrite:
        return
    found = existing_shards(prefix, suffix) + temporary_files(prefix)
    if features is not None:
        found += filter(None, [differing_features_file(features, parent_directory(prefix))])
    refuse_existing(prefix, found, option)


def publish_shards(
    prefix: str,
    suffix: str,
    renames: Sequence[Sequence[tuple[str, str]]],
    *,
    overwrite: bool = False,
    option: str = "overwrite=True",
) -> None:
    """Give a set of written shards their final names, whole or visibly incomplete.

    Args:
        prefix: the set's ``{directory}/{name}`` (a path or a URL).
        suffix: its shards' suffix (``.tfrecord``, ``.tfrecord.gz``, ``""``...).
        renames: per shard in index order, the ``(temporary, final)`` pairs to rename, the
            shard itself last (its index file before it).
        overwrite: replace an earlier set of the prefix; without it, one is an
            :class:`~tfrec.OutputExistsError` and nothing is renamed.
        option: how the caller's user asks for ``overwrite``, for the message.

    If a rename fails, the files already renamed are removed again (in index
    order), the old ones moved back, and the error goes on; the temporary files
    are the caller's.
    """
    old = existing_shards(prefix, suffix)
    if not overwrite:
        refuse_existing(prefix, old, option)
    aside: list[tuple[str, str]] = []
    published: list[str] = []
    try:
        for path in old:  # hidden, not removed: the old set is visibly incomplete, its records kept
            backup = temporary_path(path)
            move_file(path, backup)
            aside.append((path, backup))
        for shard in renames:
            for temporary, final in shard:
                move_file(temporary, final)
                published.append(final)
    except BaseException:
        for path in published:
            with contextlib.suppress(OSError):
                remove_file(path)
        for path, backup in aside:
            with contextlib.suppress(OSError):
                move_file(backup, path)
        raise
    for _, backup in aside:  # the new set is whole: the old one goes
        remove_file(backup)
