"""Benchmark tfrec's features layer: what the schema costs over plain parsing, and serializing vs TF.

Run from the repository root (with tfrec importable, e.g. installed or via PYTHONPATH):

    python benchmarks/bench_features.py               # 100,000 records, best of 3
    python benchmarks/bench_features.py --quick       # 10x fewer records: a smoke run
    python benchmarks/bench_features.py --repeat 5

Workload: workload a of bench_parse.py (the same seeded values), described by a FeaturesDict:
"image" 3 KiB of bytes as Tensor(shape=(), dtype=str), "label" as ClassLabel(num_classes=1000),
"embedding" as Tensor((128,), float32), "tokens" as Tensor((32,), int64), "text" as Text().

Read rows (the same in-memory batches of 1024 records, serialized by tfrec):
  features.deserialize_batch(batch): the nested dict of batched arrays (Text decoded to str);
  tfrec.parse_example(batch, spec) with the equivalent FixedLenFeature spec (the baseline: target,
    deserialize_batch within 1.3x of its time).
One-record read rows (10,000 records, one call per record; the rows take turns in each round, and
their CPU time is printed too: the targets compare CPU times, which a loaded machine disturbs less):
  protobuf's own Example.FromString (the floor: parses, builds no arrays);
  features.deserialize_example(record) and tfrec.parse_single_example(record, spec)
    (target: each within 5x FromString's time);
  features.deserialize_batch per record (the batched path, for reference);
  TensorFlow's eager tf.io.parse_single_example (on a hundredth; skipped without TensorFlow).
Write rows (one record at a time, from the same Python values, built before timing):
  features.serialize_example(value): checked encoding of the nested value;
  tfrec.encode_example(value): the schema-less codec, for reference (what the checks cost);
  TensorFlow: tf.train.Example(features=tf.train.Features(feature={... tf.train.Feature(
    bytes_list=/float_list=/int64_list=...) ...})).SerializeToString(), as TF users write records
    (target: serialize_example at least 2x faster). Skipped when TensorFlow is not installed.

Each measurement is warmed up once, then the best of --repeat runs is kept. Before timing, the
outputs are checked: deserialize_batch's arrays equal parse_example's, and every implementation's
records of the first batch parse back to the same values. Ratios are speedups over the baseline row.
"""

from __future__ import annotations

import sys
from typing import Any

import _common
import numpy as np
from _common import BATCH, batches, best_time, print_lines, taking_turns, versions

import tfrec
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

RECORDS = 100_000
ONE_RECORDS = 10_000  # records read one at a time per run (all of them with --quick)
SEED = 20240607  # bench_parse.py's seed: workload a's values
IMAGE_BYTES = 3 * 1024

FEATURES = FeaturesDict(
    {
        "image": Tensor(shape=(), dtype=str),
        "label": ClassLabel(num_classes=1000),
        "embedding": Tensor(shape=(128,), dtype=np.float32),
        "tokens": Tensor(shape=(32,), dtype=np.int64),
        "text": Text(),
    }
)
SPEC = {
    "image": tfrec.FixedLenFeature((), tfrec.string),
    "label": tfrec.FixedLenFeature((), tfrec.int64),
    "embedding": tfrec.FixedLenFeature((128,), tfrec.float32),
    "tokens": tfrec.FixedLenFeature((32,), tfrec.int64),
    "text": tfrec.FixedLenFeature((), tfrec.string),
}

DESERIALIZE = "features.deserialize_batch"
PARSE = "tfrec.parse_example (baseline)"
SERIALIZE = "features.serialize_example"
ENCODE = "tfrec.encode_example (no schema)"
TF_PROTO = "TF tf.train.Example(...).SerializeToString() (baseline)"
ONE_PROTO = "protobuf Example.FromString (baseline, floor)"
ONE_DESERIALIZE = "features.deserialize_example"
ONE_PARSE = "tfrec.parse_single_example"
ONE_BATCH = "features.deserialize_batch (batches of 1024)"
ONE_TF = "TF eager tf.io.parse_single_example"
TARGETS = [  # (row, baseline, bound on the row's time / the baseline's, what the issue asks)
    (DESERIALIZE, PARSE, 1.3, "deserialize_batch within 1.3x of parse_example's time"),
    (SERIALIZE, TF_PROTO, 0.5, "serialize_example at least 2x faster than TF protos"),
    (ONE_DESERIALIZE, ONE_PROTO, 5.0, "deserialize_example within 5x protobuf's FromString"),
    (ONE_PARSE, ONE_PROTO, 5.0, "parse_single_example within 5x protobuf's FromString"),
]


