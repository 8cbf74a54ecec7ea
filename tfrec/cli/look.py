"""The commands that look at TFRecord files: inspect, head/cat, count, verify, index, salvage (cli layer)."""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ..convert import jsonable, load_features, records_to_jsonl
from ..data import build_index, expand_paths
from ..errors import DecodeError, InvalidArgumentError, SchemaError
from ..example import decode_sequence_example
from ..features import FeaturesDict, describe_features, infer_features
from ..record import RecordWriter, resolve_compression
from ..record.files import describe_kind
from .progress import progress_bar
from .reading import Damage, Place, walk

__all__ = ["count", "head", "index", "inspect", "salvage", "verify"]

_INFER_SAMPLE = 1000  # records the proposed features are inferred from


def _files(paths: list[str]) -> list[str]:
    return expand_paths(paths)


def _report_damage(damage: list[Damage], out: IO[str]) -> None:
    for bad in damage:
        print(f"{bad.path}: record {bad.index}, offset {bad.offset}: {bad.message}", file=out)


# -- inspect ---------------------------------------------------------------------------------------


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


@dataclass
class Survey:
    """Everything inspect found."""

    files: list[FileStats] = field(default_factory=list)
    keys: dict[str, KeyStats] = field(default_factory=dict)
    records: int = 0
    sample: list[bytes] = field(default_factory=list)
    damage: list[Damage] = field(default_factory=list)


def _kind(value: Any) -> tuple[str, int]:
    if value is None:
        return "", 0
    if isinstance(value, list):
        return "bytes", len(value)
    return ("int64" if value.dtype.kind == "i" else "float32"), len(value)


def survey(paths: list[str], progress: bool | None) -> Survey:
    """Walk every record of ``paths`` once, gathering per-file and per-key statistics."""
    found = Survey()
    bar = progress_bar(progress, "inspecting")
    try:
        for path in paths:
            stats = FileStats(path, resolve_compression("auto", path) or "none", os.path.getsize(path))
            before = len(found.damage)
            for place in walk(path, found.damage):
                try:
                    context, lists = decode_sequence_example(place.record)
                except DecodeError as exc:
                    found.damage.append(Damage(path, place.index, place.offset, f"not an Example: {exc}"))
                    continue
                stats.records += 1
                for key, value in context.items():
                    found.keys.setdefault(key, KeyStats()).see(*_kind(value))
                for key, steps in lists.items():
                    entry = found.keys.setdefault(key, KeyStats(sequence=True))
                    entry.see(_kind(steps[0])[0] if steps else "", len(steps))
                if len(found.sample) < _INFER_SAMPLE and not lists:
                    found.sample.append(place.record)
                bar.update(1)
            stats.damaged = len(found.damage) - before
            found.records += stats.records
            found.files.append(stats)
    finally:
        bar.close()
    return found


