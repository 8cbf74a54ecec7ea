"""Benchmark tfrec.parse_example against TensorFlow, the `tfrecord` package and a protobuf loop.

Run from the repository root (with tfrec importable, e.g. installed or via PYTHONPATH):

    python benchmarks/bench_parse.py                      # every workload, best of 3
    python benchmarks/bench_parse.py --quick              # 10x fewer records: a smoke run
    python benchmarks/bench_parse.py --workloads b --repeat 5

Workloads (records built with tfrec.encode_example from a seeded numpy Generator, every feature read
with a FixedLenFeature):
  a: 100,000 records: "image" 3 KiB of bytes, "label" int64, "embedding" 128 float32,
     "tokens" 32 int64, "text" a short string;
  b: 1,000,000 records: "label" int64, "score" float32, "id" int64;
  c: as a, but 10% of the records (at random) have no "text" feature: an optional key, which the
     batch decoder reads as missing while walking those records with the others;
     "text" has a default_value in a and c alike.

Rows, all over the same records in one run:
  tfrec parse_example on in-memory batches of 1024 (the headline row);
  tfrec read_records + parse_example, batches of 1024 read from a TFRecord file (what the tfrecord
    package does, so that pair compares like with like);
  TensorFlow in graph mode as users run it: Dataset.from_tensor_slices(records).batch(1024)
    .map(tf.io.parse_example), iterated (tf.data's default options, so its own prefetching);
    the output tensors are not converted to numpy, since TF users feed them to a model;
  the same over TFRecordDataset(path) instead of from_tensor_slices (compare with the file row);
  TensorFlow eager tf.io.parse_example over constant batches of 1024 built before timing;
  the `tfrecord` package: tfrecord_loader(path, None, description) over the file, in a subprocess
    because it cannot be imported next to TensorFlow (it checks no CRCs and yields one dict of
    arrays per record; it raises KeyError for a missing key, so in c it is not asked for "text");
  a protobuf loop: Example.FromString(record), then np.array of each wanted feature's values;
  one record at a time: tfrec.parse_single_example(record, spec) per record, and protobuf's
    Example.FromString(record) alone per record (the floor: it builds no arrays; target: within 5x).
Peers that are not installed are skipped.

The in-process rows take turns: one warm-up round, then --repeat rounds in which each row runs
once, and each row's best run is kept (a slow spell of a shared machine then hits every row
alike, not whichever ran then). "cores" is the process CPU time over wall time of that run
(tfrec is single-threaded; TF's kernels and tf.data use threads), and "records/CPU s" divides by
that CPU time, which other processes on the machine disturb less.
Ratios are speedups: a row's records/s over the peer's. Before timing, tfrec's output for the first
batch is checked against TF's (values, dtypes, shapes) and against the protobuf loop's values.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import _common
import numpy as np
from _common import BATCH, batches, print_lines, scratch_parent, versions

import tfrec
from tfrec.proto import example_pb2

SEED = 20240607
IMAGE_BYTES = 3 * 1024


class Field(NamedTuple):
    key: str
    kind: str  # "int64" | "float32" | "string"
    shape: tuple[int, ...]
    default: Any = None


RICH = (
    Field("image", "string", ()),
    Field("label", "int64", ()),
    Field("embedding", "float32", (128,)),
    Field("tokens", "int64", (32,)),
    Field("text", "string", (), b""),
)
SCALARS = (Field("label", "int64", ()), Field("score", "float32", ()), Field("id", "int64", ()))
WORKLOADS = {  # name: (records, fields, fraction of records without "text")
    "a": (100_000, RICH, 0.0),
    "b": (1_000_000, SCALARS, 0.0),
    "c": (100_000, RICH, 0.1),
}
TITLES = {
    "a": "image 3 KiB bytes + int64 label + 128 float32 + 32 int64 tokens + short string",
    "b": "three scalars: int64 label, float32 score, int64 id",
    "c": "as a, 10% of the records without 'text' (an optional key)",
}
TFREC_LABEL = "tfrec parse_example"
TFREC_FILE_LABEL = "tfrec read_records + parse_example"
TF_LABEL = "TF graph: tf.data batch+map"
TF_FILE_LABEL = "TF graph: TFRecordDataset batch+map"
TF_EAGER_LABEL = "TF eager parse_example"
TFRECORD_LABEL = "tfrecord pkg loader (no CRC check)"
PROTO_LABEL = "protobuf loop"
ONE_LABEL = "tfrec parse_single_example, one at a time"
FLOOR_LABEL = "protobuf Example.FromString alone (floor)"
TARGETS = [  # (workload, row, peer, minimum speedup, what the issue asks)
    ("b", TFREC_LABEL, TF_LABEL, 2.0, "tfrec >= 2x TF on b"),
    ("a", TFREC_LABEL, TF_LABEL, 1.0, "tfrec >= 1x TF on a (stretch 1.5x)"),
    ("a", TFREC_LABEL, TFRECORD_LABEL, 5.0, "tfrec >= 5x tfrecord pkg on a"),
    ("b", TFREC_LABEL, TFRECORD_LABEL, 5.0, "tfrec >= 5x tfrecord pkg on b"),
    ("a", ONE_LABEL, FLOOR_LABEL, 0.2, "parse_single_example within 5x FromString's time on a"),
    ("c", ONE_LABEL, FLOOR_LABEL, 0.2, "parse_single_example within 5x FromString's time on c"),
]

Timing = tuple[float, float]  # best wall seconds, CPU seconds of that run


def record_count(name: str, quick: bool) -> int:
    return WORKLOADS[name][0] // (10 if quick else 1)


def make_records(name: str, quick: bool) -> list[bytes]:
    """The workload's serialized Examples: seeded, the same in every run."""
    count, fields, missing = record_count(name, quick), *WORKLOADS[name][1:]
    rng = np.random.default_rng([SEED, list(WORKLOADS).index(name)])
    if fields is SCALARS:
        labels = rng.integers(0, 10, count).tolist()
        scores = rng.random(count, np.float32)
        ids = rng.integers(0, 1 << 40, count).tolist()  # 6-byte varints
        return [
            tfrec.encode_example({"label": label, "score": score, "id": ident})
            for label, score, ident in zip(labels, scores, ids, strict=True)
        ]
    labels = rng.integers(0, 1000, count).tolist()
    embeddings = rng.standard_normal((count, 128), np.float32)
    tokens = rng.integers(0, 50_000, (count, 32))  # mostly 3-byte varints
    blob = rng.bytes(count * IMAGE_BYTES)
    texts = [f"caption {n}" for n in rng.integers(0, 10**6, count).tolist()]
    drop = (rng.random(count) < missing).tolist()
    records = []
    for i in range(count):
        features: dict[str, Any] = {
            "image": blob[i * IMAGE_BYTES : (i + 1) * IMAGE_BYTES],
            "label": labels[i],
            "embedding": embeddings[i],
            "tokens": tokens[i],
        }
        if not drop[i]:
            features["text"] = texts[i]
        records.append(tfrec.encode_example(features))
    return records


