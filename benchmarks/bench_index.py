"""Benchmark index files and random access: build_index, RecordFileSource, ShardedWriter.

Run from the repository root (with tfrec importable, e.g. installed or via PYTHONPATH):

    python benchmarks/bench_index.py              # 1,000,000 records of 100 bytes, best of 3
    python benchmarks/bench_index.py --quick      # 10x fewer records: a smoke run

One shard of seeded random 100-byte records (an Example of a few small features is about this size)
is written under /dev/shm when it exists (disk speed would hide CPU costs) and indexed. Rows:

- write: ShardedWriter(num_shards=8, index=True).write_many over all records (frames + 8 index files).
- build_index: scanning the headers of the shard and writing its index (read back with read_index);
  and the `tfrecord` package's tfrecord2idx on the same file (skipped when not installed), whose output
  must be byte-identical.
- __getitem__: source[i] for 200,000 random i (CRCs checked), and the limit: one os.pread per record
  with no checks.
- __getitems__: batches of 1024 random indices (gathered from the file's map, CRCs checked together),
  and the limit of reading one record per system call: one os.pread per record with no checks.

Gzip (issue 26; Example records of an id and a short text, a tenth as many, which gzip compresses):
- gzip read_records, sequential: the whole stream inflated in order (the only way before issue 26).
- gzip members: source[i] for random i over a shard of 1 MiB gzip members (each read inflates its
  member unless it is among the last few inflated); source[i] in order (the LRU's case); and
  __getitems__ of 1024 random indices (each member inflated once per batch).
- uncompressed: source[i] for the same random i over the same records, uncompressed.

The targets of issue 12: __getitem__ >= 100k records/s; __getitems__ >= 5x that (500k records/s).

With features (a tenth as many image-like records, bench_features.py's workload and FeaturesDict):
- __getitem__ with features: source[i] for random i, decoded to samples; and what it should cost at
  most: a raw source[i] plus features.deserialize_example of the same records (target: within 2x,
  compared in CPU time).
- grain: MapDataset.source(source).shuffle(seed=0).batch(256), iterated (target: >= 30k records/s;
  skipped when grain is not installed). grain 0.2.18's batch step asks its parent for one element at
  a time (its batched `_getitems` push-down is an experiment switched off), so this is source[i] per
  record plus grain's own per-element work (shuffle index, stats, stacking), in its 16 reading threads.
- grain, batches of keys: MapDataset.range(len(source)).shuffle(seed=0).batch(256,
  batch_fn=source.read_batch): grain shuffles and batches record numbers, each batch is read and
  decoded together (the same records in the same batches as the row above; checked).
- grain, batches as elements: MapDataset.source(source.shuffled_batches(256, seed=0)), iterated with
  one reading thread: each element is a batch of a record-level shuffle (a keyed permutation), read
  and decoded together; grain handles one element per batch.
- torch: DataLoader(source, batch_size=256, shuffle=True), no workers: it calls __getitems__ (one
  batched read and decode), then collates the rows into tensors (skipped when torch is not installed).
These rows take turns in each round, and their CPU time (all threads) is printed too.

Global shuffle (issue 26), on bench_parse.py's records written into 16 indexed shards (image: its
workload a, ~3.7 KB records; small: its workload b, three scalars): TFRecordDataset(spec=...)
.batch(1024) reading the files in order, against .global_shuffle().batch(1024) (every record
at random, a new order per epoch), both parsed to arrays, num_workers=0, on the same cached files.
Target: global shuffle at >= 50% of the sequential rate.
"""

from __future__ import annotations

import argparse
import filecmp
import glob
import importlib.util
import os
import random
import runpy
import sys
import tempfile
import time
from typing import Any

import _common
import numpy as np
from _common import best_time, print_lines, scratch_parent, taking_turns, versions

import tfrec
from tfrec.data import RecordFileSource, ShardedWriter, TFRecordDataset, build_index, read_index
from tfrec.record import crc_backend