def _size(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000  # type: ignore[assignment]
    return str(count)


def _table(rows: list[list[str]], out: IO[str]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip(), file=out)


def inspect(args: argparse.Namespace) -> int:
    """``tfrec inspect PATH...``."""
    paths = _files(args.paths)
    found = survey(paths, args.progress)
    features: FeaturesDict | None = None
    proposal_error = None
    if found.sample:
        try:
            features = infer_features(found.sample, sample=None)
        except (DecodeError, SchemaError) as exc:
            proposal_error = str(exc)
    if args.json is not None:
        if features is None:
            print(
                f"tfrec inspect: no features to write: {proposal_error or 'no Example records'}",
                file=sys.stderr,
            )
            return 1
        text = json.dumps(features.to_json(), indent=4, sort_keys=True)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as file:
                file.write(text + "\n")
        return 1 if found.damage else 0
    out = sys.stdout
    rows = [["file", "records", "bytes", "compression"]]
    for stats in found.files:
        damaged = f" ({stats.damaged} damaged)" if stats.damaged else ""
        rows.append([stats.path, f"{stats.records}{damaged}", _size(stats.bytes), stats.compression])
    if len(found.files) > 1:
        rows.append(["total", str(found.records), _size(sum(s.bytes for s in found.files)), ""])
    _table(rows, out)
    print(file=out)
    rows = [["key", "dtype", "values per record", "missing", "proposed feature"]]
    for key in sorted(found.keys):
        seen = found.keys[key]
        lengths = str(seen.longest) if seen.shortest == seen.longest else f"{seen.shortest}..{seen.longest}"
        if seen.sequence:
            lengths += " steps"
        missing = found.records - seen.present
        share = f"{missing} ({100 * missing / found.records:.0f}%)" if missing else "0"
        proposed = _proposed(features, key)
        rows.append(
            [
                key,
                seen.kind or "(no kind)",
                lengths + ("" if seen.shortest != seen.longest else " (fixed)"),
                share,
                proposed,
            ]
        )
    _table(rows, out)
    if proposal_error:
        print(f"\nno features proposed: {proposal_error}", file=out)
    if found.damage:
        print(file=out)
        _report_damage(found.damage, out)
        return 1
    return 0


def _proposed(features: FeaturesDict | None, key: str) -> str:
    node: Any = features
    for part in key.split("/"):
        children = node.children() if node is not None else {}
        if part not in children:
            return ""
        node = children[part]
    return describe_features(node).strip().split("\n")[0] if node is not None else ""


# -- head / cat ------------------------------------------------------------------------------------


def _records(paths: list[str], damage: list[Damage], limit: int | None) -> Iterator[tuple[str, int, bytes]]:
    places: Iterator[Place] = itertools.chain.from_iterable(walk(p, damage) for p in paths)
    for place in itertools.islice(places, limit):
        yield place.path, place.index, place.record


def head(args: argparse.Namespace) -> int:
    """``tfrec head|cat PATH... [-n N] [--features F]``."""
    features = load_features(args.features) if args.features else None
    paths = _files(args.paths)
    damage: list[Damage] = []
    limit = args.n if args.n is not None else (10 if args.command == "head" else None)
    records_to_jsonl(_records(paths, damage, limit), sys.stdout, features=features, sequence=args.sequence)
    sys.stdout.flush()
    if damage:
        _report_damage(damage, sys.stderr)
        return 1
    return 0


# -- count -----------------------------------------------------------------------------------------


def count(args: argparse.Namespace) -> int:
    """``tfrec count PATH...``."""
    paths = _files(args.paths)
    damage: list[Damage] = []
    total = 0
    bar = progress_bar(args.progress, "counting")
    try:
        for path in paths:
            number = 0
            for _ in walk(path, damage):
                number += 1
                bar.update(1)
            total += number
            if len(paths) > 1:
                print(f"{number}\t{path}")
    finally:
        bar.close()
    print(f"{total}\ttotal" if len(paths) > 1 else total)
    if damage:
        _report_damage(damage, sys.stderr)
        return 1
    return 0


# -- verify ----------------------------------------------------------------------------------------


def verify(args: argparse.Namespace) -> int:
    """``tfrec verify PATH...``: every CRC, and every record parses; exit 1 on any problem."""
    paths = _files(args.paths)
    bar = progress_bar(args.progress, "verifying")
    problems: list[Damage] = []
    results = []
    try:
        for path in paths:
            damage: list[Damage] = []
            intact = 0
            for place in walk(path, damage):
                try:
                    decode_sequence_example(place.record)
                    intact += 1
                except DecodeError as exc:
                    damage.append(
                        Damage(path, place.index, place.offset, f"the record does not parse: {exc}")
                    )
                bar.update(1)
            damage.sort(key=lambda d: d.offset)
            problems.extend(damage)
            results.append((path, intact, len(damage)))
    finally:
        bar.close()
    if args.json:
        print(
            json.dumps(
                {
                    "files": [{"path": p, "records": n, "problems": k} for p, n, k in results],
                    "problems": [d.to_json() for d in problems],
                }
            )
        )
    else:
        _report_damage(problems, sys.stdout)
        for path, intact, bad in results:
            verdict = "OK" if not bad else f"{bad} problem{'s' if bad > 1 else ''}"
            print(f"{path}: {intact} records, {verdict}")
    return 1 if problems else 0


# -- index -----------------------------------------------------------------------------------------


def index(args: argparse.Namespace) -> int:
    """``tfrec index PATH...``: write PATH.idx next to each file."""
    for path in _files(args.paths):
        print(build_index(path))
    return 0


# -- salvage ---------------------------------------------------------------------------------------


def _stream_size(path: str) -> int:
    """The size of the (decompressed) record stream of ``path``."""
    codec = resolve_compression("auto", path)
    if codec is None:
        return os.path.getsize(path)
    total = 0
    if codec == "gzip":
        with gzip.open(path, "rb") as file:
            try:
                while chunk := file.read(1 << 20):
                    total += len(chunk)
            except (OSError, EOFError, zlib.error):
                pass  # a damaged stream: what decompressed is all the reader saw
        return total
    decompressor = zlib.decompressobj()
    with open(path, "rb") as raw:
        try:
            while chunk := raw.read(1 << 20):
                total += len(decompressor.decompress(chunk))
        except zlib.error:
            pass
    return total


def lost_ranges(places: Iterator[Place], end: int, on_record: Any) -> list[tuple[int, int]]:
    """Hand each intact record to ``on_record``; return the byte ranges between them, up to ``end``."""
    lost = []
    expected = 0
    for place in places:
        if place.offset > expected:
            lost.append((expected, place.offset))
        on_record(place.record)
        expected = place.offset + len(place.record) + 16
    if end > expected:
        lost.append((expected, end))
    return lost


def salvage(args: argparse.Namespace) -> int:
    """``tfrec salvage BAD OUT``: copy every intact record into OUT; report the lost byte ranges."""
    source, out = args.bad, args.out
    if not os.path.exists(source):
        raise FileNotFoundError(f"{source}: no such file")
    mode = os.stat(source).st_mode
    if not stat.S_ISREG(mode):  # a FIFO or a device may never end: nothing could be reported as lost
        raise InvalidArgumentError(
            f"{source} is {describe_kind(mode)}, not a regular file; salvage reads a file "
            "whose end is known (copy the stream to a file first)"
        )
    if os.path.abspath(source) == os.path.abspath(out):
        raise ValueError("salvage: OUT must differ from BAD (BAD is read while OUT is written)")
    damage: list[Damage] = []
    bar = progress_bar(args.progress, "salvaging")
    writer = RecordWriter(out)
    kept = 0

    def keep(record: bytes) -> None:
        nonlocal kept
        writer.write(record)
        kept += 1
        bar.update(1)

    try:
        lost = lost_ranges(walk(source, damage), _stream_size(source), keep)
    except BaseException:
        partial = writer.abort()
        if partial is not None and os.path.exists(partial):
            os.remove(partial)
        raise
    finally:
        bar.close()
    writer.close()
    lost_bytes = sum(stop - start for start, stop in lost)
    if args.json:
        print(
            json.dumps(
                jsonable(
                    {
                        "kept": kept,
                        "out": out,
                        "lost": [list(r) for r in lost],
                        "lost_bytes": lost_bytes,
                        "damage": [d.to_json() for d in damage],
                    }
                )
            )
        )
    else:
        _report_damage(damage, sys.stderr)
        print(f"{out}: kept {kept} intact records of {source}")
        if lost:
            unit = (
                "offsets in the decompressed stream"
                if resolve_compression("auto", source)
                else "byte offsets"
            )
            print(f"lost {lost_bytes} bytes in {len(lost)} range(s) ({unit}, [start, end)):")
            for start, stop in lost:
                print(f"  [{start}, {stop})  {stop - start} bytes")
        else:
            print("nothing was lost")
    return 0
