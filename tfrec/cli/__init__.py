"""The ``tfrec`` command (``python -m tfrec``): look inside TFRecord files and convert data to and from them.

Exit status: 0 when all went well, 1 for a data error (a damaged record, a bad CSV cell, a missing
file), 2 for a usage error (an unknown option or type name, a bad layout).

Example:
    >>> from tfrec.cli import main
    >>> main(["verify", "out/digits-*.tfrecord"])
    0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import InvalidArgumentError, OptionalDependencyError, TfrecError
from . import convert_command, look
from .progress import want_progress
from .survey import DEFAULT_SAMPLE

__all__ = ["build_parser", "main"]

# Every example below runs as shown from the root of a source checkout (tests/cli run them all, in
# this order: the main examples, then each command's).
_EPILOG = """\
examples:
  tfrec convert examples/digits.tar.gz out/digits --num-shards 4
  tfrec inspect out/digits-*.tfrecord
  tfrec verify out/digits-*.tfrecord
  tfrec head -n 2 out/digits-00000-of-00004.tfrecord

exit status: 0 ok, 1 data error (damage, bad input), 2 usage error.
"""

_EXAMPLES = {
    "convert": """\
  tfrec convert examples/digits.tar.gz out/digits --num-shards 4 --types cls=int64,png=image --overwrite
  tfrec convert examples/digits.tar.gz out/train/ --keep png,cls --rename png=image,cls=label
  tfrec convert examples/iris.csv out/iris/iris.tfrecord --types species=text --defaults petal_width=0
  tfrec convert examples/iris.csv out/iris2/      # out/iris2/iris-00000-of-00001.tfrecord, features.json
  cat examples/iris.csv | tfrec convert --from csv - out/stdin/
  tfrec convert out/digits-00000-of-00004.tfrecord digits.jsonl   # or .parquet (tfrec[parquet])
  tfrec convert out/iris/iris.tfrecord iris.jsonl
  tfrec convert iris.jsonl out/from_jsonl/ --compression gzip""",
    "inspect": "tfrec inspect out/digits-*.tfrecord\n"
    "  tfrec inspect --sample 100 --json proposed.json out/digits-00000-of-00004.tfrecord",
    "head": "tfrec head -n 3 out/digits-00000-of-00004.tfrecord\n"
    "  tfrec head --features out/features.json out/digits-00000-of-00004.tfrecord",
    "cat": "tfrec cat out/digits-00000-of-00004.tfrecord > digits-0.jsonl\n"
    "  tfrec cat 'out/digits-*.tfrecord' | wc -l",
    "count": "tfrec count 'out/digits-*.tfrecord'",
    "verify": "tfrec verify out/digits-*.tfrecord\n  tfrec verify --json out/digits-00000-of-00004.tfrecord",
    "index": "tfrec index out/digits-*.tfrecord   # writes out/digits-00000-of-00004.tfrecord.idx, ...",
    "salvage": "tfrec salvage out/digits-00001-of-00004.tfrecord rescued.tfrecord",
}


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str, **kwargs: object
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=help,
        epilog="example:\n  " + _EXAMPLES[name].lstrip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,  # type: ignore[arg-type]
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--progress", action="store_true", help="a progress bar even when not on a terminal")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tfrec`` command."""
    parser = argparse.ArgumentParser(
        prog="tfrec",
        description="Look inside TFRecord files, and convert data to and from them (no TensorFlow needed).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"tfrec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    paths = {
        "nargs": "+",
        "metavar": "PATH",
        "help": "files, globs ('shards/*.tfrecord'), brace patterns or directories",
    }

    p = _command(
        sub,
        "inspect",
        "files, records, bytes, compression and the features found, with lengths and missing counts",
    )
    p.add_argument("paths", **paths)  # type: ignore[arg-type]
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the proposed features.json (to FILE, or stdout)",
    )
    p.add_argument(
        "--sample",
        metavar="N",
        help=f"decode the first N records (default {DEFAULT_SAMPLE}; all), count the rest from headers",
    )
    p.add_argument("--raw", action="store_true", help="the records are not Examples: count and measure them")
    p.set_defaults(run=look.inspect)

    for name, text in (
        ("head", "the first records as JSON Lines (-n 10), values of records over 1 MiB cut short"),
        ("cat", "every record as JSON Lines, values whole"),
    ):
        p = _command(sub, name, text + '; bytes as UTF-8 text when they decode, else {"b64": ...}')
        p.add_argument("paths", **paths)  # type: ignore[arg-type]
        p.add_argument("-n", type=int, default=None, metavar="N", help="records to print")
        p.add_argument(
            "--features", metavar="F", help="features.json (or its directory): print decoded values"
        )
        p.add_argument(
            "--sequence", action="store_true", help="with --features: the records are SequenceExamples"
        )
        p.add_argument(
            "--raw",
            action="store_true",
            help="show records as they are (text, else base64), not as Examples; the default for a "
            "file whose first record is not an Example",
        )
        p.set_defaults(run=look.head)

    p = _command(sub, "count", "count the records (every CRC checked)")
    p.add_argument("paths", **paths)  # type: ignore[arg-type]
    p.set_defaults(run=look.count)

    p = _command(sub, "verify", "check every CRC and that every record parses; exit 1 when anything is wrong")
    p.add_argument("paths", **paths)  # type: ignore[arg-type]
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument(
        "--raw",
        action="store_true",
        help="the records are not Examples: check framing and CRCs only (the default for a file "
        "whose first record is not an Example)",
    )
    p.set_defaults(run=look.verify)

    p = _command(
        sub,
        "index",
        "write PATH.idx: DALI's tfrecord2idx format for uncompressed files, a gzip index for .gz files "
        "written as gzip members (tfrec convert --compression gzip, ShardedWriter(index=True))",
    )
    p.add_argument("paths", **paths)  # type: ignore[arg-type]
    p.set_defaults(run=look.index)

    p = _command(
        sub, "salvage", "copy every intact record of a damaged file into a new one; report what was lost"
    )
    p.add_argument("bad", metavar="BAD")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.set_defaults(run=look.salvage)

    p = _command(
        sub,
        "convert",
        "convert tar/webdataset, CSV, JSON Lines, Parquet, fixed-length binary or image folders to "
        "TFRecord shards; TFRecord to JSON Lines or Parquet",
    )
    p.add_argument("src", metavar="SRC", help="input file or directory ('-': stdin, with --from)")
    p.add_argument(
        "out",
        metavar="OUT",
        help="shard prefix (out/train), one file (out/train.tfrecord), a directory (out/ : shards "
        "named from SRC, and features.json, inside), or .jsonl/.parquet/'-' for TFRecord input; "
        "a URL (s3://, gs://, memory://...) with fsspec installed",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier output at OUT (its shards in any count, a differing features.json); "
        "the old set is removed once the new one is whole",
    )
    p.add_argument(
        "--from",
        dest="source_format",
        choices=convert_command.FORMATS,
        help="input format (default: from SRC)",
    )
    p.add_argument("--features", metavar="F", help="features.json to store (or read) samples with")
    p.add_argument("--num-shards", type=int, metavar="N", help="write N shards (default 1)")
    p.add_argument("--max-records", type=int, metavar="N", help="start a new shard every N records")
    p.add_argument(
        "--compression",
        choices=("gzip", "zlib"),
        help="compress the shards (gzip: as a series of 1 MiB gzip members, which can be indexed)",
    )
    p.add_argument(
        "--index",
        action="store_true",
        help="also write SHARD.idx beside each shard (uncompressed or gzip; as tfrec index does)",
    )
    p.add_argument(
        "--no-features-json", action="store_true", help="do not write features.json beside the shards"
    )
    group = p.add_argument_group("tar, directories and CSV")
    group.add_argument(
        "--types", metavar="K=T,...", help="types by key or column: int64, float32, text, bytes, image"
    )
    group = p.add_argument_group("tar and directories (webdataset layout; go-tfdata selections)")
    group.add_argument("--keep", action="append", metavar="K,...", help="keep these keys (extensions)")
    group.add_argument("--keep-prefix", action="append", metavar="P,...", help="keep keys starting with P")
    group.add_argument("--keep-suffix", action="append", metavar="S,...", help="keep keys ending with S")
    group.add_argument("--keep-contains", action="append", metavar="S,...", help="keep keys containing S")
    group.add_argument("--rename", metavar="OLD=NEW,...", help="rename keys")
    group.add_argument("--drop-empty", action="store_true", help="drop samples left with no value")
    group.add_argument(
        "--map", action="append", metavar="MODULE:FUNCTION", help="call FUNCTION(sample) -> sample or None"
    )
    group.add_argument("--key-as", metavar="NAME", help="also store each sample's __key__ as text under NAME")
    p.add_argument(
        "--encoding", default="utf-8", metavar="E", help="text encoding of CSV and JSON Lines (default utf-8)"
    )
    group = p.add_argument_group("CSV")
    group.add_argument("--defaults", metavar="COL=V,...", help="values for empty cells")
    group.add_argument("--no-header", action="store_true", help="the first row is data")
    group.add_argument("--columns", metavar="A,B,...", help="column names (replace the header's)")
    group.add_argument("--delimiter", metavar="C", help="field separator (default , or a tab for .tsv)")
    group = p.add_argument_group("fixed-length binary records")
    group.add_argument(
        "--layout",
        metavar="SPEC",
        help="fields NAME:DTYPE[:SHAPE[:ORDER]], e.g. label:uint8,image:uint8:3x32x32:hwc",
    )
    group.add_argument("--header-bytes", type=int, default=0, metavar="N", help="bytes to skip at the start")
    group.add_argument("--footer-bytes", type=int, default=0, metavar="N", help="bytes to skip at the end")
    group = p.add_argument_group("image folders")
    group.add_argument(
        "--shuffle-seed", type=int, metavar="S", help="write images in a random order from seed S"
    )
    p.set_defaults(run=convert_command.convert)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tfrec`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    Example:
        >>> main(["count", "data.tfrecord"])
        1000
        0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse reported
        return exc.code if isinstance(exc.code, int) else 2
    args.progress = want_progress(args.quiet, args.progress)
    try:
        return int(args.run(args))
    except InvalidArgumentError as exc:
        print(f"tfrec {args.command}: {exc}", file=sys.stderr)
        return 2
    except OptionalDependencyError as exc:
        print(f"tfrec {args.command}: {exc}", file=sys.stderr)
        return 1
    except (TfrecError, OSError, ValueError) as exc:
        if isinstance(exc, BrokenPipeError):
            return _broken_pipe()
        print(f"tfrec {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tfrec {args.command}: interrupted", file=sys.stderr)
        return 130


def _broken_pipe() -> int:
    """The reader of our output went away (``tfrec cat x | head``): stop quietly."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0
