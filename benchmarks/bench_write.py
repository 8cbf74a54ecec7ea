"""Benchmark writing samples as TFRecord files: tfrec's writers beside TensorFlow's and `tfrecord`'s.

Run from the repository root (with tfrec importable), best with a Python that has TensorFlow:

    python benchmarks/bench_write.py                 # 20,000 image-like and 100,000 small samples
    python benchmarks/bench_write.py --quick         # 10x fewer: a smoke run
    python benchmarks/bench_write.py --peer-python /path/to/python   # a Python with `tfrecord`

Workloads (seeded; the same in-memory samples for every writer):
  image-like: "image" 3 KiB of bytes, "label" an int < 1000, "embedding" 128 float32s, "tokens" 32 int64s
    < 50,000, "text" a short str;
  small: "id" an int, "score" a float, "tag" 8 bytes.
Rows (records/s, uncompressed files on tmpfs):
  floor: the same records, already encoded, written with RecordWriter.write_many;
  tfrec.write_dataset(samples, prefix, FeaturesDict, num_shards=1);
  tfrec.encode_example(sample) (no schema) + RecordWriter.write, one record at a time;
  tfrec.example.encode_examples(samples) (no schema) on batches of 1024 samples + RecordWriter.write_many;
  TF: tf.train.Example(...).SerializeToString() + tf.io.TFRecordWriter.write (skipped without TF);
  the `tfrecord` package's TFRecordWriter.write(datum), in a subprocess (it cannot share a process with TF).
And: tfrec.example.encode_examples from numpy columns (an int, a float, 32 floats per row), rows/s;
  tfrec.write_dataset from those columns as numpy arrays, a pandas DataFrame and a pyarrow Table (features
  inferred, one shard), beside TF writing the same rows (a tf.train.Example per row), rows/s.
Targets (the issue's): write_dataset >= 15x TF and >= 50% of the floor; encode_example >= 5x TF
(image-like) and >= 3x TF (small); numpy columns >= 500k rows/s.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import _common
import numpy as np
from _common import best_time, optional_tf, print_lines, scratch_parent, versions

import tfrec
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

SEED = 20240607
COUNTS = {"image-like": 20_000, "small": 100_000}
COLUMN_ROWS = 1_000_000
FEATURES = {
    "image-like": FeaturesDict(
        {
            "image": Tensor(shape=(), dtype=str),
            "label": ClassLabel(num_classes=1000),
            "embedding": Tensor(shape=(128,), dtype=np.float32),
            "tokens": Tensor(shape=(32,), dtype=np.int64),
            "text": Text(),
        }
    ),
    "small": FeaturesDict({"id": np.int64, "score": np.float32, "tag": Tensor(shape=(), dtype=str)}),
}
TFRECORD_TYPES = {  # the tfrecord package's datum types
    "image-like": {"image": "byte", "label": "int", "embedding": "float", "tokens": "int", "text": "byte"},
    "small": {"id": "int", "score": "float", "tag": "byte"},
}


def make_samples(name: str, quick: bool) -> list[dict[str, Any]]:
    count = COUNTS[name] // (10 if quick else 1)
    rng = np.random.default_rng([SEED, len(name)])
    if name == "small":
        ids = rng.integers(0, 10**6, count).tolist()
        scores = rng.random(count).astype(np.float32).tolist()
        return [{"id": i, "score": s, "tag": rng.bytes(8)} for i, s in zip(ids, scores, strict=True)]
    labels = rng.integers(0, 1000, count).tolist()
    embeddings = rng.standard_normal((count, 128), np.float32)
    tokens = rng.integers(0, 50_000, (count, 32))
    return [
        {
            "image": rng.bytes(3 * 1024),
            "label": labels[i],
            "embedding": embeddings[i],
            "tokens": tokens[i],
            "text": f"caption {i}",
        }
        for i in range(count)
    ]


def tf_writer(tf: Any, samples: list[dict[str, Any]], path: str) -> int:
    def feature(value: Any) -> Any:
        if isinstance(value, (bytes, str)):
            data = value.encode() if isinstance(value, str) else value
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))
        if isinstance(value, float) or (isinstance(value, np.ndarray) and value.dtype.kind == "f"):
            return tf.train.Feature(float_list=tf.train.FloatList(value=np.ravel(value)))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=np.ravel(value)))

    with tf.io.TFRecordWriter(path) as writer:
        for sample in samples:
            features = tf.train.Features(feature={k: feature(v) for k, v in sample.items()})
            writer.write(tf.train.Example(features=features).SerializeToString())
    return len(samples)


def tfrec_rows(name: str, samples: list[dict[str, Any]], directory: str, repeat: int) -> dict[str, float]:
    features = FEATURES[name]
    path = os.path.join(directory, f"{name}.tfrecord")
    records = features.serialize_batch(samples)
    count = len(samples)

    def floor() -> int:
        with tfrec.RecordWriter(path) as writer:
            writer.write_many(records)
        return count

    def dataset() -> int:
        summary = tfrec.write_dataset(
            samples, os.path.join(directory, name), features, num_shards=1, progress=False
        )
        return summary.records

    def encode() -> int:
        with tfrec.RecordWriter(path) as writer:
            for sample in samples:
                writer.write(tfrec.encode_example(sample))
        return count

    assert [features.serialize_example(s) for s in samples[:100]] == records[:100]
    fresh = functools.partial(clear, directory)
    return {
        "floor": count / best_time(floor, count, repeat, fresh),
        "write_dataset": count / best_time(dataset, count, repeat, fresh),
        "encode_example": count / best_time(encode, count, repeat, fresh),
        **schemaless_batch_rows(samples, path, repeat),
    }


def clear(directory: str) -> None:
    """Remove what an earlier run wrote (untimed): every writer writes new files, none pays for freeing
    the last run's (and write_dataset refuses an earlier set of shards without overwrite=True)."""
    for name in os.listdir(directory):
        os.remove(os.path.join(directory, name))


