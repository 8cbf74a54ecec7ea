"""Benchmark tfrec's record layer against TensorFlow, the `tfrecord` package and raw file I/O.

Run from the repository root (with tfrec importable, e.g. installed or via PYTHONPATH):

    python benchmarks/bench_record.py                        # every workload, best of 3
    python benchmarks/bench_record.py --quick                # 10x fewer records: a smoke run
    python benchmarks/bench_record.py --workloads 4KB 100KiB --repeat 5
    python benchmarks/bench_record.py --only-batched         # just the batched reads of 100KiB

In one run, every implementation writes the same seeded random records and reads the same file.
Files go to a temp dir under /dev/shm (tmpfs) when it exists, so a slow disk cannot hide CPU costs;
they are removed at the end. Each measurement is warmed up once, then the best of --repeat runs is
kept. MB/s counts file bytes (framing included), MB = 10**6 bytes.

Rows: tfrec with the CRC backend this process picks, and (read only) with verify_checksums=False;
tfrec with TFREC_CRC_BACKEND=crcmod, in a subprocess because the backend is fixed per process;
TensorFlow (a loop of TFRecordWriter.write; TFRecordDataset(path).batch(1024) iterated eagerly);
the `tfrecord` package, in a subprocess because it cannot be imported next to TensorFlow (read only:
its writer only takes feature dicts, not raw records; its reader checks no CRCs and yields a reused
buffer); the raw limit: readinto a preallocated 1 MiB bytearray, and 1 MiB writes of the same size.
Peers that are not installed are skipped.

Batched reads (the 100KiB workload, or any named with --batched): read_batches(path, n) at n = 16,
256 and 1024, with and without CRC checks, against read_records and against TensorFlow's
TFRecordDataset(path).batch(n) iterated eagerly (and record by record, against read_records), and
the raw 1 MiB reads in the same turns: the ceiling of one copy from the page cache; and the file
read into a reused map as long as a batch, by one thread and by two at once (each half of every
span, with os.preadv): the ceilings of read_batches' copy on one core and on two. "vs
read_records" compares with read_records measured in the same turns as that batch size. The
`tfrecord` package must run apart from TensorFlow: --tfrecord-python names an interpreter that has
it when this one (the one with TensorFlow) does not.
"""

from __future__ import annotations

import argparse
import filecmp
import itertools
import json
import mmap
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import _common
import numpy as np
from _common import best_time, print_lines, scratch_parent, versions

import tfrec
from tfrec.record import crc_backend
from tfrec.record.crc import releasing_crc_function

WORKLOADS = {  # name: (records, shortest, longest)
    "70B": (1_000_000, 70, 70),
    "60-80B": (1_000_000, 60, 80),
    "4KB": (100_000, 3900, 4200),
    "100KiB": (3_000, 102_400, 102_400),
}
CHUNK = 1 << 20  # raw I/O block size
BATCH_SIZES = (16, 256, 1024)
BATCHED = ("100KiB",)  # workloads whose batched reads are measured by default
SEED = 20240601
TF_LABEL = "TensorFlow"
TFRECORD_LABEL = "tfrecord pkg (no CRC check)"

Times = dict[str, float | None]  # "write"/"read": best seconds, None when not measured


def record_count(name: str, quick: bool) -> int:
    return WORKLOADS[name][0] // (10 if quick else 1)