RECORDS = 1_000_000
SIZE = 100
LOOKUPS = 200_000
BATCH = 1024
SEED = 20240612
TARGET_GETITEM = 100_000
TARGET_FACTOR = 5
TARGET_FEATURES_FACTOR = 2
TARGET_GRAIN = 30_000
TARGET_GLOBAL_RATIO = 0.5
GLOBAL_WORKLOADS = {"image": "a", "small": "b"}  # label: bench_parse.py workload


def make_records(count: int) -> list[bytes]:
    blob = np.random.default_rng(SEED).bytes(count * SIZE)
    return [blob[i * SIZE : (i + 1) * SIZE] for i in range(count)]


RAW_GETITEM = "image-like: raw source[i] (random)"
FEATURES_GETITEM = "image-like: source[i] with features (random)"
DESERIALIZE = "image-like: features.deserialize_example (in memory)"
GRAIN = "image-like: grain MapDataset.source(...).shuffle(seed=0).batch(256)"
GRAIN_KEYS = "image-like: grain MapDataset.range(n).shuffle(seed=0).batch(256, batch_fn=source.read_batch)"
GRAIN_BATCHES = (
    "image-like: grain MapDataset.source(source.shuffled_batches(256, seed=0))"
    ".to_iter_dataset(ReadOptions(num_threads=1))"
)
TORCH = "image-like: torch DataLoader(source, batch_size=256, shuffle=True)"
CPU_SECONDS: dict[str, float] = {}  # the CPU time of the rows measured taking turns


def with_features(
    directory: str, count: int, keys: list[int], repeat: int
) -> tuple[list[tuple[str, float | None, int]], bool]:
    """Rows of random access to image-like records decoded with bench_features.py's FeaturesDict."""
    import bench_features

    features = bench_features.FEATURES
    records = [features.serialize_example(v) for v in bench_features.make_values(count)]
    path = os.path.join(directory, "image-like.tfrecord")
    tfrec.write_records(path, records)
    build_index(path)
    picks = [key % count for key in keys[: len(keys) // 4]]
    raw, decoded = RecordFileSource(path), RecordFileSource(path, features=features)
    ok = bool(decoded[picks[0]]["label"] == features.deserialize_example(records[picks[0]])["label"])
    if not ok:
        print("CHECK FAILED: source[i] with features differs from deserialize_example")

    def each(call: Any) -> int:
        for key in picks:
            call(key)
        return len(picks)

    runs = {
        RAW_GETITEM: (lambda: each(raw.__getitem__), len(picks)),
        FEATURES_GETITEM: (lambda: each(decoded.__getitem__), len(picks)),
        DESERIALIZE: (lambda: each(lambda k: features.deserialize_example(records[k])), len(picks)),
    }
    if importlib.util.find_spec("grain") is None:
        print("grain: skipped: not installed")
    else:
        import grain

        dataset = grain.MapDataset.source(decoded).shuffle(seed=0).batch(256, drop_remainder=True)
        keys = grain.MapDataset.range(len(decoded)).shuffle(seed=0)
        batches = keys.batch(256, drop_remainder=True, batch_fn=decoded.read_batch)
        total = len(dataset) * 256
        runs[GRAIN] = (lambda: sum(len(b["label"]) for b in dataset), total)
        runs[GRAIN_KEYS] = (lambda: sum(len(b["label"]) for b in batches), total)
        # One reading thread: grain's default of 16 threads fighting for the GIL halves the rate.
        shuffled = grain.MapDataset.source(
            decoded.shuffled_batches(256, seed=0, drop_remainder=True)
        ).to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=4))
        runs[GRAIN_BATCHES] = (lambda: sum(len(b["label"]) for b in shuffled), total)
        if not all(np.array_equal(dataset[i]["label"], batches[i]["label"]) for i in (0, len(dataset) - 1)):
            print("CHECK FAILED: grain batches of keys differ from grain over the source")
            ok = False
    if importlib.util.find_spec("torch") is None:
        print("torch: skipped: not installed")
    else:
        import torch

        def torch_epoch() -> int:
            generator = torch.Generator().manual_seed(0)
            loader = torch.utils.data.DataLoader(decoded, batch_size=256, shuffle=True, generator=generator)
            return sum(len(b["label"]) for b in loader)

        runs[TORCH] = (torch_epoch, len(decoded))
    wall, cpu = taking_turns(runs, repeat)
    rows: list[tuple[str, float | None, int]] = [(label, wall[label], n) for label, (_, n) in runs.items()]
    CPU_SECONDS.update(cpu)
    raw.close()
    decoded.close()
    return rows, ok


