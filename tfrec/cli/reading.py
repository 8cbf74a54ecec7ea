"""Walking TFRecord files for the commands: records with their place, and the damage passed over
(cli layer).

The reader is asked to skip damage (``on_error="warn"``); each warning is caught as it is raised,
when the reader's ``index`` and ``offset`` name the damaged record, so every bad record is
reported with its file, index and offset, and reading carries on after it.

Example:
    >>> damage = []
    >>> for place in walk("data.tfrecord", damage):
    ...     print(place.index, place.offset, len(place.record))
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import TfrecWarning
from ..record import RecordReader
from ..record.frame import FRAMING

__all__ = ["Damage", "Place", "bare_message", "walk"]


@dataclass(frozen=True)
class Place:
    """A record and where it is: file, number, byte offset of its frame."""

    path: str
    index: int
    offset: int
    record: bytes


@dataclass(frozen=True)
class Damage:
    """A damaged record (or stretch of bytes) the reader passed over."""

    path: str
    index: int
    offset: int
    message: str

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {"path": self.path, "index": self.index, "offset": self.offset, "error": self.message}


def bare_message(text: str, path: str) -> str:
    """A reader's message without its ``path, record N, offset M:`` prefix, which a Damage line
    already shows."""
    return re.sub(rf"^{re.escape(path)}, record \d+, offset \d+: ", "", text)


@contextlib.contextmanager
def _catching(reader: RecordReader, path: str, damage: list[Damage]) -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("always", TfrecWarning)
        shown = warnings.showwarning

        def show(
            message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
        ) -> None:
            if issubclass(category, TfrecWarning):
                text = bare_message(str(message).removeprefix("skipped damaged data: "), path)
                damage.append(Damage(path, reader.index, reader.offset, text))
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def walk(
    path: str | os.PathLike[str],
    damage: list[Damage],
    *,
    verify: bool = True,
    start_offset: int = 0,
    start_index: int = 0,
) -> Generator[Place, None, None]:
    """Every intact record of ``path`` (from the record at ``start_offset``, numbered
    ``start_index``); damaged ones are appended to ``damage`` and skipped."""
    name = os.fspath(path)
    reader = RecordReader(
        name, verify_checksums=verify, on_error="warn", start_offset=start_offset, start_index=start_index
    )
    with reader, _catching(reader, name, damage):
        for index_hint, record in enumerate(reader):
            del index_hint
            end = reader.offset
            yield Place(name, reader.index - 1, end - len(record) - FRAMING, record)
