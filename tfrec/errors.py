"""The one exception hierarchy of tfrec, imported by every layer.

Every error derives from :class:`TfrecError` and also from the builtin a caller
would naturally catch (``ValueError``, ``EOFError``, ``LookupError``,
``ImportError``). Messages put the location first (file, record index, byte
offset, feature key), then the problem, then expected vs found, then a hint.
All of them survive pickling, so worker processes can ship them back.

Example:
    >>> import tfrec
    >>> try:
    ...     list(tfrec.read_records("broken.tfrecord"))
    ... except tfrec.ChecksumError as exc:
    ...     print(exc.path, exc.index, exc.offset, exc.part)
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = [
    "ChecksumError",
    "ConvertError",
    "DatasetStateError",
    "DecodeError",
    "EncodeError",
    "InvalidArgumentError",
    "MissingFeatureError",
    "MissingFileError",
    "OptionalDependencyError",
    "OutOfRangeError",
    "OutputExistsError",
    "RecordError",
    "RecordTypeError",
    "SchemaError",
    "ShardingError",
    "TfrecError",
    "TfrecWarning",
    "TruncatedRecordError",
    "WorkerError",
]


class TfrecError(Exception):
    """Base class of every error raised by tfrec."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only attributes are not in self.args; rebuild from __dict__
        # so that multiprocessing workers can send these errors back intact.
        return (_rebuild, (type(self), self.args, self.__dict__))


class TfrecWarning(UserWarning):
    """Warned when tfrec skips damaged data because it was asked to (``on_error="warn"``)."""


def _rebuild(cls: type[TfrecError], args: tuple[Any, ...], state: dict[str, Any]) -> TfrecError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, *args)
    exc.__dict__.update(state)
    return exc


# A location as _where writes it, at the start of a line: "<stream>" or a path, then ", record N"
# and ", offset N" when known, then ": " and the problem.
_LOCATION = re.compile(
    r"(?P<path>[^\n]+?)(?:, record (?P<index>\d+))?(?:, offset (?P<offset>\d+))?: (?P<problem>[^\n]*)"
)
_PATH_LIKE = re.compile(r"\S*[./\\]\S*")  # a file name without blanks: "x.tfrecord", "dir/x"
# "tfrec.errors.ChecksumError: ", how a traceback ends (and not a note such as "tfrec: out/x: ...")
_QUALIFIED = re.compile(r"[\w.]*Error: ")


def _location(line: str) -> tuple[str | None, int | None, int | None, str] | None:
    """``(path, index, offset, problem)`` when ``line`` starts with a location tfrec writes."""
    found = _LOCATION.match(line)
    if found is None:
        return None
    path, index, offset = found["path"], found["index"], found["offset"]
    if path != "<stream>" and index is None and offset is None and not _PATH_LIKE.fullmatch(path):
        return None  # "a problem: its detail" names no place
    return (
        None if path == "<stream>" else path,
        None if index is None else int(index),
        None if offset is None else int(offset),
        found["problem"],
    )


def _located_message(message: str) -> tuple[str | None, int | None, int | None, str] | None:
    """The location a whole error message starts with, else the one named by the last line of a
    traceback it holds (as torch's DataLoader passes a worker's error on); None when it names none.

    Example:
        >>> _located_message("x.tfrecord, record 3, offset 120: bad frame")
        ('x.tfrecord', 3, 120, 'bad frame')
    """
    first = _location(message)
    if first is not None:
        return first
    for line in reversed(message.splitlines()[1:]):
        qualified = _QUALIFIED.match(line)
        if qualified is not None and (found := _location(line[qualified.end() :])) is not None:
            return found
    return None


def _where(path: str | None, index: int | None, offset: int | None) -> str:
    parts = [f"{path}" if path is not None else "<stream>"]
    if index is not None:
        parts.append(f"record {index}")
    if offset is not None:
        parts.append(f"offset {offset}")
    return ", ".join(parts)


