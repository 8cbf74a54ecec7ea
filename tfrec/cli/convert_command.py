"""``tfrec convert SRC OUT``: data -> TFRecord shards; TFRecord -> JSON Lines or Parquet (cli layer).

OUT: a shard prefix (``out/train``), one file (``out/train.tfrecord``), or a directory (an existing
one, or a name ending in ``/``) that then holds the shards, named from SRC, and features.json. From
TFRecord input, ``.jsonl``/``.ndjson``/``.json`` and ``.parquet``/``.pq`` write those formats; an
OUT named like another format (``.csv``, ``.tar``, ...) is a usage error, never a TFRecord under it.

An earlier output at OUT (shards of the prefix in any count, the file, a features.json of other
features) is a usage error (exit 2) naming what was found, unless ``--overwrite``: the old set is
then removed once the new one is whole. TFRecord OUT may be a URL (fsspec).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from ..convert import (
    FEATURES_FILE,
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
    read_parquet,
    read_webdataset,
    records_to_jsonl,
    records_to_parquet,
    rename,
    write_samples,
)
from ..convert.pipeline import check_output, is_single_file, member_bytes
from ..convert.transforms import KEY
from ..convert.types import parse_pairs
from ..data import infer_features, write_dataset
from ..data.writing.names import TFRECORD_SUFFIXES
from ..errors import InvalidArgumentError, MissingFileError, OutputExistsError
from ..record.files import exists
from .reading import Damage, Place, walk

__all__ = ["FORMATS", "convert", "detect_format"]

FORMATS = ("tar", "csv", "jsonl", "parquet", "binary", "images", "tfrecord")
_SUFFIXES = {
    ".tar": "tar",
    ".tar.gz": "tar",
    ".tgz": "tar",
    ".csv": "csv",
    ".tsv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
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


# OUT suffixes: JSON Lines and Parquet are written from TFRecord input; these name other formats, which
# tfrec convert does not write: refused (exit 2) rather than a TFRecord file under another format's name.
JSONL_OUT = (".jsonl", ".ndjson", ".json")
PARQUET_OUT = (".parquet", ".pq")
_NOT_WRITTEN = (
    ".csv", ".tsv", ".txt", ".tar", ".tgz", ".tar.gz", ".zip", ".bin", ".npy", ".npz", ".arrow",
    ".feather", ".h5", ".hdf5", ".avro", ".xlsx", ".pkl",
)  # fmt: skip
_SHARD = re.compile(r"-\d{5}-of-\d{5}$")


def output_prefix(out: str, source: str) -> str:
    """OUT as written: an OUT ending in ``/`` or naming a directory holds shards named from SRC
    (``d/`` + ``data.csv`` -> ``d/data``), and so the features.json written beside them."""
    if out == "-" or not (out.endswith(("/", os.sep)) or os.path.isdir(out)):
        return out
    name = "" if source == "-" else os.path.basename(source.rstrip("/" + os.sep))
    name = re.split(r"[*?\[{]", name)[0]
    for suffix in sorted((*_SUFFIXES, *PARQUET_OUT, *JSONL_OUT, ".gz", ".zz"), key=len, reverse=True):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    name = _SHARD.sub("", name).rstrip("-_.")
    return os.path.join(out, name or "data")


def _check_output(out: str, kind: str) -> None:
    lower = out.lower()
    if lower.endswith(_NOT_WRITTEN):
        raise InvalidArgumentError(
            f"convert: OUT {out!r} names a format tfrec convert does not write; write TFRecord "
            "shards (a prefix like out/train, or out/train.tfrecord), or from TFRecord input "
            "JSON Lines (.jsonl) or Parquet (.parquet)"
        )
    if kind != "tfrecord" and (out == "-" or lower.endswith(JSONL_OUT + PARQUET_OUT)):
        raise InvalidArgumentError(
            f"convert: {kind} sources are written as TFRecord shards; OUT is a shard prefix like out/train"
        )


class _SeenKeys:
    """A transform that notes every key the samples had before the selections and renames."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def __call__(self, sample: dict[str, Any]) -> dict[str, Any]:
        self.keys.update(sample)
        return sample


def _all_named(samples: Iterator[dict[str, Any]], seen: _SeenKeys, args: argparse.Namespace) -> Any:
    """The samples; at their end, a usage error if --keep or --rename named a key no sample had
    (raised inside the write, which then leaves nothing behind)."""
    yield from samples
    named = {f"--keep {name}": name for name in _split(args.keep)}
    named.update({f"--rename {old}": old for old in parse_pairs(args.rename, "rename")})
    unknown = [option for option, name in named.items() if name not in seen.keys]
    if unknown:
        raise InvalidArgumentError(
            f"convert: {', '.join(unknown)}: no sample has such a key "
            f"(keys found: {', '.join(sorted(seen.keys - {KEY})) or 'none'})"
        )


