"""Which files a dataset reads: paths, globs, brace patterns, directories and URLs (data layer).

:func:`expand_paths` turns what a user wrote into a deterministic list of files:
each pattern's matches sorted, patterns kept in the order given, duplicates
dropped. URLs (``scheme://...``) go through fsspec, imported only when a URL
is given; ``file://`` URLs are read as local paths.

A directory yields its non-hidden regular files, sorted, not recursing, and
skipping sidecars a TFRecord directory usually holds next to its data
(``.json``, ``.txt``, ``.idx``, ``.index``, ...) and names starting with ``_``
or ``.`` (``_SUCCESS`` markers, ``.crc`` files).

Sets of shards are checked (:func:`check_shard_sets`): where a pattern or
directory reaches shards ``{name}-I-of-N{suffix}``, every one of the ``N`` it
reaches must be there, and one name has one ``N``. tfrec's writers publish a
set so that a writer stopped part-way leaves shards missing
(:mod:`tfrec.data.writing.publish`); ``check_shards=False`` reads what is there.

Example:
    >>> expand_paths("data/train-{00000..00003}-of-00004.tfrecord")
    ['data/train-00000-of-00004.tfrecord', ..., 'data/train-00003-of-00004.tfrecord']
    >>> expand_paths(["data/*.tfrecord.gz", "s3://bucket/extra/"], storage_options={"anon": True})
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import multiprocessing
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any

from ..errors import InvalidArgumentError, MissingFileError, OptionalDependencyError
from .writing.names import parse_shard_name, shard_x_of_y

__all__ = [
    "SIDECAR_SUFFIXES",
    "check_shard_sets",
    "expand_braces",
    "expand_paths",
    "file_size",
    "is_file",
    "is_listed",
    "is_url",
    "local_path",
    "missing_file",
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
MAX_EXPANSIONS = 4096  # brace patterns naming more are matched against listings, not tried one by one


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
    return _expand(_brace_tree(pattern))


def _brace_tree(pattern: str) -> list[Any]:
    """``pattern`` as text and brace nodes, ``("range", first, last)`` or ``("any", [alternatives])``."""
    nodes: list[Any] = []
    while (start := pattern.find("{")) >= 0:
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
        body = pattern[start + 1 : end]
        nodes.append(pattern[:start])
        found = _RANGE.match(body)
        parts = _alternatives(body) if found is None else None
        if found is not None:
            nodes.append(("range", found.group(1), found.group(2)))
        elif parts is not None:
            nodes.append(("any", [_brace_tree(part) for part in parts]))
        else:  # not a brace expression (e.g. "{}" or "{x}"): kept literally
            nodes.append("{" + body + "}")
        pattern = pattern[end + 1 :]
    nodes.append(pattern)
    return [node for node in nodes if node != ""]


def _alternatives(body: str) -> list[str] | None:
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
    return parts if len(parts) >= 2 else None


def _number(text: str) -> int:
    if len(text) > 30:
        raise InvalidArgumentError(f"{{{text}..}}: a brace range's numbers have at most 30 digits")
    return int(text)


def _range(node: tuple[str, str, str]) -> tuple[int, int, int]:
    """A range node's first and last number and its zero padding (0: none)."""
    first, last = node[1], node[2]
    width = max(len(first), len(last)) if first.startswith("0") or last.startswith("0") else 0
    return _number(first), _number(last), width


def _expand(tree: list[Any]) -> list[str]:
    names = [""]
    for node in tree:
        if isinstance(node, str):
            choices = [node]
        elif node[0] == "range":
            low, high, width = _range(node)
            step = 1 if high >= low else -1
            choices = [f"{n:0{width}d}" for n in range(low, high + step, step)]
        else:
            choices = [name for part in node[1] for name in _expand(part)]
        names = [name + choice for name in names for choice in choices]
    return names


