"""CSV files -> samples, one per row, with typed columns (convert layer).

Column types are given (``age=int64``) or inferred from the first ``sample`` rows: int64 when
every non-empty cell is an integer, float32 when a number, text otherwise. An empty cell takes its
column's default (``decode_csv``'s ``record_defaults`` idea); an empty cell with no default is an
error for numbers and ``""`` for text. Column names follow :mod:`tfrec.convert.names` (a ``/``
nests; a byte order mark is dropped). Errors name the file, the row (1 = the first line) and the
column. Rows are read as a stream: only the inference sample is held at once.

Example:
    >>> samples = read_csv("iris.csv", types={"species": "text"}, defaults={"petal_width": "0"})
    >>> samples.features["sepal_length"]
    Tensor(shape=(), dtype=float32)
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from ..errors import ConvertError, InvalidArgumentError
from ..features import FeaturesDict
from .names import check_names, clean_name, nest
from .samples import Samples
from .types import coerce, connector_for, parse_pairs, parse_types

__all__ = ["infer_column_type", "read_csv"]


def infer_column_type(cells: Sequence[str]) -> str:
    """``"int64"``, ``"float32"`` or ``"text"``: the narrowest type every non-empty cell fits."""
    values = [cell.strip() for cell in cells if cell.strip()]
    if not values:
        return "text"
    for name, parse in (("int64", int), ("float32", float)):
        try:
            for value in values:
                parse(value)
        except ValueError:
            continue
        return name
    return "text"


MAX_LINE_BYTES = 256 << 20  # the longest line read: a file without line breaks cannot fill memory


class _LineTooLong(Exception):
    """Internal: a line is longer than MAX_LINE_BYTES."""


class _Lines:
    """The lines of a binary stream, decoded one at a time: an undecodable byte is found in its own
    line, with its byte offset (a text wrapper decodes 8 KiB ahead and says neither)."""

    def __init__(self, raw: IO[bytes], encoding: str) -> None:
        self.raw = raw
        self.decode = codecs.getdecoder(encoding)
        self.number = 0  # lines read so far
        self.offset = 0  # byte offset of the line read last

    def __iter__(self) -> Iterator[str]:
        readline, decode = self.raw.readline, self.decode
        while line := readline(MAX_LINE_BYTES + 1):
            self.number += 1
            if len(line) > MAX_LINE_BYTES:
                raise _LineTooLong
            yield decode(line)[0]
            self.offset += len(line)


def _line_by_line(encoding: str) -> bool:
    """Whether ``encoding`` keeps b"\\n" a line break byte (UTF-8, Latin-1, ...; not UTF-16)."""
    try:
        return b"a,\n".decode(encoding) == "a,\n"
    except (UnicodeDecodeError, LookupError):
        return False


def _open_lines(
    source: str | os.PathLike[str] | IO[Any], encoding: str
) -> tuple[Iterable[str], IO[Any] | None, str, _Lines | None]:
    """``(lines, file to close or None, name, line tracker or None)``."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if path == "-":
            raw: IO[bytes] = sys.stdin.buffer
            where, owned = "<stdin>", False
        else:
            try:
                raw = open(path, "rb")  # noqa: SIM115 (closed by _rows or read_csv)
            except FileNotFoundError:
                raise ConvertError("no such file", path=path) from None
            where, owned = path, True
    elif isinstance(source, io.TextIOBase):
        return source, None, str(getattr(source, "name", "<stream>")), None
    else:
        raw, where, owned = source, str(getattr(source, "name", "<stream>")), False
    if _line_by_line(encoding):
        lines = _Lines(raw, encoding)
        return lines, raw if owned else None, where, lines
    text = io.TextIOWrapper(raw, encoding=encoding, newline="")
    return text, text if owned else None, where, None


def _numbered(
    reader: Any, lines: _Lines | None, where: str, encoding: str
) -> Iterator[tuple[int, list[str]]]:
    """``(row number, cells)``, 1 = the first row; a malformed or undecodable row is a ConvertError
    naming the row, its line and (for a byte that does not decode) its byte offset."""
    number = 0
    try:
        for number, row in enumerate(reader, 1):
            yield number, row
    except csv.Error as exc:
        hint = ""
        if "field limit" in str(exc):
            hint = (
                f": a field holds at most {csv.field_size_limit()} characters (the csv module's "
                "field_size_limit, which Python code may raise with csv.field_size_limit(n))"
            )
        line = lines.number if lines is not None else reader.line_num
        raise ConvertError(
            f"malformed CSV: {exc}{hint}", path=where, where=f"row {number + 1}, line {line}"
        ) from None
    except UnicodeDecodeError as exc:
        if lines is None:  # decoded by a text wrapper, a block ahead: the row is not known exactly
            place = f"row {number + 1} or a later one"
        else:
            place = f"row {number + 1}, line {lines.number}, byte offset {lines.offset + exc.start}"
        bad = exc.object[exc.start : exc.start + 4]
        raise ConvertError(
            f"not {encoding} text: {exc.reason} (bytes {bytes(bad)!r}); is part of the file in "
            "another encoding? (pass encoding=)",
            path=where,
            where=place,
        ) from None
    except _LineTooLong:
        assert lines is not None
        raise ConvertError(
            f"a line longer than {MAX_LINE_BYTES} bytes: not a CSV file?",
            path=where,
            where=f"row {number + 1}, line {lines.number}, byte offset {lines.offset}",
        ) from None


