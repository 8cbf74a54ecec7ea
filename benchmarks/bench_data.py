"""Benchmark tfrec's dataset pipeline against tf.data, and its DataLoader path against the tfrecord package.

Run from the repository root (with tfrec importable, e.g. installed or via PYTHONPATH):

    python benchmarks/bench_data.py                                   # everything TF-side, median of 3
    python benchmarks/bench_data.py --quick --repeat 1                # 10x fewer records: a smoke run
    python benchmarks/bench_data.py --torch-python /path/to/python    # the torch rows with that python
    python benchmarks/bench_data.py --tfrec-only --workloads image    # the two tfrec rows only, to iterate

Workloads (the records of bench_parse.py, written round-robin into 16 shards):
  image: 100,000 records of ~3.7 KB: "image" 3 KiB bytes, "label" int64, "embedding" 128 float32,
         "tokens" 32 int64, "text" a short string;
  small: 1,000,000 records of three scalars: "label" int64, "score" float32, "id" int64.

Rows, each a full pipeline over the 16 shards: per-epoch file shuffling, interleave of 4 files, a
shuffle buffer of 10,000 records, batches of 1024, parsed to arrays (every feature,
FixedLenFeature):
  tfrec, num_workers=0 and num_workers=2: TFRecordDataset(shuffle_files=True, cycle_length=4,
    spec=..., persistent_workers=True).shuffle(10_000).batch(1024), built once and iterated every run
    as the tf.data pipeline is (the reading processes, started in the warm-up round, serve every run,
    as they serve every epoch of a training loop);
  tf.data: Dataset.from_tensor_slices(files).shuffle(16).interleave(TFRecordDataset, cycle_length=4,
    num_parallel_calls=AUTOTUNE).shuffle(10_000).batch(1024).map(parse_example, AUTOTUNE)
    .prefetch(AUTOTUNE), iterated in graph mode (tensors are not converted to numpy);
  torch DataLoader(num_workers=2), in a subprocess (the tfrecord package cannot share a process with
    TensorFlow): tfrec.torch.TFRecordIterableDataset with the pipeline above and batch_size=None,
    against tfrecord.torch.MultiTFRecordDataset(shuffle_queue_size=10_000, infinite=False) with
    DataLoader(batch_size=1024) (it shards by index files, built untimed; it checks no CRC and does
    not parse "text": its collate cannot stack strings of different lengths).
One file: read_batches(1024) + parse_example on the first shard, against TF's
  TFRecordDataset(path).batch(1024).map(parse_example, AUTOTUNE); a shard is read in tens of
  milliseconds, so these rows take the median of at least 7 rounds (both alike).
Each row is the median of --repeat rounds (after a warm-up round), wall time and CPU time alike.
"cores" is CPU time (this process and its reading processes) over wall time; "CPU us/record" is
that CPU time per record, which load on a shared machine disturbs far less than wall time. A line
after each table splits num_workers=2's CPU time per record between the consumer and the reading
processes, and gives the hand-over's share: what two processes spend beyond one process's work
(packing into shared memory, unpacking, pipes), from which the speed on more cores can be predicted.
Ratios are records/s over the peer's.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import _common
from _common import print_lines, scratch_parent, versions
from bench_parse import WORKLOADS as PARSE_WORKLOADS
from bench_parse import make_records, tf_spec, tfrec_spec

import tfrec
from tfrec.data import TFRecordDataset

SHARDS = 16
CYCLE = 4
BUFFER = 10_000
BATCH = 1024
SEED = 0
WORKLOADS = {"image": "a", "small": "b"}  # our names -> bench_parse's workloads
TFREC_LABEL = "tfrec TFRecordDataset"
TFREC_WORKERS_LABEL = "tfrec TFRecordDataset num_workers=2"
TF_LABEL = "tf.data (AUTOTUNE)"
TORCH_LABEL = "tfrec.torch + DataLoader(2 workers)"
TFRECORD_LABEL = "tfrecord pkg MultiTFRecordDataset + DataLoader(2 workers)"
ONE_FILE_LABEL = "tfrec read_batches + parse_example"
TF_ONE_FILE_LABEL = "TF TFRecordDataset.batch().map(parse_example)"
ONE_FILE_REPEAT = 7  # rounds of the one-file rows at least (median kept)
TARGETS = [  # (workload, row, peer, minimum speedup, what the issue asks)
    ("image", TFREC_WORKERS_LABEL, TFREC_LABEL, 1.5, "num_workers=2 >= 1.5x one process (image)"),
    ("image", TFREC_WORKERS_LABEL, TF_LABEL, 2.2, "tfrec >= 2.2x tf.data on image-like"),
    ("small", TFREC_WORKERS_LABEL, TF_LABEL, 5.0, "tfrec >= 5x tf.data on small"),
    ("image", TORCH_LABEL, TFRECORD_LABEL, 3.0, "tfrec.torch >= 3x tfrecord pkg (image)"),
    ("small", TORCH_LABEL, TFRECORD_LABEL, 3.0, "tfrec.torch >= 3x tfrecord pkg (small)"),
]

# Median wall seconds, median CPU seconds (reading processes included), median CPU seconds of this process.
Timing = tuple[float, float, float]


UNREAPED_CPU = [0.0]  # CPU seconds of reading processes that are not our children (forked by a fork server)
_COUNTED: dict[int, float] = {}  # CPU seconds of each such process already in UNREAPED_CPU (they persist)


def cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime + UNREAPED_CPU[0]


def count_reading_processes(batches: Any) -> None:
    """Add the CPU time of the iterator's reading processes that RUSAGE_CHILDREN will not count.

    A fork server's children are its own, not ours: read their CPU time from /proc (Linux) while
    they are alive, before the iterator closes. Spawned processes are ours and counted when reaped.
    """
    pool = getattr(batches, "_pool", None)
    for p in pool.processes if pool is not None else ():
        try:
            with open(f"/proc/{p.process.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()  # after the command name
        except OSError:
            continue
        if int(fields[1]) != os.getpid():  # its parent (ppid) is not us
            seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            UNREAPED_CPU[0] += seconds - _COUNTED.get(p.process.pid, 0.0)
            _COUNTED[p.process.pid] = seconds


def timed_runs(runs: dict[str, Callable[[], int]], expected: int, repeat: int) -> dict[str, Timing]:
    """Each run's median of ``repeat`` rounds after a warm-up; the runs take turns within a round.

    The median, not the best: on a loaded machine a lucky round of one row is not its speed.
    """
    seen: dict[str, list[Timing]] = {label: [] for label in runs}
    for attempt in range(repeat + 1):
        for label, run in runs.items():
            wall, cpu, own = time.perf_counter(), cpu_seconds(), time.process_time()
            count = run()
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            own = time.process_time() - own
            if count != expected:
                raise SystemExit(f"error: {label}: a run counted {count} records, expected {expected}")
            if attempt:
                seen[label].append((wall, cpu, own))
    return {label: median_timing(times) for label, times in seen.items() if times}


def median_timing(times: list[Timing]) -> Timing:
    middle = len(times) // 2
    return tuple(sorted(column)[middle] for column in zip(*times, strict=True))  # type: ignore[return-value]


def cpu_split(name: str, rows: dict[str, Timing], count: int) -> None:
    """CPU per record of one process and of the reading processes, and what the hand-over costs.

    With N processes the work is the one process's plus the hand-over (packing into shared memory,
    the consumer's unpacking, pipes): on a machine with C cores the pipeline can reach about
    C / (CPU us per record with N processes) records per us, where the consumer keeps up.
    """
    one, many = rows.get(TFREC_LABEL), rows.get(TFREC_WORKERS_LABEL)
    if one is None or many is None:
        return
    single, total, consumer = one[1] / count * 1e6, many[1] / count * 1e6, many[2] / count * 1e6
    share = (total - single) / total if total else 0.0
    print(
        f"{name}: CPU us/record: one process {single:.2f}; num_workers=2 {total:.2f} "
        f"(consumer {consumer:.2f}, reading processes {total - consumer:.2f}); "
        f"hand-over share {share:.0%} of the CPU time; the consumer alone keeps up with "
        f"{1e6 / consumer / 1e3 if consumer else float('inf'):,.0f} k rec/s per core it has"
    )


def write_shards(name: str, directory: str, quick: bool) -> tuple[list[str], int]:
    records = make_records(WORKLOADS[name], quick)
    paths = []
    for shard in range(SHARDS):
        path = os.path.join(directory, f"{name}-{shard:05d}-of-{SHARDS:05d}.tfrecord")
        tfrec.write_records(path, records[shard::SHARDS])
        paths.append(path)
    return paths, len(records)


def fields(name: str) -> Any:
    return PARSE_WORKLOADS[WORKLOADS[name]][1]


# -- implementations: each returns the number of records it delivered -------------------------------


def tfrec_pipeline(paths: list[str], spec: dict[str, Any], workers: int, count: int) -> Callable[[], int]:
    # Built once and iterated every run, as the tf.data pipeline is; the reading processes are
    # kept between iterators (persistent_workers), as a training loop over epochs keeps them.
    ds = (
        TFRecordDataset(
            paths,
            spec=spec,
            shuffle_files=True,
            cycle_length=CYCLE,
            num_workers=workers,
            seed=SEED,
            persistent_workers=workers > 0,
        )
        .shuffle(BUFFER)
        .batch(BATCH)
    )
    key = next(iter(spec))

    def run() -> int:
        n = 0
        with iter(ds) as batches:
            while n < count:  # stop at the last record, before the end closes the reading processes
                n += len(next(batches)[key])
            count_reading_processes(batches)
            n += sum(len(batch[key]) for batch in batches)  # none: the count is checked
        return n

    return run


def tf_pipeline(tf: Any, paths: list[str], spec: dict[str, Any]) -> Callable[[], int]:
    autotune = tf.data.AUTOTUNE
    key = next(iter(spec))
    parse = tf.autograph.experimental.do_not_convert(lambda x: tf.io.parse_example(x, spec))
    dataset = (
        tf.data.Dataset.from_tensor_slices(paths)
        .shuffle(len(paths), seed=SEED)
        .interleave(tf.data.TFRecordDataset, cycle_length=CYCLE, num_parallel_calls=autotune)
        .shuffle(BUFFER, seed=SEED)
        .batch(BATCH)
        .map(parse, num_parallel_calls=autotune)
        .prefetch(autotune)
    )

    def run() -> int:
        n = 0
        for out in dataset:
            n += int(out[key].shape[0])
        return n

    return run


def tfrec_one_file(path: str, spec: dict[str, Any]) -> int:
    key = next(iter(spec))
    return sum(len(tfrec.parse_example(batch, spec)[key]) for batch in tfrec.read_batches(path, BATCH))


def tf_one_file(tf: Any, path: str, spec: dict[str, Any]) -> Callable[[], int]:
    key = next(iter(spec))
    parse = tf.autograph.experimental.do_not_convert(lambda x: tf.io.parse_example(x, spec))
    dataset = tf.data.TFRecordDataset(path).batch(BATCH).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return lambda: sum(int(out[key].shape[0]) for out in dataset)


def bench_one_file(name: str, path: str, tf: Any, args: argparse.Namespace) -> None:
    """read_batches + parse_example on one shard against TF's TFRecordDataset.batch().map(parse_example)."""
    count = sum(1 for _ in tfrec.read_records(path))
    runs: dict[str, Callable[[], int]] = {
        ONE_FILE_LABEL: lambda: tfrec_one_file(path, tfrec_spec(fields(name)))
    }
    if tf is not None:
        runs[TF_ONE_FILE_LABEL] = tf_one_file(tf, path, tf_spec(tf, fields(name)))
    # One shard is read in tens of milliseconds: more rounds than the pipelines get, for both.
    rows = timed_runs(runs, count, max(args.repeat, ONE_FILE_REPEAT))
    lines = [("one file", "records/s", "cores", "CPU us/record", "vs TF")]
    for label, (wall, cpu, _) in rows.items():
        peer = rows.get(TF_ONE_FILE_LABEL)
        ratio = f"{peer[0] / wall:.2f}x" if peer and label != TF_ONE_FILE_LABEL else ""
        lines.append((label, f"{count / wall:,.0f}", f"{cpu / wall:.2f}", f"{cpu / count * 1e6:.2f}", ratio))
    print(f"\n{name}: one shard of {count:,} records")
    print_lines(lines)