def _count(tree: list[Any]) -> int:
    """How many names ``tree`` expands to, without making them."""
    count = 1
    for node in tree:
        if not isinstance(node, str):
            if node[0] == "range":
                low, high, _ = _range(node)
                count *= abs(high - low) + 1
            else:
                count *= sum(_count(part) for part in node[1])
    return count


def _glob_regex(text: str) -> str:
    """A regex matching what the glob ``text`` (one path component) matches."""
    out, i = [], 0
    while i < len(text):
        char = text[i]
        close = text.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif close > 0:
            body = text[i + 1 : close]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _between(low: str, high: str) -> str:
    """A regex of the digit strings from ``low`` to ``high`` (of one length)."""
    if low == high:
        return low
    if low.strip("0") == "" and high.strip("9") == "":
        return f"[0-9]{{{len(low)}}}"
    if low[0] == high[0]:
        return low[0] + _between(low[1:], high[1:])
    rest = len(low) - 1
    parts = [low[0] + _between(low[1:], "9" * rest)]
    if int(high[0]) - int(low[0]) > 1:
        parts.append(f"[{int(low[0]) + 1}-{int(high[0]) - 1}][0-9]{{{rest}}}")
    parts.append(high[0] + _between("0" * rest, high[1:]))
    return "(?:" + "|".join(parts) + ")"


def _numbers_regex(low: int, high: int, width: int) -> list[str]:
    """Regexes of the numbers ``low`` to ``high`` (>= 0) as a range writes them (zero padded to width)."""
    out = []
    for length in range(max(width, len(str(low))), max(width, len(str(high))) + 1):
        first = max(low, 10 ** (length - 1) if length > max(width, 1) else 0)
        last = min(high, 10**length - 1)
        if first <= last:
            out.append(_between(f"{first:0{length}d}", f"{last:0{length}d}"))
    return out


def _name_regex(tree: list[Any], groups: list[Any]) -> str:
    """A regex of the names ``tree`` expands to; ``groups`` gets each brace's group, in expansion order."""
    out = []
    for node in tree:
        if isinstance(node, str):
            out.append(_glob_regex(node))
        elif node[0] == "range":
            groups.append(node)
            low, high, width = _range(node)
            low, high = min(low, high), max(low, high)
            numbers = _numbers_regex(max(low, 0), high, width) if high >= 0 else []
            if low < 0:
                numbers += ["-" + n for n in _numbers_regex(max(-high, 1), -low, max(width - 1, 0))]
            out.append(f"(?P<g{len(groups) - 1}>{'|'.join(numbers) or '(?!)'})")
        else:
            alternatives = []
            for i, part in enumerate(node[1]):
                groups.append(i)
                name = f"g{len(groups) - 1}"
                alternatives.append(f"(?P<{name}>{_name_regex(part, groups)})")
            out.append("(?:" + "|".join(alternatives) + ")")
    return "".join(out)


def _order(found: re.Match[str], groups: list[Any]) -> tuple[int, ...] | None:
    """Where a matched name comes in the expansion (brace by brace), or None if a number is off."""
    key = []
    for number, group in enumerate(groups):
        text = found.group(f"g{number}")
        if text is None:
            continue
        if isinstance(group, int):
            key.append(group)
            continue
        low, high, width = _range(group)
        value = int(text)
        if not min(low, high) <= value <= max(low, high) or f"{value:0{width}d}" != text:
            return None
        key.append(abs(value - low))
    return tuple(key)