def make_values(count: int) -> list[dict[str, Any]]:
    """Workload a's values, drawn as bench_parse.py draws them (seeded: the same in every run)."""
    rng = np.random.default_rng([SEED, 0])
    labels = rng.integers(0, 1000, count).tolist()
    embeddings = rng.standard_normal((count, 128), np.float32)
    tokens = rng.integers(0, 50_000, (count, 32))
    blob = rng.bytes(count * IMAGE_BYTES)
    texts = [f"caption {n}" for n in rng.integers(0, 10**6, count).tolist()]
    return [
        {
            "image": blob[i * IMAGE_BYTES : (i + 1) * IMAGE_BYTES],
            "label": labels[i],
            "embedding": embeddings[i],
            "tokens": tokens[i],
            "text": texts[i],
        }
        for i in range(count)
    ]


# -- implementations: each returns the number of records it handled -------------------------------


def deserialize(records: list[bytes]) -> int:
    return sum(len(FEATURES.deserialize_batch(batch)["label"]) for batch in batches(records))


def parse(records: list[bytes]) -> int:
    return sum(len(tfrec.parse_example(batch, SPEC)["label"]) for batch in batches(records))


def serialize(values: list[dict[str, Any]]) -> list[bytes]:
    return [FEATURES.serialize_example(value) for value in values]


def encode(values: list[dict[str, Any]]) -> list[bytes]:
    return [tfrec.encode_example(value) for value in values]


def tf_serialize(tf: Any, values: list[dict[str, Any]]) -> list[bytes]:
    train = tf.train
    out = []
    for value in values:
        feature = {
            "image": train.Feature(bytes_list=train.BytesList(value=[value["image"]])),
            "label": train.Feature(int64_list=train.Int64List(value=[value["label"]])),
            "embedding": train.Feature(float_list=train.FloatList(value=value["embedding"])),
            "tokens": train.Feature(int64_list=train.Int64List(value=value["tokens"])),
            "text": train.Feature(bytes_list=train.BytesList(value=[value["text"].encode()])),
        }
        out.append(train.Example(features=train.Features(feature=feature)).SerializeToString())
    return out


def one_by_one(call: Any, records: list[bytes]) -> int:
    for record in records:
        call(record)
    return len(records)


def tf_parse_single(tf: Any, records: list[bytes]) -> int:
    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "embedding": tf.io.FixedLenFeature([128], tf.float32),
        "tokens": tf.io.FixedLenFeature([32], tf.int64),
        "text": tf.io.FixedLenFeature([], tf.string),
    }
    return one_by_one(lambda record: tf.io.parse_single_example(record, spec), records)


def check_one(records: list[bytes]) -> list[str]:
    """deserialize_example and parse_single_example give the rows of the batched calls."""
    problems = []
    batch = records[:64]
    rows = FEATURES.deserialize_batch(batch)
    parsed = tfrec.parse_example(batch, SPEC)
    for row, record in enumerate(batch):
        one, single = FEATURES.deserialize_example(record), tfrec.parse_single_example(record, SPEC)
        for key in SPEC:
            if not same_arrays(one[key], rows[key][row]) or not same_arrays(single[key], parsed[key][row]):
                problems.append(f"record {row}: one-record and batched results differ on {key!r}")
    return problems


# -- checks ---------------------------------------------------------------------------------------


def same_arrays(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":  # bit patterns: -0.0 and NaN payloads count
        return (
            a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))
        )
    return a.shape == b.shape and a.tolist() == b.tolist()


def check(records: list[bytes], writers: dict[str, list[bytes]]) -> list[str]:
    """Problems with the outputs of the first batch (empty when all agree)."""
    problems = []
    if FEATURES.parse_spec(batched=True) != SPEC:
        problems.append("the baseline spec is not the FeaturesDict's parse_spec")
    batch = records[:BATCH]
    parsed = tfrec.parse_example(batch, SPEC)
    mine = FEATURES.deserialize_batch(batch)
    for key in SPEC:
        expected = [v.decode() for v in parsed[key]] if key == "text" else parsed[key]
        if not same_arrays(mine[key], expected):
            problems.append(f"deserialize_batch differs from parse_example on {key!r}")
    for label, written in writers.items():
        theirs = tfrec.parse_example(written, SPEC)
        for key in SPEC:
            if not same_arrays(theirs[key], parsed[key]):
                problems.append(f"{label}: records parse to other {key!r} values")
    return problems