def tfrec_spec(fields: Sequence[Field]) -> dict[str, Any]:
    dtypes = {"int64": tfrec.int64, "float32": tfrec.float32, "string": tfrec.string}
    return {f.key: tfrec.FixedLenFeature(f.shape, dtypes[f.kind], f.default) for f in fields}


def tf_spec(tf: Any, fields: Sequence[Field]) -> dict[str, Any]:
    dtypes = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}
    return {f.key: tf.io.FixedLenFeature(f.shape, dtypes[f.kind], f.default) for f in fields}


def tfrecord_description(name: str) -> dict[str, str]:
    """The tfrecord package's description; it raises KeyError for a missing key, so c skips "text"."""
    kinds = {"int64": "int", "float32": "float", "string": "byte"}
    fields, missing = WORKLOADS[name][1:]
    return {f.key: kinds[f.kind] for f in fields if not (missing and f.key == "text")}


def best_times(runs: dict[str, Callable[[], int]], expected: int, repeat: int) -> dict[str, Timing]:
    """Wall and CPU seconds of each run's fastest of ``repeat`` rounds, after one warm-up round.

    The runs take turns within each round, so a slow spell of this shared machine
    (they last seconds) falls on all of them rather than on whichever ran then.
    """
    best: dict[str, Timing] = {}
    for attempt in range(repeat + 1):
        for label, run in runs.items():
            wall, cpu = time.perf_counter(), time.process_time()
            count = run()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if count != expected:
                raise SystemExit(f"error: {label}: a run counted {count} records, expected {expected}")
            if attempt and (label not in best or wall < best[label][0]):
                best[label] = (wall, cpu)
    return best