def torch_tfrec(paths: list[str], spec: dict[str, Any]) -> int:
    from torch.utils.data import DataLoader  # type: ignore[import-not-found]

    from tfrec.torch import TFRecordIterableDataset

    ds = TFRecordIterableDataset(
        paths, spec=spec, shuffle_files=True, cycle_length=CYCLE, shuffle_buffer=BUFFER, batch_size=BATCH,
        seed=SEED, output="torch",
    )  # fmt: skip
    key = next(iter(spec))
    return sum(len(batch[key]) for batch in DataLoader(ds, batch_size=None, num_workers=2))


def torch_tfrecord_package(directory: str, name: str) -> Callable[[], int]:
    from tfrecord.tools.tfrecord2idx import create_index  # type: ignore[import-untyped]
    from tfrecord.torch.dataset import MultiTFRecordDataset  # type: ignore[import-untyped]
    from torch.utils.data import DataLoader

    kinds = {"int64": "int", "float32": "float", "string": "byte"}
    description = {f.key: kinds[f.kind] for f in fields(name) if f.key != "text"}
    splits = {}
    for path in sorted(glob.glob(os.path.join(directory, f"{name}-*.tfrecord"))):
        split = os.path.basename(path)[: -len(".tfrecord")]
        create_index(path, os.path.join(directory, split + ".index"))
        splits[split] = 1 / SHARDS
    dataset = MultiTFRecordDataset(
        os.path.join(directory, "{}.tfrecord"), os.path.join(directory, "{}.index"), splits, description,
        shuffle_queue_size=BUFFER, infinite=False,
    )  # fmt: skip
    key = next(iter(description))

    def run() -> int:
        return sum(len(batch[key]) for batch in DataLoader(dataset, batch_size=BATCH, num_workers=2))

    return run


