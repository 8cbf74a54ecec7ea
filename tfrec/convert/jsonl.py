"""JSON Lines -> samples: one JSON object per line, nested objects -> nested features (convert layer).

Types are proposed from the first ``sample`` lines: integers -> int64 (float32 when the key also
holds fractions), strings -> Text, lists -> Tensors with unknown lengths, objects -> nested dicts.
A key that is null or absent in one of those lines is declared so that it may be missing
(see :func:`read_jsonl`); a key may not appear only after them. Objects and lists may nest
:data:`MAX_NESTING` (32) levels deep; a deeper line is a :class:`~tfrec.ConvertError` naming it.
Lines are read as a stream: only the inference sample is held at once.

Example:
    >>> samples = read_jsonl("data.jsonl")
    >>> samples.features
    FeaturesDict({'id': Tensor(shape=(), dtype=int64), 'meta': FeaturesDict({'lang': Text()})})
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import sys
from collections.abc import Generator, Iterator
from typing import IO, Any

import numpy as np

from ..errors import ConvertError
from ..features import FeaturesDict, Sequence, Tensor, Text
from .names import check_names, nest
from .samples import Samples, connector_from_value, merge_connectors

__all__ = ["MAX_NESTING", "read_jsonl", "samples_from_objects"]

# Objects and lists nested deeper are refused: numpy arrays have at most 64 dimensions, and Python's
# parser, and every step after it, recurses once per level (10,000 levels is a RecursionError).
MAX_NESTING = 32
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_OPENS = np.zeros(256, np.int8)
_OPENS[[ord("["), ord("{")]] = 1
_OPENS[[ord("]"), ord("}")]] = -1

Lines = Generator[tuple[int, "str | bytes"], None, None]


def _nesting(line: str | bytes) -> int:
    """How deep the objects and lists of a JSON line nest (brackets within strings not counted)."""
    data = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING:
        return 0  # cannot nest deeper: not worth a look
    steps = _OPENS[np.frombuffer(_STRING.sub(b"", data), np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def _lines(source: str | os.PathLike[str] | IO[Any]) -> tuple[Lines, str]:
    """Numbered non-blank lines: bytes from files and binary streams (json.loads decodes them, and
    names a line in another encoding), str from text streams."""
    if isinstance(source, (str, os.PathLike)) and os.fspath(source) != "-":
        path = os.fspath(source)
        try:
            file: IO[Any] = open(path, "rb")  # noqa: SIM115 (closed by the generator)
        except FileNotFoundError:
            raise ConvertError("no such file", path=path) from None
        return _numbered(file, owned=True), path
    if not isinstance(source, (str, os.PathLike)) and isinstance(source, io.TextIOBase):
        return _numbered(source, owned=False), str(getattr(source, "name", "<stream>"))
    stream = sys.stdin.buffer if isinstance(source, (str, os.PathLike)) else source
    return _numbered(stream, owned=False), "<stdin>"


def _numbered(file: IO[Any], owned: bool) -> Lines:
    try:
        for number, line in enumerate(file, 1):
            if line.strip():
                yield number, line
    finally:
        if owned:
            file.close()


def _objects(lines: Lines, where: str, encoding: str) -> Generator[tuple[int, dict[str, Any]], None, None]:
    with contextlib.closing(lines):  # the file closes now, not when a cycle is collected
        yield from _parsed(lines, where, encoding)


def _parsed(lines: Lines, where: str, encoding: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in lines:
        if isinstance(line, bytes):
            try:
                line = line.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ConvertError(
                    f"not {encoding} text: {exc} (bytes {line[exc.start : exc.start + 4]!r}); "
                    "is the file in another encoding? (--encoding)",
                    path=where,
                    where=f"line {number}",
                ) from None
            if number == 1:
                line = line.lstrip("\ufeff")  # a byte order mark
        if (depth := _nesting(line)) > MAX_NESTING:
            raise ConvertError(
                f"objects and lists nested deeper than {MAX_NESTING} levels ({depth})",
                path=where,
                where=f"line {number}",
            )
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise ConvertError(f"not JSON: {exc}", path=where, where=f"line {number}") from None
        except RecursionError:  # not reached after the depth check; kept as a backstop
            raise ConvertError(
                f"objects and lists nested deeper than {MAX_NESTING} levels",
                path=where,
                where=f"line {number}",
            ) from None
        if not isinstance(value, dict):
            raise ConvertError(
                f"expected a JSON object, found {type(value).__name__}", path=where, where=f"line {number}"
            )
        yield number, value


def _keys(value: dict[str, Any], where: str, place: str) -> dict[str, Any]:
    """``value`` with its keys under the naming rule (:mod:`tfrec.convert.names`): a ``/`` nests."""
    for key, child in value.items():
        if isinstance(child, dict):
            value[key] = _keys(child, where, place)
    if any(not key or "/" in key for key in value):
        check_names(list(value), path=where, where=place)
        return nest(value)
    return value


def _without_nulls(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` without its null values (nested objects too)."""
    return {k: _without_nulls(v) if isinstance(v, dict) else v for k, v in value.items() if v is not None}


def _present(value: Any, proposal: Any, prefix: str, out: dict[str, int]) -> None:
    """Count, per leaf of ``proposal``, that ``value`` holds it (not null, not absent)."""
    for name, child in proposal.items():
        found = value.get(name) if isinstance(value, dict) else None
        path = f"{prefix}/{name}" if prefix else name
        if isinstance(child, dict):
            _present(found, child, path, out)
        elif found is not None:
            out[path] = out.get(path, 0) + 1