def schemaless_batch_rows(samples: list[dict[str, Any]], path: str, repeat: int) -> dict[str, float]:
    """tfrec.example.encode_examples on batches of 1024 samples (no schema) + RecordWriter.write_many."""
    count = len(samples)

    def encode_batches() -> int:
        with tfrec.RecordWriter(path) as writer:
            for start in range(0, count, 1024):
                writer.write_many(tfrec.example.encode_examples(samples[start : start + 1024]))
        return count

    assert tfrec.example.encode_examples(samples[:100]) == [tfrec.encode_example(s) for s in samples[:100]]
    fresh = functools.partial(clear, os.path.dirname(path))
    return {"encode_examples": count / best_time(encode_batches, count, repeat, fresh)}


def column_rate(repeat: int, quick: bool) -> float:
    rows = COLUMN_ROWS // (10 if quick else 1)
    rng = np.random.default_rng(SEED)
    columns = {
        "id": np.arange(rows),
        "score": rng.random(rows),
        "emb": rng.standard_normal((rows, 32), np.float32),
    }

    def run() -> int:
        done = 0
        for start in range(0, rows, 4096):
            done += len(
                tfrec.example.encode_examples({k: v[start : start + 4096] for k, v in columns.items()})
            )
        return done

    return rows / best_time(run, rows, repeat)


def peer_main(args: Any) -> int:
    """Subprocess mode: time the tfrecord package's writer; print a JSON result."""
    name = args.workloads[0]
    try:
        from tfrecord.writer import TFRecordWriter  # type: ignore[import-untyped]
    except ImportError as exc:
        print(json.dumps({"skipped": f"ImportError: {exc}"}))
        return 0
    samples = make_samples(name, args.quick)
    types = TFRECORD_TYPES[name]
    path = os.path.join(args.dir, f"{name}.tfrecord-package")

    def run() -> int:
        writer = TFRecordWriter(path)
        for sample in samples:
            writer.write({k: (v.encode() if type(v) is str else v, types[k]) for k, v in sample.items()})
        writer.close()
        return len(samples)

    print(json.dumps({"rate": len(samples) / best_time(run, len(samples), args.repeat)}))
    return 0


def main() -> int:
    parser = _common.arguments(__doc__.splitlines()[0], list(COUNTS), peers=["tfrecord"])
    parser.add_argument("--peer-python", default=sys.executable, help="a Python with the tfrecord package")
    parser.add_argument(
        "--tables", action=argparse.BooleanOptionalAction, default=True, help="the numpy/pandas/Arrow rows"
    )
    args = parser.parse_args()
    if args.peer:
        return peer_main(args)
    tf, tf_version = optional_tf()
    print(versions(tf_version))
    with tempfile.TemporaryDirectory(dir=scratch_parent()) as directory:
        for name in args.workloads:
            samples = make_samples(name, args.quick)
            rates = tfrec_rows(name, samples, directory, args.repeat)
            path = os.path.join(directory, f"{name}.tf.tfrecord")
            tf_rate = None
            if tf is not None:
                run = functools.partial(tf_writer, tf, samples, path)
                fresh = functools.partial(clear, directory)
                tf_rate = len(samples) / best_time(run, len(samples), args.repeat, fresh)
            peer = _peer(args, name, directory)
            print(f"{name}: {len(samples):,} samples, records/s")
            print_lines(_table(rates, tf_rate, peer.get("rate")))
        if not args.tables:
            return 0
        rate = column_rate(args.repeat, args.quick)
        print(f"numpy columns -> encode_examples: {rate:,.0f} rows/s (target 500k)")
        rows = COLUMN_ROWS // (10 if args.quick else 1)
        print(f"tables -> shards: {rows:,} rows (an int, a float, 32 floats per row), rows/s")
        print_lines(table_rows(tf, directory, args.repeat, rows))
    return 0