class RecordError(TfrecError, ValueError):
    """A TFRecord frame is malformed.

    Attributes:
        path: the file being read (``None`` for an anonymous stream).
        index: the number of the damaged record, counting from 0.
        offset: byte offset of the damaged record's header in the
            (decompressed) stream.

    Built from one string that already starts with a location (``str()`` of another RecordError),
    the message is kept as it is and the attributes are read from it.

    Example:
        >>> tfrec.RecordError("bad frame", path="x.tfrecord", index=3, offset=120).args[0]
        'x.tfrecord, record 3, offset 120: bad frame'
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | os.PathLike[str] | None = None,
        index: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.index = index
        self.offset = offset
        self.problem = problem
        if path is None and index is None and offset is None:
            known = _located_message(problem)
            if known is not None:  # a whole message, e.g. rebuilt by torch from str(exc)
                self.path, self.index, self.offset, self.problem = known
                super().__init__(problem)
                return
        super().__init__(f"{_where(self.path, index, offset)}: {problem}")


class ChecksumError(RecordError):
    """A stored CRC does not match the bytes it protects.

    Attributes:
        part: ``"length"`` or ``"data"``, which CRC failed.
        stored: the masked CRC found in the file.
        computed: the masked CRC of the bytes that were read.

    Built from a message alone, ``part``, ``stored`` and ``computed`` are read from it when it
    names them (``None`` otherwise).
    """

    def __init__(
        self,
        problem: str,
        *,
        part: str | None = None,
        stored: int | None = None,
        computed: int | None = None,
        path: str | os.PathLike[str] | None = None,
        index: int | None = None,
        offset: int | None = None,
    ) -> None:
        if part is None and stored is None and computed is None:
            named = _CRC_NAMED.search(problem)
            if named is not None:
                part = named["part"]
                stored, computed = int(named["stored"], 16), int(named["computed"], 16)
        self.part = part
        self.stored = stored
        self.computed = computed
        super().__init__(problem, path=path, index=index, offset=offset)


# How the record layer words a CRC mismatch (tfrec/record/frame.py), read back from a message.
_CRC_NAMED = re.compile(
    r"(?P<part>length|data) CRC mismatch[^\n]*?: "
    r"stored (?P<stored>0x[0-9a-f]+), computed (?P<computed>0x[0-9a-f]+)"
)


class TruncatedRecordError(RecordError, EOFError):
    """The stream ended inside a record (header, data or footer)."""


class DecodeError(TfrecError, ValueError):
    """Bytes are not a valid Example, or do not fit the requested spec.

    Attributes:
        key: the feature key, when one is at fault.
        index: the record's index in the batch being parsed, when known.
    """

    def __init__(self, message: str, *, key: str | None = None, index: int | None = None) -> None:
        self.key = key
        self.index = index
        super().__init__(message)


class WireError(DecodeError):
    """Bytes are not a well-formed protobuf message (internal: the parsers re-raise it as a
    :class:`DecodeError` that names the record; ``index`` is the record's place in the batch)."""


class SchemaError(TfrecError, ValueError):
    """A feature definition or parse spec is invalid."""


class EncodeError(TfrecError, ValueError):
    """A value does not fit the feature it is written to."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        self.key = key
        super().__init__(message)


class RecordTypeError(TfrecError, TypeError):
    """A record given to a writer is not bytes-like (bytes, bytearray, memoryview, a contiguous uint8
    array)."""


class MissingFeatureError(TfrecError, LookupError):
    """A required feature is absent from a record.

    Attributes:
        key: the missing feature's key.
        index: the record's index in the batch being parsed, when known.
    """

    def __init__(self, message: str, *, key: str | None = None, index: int | None = None) -> None:
        self.key = key
        self.index = index
        super().__init__(message)


class OptionalDependencyError(TfrecError, ImportError):
    """An optional package is needed; the message names the pip extra.

    Built from one string (a message), ``package`` and ``extra`` are read from it when it names them.

    Example:
        >>> str(tfrec.OptionalDependencyError("pyarrow", "parquet", "Writing Parquet"))
        "Writing Parquet needs the optional package 'pyarrow': install it with: pip install 'tfrec[parquet]'"
    """

    def __init__(self, package: str, extra: str | None = None, purpose: str | None = None) -> None:
        if extra is None or purpose is None:  # one string: a whole message
            named = _EXTRA_NAMED.search(package)
            self.package: str | None = named["package"] if named else None
            self.extra: str | None = named["extra"] if named else extra
            super().__init__(package)
            return
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs the optional package {package!r}: install it with: pip install 'tfrec[{extra}]'"
        )


_EXTRA_NAMED = re.compile(r"optional package '(?P<package>[^']+)'.*?pip install 'tfrec\[(?P<extra>[^\]]+)\]'")


# -- data layer: datasets over many files, sharded writing, random access ------------------------------


class MissingFileError(TfrecError, FileNotFoundError):
    """A file a dataset needs does not exist: a path, glob, brace pattern or directory that matched no
    file, or a shard, index or metadata file that is not there.

    Attributes:
        path: the path or pattern that is missing.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class InvalidArgumentError(TfrecError, ValueError):
    """An argument is invalid: a wrong combination of options, or a value out of its range.

    Example:
        >>> tfrec.ShardedWriter("out/train", num_shards=4, max_records=100)
        Traceback (most recent call last):
        InvalidArgumentError: ShardedWriter: give exactly one of num_shards, max_records, max_bytes ...
    """


class SchemaChoiceError(SchemaError, InvalidArgumentError):
    """Both ``features=`` and ``spec=`` were given, where one way to decode is chosen (internal: callers
    catch it as either base, a wrong schema or a wrong combination of arguments)."""


class OutOfRangeError(TfrecError, IndexError):
    """A record index is outside a random-access source (an IndexError, so ``for`` loops stop)."""


class ShardingError(TfrecError, ValueError):
    """The dataset cannot be split among its readers (ranks x workers x processes) without duplicates or
    empty readers: fewer files than readers, or fewer records when records are split."""


class DatasetStateError(TfrecError, ValueError):
    """A saved iterator state does not belong to this dataset (other files, stages or version)."""


class WorkerError(TfrecError, RuntimeError):
    """A reading worker process failed with an error that could not be sent back as it was.

    Attributes:
        worker: the number of the worker.
        details: the worker's formatted traceback.
    """

    def __init__(self, message: str, *, worker: int | None = None, details: str = "") -> None:
        self.worker = worker
        self.details = details
        super().__init__(message)


# -- converters and the command line ---------------------------------------------------------------


class ConvertError(TfrecError, ValueError):
    """Input data cannot be converted: a bad cell, a sample without a partner, a short record.

    Attributes:
        path: the input file (``None`` for a stream).
        where: the place in it: ``"row 17, column 'age'"``, ``"sample '000123'"``, ``"record 4"``.

    Built from one string (a message), the message is kept whole and ``path``/``where`` are ``None``.
    """

    def __init__(self, problem: str, *, path: str | None = None, where: str | None = None) -> None:
        self.path = path
        self.where = where
        self.problem = problem
        location = ", ".join(part for part in (path, where) if part)
        super().__init__(f"{location}: {problem}" if location else problem)


# -- writers: an output that is already there -------------------------------------------------------


class OutputExistsError(InvalidArgumentError, FileExistsError):
    """A writer found files where it was asked to write, and was not asked to replace them.

    Attributes:
        paths: the files found (shards of the prefix in any count, a file of the same name,
            a ``features.json`` or ``dataset_info.json``, temporary names of another writer).
        option: what allows the replacement (``"overwrite=True"``, ``"--overwrite"``).

    Example:
        >>> tfrec.write_dataset(samples, "out/train", features, num_shards=2)
        Traceback (most recent call last):
        OutputExistsError: out/train: found out/train-00000-of-00004.tfrecord, ...; pass overwrite=True ...
    """

    def __init__(self, message: str, *, paths: list[str] | None = None, option: str | None = None) -> None:
        self.paths = list(paths or [])
        self.option = option
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Built through __init__: an OSError cannot be made by ValueError.__new__ as _rebuild does.
        return (type(self), (str(self),), self.__dict__)