# -- implementations: each returns the number of records it parsed ---------------------------------


def tfrec_parse(records: list[bytes], spec: dict[str, Any]) -> int:
    n = 0
    key = next(iter(spec))
    for batch in batches(records):
        n += len(tfrec.parse_example(batch, spec)[key])
    return n


def tfrec_parse_single(records: list[bytes], spec: dict[str, Any]) -> int:
    parse = tfrec.parse_single_example
    for record in records:
        parse(record, spec)
    return len(records)


def proto_from_string(records: list[bytes]) -> int:
    from_string = example_pb2.Example.FromString
    for record in records:
        from_string(record)
    return len(records)


def tfrec_parse_file(path: str, spec: dict[str, Any]) -> int:
    n = 0
    key = next(iter(spec))
    batch: list[bytes] = []
    for record in tfrec.read_records(path):
        batch.append(record)
        if len(batch) == BATCH:
            n += len(tfrec.parse_example(batch, spec)[key])
            batch = []
    if batch:
        n += len(tfrec.parse_example(batch, spec)[key])
    return n


def proto_parse(records: list[bytes], fields: Sequence[Field]) -> int:
    lists = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}
    dtypes = {"int64": np.int64, "float32": np.float32, "string": object}
    wanted = [(f.key, lists[f.kind], dtypes[f.kind], f.default) for f in fields]
    n = 0
    for record in records:
        feature = example_pb2.Example.FromString(record).features.feature
        out = {}
        for key, kind, dtype, default in wanted:
            if key in feature:
                out[key] = np.array(getattr(feature[key], kind).value, dtype)
            else:
                out[key] = np.array([default], dtype)
        n += len(out) == len(wanted)
    return n


def proto_first_batch(records: Sequence[bytes], fields: Sequence[Field]) -> dict[str, list[Any]]:
    """Per key, every record's values as read by protobuf (the default when missing)."""
    lists = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}
    out: dict[str, list[Any]] = {f.key: [] for f in fields}
    for record in records:
        feature = example_pb2.Example.FromString(record).features.feature
        for f in fields:
            values = getattr(feature[f.key], lists[f.kind]).value if f.key in feature else [f.default]
            out[f.key].extend(values)
    return out


def tf_dataset(tf: Any, source: Any, spec: dict[str, Any]) -> Any:
    return source.batch(BATCH).map(lambda x: tf.io.parse_example(x, spec))


def tf_graph(dataset: Any, key: str) -> int:
    n = 0
    for out in dataset:
        n += int(out[key].shape[0])
    return n


def tf_eager(tf: Any, constants: list[Any], spec: dict[str, Any], key: str) -> int:
    n = 0
    for batch in constants:
        n += int(tf.io.parse_example(batch, spec)[key].shape[0])
    return n


def tfrecord_parse(path: str, description: dict[str, str]) -> int:
    from tfrecord.reader import tfrecord_loader  # type: ignore[import-untyped]

    n = 0
    for _ in tfrecord_loader(path, None, description):
        n += 1
    return n


# -- checks ---------------------------------------------------------------------------------------