def global_shuffle_rows(directory: str, quick: bool, repeat: int) -> list[tuple[str, float | None, int]]:
    """Rows of sequential reading and of global shuffle over the same 16 indexed shards."""
    from bench_parse import WORKLOADS, make_records, tfrec_spec

    rows: list[tuple[str, float | None, int]] = []
    for label, workload in GLOBAL_WORKLOADS.items():
        records = make_records(workload, quick)
        prefix = os.path.join(directory, f"global-{label}")
        with ShardedWriter(prefix, num_shards=16, index=True, overwrite=True) as writer:
            writer.write_many(records)
        files = sorted(glob.glob(prefix + "-*-of-00016.tfrecord"))
        spec = tfrec_spec(WORKLOADS[workload][1])
        key = next(iter(spec))
        for kind, global_shuffle in (("sequential", False), ("global shuffle", True)):
            dataset = TFRecordDataset(files, spec=spec, seed=0)
            dataset = (dataset.global_shuffle() if global_shuffle else dataset).batch(1024)

            def epoch(dataset: TFRecordDataset = dataset, key: str = key) -> int:
                return sum(len(batch[key]) for batch in dataset)

            name = f"{label}: {kind}, TFRecordDataset(spec).batch(1024)"
            rows.append((name, best_time(epoch, len(records), repeat), len(records)))
    return rows


GZIP_RANDOM = "gzip members: source[i] (random)"
GZIP_LOOKUPS = 2_000  # a random read inflates ~1 MiB: a few ms each