def read_csv(
    source: str | os.PathLike[str] | IO[Any],
    *,
    types: Mapping[str, str] | str | None = None,
    defaults: Mapping[str, str] | str | None = None,
    header: bool = True,
    columns: Sequence[str] | None = None,
    delimiter: str = ",",
    sample: int = 1000,
    encoding: str = "utf-8",
) -> Samples:
    """Samples of a CSV file, one per row: ``{column: value}``.

    Args:
        source: a path (``"-"``: stdin), or a text or binary stream.
        types: ``{column: type}`` or ``"age=int64,name=text"`` (int64, float32, text, bytes);
            other columns are inferred from the first ``sample`` rows.
        defaults: ``{column: value}`` or ``"age=0"``: the value of an empty cell.
        header: the first row names the columns (with ``columns``, it is skipped).
        columns: the column names; needed when ``header=False`` (else ``col0``, ``col1``, ...).
        delimiter: the field separator.
        sample: rows read ahead to infer the types.

    Raises:
        ConvertError: a cell does not fit its column's type, a row has the wrong number of
            cells, an empty cell has no default (names the row and the column).

    Example:
        >>> next(iter(read_csv(io.StringIO("a,b\\n1,x\\n"))))
        {'a': 1, 'b': 'x'}
    """
    type_map = parse_types(types)
    default_map = dict(defaults) if isinstance(defaults, Mapping) else parse_pairs(defaults, "defaults")
    lines, owned, where, tracker = _open_lines(source, encoding)
    try:
        rows = _numbered(csv.reader(lines, delimiter=delimiter), tracker, where, encoding)
        names: list[str]
        if header:
            head = next(rows, None)
            if head is None:
                raise ConvertError("empty file: no header row", path=where)
            names = list(columns) if columns is not None else [clean_name(name) for name in head[1]]
        ahead = list(itertools.islice(rows, sample))
        if not header:
            width = len(ahead[0][1]) if ahead else 0
            names = list(columns) if columns is not None else [f"col{i}" for i in range(width)]
        nested = check_names(names, path=where, where="row 1")
        for mapping, what in ((type_map, "types"), (default_map, "defaults")):
            unknown = sorted(set(mapping) - set(names))
            if unknown:
                raise InvalidArgumentError(
                    f"{what}: no column {', '.join(map(repr, unknown))} in {where} "
                    f"(columns: {', '.join(names)})"
                )
        column_types = {
            name: type_map.get(name) or infer_column_type([row[i] for _, row in ahead if i < len(row)])
            for i, name in enumerate(names)
        }
    except BaseException:
        if owned is not None:
            owned.close()
        raise
    connectors = {name: connector_for(type_name) for name, type_name in column_types.items()}
    features = FeaturesDict(nest(connectors))
    for name, value in default_map.items():  # a bad default is an error now, not at the first empty cell
        coerce(value, column_types[name], where=f"defaults, column {name!r}")
    samples = _rows(owned, where, itertools.chain(ahead, rows), names, column_types, default_map)
    closer = owned.close if owned is not None else None
    return Samples(features, map(nest, samples) if nested else samples, where, closer)


def _nonempty(cell: str) -> str:
    if not cell.strip():
        raise ValueError("empty")
    return cell


_FAST: dict[str, Any] = {"int64": int, "float32": float, "text": str, "bytes": str.encode}


def _rows(
    owned: IO[Any] | None,
    where: str,
    rows: Iterator[tuple[int, list[str]]],
    names: list[str],
    column_types: dict[str, str],
    defaults: dict[str, str],
) -> Iterator[dict[str, Any]]:
    plan = [(name, column_types[name], defaults.get(name)) for name in names]
    # The fast path: one builtin per column; an empty or bad cell raises ValueError and the row is
    # redone cell by cell below, where defaults apply and errors are worded.
    fast = [
        _FAST[type_name] if type_name != "text" or default is None else _nonempty
        for _, type_name, default in plan
    ]
    try:
        for number, row in rows:
            if len(row) == len(plan):
                try:
                    yield {name: convert(cell) for name, convert, cell in zip(names, fast, row, strict=True)}
                    continue
                except ValueError:
                    pass
            if len(row) != len(plan):
                if not row:
                    continue  # a blank line
                raise ConvertError(
                    f"{len(row)} cells, expected {len(plan)} ({', '.join(names)})",
                    path=where,
                    where=f"row {number}",
                )
            sample = {}
            for (name, type_name, default), cell in zip(plan, row, strict=True):
                place = f"row {number}, column {name!r}"
                if not cell.strip():
                    if default is not None:
                        cell = default
                    elif type_name != "text":  # empty text is "", an empty number has no value
                        raise ConvertError(
                            f"empty cell and no default for this {type_name} column; "
                            f"give one with defaults {name}=VALUE",
                            path=where,
                            where=place,
                        )
                try:
                    sample[name] = coerce(cell, type_name, where=place)
                except ConvertError as exc:
                    raise ConvertError(
                        f"{exc.problem} (the column is {type_name})", path=where, where=place
                    ) from None
            yield sample
    finally:
        if owned is not None:
            owned.close()