def table_rows(tf: Any, directory: str, repeat: int, rows: int) -> list[list[str]]:
    """write_dataset from numpy columns, a DataFrame and an Arrow table; TF writing the same rows."""
    rng = np.random.default_rng(SEED)
    columns = {
        "id": np.arange(rows),
        "score": rng.random(rows),
        "emb": rng.standard_normal((rows, 32), np.float32),
    }
    tables: dict[str, Any] = {"numpy columns (target 500k rows/s)": columns}
    try:
        import pyarrow as pa

        emb = pa.FixedSizeListArray.from_arrays(pa.array(columns["emb"].reshape(-1)), 32)
        tables["pyarrow Table"] = pa.table({"id": columns["id"], "score": columns["score"], "emb": emb})
        import pandas as pd

        tables["pandas DataFrame"] = pd.DataFrame(
            {"id": columns["id"], "score": columns["score"], "emb": list(columns["emb"])}
        )
    except ImportError:
        pass  # the rows that need them are skipped

    def writer(table: Any) -> Any:
        def run() -> int:
            prefix = os.path.join(directory, "table")
            return tfrec.write_dataset(table, prefix, num_shards=1, progress=False).records

        return run

    fresh = functools.partial(clear, directory)
    rates = {label: rows / best_time(writer(table), rows, repeat, fresh) for label, table in tables.items()}
    tf_rate = None
    if tf is not None:
        run = functools.partial(tf_rows, tf, columns, directory)
        tf_rate = rows / best_time(run, rows, repeat, fresh)
    lines = [["writer", "rows/s", "vs TF"]]
    for label in ("numpy columns (target 500k rows/s)", "pandas DataFrame", "pyarrow Table"):
        rate = rates.get(label)
        if rate is None:
            lines.append([f"write_dataset from a {label}", "skipped", ""])
        else:
            vs = f"{rate / tf_rate:.1f}x" if tf_rate else "-"
            lines.append([f"write_dataset from {label}", f"{rate / 1000:,.1f}k", vs])
    lines.append(
        [
            "TF: a tf.train.Example per row + TFRecordWriter",
            f"{tf_rate / 1000:,.1f}k" if tf_rate else "skipped",
            "",
        ]
    )
    return lines


def tf_rows(tf: Any, columns: dict[str, np.ndarray], directory: str) -> int:
    """TF's way from columns: one tf.train.Example per row."""
    ids, scores, embs = columns["id"].tolist(), columns["score"].tolist(), columns["emb"]
    with tf.io.TFRecordWriter(os.path.join(directory, "table.tf.tfrecord")) as writer:
        for i, score, emb in zip(ids, scores, embs, strict=True):
            feature = {
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "score": tf.train.Feature(float_list=tf.train.FloatList(value=[score])),
                "emb": tf.train.Feature(float_list=tf.train.FloatList(value=emb)),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return len(ids)


def _peer(args: Any, name: str, directory: str) -> dict[str, Any]:
    command = [args.peer_python, os.path.abspath(__file__), "--peer", "tfrecord", "--dir", directory]
    command += ["--workloads", name, "--repeat", str(args.repeat)] + (["--quick"] if args.quick else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        return {"skipped": done.stderr.strip().splitlines()[-1:]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _table(rates: dict[str, float], tf_rate: float | None, peer_rate: float | None) -> list[list[str]]:
    def ratio(rate: float, base: float | None) -> str:
        return f"{rate / base:.1f}x" if base else "-"

    lines = [["writer", "rec/s", "vs TF", "vs tfrecord", "of floor"]]
    rows: list[tuple[str, float | None]] = [
        ("floor: RecordWriter.write_many (encoded)", rates["floor"]),
        ("write_dataset + FeaturesDict (target 15x TF, 50% floor)", rates["write_dataset"]),
        ("encode_example + RecordWriter (target 5x/3x TF)", rates["encode_example"]),
        ("encode_examples, batches of 1024 samples (no schema)", rates.get("encode_examples")),
        ("TF: tf.train.Example + TFRecordWriter", tf_rate),
        ("tfrecord package: TFRecordWriter.write", peer_rate),
    ]
    for label, rate in rows:
        if rate is None:
            lines.append([label, "skipped", "", "", ""])
        else:
            floor = f"{rate / rates['floor']:.0%}"
            lines.append([label, f"{rate / 1000:,.1f}k", ratio(rate, tf_rate), ratio(rate, peer_rate), floor])
    return lines


if __name__ == "__main__":
    sys.exit(main())
