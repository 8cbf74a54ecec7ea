"""Where writers put files: a local directory, or a URL's through fsspec (data layer).

Writers take a path or a URL (``file://``, ``memory://``, ``s3://``, ``gs://``...);
these few operations are all they need beyond the record layer's (create a new
file, move one into place, remove one): list a directory, create it, measure a
file, and save ``features.json`` there. fsspec is imported only for a URL
(``pip install 'tfrec[fsspec]'``). On an object store a "directory" is a key
prefix: creating one does nothing and listing one lists the keys under it.

Example:
    >>> split_location("memory://bucket/out/train")
    ('memory://bucket/out', 'train')
    >>> list_names("memory://bucket/out")
    ['features.json', 'train-00000-of-00001.tfrecord']
"""

from __future__ import annotations

import json
import os
import tempfile

from ...errors import InvalidArgumentError
from ...features import FEATURES_FILE, FeaturesDict
from ...record.files import local_file, move_file, open_new, remove_file, url_filesystem
from ...record.writer import temporary_path

__all__ = [
    "differing_features_file",
    "file_size",
    "join_location",
    "list_names",
    "make_directory",
    "parent_directory",
    "read_text",
    "remove_directory",
    "save_features",
    "split_location",
]


def split_location(path: str) -> tuple[str, str]:
    """``(directory, name)`` of a path or a URL (a URL's parts are separated by ``/``)."""
    if local_file(path) is None:
        directory, _, name = path.rpartition("/")
        return directory, name
    return os.path.split(path)


def parent_directory(path: str) -> str:
    """The directory ``path`` (a path or a URL) is in; a local one made absolute."""
    local = local_file(path)
    return split_location(path)[0] if local is None else os.path.dirname(os.path.abspath(local))


def join_location(directory: str, name: str) -> str:
    """``name`` in ``directory`` (a path or a URL)."""
    if local_file(directory) is None:
        return f"{directory.rstrip('/')}/{name}"
    return os.path.join(directory, name)


def list_names(directory: str) -> list[str]:
    """The names of the entries of ``directory``, sorted; ``[]`` when it does not exist."""
    local = local_file(directory)
    if local is not None:
        try:
            return sorted(os.listdir(local or "."))
        except (FileNotFoundError, NotADirectoryError):
            return []
    fs, inner = url_filesystem(directory, f"Writing to {directory}")
    try:
        found = fs.ls(inner, detail=False)
    except FileNotFoundError:
        return []
    return sorted(str(entry).rstrip("/").rsplit("/", 1)[-1] for entry in found)


def file_size(path: str) -> int:
    """The size in bytes of the file ``path`` (a path or a URL)."""
    local = local_file(path)
    if local is not None:
        return os.path.getsize(local)
    fs, inner = url_filesystem(path, f"Writing {path}")
    return int(fs.size(inner))


def read_text(path: str) -> str | None:
    """The UTF-8 text of the file ``path`` (a path or a URL), or ``None`` when there is none."""
    local = local_file(path)
    try:
        if local is not None:
            with open(local, encoding="utf-8") as file:
                return file.read()
        fs, inner = url_filesystem(path, f"Reading {path}")
        with fs.open(inner, "rb") as stream:
            return bytes(stream.read()).decode("utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def make_directory(directory: str, who: str) -> None:
    """Create ``directory`` and its parents; a regular file in the way is an InvalidArgumentError.

    Example:
        >>> make_directory("out/train", "write_dataset")
    """
    local = local_file(directory)
    if local is None:
        fs, inner = url_filesystem(directory, f"{who}: writing to {directory}")
        fs.makedirs(inner, exist_ok=True)  # nothing to do on an object store
        return
    try:
        os.makedirs(local or ".", exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = local
        while blocking and not os.path.exists(blocking):
            blocking = os.path.dirname(blocking)
        raise InvalidArgumentError(
            f"{who}: cannot create the directory {directory}: {blocking or directory} is a file, "
            "not a directory; choose another output path"
        ) from None


def remove_directory(directory: str) -> None:
    """Remove the empty ``directory`` (a path or a URL); one that is not there is no error."""
    local = local_file(directory)
    try:
        if local is not None:
            os.rmdir(local)
        else:
            fs, inner = url_filesystem(directory, f"Writing to {directory}")
            if fs.exists(inner):  # an object store has no directories: nothing to remove
                fs.rmdir(inner)
    except FileNotFoundError:
        pass


def save_features(features: FeaturesDict, directory: str) -> None:
    """Save ``features.json`` (and its class-name files) into ``directory``, a path or a URL.

    A URL gets each file saved locally first, then uploaded under a temporary name and moved
    into place, so no half-written ``features.json`` is ever seen there.

    Example:
        >>> save_features(features, "memory://bucket/out")
    """
    local = local_file(directory)
    if local is not None:
        features.save(local or ".")
        return
    with tempfile.TemporaryDirectory() as staging:
        features.save(staging)
        for name in sorted(os.listdir(staging), key=lambda n: n == FEATURES_FILE):  # features.json last
            target = join_location(directory, name)
            temporary = temporary_path(target)
            try:
                with open(os.path.join(staging, name), "rb") as source, open_new(temporary) as stream:
                    stream.write(source.read())
                move_file(temporary, target)
            except BaseException:
                remove_file(temporary)
                raise


def differing_features_file(features: FeaturesDict, directory: str) -> str | None:
    """The ``features.json`` in ``directory`` when it describes other features than ``features``
    (one that is not JSON counts as other); ``None`` when there is none, or the same.

    Writing a second prefix of one schema into a directory (``train``, then ``test``) finds
    its own ``features.json`` there: that is no conflict.
    """
    path = join_location(directory, FEATURES_FILE)
    text = read_text(path)
    if text is None:
        return None
    try:
        saved = json.loads(text)
    except ValueError:
        return path
    return None if saved == json.loads(json.dumps(features.to_json())) else path