# -- the torch subprocess ---------------------------------------------------------------------------


def torch_main(args: argparse.Namespace) -> int:
    """Subprocess mode: time both DataLoader rows on one workload's shards; print a JSON result."""
    name = args.workloads[0]
    paths = sorted(glob.glob(os.path.join(args.dir, f"{name}-*.tfrecord")))
    spec = tfrec_spec(fields(name))
    result: dict[str, Any] = {}
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"skipped": f"torch: {exc}"}))
        return 0
    runs: dict[str, Callable[[], int]] = {TORCH_LABEL: lambda: torch_tfrec(paths, spec)}
    try:
        runs[TFRECORD_LABEL] = torch_tfrecord_package(args.dir, name)
    except ImportError as exc:
        result["note"] = f"tfrecord package skipped: {exc}"
    expected = int(args.count)
    counted: dict[str, Any] = {}
    for label, run in runs.items():
        # The tfrecord package's workers do not split its shards unless indexes exist (they do here);
        # count what each loader delivers and say so if it differs from the records there are.
        counted[label] = run()
    for label, count in counted.items():
        if count != expected:
            result.setdefault("counts", {})[label] = count
    timed = {label: run for label, run in runs.items() if counted[label] == expected}
    best = timed_runs(timed, expected, args.repeat)
    result["rows"] = {label: list(times) for label, times in best.items()}
    print(json.dumps(result))
    return 0


