"""JSON Lines -> samples: one JSON object per line, nested objects -> nested features (convert layer).

Types are proposed from the first ``sample`` lines: integers -> int64 (float32 when the key also
holds fractions), strings -> Text, lists -> Tensors with unknown lengths, objects -> nested dicts.
Every line must have the keys of the proposal (null counts as missing). Objects and lists may nest
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
from ..features import FeaturesDict
from .samples import Samples, connector_from_value, merge_connectors

__all__ = ["MAX_NESTING", "read_jsonl"]

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


def _objects(lines: Lines, where: str) -> Generator[tuple[int, dict[str, Any]], None, None]:
    with contextlib.closing(lines):  # the file closes now, not when a cycle is collected
        yield from _parsed(lines, where)


def _parsed(lines: Lines, where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in lines:
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


def _check(value: Any, proposal: Any, key: str, where: str, number: int) -> None:
    if isinstance(proposal, dict):
        if not isinstance(value, dict):
            raise ConvertError(
                f"key {key!r}: expected an object, found {json.dumps(value)[:40]}",
                path=where,
                where=f"line {number}",
            )
        missing = sorted(k for k in proposal if value.get(k) is None)
        extra = sorted(set(value) - set(proposal))
        if missing or extra:
            found = (
                f"missing {', '.join(map(repr, missing))}"
                if missing
                else f"new keys {', '.join(map(repr, extra))}"
            )
            raise ConvertError(
                f"{'object ' + repr(key) + ' ' if key else ''}{found}; "
                "every line needs the keys of the first "
                "lines (give missing values, or leave the key out everywhere)",
                path=where,
                where=f"line {number}",
            )
        for name, child in proposal.items():
            _check(value[name], child, f"{key}/{name}" if key else name, where, number)


def read_jsonl(source: str | os.PathLike[str] | IO[Any], *, sample: int = 1000) -> Samples:
    """Samples of a JSON Lines file (``"-"``: stdin), with features proposed from the first lines.

    Raises:
        ConvertError: a line is not a JSON object, lacks a key, or a value does not fit (names the line).

    Example:
        >>> next(iter(read_jsonl(io.StringIO('{"id": 1, "meta": {"lang": "en"}}\\n'))))
        {'id': 1, 'meta': {'lang': 'en'}}
    """
    lines, where = _lines(source)
    objects = _objects(lines, where)
    try:
        ahead = list(itertools.islice(objects, sample))
        if not ahead:
            raise ConvertError("no JSON objects", path=where)
        proposal: Any = None
        for number, value in ahead:
            try:
                found = {
                    k: connector_from_value(v, k, fixed_shapes=False)
                    for k, v in value.items()
                    if v is not None
                }
                proposal = found if proposal is None else merge_connectors(proposal, found, "")
            except ConvertError as exc:
                raise ConvertError(exc.problem, path=where, where=f"line {number}") from None
        features = FeaturesDict(proposal)
    except BaseException:
        objects.close()
        raise

    def samples() -> Iterator[dict[str, Any]]:
        with contextlib.closing(objects):
            for number, value in itertools.chain(ahead, objects):
                _check(value, proposal, "", where, number)
                yield value

    return Samples(features, samples(), where)