def same_output(mine: dict[str, Any], theirs: dict[str, np.ndarray], fields: Sequence[Field]) -> list[str]:
    """Differences between tfrec's and TF's output for one batch (empty when equal)."""
    problems = []
    for f in fields:
        a, b = mine[f.key], theirs[f.key]
        if a.dtype != b.dtype or a.shape != b.shape:
            problems.append(f"{f.key}: tfrec {a.dtype}{list(a.shape)} vs TF {b.dtype}{list(b.shape)}")
        elif f.kind == "float32":
            if not np.array_equal(a.view(np.uint32), b.view(np.uint32)):
                problems.append(f"{f.key}: float32 bits differ")
        elif f.kind == "string":
            if a.ravel().tolist() != b.ravel().tolist():
                problems.append(f"{f.key}: bytes values differ")
        elif not np.array_equal(a, b):
            problems.append(f"{f.key}: values differ")
    return problems


def same_as_proto(mine: dict[str, Any], records: Sequence[bytes], fields: Sequence[Field]) -> list[str]:
    expected = proto_first_batch(records, fields)
    problems = []
    for f in fields:
        values = mine[f.key].ravel()
        if f.kind == "float32":  # compare bits, so -0.0 and NaN payloads count
            same = np.array_equal(
                values.view(np.uint32), np.array(expected[f.key], np.float32).view(np.uint32)
            )
        else:
            same = values.tolist() == expected[f.key]
        if not same:
            problems.append(f"{f.key}: differs from protobuf's values")
    return problems


# -- subprocess peer --------------------------------------------------------------------------------


def peer_main(args: argparse.Namespace) -> int:
    """Subprocess mode: time the tfrecord package on the workload's file; print a JSON result."""
    name = args.workloads[0]
    path = os.path.join(args.dir, f"{name}.tfrecord")
    try:
        import tfrecord  # type: ignore[import-untyped]  # noqa: F401

        description = tfrecord_description(name)
        runs = {TFRECORD_LABEL: lambda: tfrecord_parse(path, description)}
        wall, cpu = best_times(runs, record_count(name, args.quick), args.repeat)[TFRECORD_LABEL]
        result: dict[str, Any] = {"wall": wall, "cpu": cpu, "keys": sorted(description)}
    except ImportError as exc:
        result = {"skipped": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result))
    return 0


def run_peer(name: str, directory: str, args: argparse.Namespace) -> dict[str, Any]:
    return _common.run_peer(__file__, "tfrecord", name, directory, args)


# -- main run ---------------------------------------------------------------------------------------


def bench_workload(
    name: str, directory: str, tf: Any, args: argparse.Namespace
) -> tuple[dict[str, Timing], bool]:
    """Measure every implementation on one workload; returns the rows and whether all checks passed."""
    fields = WORKLOADS[name][1]
    print(f"building workload {name} ...", flush=True)
    records = make_records(name, args.quick)
    count, repeat = len(records), args.repeat
    size = sum(map(len, records))
    spec = tfrec_spec(fields)
    key = fields[0].key
    ok = True
    checks = [f"every run counted {count:,} records", "tfrec == protobuf on the first batch"]

    first = tfrec.parse_example(records[:BATCH], spec)
    for problem in same_as_proto(first, records[:BATCH], fields):
        print(f"CHECK FAILED: {problem}")
        ok = False
    path = os.path.join(directory, f"{name}.tfrecord")
    tfrec.write_records(path, records)
    runs: dict[str, Callable[[], int]] = {
        TFREC_LABEL: lambda: tfrec_parse(records, spec),
        TFREC_FILE_LABEL: lambda: tfrec_parse_file(path, spec),
    }
    if tf is not None:
        tf_features = tf_spec(tf, fields)
        dataset = tf_dataset(tf, tf.data.Dataset.from_tensor_slices(records), tf_features)
        theirs = {k: v.numpy() for k, v in next(iter(dataset)).items()}
        for problem in same_output(first, theirs, fields):
            print(f"CHECK FAILED: tfrec vs TF on the first batch: {problem}")
            ok = False
        checks.append("tfrec == TF graph on the first batch (values, dtypes, shapes)")
        from_file = tf_dataset(tf, tf.data.TFRecordDataset(path), tf_features)
        constants = [tf.constant(batch) for batch in batches(records)]
        runs[TF_LABEL] = lambda: tf_graph(dataset, key)
        runs[TF_FILE_LABEL] = lambda: tf_graph(from_file, key)
        runs[TF_EAGER_LABEL] = lambda: tf_eager(tf, constants, tf_features, key)
    runs[PROTO_LABEL] = lambda: proto_parse(records, fields)
    runs[ONE_LABEL] = lambda: tfrec_parse_single(records, spec)
    runs[FLOOR_LABEL] = lambda: proto_from_string(records)
    rows: dict[str, Timing] = best_times(runs, count, repeat)

    peer = run_peer(name, directory, args)
    if "skipped" in peer:
        print(f"{TFRECORD_LABEL}: skipped: not installed ({peer['skipped']})")
    else:
        rows[TFRECORD_LABEL] = (peer["wall"], peer["cpu"])
        if len(peer["keys"]) < len(fields):
            print(f"note: the tfrecord package was asked only for {', '.join(peer['keys'])}")
    os.remove(path)

    print("checks (failures are reported above): " + "; ".join(checks))
    print_table(name, count, size, rows)
    return rows, ok