def _match_braces(pattern: str, tree: list[Any], count: int, storage_options: Any) -> list[str]:
    """The files a brace pattern of many names matches, listed once and matched (bounded memory).

    The files found by expanding the names one by one, in that order: by the braces' choices, then by
    name (a name that several expansions match, through wildcards beside braces, may sort by another
    of them than the first). Unlike that, a name that is a directory yields nothing.
    """
    cut = pattern.rfind("/") + 1
    if "{" in pattern[:cut]:
        raise InvalidArgumentError(
            f"{pattern}: the brace pattern names {count} paths; more than {MAX_EXPANSIONS} are matched "
            "against the files that exist, which needs the braces in the file name (the last part)"
        )
    name = _brace_tree(pattern[cut:])
    groups: list[Any] = []
    matcher = re.compile(_name_regex(name, groups), re.DOTALL)
    # One "*" per brace, and never "**" (that would reach into subdirectories).
    wildcards = re.sub(r"\*+", "*", "".join(node if isinstance(node, str) else "*" for node in name))
    local = local_path(pattern[:cut] + wildcards)
    if local is not None:
        candidates = _expand_local(local)
    else:
        candidates = _expand_url(pattern[:cut] + wildcards, storage_options)
    keyed = []
    for path in candidates:
        found = matcher.fullmatch(path.rsplit("/", 1)[-1])
        key = _order(found, groups) if found is not None else None
        if key is not None:
            keyed.append((key, path))
    return [path for _, path in sorted(keyed)]