def _optional(connector: Any) -> Any:
    """The connector of a key that may be null or absent: one that can hold no value."""
    if isinstance(connector, Tensor) and connector.shape == ():
        return Tensor(shape=(None,), dtype=connector.dtype)
    if isinstance(connector, Text):
        return Sequence(Text())
    return connector  # lists of unknown length: absent is an empty list


def _declare(proposal: Any, counts: dict[str, int], lines: int, prefix: str = "") -> tuple[Any, set[str]]:
    """``(proposal with optional leaves widened, the optional leaves)``."""
    declared: dict[str, Any] = {}
    optional: set[str] = set()
    for name, child in proposal.items():
        path = f"{prefix}/{name}" if prefix else name
        if isinstance(child, dict):
            declared[name], inner = _declare(child, counts, lines, path)
            optional |= inner
        elif counts.get(path, 0) < lines:
            declared[name] = _optional(child)
            optional.add(path)
        else:
            declared[name] = child
    return declared, optional


def _filled(value: Any, proposal: Any, optional: set[str], key: str, where: str, place: str) -> Any:
    """``value`` as the declared features store it: an optional scalar as a list of 0 or 1 values."""
    if isinstance(proposal, dict):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConvertError(
                f"key {key!r}: expected an object, found {json.dumps(value)[:40]}",
                path=where,
                where=place,
            )
        extra = sorted(set(value) - set(proposal))
        if extra:
            raise ConvertError(
                f"{'object ' + repr(key) + ' ' if key else ''}new keys {', '.join(map(repr, extra))}; "
                "keys must appear in the first lines (read to propose the types)",
                path=where,
                where=place,
            )
        return {
            name: _filled(value.get(name), child, optional, f"{key}/{name}" if key else name, where, place)
            for name, child in proposal.items()
        }
    if key not in optional:
        if value is None:
            raise ConvertError(
                f"missing {key!r} (null or absent), which every one of the first lines held, so "
                "it was declared always present; put a line without it among the first ones",
                path=where,
                where=place,
            )
        return value
    if value is None:
        rank = len(proposal.shape) if isinstance(proposal, Tensor) else 1
        return [] if rank <= 1 else np.empty((0,) * rank, dtype=proposal.dtype)
    if isinstance(proposal, Sequence) or (isinstance(proposal, Tensor) and len(proposal.shape) == 1):
        return value if isinstance(value, list) else [value]
    return value


def read_jsonl(
    source: str | os.PathLike[str] | IO[Any], *, sample: int = 1000, encoding: str = "utf-8"
) -> Samples:
    """Samples of a JSON Lines file (``"-"``: stdin), with features proposed from the first lines.

    A key that is null or absent in any of the first ``sample`` lines is declared so that it can
    be missing: a scalar as a list of 0 or 1 values (``Tensor(shape=(None,))``), text as
    ``Sequence(Text())``, a list as it is; a missing value is stored as no value and reads back as
    an empty array. Keys follow :mod:`tfrec.convert.names` (a ``/`` nests).

    Raises:
        ConvertError: a line is not a JSON object, is not ``encoding`` text, lacks a key every
            earlier line had, or a value does not fit (names the line).

    Example:
        >>> next(iter(read_jsonl(io.StringIO('{"id": 1, "meta": {"lang": "en"}}\\n'))))
        {'id': 1, 'meta': {'lang': 'en'}}
    """
    lines, where = _lines(source)
    return samples_from_objects(_objects(lines, where, encoding), where, sample=sample)


def samples_from_objects(
    objects: Generator[tuple[int, dict[str, Any]], None, None],
    where: str,
    *,
    sample: int = 1000,
    unit: str = "line",
) -> Samples:
    """Samples of numbered JSON-like objects (``(number, dict)``), features proposed from the first
    ``sample`` as :func:`read_jsonl` proposes them; messages name the ``unit`` (``line 3``).

    Example:
        >>> samples_from_objects(((n, row) for n, row in enumerate(rows, 1)), "table", unit="row")
    """
    try:
        ahead = [(n, _keys(v, where, f"{unit} {n}")) for n, v in itertools.islice(objects, sample)]
        if not ahead:
            raise ConvertError(f"no {'JSON objects' if unit == 'line' else unit + 's'}", path=where)
        proposal: Any = None
        counts: dict[str, int] = {}
        for number, value in ahead:
            try:
                found = {
                    k: connector_from_value(v, k, fixed_shapes=False)
                    for k, v in _without_nulls(value).items()
                }
                proposal = found if proposal is None else merge_connectors(proposal, found, "")
            except ConvertError as exc:
                raise ConvertError(exc.problem, path=where, where=f"{unit} {number}") from None
        for _, value in ahead:
            _present(value, proposal, "", counts)
        declared, optional = _declare(proposal, counts, len(ahead))
        features = FeaturesDict(declared)
    except BaseException:
        objects.close()
        raise

    def samples() -> Iterator[dict[str, Any]]:
        with contextlib.closing(objects):
            rest = ((n, _keys(v, where, f"{unit} {n}")) for n, v in objects)
            for number, value in itertools.chain(ahead, rest):
                yield _filled(value, declared, optional, "", where, f"{unit} {number}")

    return Samples(features, samples(), where)
