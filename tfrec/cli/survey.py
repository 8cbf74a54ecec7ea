"""What ``tfrec inspect`` gathers: records per file, keys per record, and the raw records that are
not Examples (cli layer).

Records are decoded up to a sample (``--sample N``, 10,000 by default); the rest are counted from
their headers alone (uncompressed files) or by reading their frames (compressed ones), so a large
dataset is inspected in seconds. A file whose first record is not a tf.train.Example or
SequenceExample is a file of raw records (text, images, other protos): its records are counted and
measured, not decoded; ``--raw`` says so for every file.

Example:
    >>> found = survey(["data.tfrecord"], progress=False, sample=100)
    >>> found.records, sorted(found.keys)
    (5000, ['image', 'label'])
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

from ..data.index.scan import scan_index
from ..errors import DecodeError, TfrecError
from ..example import decode_sequence_example
from ..features import INFER_SAMPLE
from ..record import resolve_compression
from .peek import first_is_example
from .progress import progress_bar
from .reading import Damage, walk

__all__ = ["DEFAULT_SAMPLE", "FileStats", "KeyStats", "Survey", "is_example", "raw_file", "survey"]

DEFAULT_SAMPLE = 10_000  # records inspect decodes unless told otherwise


def is_example(record: bytes) -> bool:
    """Whether ``record`` parses as a tf.train.Example or SequenceExample."""
    try:
        decode_sequence_example(record)
    except DecodeError:
        return False
    return True


def raw_file(path: str) -> bool:
    """Whether the first intact record of ``path`` is not an Example (a file of raw records)."""
    return not first_is_example(path)


@dataclass
class KeyStats:
    """What the records held under one key."""

    kind: str = ""
    present: int = 0
    shortest: int | None = None
    longest: int = 0
    sequence: bool = False  # a SequenceExample feature list (lengths count steps)

    def see(self, kind: str, length: int) -> None:
        """One more record holds ``length`` values of ``kind`` under this key."""
        if kind and self.kind and kind != self.kind:
            self.kind = "mixed"
        elif kind:
            self.kind = kind
        self.present += 1
        self.shortest = length if self.shortest is None else min(self.shortest, length)
        self.longest = max(self.longest, length)


@dataclass
class FileStats:
    """One file's records, bytes and compression."""

    path: str
    compression: str
    bytes: int
    records: int = 0
    damaged: int = 0
    raw: bool = False  # the records are not Examples


@dataclass
class Survey:
    """Everything inspect found."""

    files: list[FileStats] = field(default_factory=list)
    keys: dict[str, KeyStats] = field(default_factory=dict)
    records: int = 0  # in all files
    decoded: int = 0  # Examples and SequenceExamples looked at
    sample: list[bytes] = field(default_factory=list)  # Examples to propose features from
    sequences: list[bytes] = field(default_factory=list)  # SequenceExamples to propose from
    raw: int = 0  # raw records looked at
    raw_sizes: list[int] = field(default_factory=lambda: [0, 0])  # shortest, longest
    damage: list[Damage] = field(default_factory=list)
    limited: bool = False  # records were left undecoded (beyond the sample)

    def see_raw(self, size: int) -> None:
        """One more raw record of ``size`` bytes."""
        self.raw_sizes = [min(self.raw_sizes[0], size) if self.raw else size, max(self.raw_sizes[1], size)]
        self.raw += 1


def _kind(value: Any) -> tuple[str, int]:
    if value is None:
        return "", 0
    if isinstance(value, list):
        return "bytes", len(value)
    return ("int64" if value.dtype.kind == "i" else "float32"), len(value)


def _header_count(path: str, damage: list[Damage]) -> int:
    """The records of ``path``, from its headers when it is uncompressed and intact; else by reading
    it (damage not yet in ``damage`` is added)."""
    if resolve_compression("auto", path) is None:
        with contextlib.suppress(TfrecError, OSError):
            return len(scan_index(path)[0])
    found: list[Damage] = []
    count = sum(1 for _ in walk(path, found))
    known = {(d.path, d.offset) for d in damage}
    damage.extend(d for d in found if (d.path, d.offset) not in known)
    return count


def _look(found: Survey, record: bytes, path: str, place: Any) -> bool:
    try:
        context, lists = decode_sequence_example(record)
    except DecodeError as exc:
        found.damage.append(Damage(path, place.index, place.offset, f"not an Example: {exc}"))
        return False
    found.decoded += 1
    for key, value in context.items():
        found.keys.setdefault(key, KeyStats()).see(*_kind(value))
    for key, steps in lists.items():
        entry = found.keys.setdefault(key, KeyStats(sequence=True))
        entry.see(_kind(steps[0])[0] if steps else "", len(steps))
    into = found.sequences if lists else found.sample
    if len(into) < INFER_SAMPLE:
        into.append(record)
    return True


def survey(
    paths: list[str], progress: bool | None, *, sample: int | None = None, raw: bool = False
) -> Survey:
    """Walk the records of ``paths``: the first ``sample`` (``None``: all) decoded, the rest counted."""
    found = Survey()
    bar = progress_bar(progress, "inspecting")
    try:
        for path in paths:
            stats = FileStats(path, resolve_compression("auto", path) or "none", os.path.getsize(path))
            before = len(found.damage)
            stats.raw = raw or raw_file(path)
            with contextlib.closing(walk(path, found.damage)) as places:
                for place in places:
                    if sample is not None and found.decoded + found.raw >= sample:
                        found.limited = True
                        break
                    if stats.raw:
                        found.see_raw(len(place.record))
                        stats.records += 1
                    elif _look(found, place.record, path, place):
                        stats.records += 1
                    bar.update(1)
            if found.limited:  # the rest of the file (and any file after it) is only counted
                stats.records = _header_count(path, found.damage)
            stats.damaged = len(found.damage) - before
            found.records += stats.records
            found.files.append(stats)
    finally:
        bar.close()
    return found