def is_listed(name: str) -> bool:
    """Whether a directory listing keeps the file called ``name`` (a data file: not hidden, not a sidecar).

    Example:
        >>> is_listed("train-00000-of-00004.tfrecord"), is_listed("features.json")
        (True, False)
    """
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
            names = sorted(e.name for e in entries if _is_file(e) and is_listed(e.name))
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
            if info.get("type") == "file" and is_listed(info["name"].rstrip("/").rsplit("/", 1)[-1])
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
    check_shards: bool = True,
) -> list[str]:
    """The files named by ``paths``, in a deterministic order.

    Args:
        paths: a path, glob (``*``, ``?``, ``[..]``, ``**``), brace pattern
            (``{a,b}``, ``{00000..00015}``), directory or ``scheme://`` URL, or
            a list of them.
        storage_options: passed to fsspec for URLs (credentials, endpoints).
        check_shards: refuse a pattern or directory that reaches an incomplete
            ``-of-N`` set of shards, or two shard counts of one name (see
            :func:`check_shard_sets`). ``False`` returns the files that are there;
            pass that list on to a reader (``TFRecordDataset``, ``RecordFileSource``...)
            to read them: a file named on its own reaches no other shard.

    Returns:
        The files: each pattern's matches sorted, patterns in the given order,
        duplicates removed (the first occurrence is kept). URLs stay URLs.

    Raises:
        MissingFileError: a pattern matched no file (also a ``FileNotFoundError``), or
            shards of a set it reaches are missing.
        InvalidArgumentError: a pattern reaches shards of one name with two shard counts.
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
        tree = _brace_tree(pattern)
        count = _count(tree)
        if count > MAX_EXPANSIONS:
            found = _match_braces(pattern, tree, count, storage_options)
        else:
            for expanded in _expand(tree):
                local = local_path(expanded)
                found += _expand_local(local) if local is not None else _expand_url(expanded, storage_options)
        if not found:
            raise MissingFileError(_nothing_found(pattern), path=pattern)
        if check_shards:
            check_shard_sets(pattern, found)
        files.update(dict.fromkeys(found))
    return list(files)


def check_shard_sets(pattern: str, found: list[str]) -> None:
    """Refuse an incomplete ``-of-N`` set of shards among the files ``pattern`` matched.

    A shard missing from ``found`` counts when ``pattern`` would have matched
    it (a glob's last part, a directory's listing, a name given on its own), so
    ``train-0000[0-4]-of-00010`` may read half a set on purpose. Index and other
    sidecar files are not shards.

    Raises:
        MissingFileError: shards of a set are missing; the message names them.
        InvalidArgumentError: shards of one name (and suffix) with two shard counts.

    Example:
        >>> check_shard_sets("out/train-*", ["out/train-00000-of-00002.tfrecord"])
        Traceback (most recent call last):
        MissingFileError: out/train-*: the set out/train-*-of-00002.tfrecord is incomplete: 1 of its ...
    """
    sets: defaultdict[tuple[str, str, str], defaultdict[int, set[int]]] = defaultdict(
        lambda: defaultdict(set)
    )
    for path in found:
        directory, base = os.path.split(path)
        parsed = parse_shard_name(base)
        if parsed is not None and os.path.splitext(base)[1].lower() not in SIDECAR_SUFFIXES:
            sets[directory, parsed.name, parsed.suffix][parsed.count].add(parsed.index)
    if not sets:
        return
    reaches = [_reach(alternative) for alternative in expand_braces(pattern)]
    for (directory, name, suffix), counts in sets.items():
        where = os.path.join(directory, f"{name}-*{suffix}")
        if len(counts) > 1:
            listed = ", ".join(f"{len(indexes)} of {count:05d}" for count, indexes in sorted(counts.items()))
            raise InvalidArgumentError(
                f"{pattern}: the shards {where} come in {len(counts)} shard counts ({listed}): two sets "
                "of one name, e.g. an earlier one left by a writer that did not replace it; remove the "
                "stale set, or read one with a pattern naming its count (e.g. *-of-NNNNN), or pass "
                "check_shards=False to expand_paths"
            )
        ((count, indexes),) = counts.items()
        _check_whole(pattern, directory, name, suffix, count, indexes, reaches)


def _check_whole(
    pattern: str,
    directory: str,
    name: str,
    suffix: str,
    count: int,
    indexes: set[int],
    reaches: list[Callable[[str], bool]],
) -> None:
    if len(indexes) == count:
        return
    missing = []
    # A name reaching an absurd count (a stray "-of-99999999") is looked at no further than
    # 100,000 names past the shards found; the message then gives a lower bound.
    for index in itertools.islice(range(count), len(indexes) + 100_000):
        base = f"{name}-{shard_x_of_y(index, count)}{suffix}"
        if index not in indexes and any(reach(base) for reach in reaches):
            missing.append(base)
    if not missing:
        return
    shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
    raise MissingFileError(
        f"{pattern}: the set {os.path.join(directory, name)}-*-of-{count:05d}{suffix} is incomplete: "
        f"{len(missing)} of its {count} shards are missing ({shown}). Its writer may have stopped while "
        "publishing it, or shards were removed; to read the shards that are there, pass "
        "check_shards=False to expand_paths and give its list to the reader",
        path=os.path.join(directory, missing[0]),
    )


def _reach(alternative: str) -> Callable[[str], bool]:
    """Whether a file name (in a matched directory) would be matched by one alternative of a pattern."""
    last = alternative.rstrip("/").rsplit("/", 1)[-1]
    if os.sep != "/":
        last = last.rsplit(os.sep, 1)[-1]
    if _MAGIC.search(last):
        return lambda base: fnmatch.fnmatchcase(base, last)
    local = local_path(alternative)
    if alternative.endswith("/") or (local is not None and os.path.isdir(local)):
        return is_listed  # a directory lists every record file
    return lambda base: base == last


def _nothing_found(pattern: str) -> str:
    local = local_path(pattern)
    if local is not None and os.path.isdir(local):
        skipped = ", ".join(sorted(SIDECAR_SUFFIXES))
        return f"{pattern}: the directory holds no record file (it lists non-hidden files without {skipped})"
    tree = _brace_tree(pattern)
    if local is not None and not _MAGIC.search(local) and _count(tree) == 1 and _expand(tree) == [pattern]:
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


def missing_file(path: str) -> MissingFileError:
    """The error for a file of a dataset that is not there when it is read: names it and says why."""
    if path.startswith("memory://") and multiprocessing.parent_process() is not None:
        why = (
            "a memory:// filesystem lives in the process that filled it, and this is another process "
            "(a reading process of num_workers > 0, a DataLoader worker) that sees it empty: read "
            "memory:// data with num_workers=0, or put it on a filesystem every process shares"
        )
    else:
        why = "it was there when the dataset was made and has been deleted or moved since"
    return MissingFileError(f"{path}: no such file: {why}", path=path)


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
