"""The commands that look at TFRecord files: inspect, head/cat, count, verify, index, salvage (cli layer)."""

from __future__ import annotations

import argparse
import contextlib
import gzip
import itertools
import json
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from typing import IO, Any

from ..convert import jsonable, load_features, record_to_json
from ..data import build_index, expand_paths, infer_features
from ..errors import DecodeError, EncodeError, InvalidArgumentError, SchemaError
from ..example import decode_sequence_example, encode_example
from ..features import FeaturesDict, Sequence, describe_features
from ..record import RecordWriter, resolve_compression
from ..record.files import describe_kind
from .peek import SHOWN_BYTES, WHOLE_BYTES, head_rows
from .progress import progress_bar
from .reading import Damage, Place, walk
from .survey import DEFAULT_SAMPLE, Survey, raw_file, survey

__all__ = ["count", "head", "index", "inspect", "salvage", "verify"]


def _files(paths: list[str]) -> list[str]:
    return expand_paths(paths)


def _report_damage(damage: list[Damage], out: IO[str]) -> None:
    for bad in damage:
        print(f"{bad.path}: record {bad.index}, offset {bad.offset}: {bad.message}", file=out)


# -- inspect ---------------------------------------------------------------------------------------


def _sequence_proposal(records: list[bytes]) -> dict[str, Any]:
    """Features for SequenceExamples: the context as Examples propose it, each feature list as a
    ``Sequence`` of what its steps propose."""
    contexts: list[bytes] = []
    steps: list[bytes] = []
    for record in records:
        context, lists = decode_sequence_example(record)
        contexts.append(encode_example({k: v for k, v in context.items() if v is not None}))
        steps.extend(
            encode_example({key: step})
            for key, values in lists.items()
            for step in values
            if step is not None
        )
    proposal: dict[str, Any] = dict(infer_features(contexts, sample=None).features)
    for key, feature in infer_features(steps, sample=None).features.items():
        proposal[key] = Sequence(feature)
    return proposal


def _propose(found: Survey) -> tuple[FeaturesDict | None, str | None]:
    """The proposed features of what inspect found, or why there are none."""
    try:
        if found.sequences:
            return FeaturesDict(_sequence_proposal(found.sequences)), None
        if found.sample:
            features = infer_features(found.sample, sample=None)
            return features, None
    except (DecodeError, EncodeError, SchemaError) as exc:
        return None, str(exc)
    return None, None


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
    sample = _sample_option(args.sample)
    found = survey(paths, args.progress, sample=sample, raw=args.raw)
    features, proposal_error = _propose(found)
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
        raw = " raw" if stats.raw else ""
        rows.append([stats.path, f"{stats.records}{raw}{damaged}", _size(stats.bytes), stats.compression])
    if len(found.files) > 1:
        rows.append(["total", str(found.records), _size(sum(s.bytes for s in found.files)), ""])
    _table(rows, out)
    print(file=out)
    if found.limited:
        print(
            f"records decoded: the first {found.decoded + found.raw} of {found.records} (--sample N, "
            "--sample all); the others counted from their headers, data CRCs unchecked (tfrec verify)\n",
            file=out,
        )
    if found.raw:
        shortest, longest = found.raw_sizes
        sizes = f"{shortest}" if shortest == longest else f"{shortest}..{longest}"
        print(
            f"raw records (not tf.train.Example): {found.raw} looked at, {sizes} bytes each; "
            "tfrec head shows them (text, else base64)",
            file=out,
        )
        if not found.keys:
            return 1 if found.damage else 0
        print(file=out)
    rows = [["key", "dtype", "values per record", "missing", "proposed feature"]]
    for key in sorted(found.keys):
        seen = found.keys[key]
        lengths = str(seen.longest) if seen.shortest == seen.longest else f"{seen.shortest}..{seen.longest}"
        if seen.sequence:
            lengths += " steps"
        missing = found.decoded - seen.present
        share = f"{missing} ({100 * missing / found.decoded:.0f}%)" if missing else "0"
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
    proposed_from = len(found.sample) + len(found.sequences)
    if features is not None and found.records - found.raw > proposed_from:
        print(f"\nproposed features: inferred from the first {proposed_from} records", file=out)
    if proposal_error:
        print(f"\nno features proposed: {proposal_error}", file=out)
    if found.damage:
        print(file=out)
        _report_damage(found.damage, out)
        return 1
    return 0