def gzip_rows(directory: str, count: int, repeat: int) -> tuple[list[tuple[str, float | None, int]], bool]:
    """Rows of reading gzip shards: sequentially, and at random through their gzip index."""
    records = [tfrec.encode_example({"id": i, "text": f"sample {i} of {count}"}) for i in range(count)]
    packed = os.path.join(directory, "g.tfrecord.gz")
    plain = os.path.join(directory, "g.tfrecord")
    with tfrec.RecordWriter(packed, gzip_member_bytes=1 << 20) as writer:
        writer.write_many(records)
    tfrec.write_records(plain, records)
    build_index(packed)
    build_index(plain)
    rng = random.Random(SEED)
    keys = [rng.randrange(count) for _ in range(GZIP_LOOKUPS)]
    batches = [[rng.randrange(count) for _ in range(BATCH)] for _ in range(max(1, count // BATCH))]
    gz, flat = RecordFileSource(packed), RecordFileSource(plain)
    ok = gz.__getitems__(batches[0]) == [records[k] for k in batches[0]]
    if not ok:
        print("CHECK FAILED: gzip __getitems__ does not return the records written")
    size = os.path.getsize(packed)
    members = len(writer.gzip_members or [])
    print(f"gzip: {count:,} records, {os.path.getsize(plain):,} bytes -> {size:,} in {members} members")

    def each(source: RecordFileSource, picks: list[int]) -> int:
        for key in picks:
            source[key]
        return len(picks)

    def fresh() -> None:
        gz.close()  # empties the LRU: every run inflates as a cold reader would

    in_order = list(range(count))
    rows: list[tuple[str, float | None, int]] = [
        (
            "gzip read_records, sequential",
            best_time(lambda: sum(1 for _ in tfrec.read_records(packed)), count, repeat),
            count,
        ),
        (GZIP_RANDOM, best_time(lambda: each(gz, keys), len(keys), repeat, fresh), len(keys)),
        (
            "gzip members: source[i] in order",
            best_time(lambda: each(gz, in_order), count, repeat, fresh),
            count,
        ),
        (
            "gzip members: __getitems__ of 1024 (random)",
            best_time(
                lambda: sum(len(gz.__getitems__(b)) for b in batches), len(batches) * BATCH, repeat, fresh
            ),
            len(batches) * BATCH,
        ),
        (
            "uncompressed: source[i] (random, same records)",
            best_time(lambda: each(flat, keys), len(keys), repeat),
            len(keys),
        ),
    ]
    gz.close()
    flat.close()
    return rows, ok


def tfrecord2idx(path: str, index_path: str, repeat: int) -> float | None:
    """Seconds of the tfrecord package's tfrecord2idx (best of ``repeat``), or None when not installed.

    Loaded from its file alone: importing the package would import its generated protos.
    """
    spec = importlib.util.find_spec("tfrecord")
    if spec is None or not spec.submodule_search_locations:
        return None
    tool = os.path.join(next(iter(spec.submodule_search_locations)), "tools", "tfrecord2idx.py")
    create_index = runpy.run_path(tool)["create_index"]
    return best_time(lambda: create_index(path, index_path) or 1, 1, repeat)


def main(argv: list[str] | None = None) -> int:
    parser: argparse.ArgumentParser = _common.arguments(__doc__.splitlines()[0], [])
    args = parser.parse_args(argv)
    count = RECORDS // (10 if args.quick else 1)
    lookups = LOOKUPS // (10 if args.quick else 1)
    print(versions("not used", f"CRC backend {crc_backend()}"))
    print(f"best of {args.repeat} after a warm-up; {count:,} records of {SIZE} bytes")
    records = make_records(count)
    rng = random.Random(SEED)
    keys = [rng.randrange(count) for _ in range(lookups)]
    batches = [keys[i : i + BATCH] for i in range(0, len(keys) - BATCH + 1, BATCH)]
    batched = len(batches) * BATCH
    rows: list[tuple[str, float | None, int]] = []  # (label, seconds, records)
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench_index_", dir=scratch_parent()) as directory:
        prefix = os.path.join(directory, "w")

        def write() -> int:
            with ShardedWriter(prefix, num_shards=8, index=True, overwrite=True) as writer:
                writer.write_many(records)
            return writer.summary.records

        rows.append(
            ("write: ShardedWriter(num_shards=8, index=True)", best_time(write, count, args.repeat), count)
        )
        path = os.path.join(directory, "one.tfrecord")
        tfrec.write_records(path, records)
        ours = os.path.join(directory, "ours.idx")
        seconds = best_time(lambda: len(read_index(build_index(path, ours))[0]), count, args.repeat)
        rows.append(("build_index (and read_index)", seconds, count))
        theirs = os.path.join(directory, "theirs.idx")
        seconds_theirs = tfrecord2idx(path, theirs, args.repeat)
        if seconds_theirs is None:
            print("tfrecord package: skipped: not installed")
        else:
            rows.append(("tfrecord package's tfrecord2idx", seconds_theirs, count))
            if not filecmp.cmp(ours, theirs, shallow=False):
                print("CHECK FAILED: build_index differs from tfrecord2idx")
                ok = False
        os.replace(ours, path + ".idx")

        source = RecordFileSource(path)
        if source.__getitems__(keys[:BATCH]) != [records[k] for k in keys[:BATCH]]:
            print("CHECK FAILED: __getitems__ does not return the records written")
            ok = False

        def getitem() -> int:
            for key in keys:
                source[key]
            return len(keys)

        def getitems() -> int:
            return sum(len(source.__getitems__(batch)) for batch in batches)

        offsets, lengths = read_index(path + ".idx")
        offset_list, length_list = offsets.tolist(), lengths.tolist()
        fd = os.open(path, os.O_RDONLY)
        try:

            def raw() -> int:
                pread = os.pread
                for key in keys:
                    pread(fd, length_list[key], offset_list[key])
                return len(keys)

            rows.append(
                ("__getitem__ (random, CRCs checked)", best_time(getitem, lookups, args.repeat), lookups)
            )
            rows.append(
                (
                    "__getitems__ of 1024 (random, CRCs checked)",
                    best_time(getitems, batched, args.repeat),
                    batched,
                )
            )
            rows.append(
                ("os.pread per record, no checks (limit)", best_time(raw, lookups, args.repeat), lookups)
            )
        finally:
            os.close(fd)
            source.close()

        features_rows, features_ok = with_features(directory, count // 10, keys, args.repeat)
        rows += features_rows
        ok = ok and features_ok
        rows += global_shuffle_rows(directory, args.quick, args.repeat)
        gzip_found, gzip_ok = gzip_rows(directory, count // 10, args.repeat)
        rows += gzip_found
        ok = ok and gzip_ok

    lines = [("operation", "records/s", "seconds", "records/CPU s")]
    lines += [
        (
            label,
            f"{n / s:,.0f}" if s else "-",
            f"{s:.3f}" if s else "-",
            f"{n / CPU_SECONDS[label]:,.0f}" if CPU_SECONDS.get(label) else "-",
        )
        for label, s, n in rows
    ]
    print()
    print_lines(lines)
    rates = {label: n / s for label, s, n in rows if s}
    single = rates["__getitem__ (random, CRCs checked)"]
    many = rates["__getitems__ of 1024 (random, CRCs checked)"]
    print(f"target __getitem__ >= {TARGET_GETITEM:,}/s: {'met' if single >= TARGET_GETITEM else 'MISSED'}")
    goal = TARGET_FACTOR * TARGET_GETITEM
    verdict = "met" if many >= goal else "MISSED"
    print(f"target __getitems__ >= {goal:,}/s: {verdict} ({many / single:.1f}x __getitem__)")
    cpu = CPU_SECONDS  # the features rows by CPU time: a loaded machine disturbs it less than wall time
    ratio = cpu[FEATURES_GETITEM] / (cpu[RAW_GETITEM] + cpu[DESERIALIZE])
    verdict = "met" if ratio <= TARGET_FEATURES_FACTOR else "MISSED"
    print(
        f"target __getitem__ with features within {TARGET_FEATURES_FACTOR}x of a raw read + "
        f"deserialize_example (CPU time): {ratio:.2f}x: {verdict}"
    )
    for label in GLOBAL_WORKLOADS:
        ratio = (
            rates[f"{label}: global shuffle, TFRecordDataset(spec).batch(1024)"]
            / rates[f"{label}: sequential, TFRecordDataset(spec).batch(1024)"]
        )
        verdict = "met" if ratio >= TARGET_GLOBAL_RATIO else "MISSED"
        target = f"target {label}: global shuffle >= {TARGET_GLOBAL_RATIO:.0%} of sequential"
        print(f"{target}: {verdict} ({ratio:.0%})")
    for label in (GRAIN, GRAIN_KEYS, GRAIN_BATCHES):
        if label in rates:
            cpu_rate = next(n for name, _, n in rows if name == label) / cpu[label]
            verdict = "met" if rates[label] >= TARGET_GRAIN else "MISSED"
            peer = f", {rates[label] / rates[TORCH]:.2f}x torch's DataLoader" if TORCH in rates else ""
            print(
                f"target {label.split(': ', 1)[1]} >= {TARGET_GRAIN:,}/s: {rates[label]:,.0f}/s: {verdict} "
                f"({cpu_rate:,.0f} records per CPU second{peer})"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"({time.perf_counter() - start:.0f} s)")
    sys.exit(code)