def _transforms(args: argparse.Namespace, seen: _SeenKeys) -> list[Transform]:
    chain: list[Transform] = [seen] if args.keep or args.rename else []
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
    seen = _SeenKeys()
    transforms = _transforms(args, seen)
    if transforms and kind != "tar":
        raise InvalidArgumentError(
            "convert: --keep*, --rename, --drop-empty and --map apply to tar and directory sources"
        )
    features = load_features(args.features) if args.features else None
    stream = sys.stdin.buffer if source == "-" else source
    if kind == "tar":
        found = read_webdataset(
            stream, types=args.types, transforms=transforms, features=features, key_name=args.key_as
        )
        if args.keep or args.rename:
            found.samples = _all_named(found.samples, seen, args)
        return found
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
            encoding=args.encoding,
        )
    elif kind == "jsonl":
        samples = read_jsonl(source, encoding=args.encoding)
    elif kind == "parquet":
        if source == "-":
            raise InvalidArgumentError("convert: Parquet is read from a file, not stdin")
        samples = read_parquet(source)
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
        if out == "-" or lower.endswith(JSONL_OUT):
            features = load_features(args.features) if args.features else None
            if out == "-":
                records_to_jsonl(rows, sys.stdout, features=features)
            else:
                _atomic(out, lambda temp: _jsonl_file(rows, temp, features))
        elif lower.endswith(PARQUET_OUT):
            # Sampled (INFER_SAMPLE records) file after file: the first may lack keys that later files hold.
            features = _dataset_features(args.features, paths)
            _atomic(out, lambda temp: records_to_parquet(rows, temp, features))
        else:  # TFRecord -> TFRecord: re-shard and (re)compress, records as they are
            limit: dict[str, Any] = (
                {"max_records": args.max_records}
                if args.max_records
                else {"num_shards": args.num_shards or 1}
            )
            summary = write_dataset(
                rows_bytes(rows),
                out,
                compression=args.compression,
                progress=args.progress,
                index=args.index,
                gzip_member_bytes=member_bytes(args.compression, None),
                overwrite=args.overwrite,
                **limit,
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


def _dataset_features(given: str | None, paths: list[str]) -> Any:
    """--features, else the features.json beside the input (tfds' layout: it knows Text from
    bytes), else features inferred from the records."""
    if given:
        return load_features(given)
    beside = os.path.join(os.path.dirname(os.path.abspath(paths[0])), FEATURES_FILE) if paths else ""
    if beside and os.path.exists(beside):
        return load_features(beside)
    return infer_features(paths)


def rows_bytes(rows: Any) -> Any:
    """The records of ``(path, index, record)`` rows."""
    return (record for _, _, record in rows)


def _jsonl_file(rows: Any, path: str, features: Any) -> int:
    with open(path, "w", encoding="utf-8") as file:
        return records_to_jsonl(rows, file, features=features)


def _check_free(out: str, args: argparse.Namespace) -> None:
    """The TFRecord -> JSON Lines / Parquet / TFRecord output is not there, or --overwrite."""
    if out == "-" or args.overwrite:
        return
    if out.lower().endswith(JSONL_OUT + PARQUET_OUT):
        if exists(out):
            raise OutputExistsError(
                f"{out}: the file exists; pass --overwrite to replace it", paths=[out], option="--overwrite"
            )
        return
    check_output(out, None, single=False, compression=args.compression, option="--overwrite")


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
    if args.index and args.compression == "zlib":
        raise InvalidArgumentError(
            "convert: --index needs uncompressed or gzip shards: no record of a zlib stream can be reached "
            "by its offset"
        )
    for option, value in (("--num-shards", args.num_shards), ("--max-records", args.max_records)):
        if value is not None and value < 1:
            raise InvalidArgumentError(f"convert: {option} must be 1 or more, not {value}")
    kind = detect_format(source, args)
    out = output_prefix(out, source)
    _check_output(out, kind)
    if kind == "tfrecord":
        _check_free(out, args)
        return _from_tfrecord(source, out, args)
    samples = _samples(kind, source, args)
    try:  # before the input is read: a refusal costs nothing
        check_output(
            out,
            None if args.no_features_json else samples.features,
            single=is_single_file(out, args.num_shards, args.max_records),
            compression=args.compression,
            overwrite=args.overwrite,
            option="--overwrite",
        )
    except BaseException:
        samples.close()
        raise
    summary = write_samples(
        samples,
        out,
        num_shards=args.num_shards,
        max_records=args.max_records,
        compression=args.compression,
        progress=args.progress,
        save_features=not args.no_features_json,
        index=args.index,
        overwrite=args.overwrite,
    )
    if not args.quiet:
        for shard in summary.shards:
            print(f"{shard.path}\t{shard.records} records")
        print(
            f"{summary.records} records in {len(summary.shards)} file(s)",
            file=sys.stderr,
        )
        if not args.no_features_json:
            print(f"features: {os.path.join(os.path.dirname(out) or '.', FEATURES_FILE)}", file=sys.stderr)
    return 0