def _sample_option(value: str | None) -> int | None:
    if value is None:
        return DEFAULT_SAMPLE
    if value == "all":
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise InvalidArgumentError(f"inspect: --sample takes a count of 1 or more, or 'all'; not {value!r}")
    return number


def _proposed(features: FeaturesDict | None, key: str) -> str:
    """The proposal for a stored key: its feature, or the feature it is part of (``k`` holds
    ``k/ragged_flat_values``)."""
    node: Any = features
    for part in key.split("/"):
        while isinstance(node, Sequence) and isinstance(node.feature, FeaturesDict):
            node = node.feature
        children = (node.children() if node is not None else None) or {}
        if part not in children:
            break
        node = children[part]
    if node is None or node is features:
        return ""
    return describe_features(node).strip().split("\n")[0]


# -- head / cat ------------------------------------------------------------------------------------


def _records(paths: list[str], damage: list[Damage], limit: int | None) -> Iterator[tuple[str, int, bytes]]:
    places: Iterator[Place] = itertools.chain.from_iterable(walk(p, damage) for p in paths)
    for place in itertools.islice(places, limit):
        yield place.path, place.index, place.record


def _raw_rows(path: str, damage: list[Damage], limit: int | None, whole: bool) -> Iterator[Any]:
    """Raw records as JSON values: text when UTF-8, else ``{"b64": ...}``; cut short unless whole."""
    with contextlib.closing(walk(path, damage)) as places:
        for place in itertools.islice(places, limit):
            record = place.record
            if whole or len(record) <= WHOLE_BYTES:
                yield jsonable(record)
            else:
                yield {"truncated": jsonable(record[:SHOWN_BYTES]), "bytes": len(record)}


def head(args: argparse.Namespace) -> int:
    """``tfrec head|cat PATH... [-n N] [--features F] [--raw]``.

    A file whose first record is not an Example (or every file, with ``--raw``) is shown as raw
    records, one JSON value a line.
    """
    features = load_features(args.features) if args.features else None
    paths = _files(args.paths)
    damage: list[Damage] = []
    if args.n is not None and args.n < 0:
        raise InvalidArgumentError(f"{args.command}: -n must be 0 or more, not {args.n}")
    left = args.n if args.n is not None else (10 if args.command == "head" else None)
    for path in paths:
        if left is not None and left <= 0:
            break
        if args.raw or (features is None and raw_file(path)):
            rows: Iterator[Any] = _raw_rows(path, damage, left, whole=args.command == "cat")
        elif args.command == "head":  # large records streamed, values cut short
            rows = head_rows([path], damage, left, features, sequence=args.sequence)
        else:  # cat: every record whole (it exports)
            rows = (
                _json_row(path, index, record, features, args.sequence)
                for path, index, record in _records([path], damage, left)
            )
        for row in rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False))
            sys.stdout.write("\n")
            if left is not None:
                left -= 1
    sys.stdout.flush()
    if damage:
        _report_damage(damage, sys.stderr)
        return 1
    return 0


def _json_row(path: str, index: int, record: bytes, features: FeaturesDict | None, sequence: bool) -> Any:
    try:
        return record_to_json(record, features, sequence=sequence)
    except DecodeError as exc:
        raise DecodeError(f"{path}, record {index}: {exc}") from None


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
            raw = args.raw or raw_file(path)  # records that are not Examples: framing checked only
            for place in walk(path, damage):
                if raw:
                    intact += 1
                else:
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
            results.append((path, intact, len(damage), raw))
    finally:
        bar.close()
    if args.json:
        print(
            json.dumps(
                {
                    "files": [
                        {"path": p, "records": n, "problems": k, "examples": not raw}
                        for p, n, k, raw in results
                    ],
                    "problems": [d.to_json() for d in problems],
                }
            )
        )
    else:
        _report_damage(problems, sys.stdout)
        for path, intact, bad, raw in results:
            verdict = "OK" if not bad else f"{bad} problem{'s' if bad > 1 else ''}"
            kind = " (raw records, not tf.train.Example: framing and CRCs checked)" if raw else ""
            print(f"{path}: {intact} records{kind}, {verdict}")
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
