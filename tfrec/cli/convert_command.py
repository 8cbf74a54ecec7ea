"""``tfrec convert SRC OUT``: data -> TFRecord shards; TFRecord -> JSON Lines or Parquet (cli layer)."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Iterator
from typing import Any

from ..convert import (
    Samples,
    Transform,
    drop_empty,
    keep,
    load_features,
    load_function,
    parse_types,
    read_csv,
    read_fixed_records,
    read_image_folder,
    read_jsonl,
    read_webdataset,
    records_to_jsonl,
    records_to_parquet,
    rename,
    write_samples,
)
from ..convert.types import parse_pairs
from ..data import infer_features, write_dataset
from ..data.writing.names import TFRECORD_SUFFIXES
from ..errors import InvalidArgumentError, MissingFileError
from .reading import Damage, Place, walk

__all__ = ["FORMATS", "convert", "detect_format"]

FORMATS = ("tar", "csv", "jsonl", "binary", "images", "tfrecord")
_SUFFIXES = {
    ".tar": "tar",
    ".tar.gz": "tar",
    ".tgz": "tar",
    ".csv": "csv",
    ".tsv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".bin": "binary",
    **dict.fromkeys((*TFRECORD_SUFFIXES, ".tfrecords"), "tfrecord"),
}


def detect_format(source: str, args: argparse.Namespace) -> str:
    """The input format: --from, else the suffix, else what a directory holds."""
    if args.source_format:
        return str(args.source_format)
    if args.layout:
        return "binary"
    if source != "-" and os.path.isdir(source):
        entries = [e for e in os.scandir(source) if not e.name.startswith(".")]
        return "images" if entries and all(e.is_dir() for e in entries) else "tar"
    name = source.lower()
    for suffix, found in sorted(_SUFFIXES.items(), key=lambda item: -len(item[0])):
        if name.endswith(suffix):
            return found
    if "-of-" in name or "*" in name:
        return "tfrecord"
    raise InvalidArgumentError(
        f"convert: cannot tell the format of {source!r} from its name; pass --from {{{','.join(FORMATS)}}}"
    )


def _transforms(args: argparse.Namespace) -> list[Transform]:
    chain: list[Transform] = []
    selections = {
        "names": _split(args.keep),
        "prefixes": _split(args.keep_prefix),
        "suffixes": _split(args.keep_suffix),
        "substrings": _split(args.keep_contains),
    }
    if any(selections.values()):
        chain.append(keep(**selections))
    if args.rename:
        chain.append(rename(parse_pairs(args.rename, "rename")))
    if args.drop_empty:
        chain.append(drop_empty())
    for spec in args.map or []:
        chain.append(load_function(spec))
    return chain


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def _samples(kind: str, source: str, args: argparse.Namespace) -> Samples:
    transforms = _transforms(args)
    if transforms and kind != "tar":
        raise InvalidArgumentError(
            "convert: --keep*, --rename, --drop-empty and --map apply to tar and directory sources"
        )
    features = load_features(args.features) if args.features else None
    stream = sys.stdin.buffer if source == "-" else source
    if kind == "tar":
        return read_webdataset(
            stream, types=args.types, transforms=transforms, features=features, key_name=args.key_as
        )
    if kind == "csv":
        delimiter = args.delimiter or ("\t" if source.lower().endswith(".tsv") else ",")
        columns = _split([args.columns]) if args.columns else None
        samples = read_csv(
            source,
            types=args.types,
            defaults=args.defaults,
            header=not args.no_header,
            columns=columns,
            delimiter=delimiter,
        )
    elif kind == "jsonl":
        samples = read_jsonl(source)
    elif kind == "binary":
        if not args.layout:
            raise InvalidArgumentError(
                "convert: fixed-length binary records need --layout, e.g. label:uint8,image:uint8:3x32x32:hwc"
            )
        samples = read_fixed_records(
            source, args.layout, header_bytes=args.header_bytes, footer_bytes=args.footer_bytes
        )
    elif kind == "images":
        samples = read_image_folder(source, shuffle_seed=args.shuffle_seed)
    else:
        raise InvalidArgumentError(f"convert: unknown source format {kind!r}")
    if kind != "csv" and args.types:
        parse_types(args.types)  # an unknown type name is reported even where types do not apply
        raise InvalidArgumentError(f"convert: --types applies to tar, directory and CSV sources, not {kind}")
    if features is not None:
        samples.features = features
    return samples


class _Damaged(Exception):
    """Internal: the input held damaged records; raised after the last row, so writers abort."""


def _intact(places: Iterator[Place], damage: list[Damage]) -> Iterator[tuple[str, int, bytes]]:
    """``(path, index, record)`` of each intact record; raises _Damaged at the end if any was not."""
    for place in places:
        yield place.path, place.index, place.record
    if damage:
        raise _Damaged


def _from_tfrecord(source: str, out: str, args: argparse.Namespace) -> int:
    from ..data import expand_paths

    paths = expand_paths([source])
    damage: list[Damage] = []
    rows = _intact(itertools.chain.from_iterable(walk(p, damage) for p in paths), damage)
    lower = out.lower()
    try:
        if out == "-" or lower.endswith((".jsonl", ".ndjson", ".json")):
            features = load_features(args.features) if args.features else None
            if out == "-":
                records_to_jsonl(rows, sys.stdout, features=features)
            else:
                _atomic(out, lambda temp: _jsonl_file(rows, temp, features))
        elif lower.endswith((".parquet", ".pq")):
            # Sampled (INFER_SAMPLE records) file after file: the first may lack keys that later files hold.
            features = load_features(args.features) if args.features else infer_features(paths)
            _atomic(out, lambda temp: records_to_parquet(rows, temp, features))
        else:  # TFRecord -> TFRecord: re-shard and (re)compress, records as they are
            limit: dict[str, Any] = (
                {"max_records": args.max_records}
                if args.max_records
                else {"num_shards": args.num_shards or 1}
            )
            summary = write_dataset(
                rows_bytes(rows), out, compression=args.compression, progress=args.progress, **limit
            )
            for path in summary.paths:
                print(path)
    except _Damaged:
        for bad in damage:
            print(f"{bad.path}: record {bad.index}, offset {bad.offset}: {bad.message}", file=sys.stderr)
        result = "the output above is incomplete" if out == "-" else f"nothing was written to {out}"
        print(
            f"tfrec convert: {len(damage)} damaged record(s) in the input: {result} "
            "(tfrec salvage BAD OUT copies the intact records of a damaged file)",
            file=sys.stderr,
        )
        return 1
    return 0


def rows_bytes(rows: Any) -> Any:
    """The records of ``(path, index, record)`` rows."""
    return (record for _, _, record in rows)


def _jsonl_file(rows: Any, path: str, features: Any) -> int:
    with open(path, "w", encoding="utf-8") as file:
        return records_to_jsonl(rows, file, features=features)


def _atomic(out: str, write: Any) -> None:
    """Write through a hidden temporary name, renamed to ``out`` only when complete."""
    directory, name = os.path.split(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.pending")
    try:
        write(temp)
        os.replace(temp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temp)
        raise


def convert(args: argparse.Namespace) -> int:
    """``tfrec convert SRC OUT``."""
    source, out = args.src, args.out
    if source != "-" and not any(c in source for c in "*?[{") and not os.path.exists(source):
        raise MissingFileError(f"{source}: no such file or directory", path=source)
    if args.num_shards is not None and args.max_records is not None:
        raise InvalidArgumentError("convert: give --num-shards or --max-records, not both")
    kind = detect_format(source, args)
    if kind == "tfrecord":
        return _from_tfrecord(source, out, args)
    if out == "-" or out.lower().endswith((".jsonl", ".parquet")):
        raise InvalidArgumentError(
            f"convert: {kind} sources are written as TFRecord shards; OUT is a shard prefix like out/train"
        )
    samples = _samples(kind, source, args)
    summary = write_samples(
        samples,
        out,
        num_shards=args.num_shards,
        max_records=args.max_records,
        compression=args.compression,
        progress=args.progress,
        save_features=not args.no_features_json,
    )
    if not args.quiet:
        for shard in summary.shards:
            print(f"{shard.path}\t{shard.records} records")
        print(
            f"{summary.records} records in {len(summary.shards)} file(s)",
            file=sys.stderr,
        )
    return 0