def print_table(name: str, count: int, size: int, rows: dict[str, Timing]) -> None:
    def ratio(label: str, peer: str) -> str:
        mine, theirs = rows[label][0], rows.get(peer, (0.0, 0.0))[0]
        return f"{theirs / mine:.2f}x" if mine and theirs else "-"

    head = ("implementation", "records/s", "MB/s", "cores", "records/CPU s", "vs TF graph", "vs tfrecord pkg")
    lines = [head]
    for label, (wall, cpu) in rows.items():
        lines.append(
            (
                label,
                f"{count / wall:,.0f}",
                f"{size / 1e6 / wall:,.1f}",
                f"{cpu / wall:.2f}",
                f"{count / cpu:,.0f}" if cpu else "-",
                ratio(label, TF_LABEL),
                ratio(label, TFRECORD_LABEL),
            )
        )
    print(f"\n== {name}: {count:,} records, {size / count:,.0f} bytes each on average: {TITLES[name]} ==")
    print_lines(lines)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # not available on this platform
        return "unknown"


def print_targets(results: dict[str, dict[str, Timing]]) -> None:
    print("targets (issue):")
    for name, label, peer, minimum, text in TARGETS:
        rows = results.get(name, {})
        if label not in rows or peer not in rows:
            print(f"  {text}: not measured")
            continue
        speedup = rows[peer][0] / rows[label][0]
        verdict = "met" if speedup >= minimum else "MISSED"
        print(f"  {text}: {speedup:.2f}x the speed ({1 / speedup:.2f}x the time)  {verdict}")
    print(flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _common.arguments(__doc__.splitlines()[0], list(WORKLOADS), ["tfrecord"]).parse_args(argv)
    if args.peer:
        return peer_main(args)

    tf, tf_version = _common.optional_tf()
    print(f"{versions(tf_version)}, load average {load_average()}")
    if tf is None:
        print(f"{TF_LABEL}, {TF_EAGER_LABEL}: skipped: not installed")
    quick = ", --quick (10x fewer records)" if args.quick else ""
    print(f"best of {args.repeat} rounds (the rows take turns) after a warm-up round{quick}")
    ok = True
    results = {}
    parent = scratch_parent()
    with tempfile.TemporaryDirectory(prefix="bench_parse_", dir=parent) as directory:
        for name in args.workloads:
            results[name], passed = bench_workload(name, directory, tf, args)
            ok = ok and passed
    print_targets(results)
    print(f"load average at the end: {load_average()} (other processes compete with the timed ones)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