def run_torch(python: str, name: str, directory: str, count: int, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        python,
        os.path.abspath(__file__),
        "--peer",
        "torch",
        "--dir",
        directory,
        "--count",
        str(count),
    ]
    command += ["--workloads", name, "--repeat", str(args.repeat)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        return {"skipped": f"subprocess failed: {done.stderr.strip().splitlines()[-3:]}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# -- main run ---------------------------------------------------------------------------------------


def bench_workload(name: str, directory: str, tf: Any, args: argparse.Namespace) -> dict[str, Timing]:
    print(f"writing {SHARDS} shards of workload {name} ...", flush=True)
    paths, count = write_shards(name, directory, args.quick)
    spec = tfrec_spec(fields(name))
    runs: dict[str, Callable[[], int]] = {
        TFREC_LABEL: tfrec_pipeline(paths, spec, 0, count),
        TFREC_WORKERS_LABEL: tfrec_pipeline(paths, spec, 2, count),
    }
    if tf is not None and not args.tfrec_only:
        runs[TF_LABEL] = tf_pipeline(tf, paths, tf_spec(tf, fields(name)))
    rows = timed_runs(runs, count, args.repeat)
    if not args.tfrec_only:
        bench_one_file(name, paths[0], tf, args)
    if args.torch_python and not args.tfrec_only:
        peer = run_torch(args.torch_python, name, directory, count, args)
        if "skipped" in peer:
            print(f"torch rows skipped: {peer['skipped']}")
        for label, times in peer.get("rows", {}).items():
            rows[label] = (times[0], times[1], times[1])
        for label, got in peer.get("counts", {}).items():
            print(f"note: {label} delivered {got} records, not {count}: not timed")
        if "note" in peer:
            print(f"note: {peer['note']}")
    head = ("pipeline", "records/s", "cores", "CPU us/record", "vs tf.data", "vs tfrecord pkg")
    lines = [head]
    for label, (wall, cpu, _) in rows.items():
        ratios = []
        for peer_label in (TF_LABEL, TFRECORD_LABEL):
            peer_row = rows.get(peer_label)
            ratios.append(f"{peer_row[0] / wall:.2f}x" if peer_row and label != peer_label else "")
        lines.append(
            (label, f"{count / wall:,.0f}", f"{cpu / wall:.2f}", f"{cpu / count * 1e6:.2f}", *ratios)
        )
    print(f"\n{name}: {count:,} records in {SHARDS} shards")
    print_lines(lines)
    cpu_split(name, rows, count)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = _common.arguments(__doc__.splitlines()[0], list(WORKLOADS), ["torch"])
    parser.add_argument(
        "--torch-python", default=None, help="a python with torch (and tfrecord) for those rows"
    )
    parser.add_argument(
        "--tfrec-only",
        action="store_true",
        help="time only the two TFRecordDataset pipelines (one process, num_workers=2): to iterate faster",
    )
    parser.add_argument("--count", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer == "torch":
        return torch_main(args)
    tf, tf_version = (None, "not run (--tfrec-only)") if args.tfrec_only else _common.optional_tf()
    print(versions(tf_version))
    results = {}
    with tempfile.TemporaryDirectory(dir=scratch_parent()) as directory:
        for name in args.workloads:
            results[name] = bench_workload(name, directory, tf, args)
    lines = [("target", "measured", "met")]
    for name, row, peer, minimum, what in TARGETS:
        rows = results.get(name, {})
        if row == TFREC_WORKERS_LABEL and peer == TF_LABEL and TFREC_LABEL in rows:  # the faster tfrec row
            row = min((TFREC_LABEL, TFREC_WORKERS_LABEL), key=lambda label: rows.get(label, (1e30,))[0])
            what += f" ({'num_workers=2' if row == TFREC_WORKERS_LABEL else 'one process'})"
        if row in rows and peer in rows:
            ratio = rows[peer][0] / rows[row][0]
            lines.append((what, f"{ratio:.2f}x", "yes" if ratio >= minimum else "NO"))
    if len(lines) > 1:
        print_lines(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