def make_records(name: str, quick: bool) -> list[bytes]:
    """The workload's records: seeded, so subprocesses rebuild exactly the same ones."""
    count, low, high = record_count(name, quick), *WORKLOADS[name][1:]
    rng = np.random.default_rng([SEED, list(WORKLOADS).index(name)])
    ends = np.cumsum(rng.integers(low, high + 1, count)).tolist()
    blob = rng.bytes(ends[-1])
    return [blob[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]


def remover(path: str) -> Callable[[], None]:
    # Writes start from no file, so nobody pays for truncating the previous run's output.
    return lambda: os.remove(path) if os.path.exists(path) else None


# -- implementations: each returns the number of records it wrote or read -------------------------


def tfrec_write(path: str, records: list[bytes]) -> int:
    return tfrec.write_records(path, records)


def tfrec_read(path: str, verify: bool = True) -> int:
    n = 0
    for _ in tfrec.read_records(path, verify_checksums=verify):
        n += 1
    return n


def tf_write(tf: Any, path: str, records: list[bytes]) -> int:
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    return len(records)


def tf_read(tf: Any, path: str) -> int:
    n = 0
    for batch in tf.data.TFRecordDataset(path).batch(1024):
        n += int(batch.shape[0])
    return n


def tfrec_read_batches(path: str, size: int, verify: bool = True) -> int:
    n = 0
    for batch in tfrec.read_batches(path, size, verify_checksums=verify):
        n += len(batch)
    return n


def tf_read_records(tf: Any, path: str) -> int:
    n = 0
    for _ in tf.data.TFRecordDataset(path):
        n += 1
    return n


def tf_read_batches(tf: Any, path: str, size: int) -> int:
    n = 0
    for batch in tf.data.TFRecordDataset(path).batch(size):
        n += int(batch.shape[0])
    return n


def tfrecord_read(path: str) -> int:
    from tfrecord.reader import tfrecord_iterator  # type: ignore[import-untyped]

    n = 0
    for _ in tfrecord_iterator(path):
        n += 1
    return n


def raw_write(path: str, size: int, count: int) -> int:
    chunk = memoryview(bytes(range(256)) * (CHUNK // 256))
    with open(path, "wb") as f:
        for start in range(0, size, CHUNK):
            f.write(chunk[: min(CHUNK, size - start)])
    return count


def raw_read(path: str, count: int) -> int:
    buffer = bytearray(CHUNK)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buffer):
            pass
    return count


_SPANS: dict[int, mmap.mmap] = {}  # span size -> a map reused by every raw_spans run, as tfrec's pool does


def raw_spans(path: str, count: int, span: int, threads: int) -> int:
    """The file read with os.preadv into one reused map of ``span`` bytes after the other, each
    cut into ``threads`` parts read at once (the parts after the first by a helper thread): the
    ceiling of filling a batch's buffer, by one or by two threads, with no checks at all."""
    buffer = _SPANS.get(span)
    if buffer is None:
        buffer = _SPANS[span] = mmap.mmap(-1, span, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        buffer[:] = bytes(span)  # its pages faulted in once, not in the timed runs

    def read(fd: int, view: memoryview, at: int) -> None:
        while len(view):
            got = os.preadv(fd, [view], at)
            view, at = view[got:], at + got

    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        with memoryview(buffer) as whole, ThreadPoolExecutor(threads - 1 or 1) as helper:
            for at in range(0, size, span):
                length = min(span, size - at)
                cuts = [length * k // threads & ~(mmap.PAGESIZE - 1) for k in range(threads)] + [length]
                parts = [helper.submit(read, fd, whole[a:b], at + a) for a, b in itertools.pairwise(cuts[1:])]
                read(fd, whole[: cuts[1]], at)
                for part in parts:
                    part.result()
    finally:
        os.close(fd)
    return count


# -- subprocess peers -------------------------------------------------------------------------------


def peer_main(args: argparse.Namespace) -> int:
    """Subprocess mode: measure one peer on the reference file; print a JSON result."""
    name = args.workloads[0]
    reference = os.path.join(args.dir, f"{name}.tfrecord")
    count = record_count(name, args.quick)
    result: dict[str, Any]
    try:
        if args.peer == "crcmod":
            records = make_records(name, args.quick)
            label = f"tfrec ({crc_backend()})"
            out = os.path.join(args.dir, f"{name}.crcmod.tfrecord")
            write = best_time(lambda: tfrec_write(out, records), count, args.repeat, remover(out))
            same = filecmp.cmp(out, reference, shallow=False)
            os.remove(out)
            read = best_time(lambda: tfrec_read(reference), count, args.repeat)
            result = {"label": label, "write": write, "read": read, "same_bytes": same}
        else:
            import tfrecord  # type: ignore[import-untyped]  # noqa: F401

            read = best_time(lambda: tfrecord_read(reference), count, args.repeat)
            result = {"label": TFRECORD_LABEL, "write": None, "read": read}
    except (ImportError, tfrec.TfrecError) as exc:
        result = {"skipped": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result))
    return 0


def run_peer(peer: str, name: str, directory: str, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ, TFREC_CRC_BACKEND="crcmod") if peer == "crcmod" else None
    if peer == "tfrecord" and args.tfrecord_python:  # another interpreter: the one with the package
        command = [args.tfrecord_python, os.path.abspath(__file__), "--peer", peer, "--dir", directory]
        command += ["--workloads", name, "--repeat", str(args.repeat)] + (["--quick"] if args.quick else [])
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            return {"skipped": f"subprocess failed: {done.stderr.strip().splitlines()[-1:]}"}
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    return _common.run_peer(__file__, peer, name, directory, args, env)


# -- main run ---------------------------------------------------------------------------------------


def bench_workload(
    name: str, directory: str, tf: Any, args: argparse.Namespace
) -> tuple[dict[str, Times], bool]:
    """Measure every implementation on one workload; returns the rows and whether all checks passed."""
    records = make_records(name, args.quick)
    count, repeat = len(records), args.repeat
    reference = os.path.join(directory, f"{name}.tfrecord")
    rows: dict[str, Times] = {}
    ok = True
    checks = [f"every run counted {count:,} records", "tfrec reads back what it wrote"]

    if args.only_batched:  # just the batched reads' table (while iterating on them)
        tfrec_write(reference, records)
        bench_batches(name, reference, count, tf, rows, args)
        os.remove(reference)
        return rows, ok

    label = f"tfrec ({crc_backend()})"
    write = best_time(lambda: tfrec_write(reference, records), count, repeat, remover(reference))
    if list(tfrec.read_records(reference)) != records:
        print("CHECK FAILED: tfrec does not read back the records it wrote")
        ok = False
    rows[label] = {"write": write, "read": best_time(lambda: tfrec_read(reference), count, repeat)}
    read = best_time(lambda: tfrec_read(reference, verify=False), count, repeat)
    rows["tfrec (no verify)"] = {"write": None, "read": read}
    size = os.path.getsize(reference)

    if crc_backend() != "crcmod":
        peer = run_peer("crcmod", name, directory, args)
        if "skipped" in peer:
            print(f"tfrec (crcmod) skipped: {peer['skipped']}")
        else:
            rows[peer["label"]] = {"write": peer["write"], "read": peer["read"]}
            checks.append("the crcmod run wrote the same bytes")
            if not peer["same_bytes"]:
                print("CHECK FAILED: tfrec's file differs between CRC backends")
                ok = False

    if tf is not None:
        out = os.path.join(directory, f"{name}.tf.tfrecord")
        write = best_time(lambda: tf_write(tf, out, records), count, repeat, remover(out))
        if not filecmp.cmp(out, reference, shallow=False):
            print("CHECK FAILED: tfrec's file differs from TensorFlow's")
            ok = False
        os.remove(out)
        checks.append("tfrec's file == TensorFlow's, byte for byte")
        rows[TF_LABEL] = {"write": write, "read": best_time(lambda: tf_read(tf, reference), count, repeat)}

    peer = run_peer("tfrecord", name, directory, args)
    if "skipped" in peer:
        print(f"{TFRECORD_LABEL}: skipped: not installed ({peer['skipped']})")
    else:
        rows[peer["label"]] = {"write": None, "read": peer["read"]}

    if name in args.batched:
        bench_batches(name, reference, count, tf, rows, args)

    out = os.path.join(directory, f"{name}.raw")
    write = best_time(lambda: raw_write(out, size, count), count, repeat, remover(out))
    os.remove(out)
    rows["raw 1 MiB I/O (limit)"] = {
        "write": write,
        "read": best_time(lambda: raw_read(reference, count), count, repeat),
    }
    os.remove(reference)

    print("checks (failures are reported above): " + "; ".join(checks))
    print_table(name, count, size, rows)
    return rows, ok


def bench_batches(
    name: str, reference: str, count: int, tf: Any, rows: dict[str, Times], args: argparse.Namespace
) -> None:
    """read_batches at each batch size against read_records and TF's batched TFRecordDataset.

    For each batch size, the readers take turns (a warm-up round, then --repeat rounds; each keeps
    its best), so that a slow spell of a shared machine falls on all of them.
    """
    size = os.path.getsize(reference)
    mine: dict[int, tuple[float, float, float]] = {}  # batch: verified, unverified, read_records
    theirs: dict[int, float | None] = {}
    ceiling: dict[int, float] = {}  # the raw 1 MiB reads, in the same turns
    spans: dict[int, tuple[float, float]] = {}  # raw reads into a batch's span: 1 thread, 2 threads
    frame = (size // count) if count else 0
    for n in (1, *BATCH_SIZES):  # one batch size at a time, as a program reads
        cases: dict[str, Callable[[], int]] = {"records": lambda: tfrec_read(reference)}
        cases["raw"] = lambda: raw_read(reference, count)
        if n > 1:
            span = max(CHUNK, n * frame)
            cases["span 1"] = lambda span=span: raw_spans(reference, count, span, 1)
            cases["span 2"] = lambda span=span: raw_spans(reference, count, span, 2)
        if n == 1:
            cases["unverified"] = lambda: tfrec_read(reference, verify=False)
        else:
            cases["verified"] = lambda n=n: tfrec_read_batches(reference, n)
            cases["unverified"] = lambda n=n: tfrec_read_batches(reference, n, verify=False)
        if tf is not None:
            cases["TF"] = (
                (lambda: tf_read_records(tf, reference))
                if n == 1
                else lambda n=n: tf_read_batches(tf, reference, n)
            )
        best = take_turns(cases, count, args.repeat)
        mine[n] = (best.get("verified", best["records"]), best["unverified"], best["records"])
        theirs[n] = best.get("TF")
        ceiling[n] = best["raw"]
        if n > 1:
            spans[n] = (best["span 1"], best["span 2"])

    def rate(seconds: float | None) -> str:
        return f"{size / seconds / 1e6:,.0f}" if seconds else "-"

    def ratio(seconds: float | None, peer: float | None) -> str:
        return f"{peer / seconds:.2f}x" if seconds and peer else "-"

    lines = [("reading", "batch", "MB/s", "no verify MB/s", "vs read_records", "vs TF", "no verify vs TF")]
    for n, (verified, unverified, records) in mine.items():
        lines.append(
            (
                "read_records" if n == 1 else "read_batches",
                str(n),
                rate(verified),
                rate(unverified),
                ratio(verified, records),
                ratio(verified, theirs[n]),
                ratio(unverified, theirs[n]),
            )
        )
    if tf is not None:
        lines += [
            ("TF TFRecordDataset" + ("" if n == 1 else ".batch"), str(n), rate(theirs[n]), "", "", "", "")
            for n in (1, *BATCH_SIZES)
        ]
    # One copy from the page cache can go no faster than this: the rate a batched read could reach
    # if it cost nothing but its copy (vs TF: the ratio that would give).
    lines += [
        ("raw 1 MiB readinto, no checks", str(n), rate(ceiling[n]), "", "", ratio(ceiling[n], theirs[n]), "")
        for n in (1, *BATCH_SIZES)
    ]
    # Filling a batch's buffer (a reused map as long as the batch) by one thread, and by two threads
    # at once (each half of it): the ceilings of read_batches' copy on one core and on two.
    for threads in (1, 2):
        lines += [
            (
                f"raw pread into a batch's span, {threads} thread{'s' * (threads > 1)}",
                str(n),
                rate(spans[n][threads - 1]),
                "",
                "",
                ratio(spans[n][threads - 1], theirs[n]),
                "",
            )
            for n in BATCH_SIZES
        ]
    tfrecord = rows.get(TFRECORD_LABEL, {}).get("read")
    if tfrecord:
        lines.append(
            (TFRECORD_LABEL + ", earlier", "1", rate(tfrecord), "", ratio(mine[1][2], tfrecord), "", "")
        )
    print(f"\n== {name}: batched reads, CRCs checked unless said (vs: how many times faster tfrec is) ==")
    print_lines(lines)


def take_turns(cases: dict[Any, Callable[[], int]], expected: int, repeat: int) -> dict[Any, float]:
    """The best seconds of each case, the cases run in turn: a warm-up round, then ``repeat``."""
    times: dict[Any, list[float]] = {key: [] for key in cases}
    for _ in range(repeat + 1):
        for key, run in cases.items():
            times[key].append(_timed(run, expected))
    return {key: min(seconds[1:]) for key, seconds in times.items()}


def _timed(run: Callable[[], int], expected: int) -> float:
    start = time.perf_counter()
    count = run()
    seconds = time.perf_counter() - start
    if count != expected:
        raise SystemExit(f"error: a run counted {count} records, expected {expected}")
    return seconds


def print_table(name: str, count: int, size: int, rows: dict[str, Times]) -> None:
    def rate(seconds: float | None, amount: float, fmt: str) -> str:
        return format(amount / seconds, fmt) if seconds else "-"

    def ratio(row: Times, peer: str, kind: str) -> str:
        mine, theirs = row[kind], rows.get(peer, {}).get(kind)
        return f"{theirs / mine:.2f}x" if mine and theirs else "-"

    head = (
        "implementation",
        "write rec/s",
        "write MB/s",
        "read rec/s",
        "read MB/s",
        "read vs TF",
        "write vs TF",
        "read vs tfrecord",
    )
    lines = [head]
    for label, row in rows.items():
        lines.append(
            (
                label,
                rate(row["write"], count, ",.0f"),
                rate(row["write"], size / 1e6, ",.1f"),
                rate(row["read"], count, ",.0f"),
                rate(row["read"], size / 1e6, ",.1f"),
                ratio(row, TF_LABEL, "read"),
                ratio(row, TF_LABEL, "write"),
                ratio(row, TFRECORD_LABEL, "read"),
            )
        )
    low, high = WORKLOADS[name][1:]
    lengths = f"{low} bytes" if low == high else f"{low}..{high} bytes"
    print(f"\n== {name}: {count:,} records of {lengths}, file {size / 1e6:,.1f} MB ==")
    print_lines(lines)


def main(argv: list[str] | None = None) -> int:
    parser = _common.arguments(__doc__.splitlines()[0], list(WORKLOADS), ["crcmod", "tfrecord"])
    parser.add_argument("--batched", nargs="*", choices=list(WORKLOADS), default=list(BATCHED))
    parser.add_argument("--tfrecord-python", help="an interpreter with the tfrecord package")
    parser.add_argument(
        "--only-batched",
        action="store_true",
        help="only the batched reads' table, of the --batched workloads",
    )
    args = parser.parse_args(argv)
    if args.peer:
        return peer_main(args)

    tf, tf_version = _common.optional_tf()
    # The CRCs of large records read in batches are taken with crc32c when it is installed (off the GIL).
    spans = "crc32c" if releasing_crc_function() is not None else crc_backend()
    print(versions(tf_version, f"CRC backend {crc_backend()}, large records' CRCs by {spans}"))
    if tf is None:
        print(f"{TF_LABEL}: skipped: not installed")
    print(f"best of {args.repeat} after a warm-up" + (", --quick (10x fewer records)" if args.quick else ""))
    ok = True
    parent = scratch_parent()
    with tempfile.TemporaryDirectory(prefix="bench_record_", dir=parent) as directory:
        print(f"files in {directory}", flush=True)
        for name in args.batched if args.only_batched else args.workloads:
            ok = bench_workload(name, directory, tf, args)[1] and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