# -- main run ---------------------------------------------------------------------------------------


def print_table(title: str, count: int, rows: dict[str, float], baseline: str) -> None:
    head = ("implementation", "records/s", "seconds", "time vs baseline", "speedup vs baseline")
    lines = [head]
    for label, seconds in rows.items():
        base = rows.get(baseline)
        lines.append(
            (
                label,
                f"{count / seconds:,.0f}",
                f"{seconds:.3f}",
                f"{seconds / base:.2f}x" if base else "-",
                f"{base / seconds:.2f}x" if base else "-",
            )
        )
    print(f"\n== {title}: {count:,} records ==")
    print_lines(lines)


def print_targets(rows: dict[str, float]) -> bool:
    print("targets (issue):")
    met = True
    for label, baseline, bound, text in TARGETS:
        if label not in rows or baseline not in rows:
            print(f"  {text}: not measured")
            continue
        ratio = rows[label] / rows[baseline]
        ok = ratio <= bound
        print(f"  {text}: {ratio:.2f}x the time ({1 / ratio:.2f}x the speed)  {'met' if ok else 'MISSED'}")
        met = met and ok
    print(flush=True)
    return met


def main(argv: list[str] | None = None) -> int:
    args = _common.arguments(__doc__.splitlines()[0], ()).parse_args(argv)

    tf, tf_version = _common.optional_tf()
    print(versions(tf_version))
    if tf is None:
        print(f"{TF_PROTO}: skipped: not installed")
    print(f"best of {args.repeat} after a warm-up" + (", --quick (10x fewer records)" if args.quick else ""))

    count = RECORDS // (10 if args.quick else 1)
    print("building values ...", flush=True)
    values = make_values(count)
    records = serialize(values)
    first = values[:BATCH]
    writers = {SERIALIZE: records[:BATCH], ENCODE: encode(first)}
    if tf is not None:
        writers[TF_PROTO] = tf_serialize(tf, first)
    problems = check(records, writers)
    for problem in problems:
        print(f"CHECK FAILED: {problem}")
    print(
        "checks (failures are reported above): deserialize_batch == parse_example on the first batch; "
        "every writer's records parse to the same values"
    )

    read = {
        DESERIALIZE: best_time(lambda: deserialize(records), count, args.repeat),
        PARSE: best_time(lambda: parse(records), count, args.repeat),
    }
    print_table(f"read: batches of {BATCH}", count, read, PARSE)

    problems += check_one(records)
    some = records[:ONE_RECORDS]
    from tfrec.proto import example_pb2  # protobuf's own parser, as the floor

    one_runs = {
        ONE_PROTO: lambda: one_by_one(example_pb2.Example.FromString, some),
        ONE_DESERIALIZE: lambda: one_by_one(FEATURES.deserialize_example, some),
        ONE_PARSE: lambda: one_by_one(lambda r: tfrec.parse_single_example(r, SPEC), some),
        ONE_BATCH: lambda: deserialize(some),
    }
    one, one_cpu = taking_turns({label: (run, len(some)) for label, run in one_runs.items()}, args.repeat)
    if tf is not None:
        few = records[: count // 100]
        seconds = best_time(lambda: tf_parse_single(tf, few), len(few), args.repeat)
        one[ONE_TF] = seconds * len(some) / len(few)  # per-record time, over the rows' record count
    print_table("read: one record at a time", len(some), one, ONE_PROTO)
    print("CPU time per record (less disturbed by other processes; the targets use it):")
    base = one_cpu[ONE_PROTO]
    for label, seconds in one_cpu.items():
        print(f"  {label}: {seconds / len(some) * 1e6:.2f} us, {seconds / base:.2f}x {ONE_PROTO}'s")
    print(flush=True)

    write = {
        SERIALIZE: best_time(lambda: len(serialize(values)), count, args.repeat),
        ENCODE: best_time(lambda: len(encode(values)), count, args.repeat),
    }
    if tf is not None:
        write[TF_PROTO] = best_time(lambda: len(tf_serialize(tf, values)), count, args.repeat)
    print_table("write: one record at a time", count, write, TF_PROTO if tf is not None else SERIALIZE)

    print_targets({**read, **write, **one, **one_cpu})
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
