"""Which files a dataset reads: paths, globs, brace patterns, directories and URLs (data layer).

:func:`expand_paths` turns what a user wrote into a deterministic list of files:
each pattern's matches sorted, patterns kept in the order given, duplicates
dropped. URLs (``scheme://...``) go through fsspec, imported only when a URL
is given; ``file://`` URLs are read as local paths.

A directory yields its non-hidden regular files, sorted, not recursing, and
skipping sidecars a TFRecord directory usually holds next to its data
(``.json``, ``.txt``, ``.idx``, ``.index``, ...) and names starting with ``_``
or ``.`` (``_SUCCESS`` markers, ``.crc`` files).

Example:
    >>> expand_paths("data/train-{00000..00003}-of-00004.tfrecord")
    ['data/train-00000-of-00004.tfrecord', ..., 'data/train-00003-of-00004.tfrecord']
    >>> expand_paths(["data/*.tfrecord.gz", "s3://bucket/extra/"], storage_options={"anon": True})
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

from ..errors import InvalidArgumentError, MissingFileError, OptionalDependencyError

__all__ = [
    "SIDECAR_SUFFIXES",
    "expand_braces",
    "expand_paths",
    "file_size",
    "is_file",
    "is_url",
    "local_path",
    "open_binary",
    "read_bytes",
]

# Files a directory listing leaves out: metadata and indexes written next to record files.
SIDECAR_SUFFIXES = frozenset(
    {".json", ".txt", ".idx", ".index", ".md", ".csv", ".pbtxt", ".crc", ".lock", ".tmp", ".py"}
)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_MAGIC = re.compile(r"[*?\[]")
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")


def is_url(path: str) -> bool:
    """Whether ``path`` names a file through a ``scheme://`` URL."""
    return _URL.match(path) is not None


def local_path(path: str) -> str | None:
    """The local path of a plain path or a ``file://`` URL; ``None`` for other URLs."""
    if path.startswith("file://"):
        return path[len("file://") :]
    return None if is_url(path) else path


def expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` alternatives and ``{00..15}`` numeric ranges (zero padding kept), left to right.

    Example:
        >>> expand_braces("x-{0..2}-{a,b}")
        ['x-0-a', 'x-0-b', 'x-1-a', 'x-1-b', 'x-2-a', 'x-2-b']
    """
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    for end in range(start, len(pattern)):
        if pattern[end] == "{":
            depth += 1
        elif pattern[end] == "}":
            depth -= 1
            if depth == 0:
                break
    else:
        raise InvalidArgumentError(f"{pattern}: unbalanced '{{' in the path pattern")
    body, head, tail = pattern[start + 1 : end], pattern[:start], pattern[end + 1 :]
    choices = _brace_choices(body)
    if choices is None:  # not a brace expression (e.g. "{}" or "{x}"): keep it literally
        return [head + "{" + body + "}" + rest for rest in expand_braces(tail)]
    return [head + choice + rest for choice in choices for rest in expand_braces(tail)]


def _brace_choices(body: str) -> list[str] | None:
    found = _RANGE.match(body)
    if found:
        first, last = found.group(1), found.group(2)
        width = max(len(first), len(last)) if first.startswith("0") or last.startswith("0") else 0
        low, high = int(first), int(last)
        step = 1 if high >= low else -1
        return [f"{n:0{width}d}" for n in range(low, high + step, step)]
    parts, depth, begin = [], 0, 0
    for i, char in enumerate(body):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(body[begin:i])
            begin = i + 1
    parts.append(body[begin:])
    if len(parts) < 2:
        return None
    return [expanded for part in parts for expanded in expand_braces(part)]


def _wanted(name: str) -> bool:
    """Whether a directory listing keeps the file called ``name``."""
    if name.startswith((".", "_")):
        return False
    return os.path.splitext(name)[1].lower() not in SIDECAR_SUFFIXES


def _is_file(entry: os.DirEntry[str]) -> bool:
    """Whether a directory entry is a regular file (or a link to one), as ``os.path.isfile`` says for
    globs: a link that leads nowhere, a loop of links included, is not a file."""
    try:
        return entry.is_file()
    except OSError:  # ELOOP: DirEntry.is_file() passes it on where os.path.isfile() says False
        return False


def _expand_local(pattern: str) -> list[str]:
    if _MAGIC.search(pattern):
        return sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
    if os.path.isdir(pattern):
        with os.scandir(pattern) as entries:
            names = sorted(e.name for e in entries if _is_file(e) and _wanted(e.name))
        return [os.path.join(pattern, name) for name in names]
    return [pattern] if os.path.isfile(pattern) else []


def _filesystem(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    try:
        import fsspec  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise OptionalDependencyError("fsspec", "fsspec", f"Reading {url}") from None
    fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    return fs, path


def _expand_url(url: str, storage_options: Mapping[str, Any] | None) -> list[str]:
    fs, path = _filesystem(url, storage_options)
    if _MAGIC.search(path):
        found = [p for p, info in fs.glob(path, detail=True).items() if info.get("type") == "file"]
    elif fs.isdir(path):
        found = [
            info["name"]
            for info in fs.ls(path, detail=True)
            if info.get("type") == "file" and _wanted(info["name"].rstrip("/").rsplit("/", 1)[-1])
        ]
    else:
        found = [path] if fs.isfile(path) else []
    return sorted(fs.unstrip_protocol(p) for p in found)


def _patterns(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Iterator[str]:
    if isinstance(paths, (str, os.PathLike)):
        yield os.fspath(paths)
        return
    if isinstance(paths, (bytes, bytearray)):
        raise InvalidArgumentError("paths must be str or os.PathLike, not bytes")
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidArgumentError(
                f"paths must be str or os.PathLike, not {type(path).__name__}: {path!r}"
            )
        yield os.fspath(path)


def expand_paths(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """The files named by ``paths``, in a deterministic order.

    Args:
        paths: a path, glob (``*``, ``?``, ``[..]``, ``**``), brace pattern
            (``{a,b}``, ``{00000..00015}``), directory or ``scheme://`` URL, or
            a list of them.
        storage_options: passed to fsspec for URLs (credentials, endpoints).

    Returns:
        The files: each pattern's matches sorted, patterns in the given order,
        duplicates removed (the first occurrence is kept). URLs stay URLs.

    Raises:
        MissingFileError: a pattern matched no file (also a ``FileNotFoundError``).
        OptionalDependencyError: a URL was given and fsspec is not installed.

    Example:
        >>> expand_paths(["data/b.tfrecord", "data/*.tfrecord"])
        ['data/b.tfrecord', 'data/a.tfrecord', 'data/c.tfrecord']
    """
    files: dict[str, None] = {}
    patterns = list(_patterns(paths))
    if not patterns:
        raise MissingFileError("no paths were given: expected a path, glob, directory or URL")
    for pattern in patterns:
        found: list[str] = []
        for expanded in expand_braces(pattern):
            local = local_path(expanded)
            found += _expand_local(local) if local is not None else _expand_url(expanded, storage_options)
        if not found:
            raise MissingFileError(_nothing_found(pattern), path=pattern)
        files.update(dict.fromkeys(found))
    return list(files)


def _nothing_found(pattern: str) -> str:
    local = local_path(pattern)
    if local is not None and os.path.isdir(local):
        skipped = ", ".join(sorted(SIDECAR_SUFFIXES))
        return f"{pattern}: the directory holds no record file (it lists non-hidden files without {skipped})"
    if local is not None and not _MAGIC.search(local) and expand_braces(pattern) == [pattern]:
        return f"{pattern}: no such file"
    return f"{pattern}: matched no file"


def open_binary(path: str, storage_options: Mapping[str, Any] | None = None) -> IO[bytes]:
    """Open ``path`` (a local path or a URL) for reading bytes; the caller closes it.

    Local paths are better given to :class:`~tfrec.RecordReader` directly (it
    seeks and learns the file size); this is for fsspec URLs.

    Example:
        >>> with open_binary("memory://data/a.tfrecord") as stream:
        ...     records = list(tfrec.RecordReader(stream, compression=None))
    """
    local = local_path(path)
    if local is not None:
        return open(local, "rb")
    fs, inner = _filesystem(path, storage_options)
    stream: IO[bytes] = fs.open(inner, "rb")
    return stream


def is_file(path: str, storage_options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``path`` (a local path or a URL) names an existing regular file."""
    local = local_path(path)
    if local is not None:
        return os.path.isfile(local)
    fs, inner = _filesystem(path, storage_options)
    return bool(fs.isfile(inner))


def file_size(path: str, storage_options: Mapping[str, Any] | None = None) -> int:
    """The size in bytes of the file ``path`` (a local path or a URL).

    Raises:
        MissingFileError: no such file.
    """
    local = local_path(path)
    try:
        if local is not None:
            return os.path.getsize(local)
        fs, inner = _filesystem(path, storage_options)
        return int(fs.size(inner))
    except FileNotFoundError:
        raise MissingFileError(f"{path}: no such file", path=path) from None


def read_bytes(path: str, storage_options: Mapping[str, Any] | None = None) -> bytes:
    """The whole content of the file ``path`` (a local path or a URL).

    Raises:
        MissingFileError: no such file.
    """
    try:
        with open_binary(path, storage_options) as stream:
            return stream.read()
    except FileNotFoundError:
        raise MissingFileError(f"{path}: no such file", path=path) from None
