"""Converting to TFRecord: tfrec's converters against the obvious TensorFlow script, in records/s.

Two workloads, each converted once per implementation into one uncompressed TFRecord file:

- CSV -> TFRecord: a table of ``--rows`` rows (2 int columns, 3 float columns, 1 text column).
  tfrec: ``write_samples(read_csv(path), out)`` (types inferred). TensorFlow: ``csv.reader`` +
  ``tf.train.Example`` + ``tf.io.TFRecordWriter``, the guide's way.
- tar of PNGs -> TFRecord: a webdataset-style tar of ``--images`` small PNGs with ``.cls`` labels
  (the shipped examples/digits.tar.gz, repeated). tfrec: ``write_samples(read_webdataset(path))``.
  TensorFlow: ``tarfile`` + grouping by basename + ``tf.train.Example`` + ``TFRecordWriter``.

The TensorFlow rows run in a subprocess with ``--tf-python`` (default: $TF_PYTHON, else
this interpreter), and are skipped when TensorFlow cannot be imported there. Both write the same records
(the script checks the counts).

    python benchmarks/bench_convert.py --rows 200000 --images 20000
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tfrec import read_records  # noqa: E402
from tfrec.convert import read_csv, read_webdataset, write_samples  # noqa: E402

TF_SCRIPT = textwrap.dedent(
    """
    import csv, sys, tarfile, time
    import tensorflow as tf

    kind, src, out = sys.argv[1:4]
    start = time.perf_counter()
    count = 0
    with tf.io.TFRecordWriter(out) as writer:
        if kind == "csv":
            with open(src, newline="") as file:
                rows = csv.reader(file)
                next(rows)
                for a, b, x, y, z, name in rows:
                    feature = {
                        "a": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(a)])),
                        "b": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(b)])),
                        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(x)])),
                        "y": tf.train.Feature(float_list=tf.train.FloatList(value=[float(y)])),
                        "z": tf.train.Feature(float_list=tf.train.FloatList(value=[float(z)])),
                        "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[name.encode()])),
                    }
                    example = tf.train.Example(features=tf.train.Features(feature=feature))
                    writer.write(example.SerializeToString())
                    count += 1
        else:
            sample, key = {}, None
            def flush():
                feature = {
                    "cls": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(sample["cls"])])),
                    "png": tf.train.Feature(bytes_list=tf.train.BytesList(value=[sample["png"]])),
                }
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
            with tarfile.open(src, "r|*") as archive:
                for member in archive:
                    if not member.isfile():
                        continue
                    base = member.name.rpartition("/")[2]
                    name, _, ext = base.partition(".")
                    if key is not None and name != key:
                        flush(); count += 1; sample = {}
                    key = name
                    sample[ext] = archive.extractfile(member).read()
            if sample:
                flush(); count += 1
    print(count, time.perf_counter() - start)
    """
)


def make_csv(path: str, rows: int) -> None:
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["a", "b", "x", "y", "z", "name"])
        for i in range(rows):
            writer.writerow([i, i % 97, f"{i * 0.25:.2f}", f"{(i % 13) * 1.5:.1f}", f"{i % 7}.5", f"row{i}"])


def make_tar(path: str, images: int) -> None:
    members = []
    with tarfile.open(os.path.join(ROOT, "examples", "digits.tar.gz"), "r:gz") as archive:
        for member in archive:
            file = archive.extractfile(member)
            assert file is not None
            members.append((member.name, file.read()))
    with tarfile.open(path, "w") as archive:
        for index in range(images):
            for ext in ("png", "cls"):
                data = members[(index % (len(members) // 2)) * 2 + (ext == "cls")][1]
                info = tarfile.TarInfo(f"{index:07d}.{ext}")
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))


def run_tfrec(kind: str, src: str, out: str) -> tuple[int, float]:
    start = time.perf_counter()
    samples = read_csv(src) if kind == "csv" else read_webdataset(src, types={"cls": "int64"})
    summary = write_samples(samples, out, progress=False, save_features=False)
    return summary.records, time.perf_counter() - start


def run_tf(python: str, kind: str, src: str, out: str) -> tuple[int, float] | None:
    check = subprocess.run([python, "-c", "import tensorflow"], capture_output=True, check=False)
    if check.returncode != 0:
        return None
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [python, "-c", TF_SCRIPT, kind, src, out], capture_output=True, text=True, env=env, check=True
    )
    count, seconds = result.stdout.split()[-2:]
    return int(count), float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--tf-python", default=os.environ.get("TF_PYTHON", sys.executable))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        csv_path, tar_path = os.path.join(tmp, "t.csv"), os.path.join(tmp, "t.tar")
        make_csv(csv_path, args.rows)
        make_tar(tar_path, args.images)
        print(f"{'workload':<22}{'tfrec rec/s':>14}{'TF rec/s':>14}{'ratio':>8}")
        for kind, src, label in (
            ("csv", csv_path, "CSV -> TFRecord"),
            ("tar", tar_path, "tar of PNGs -> TFRecord"),
        ):
            ours = os.path.join(tmp, f"{kind}-tfrec.tfrecord")
            count, seconds = run_tfrec(kind, src, ours)
            assert count == sum(1 for _ in read_records(ours))
            theirs = run_tf(args.tf_python, kind, src, os.path.join(tmp, f"{kind}-tf.tfrecord"))
            rate = count / seconds
            if theirs is None:
                print(f"{label:<22}{rate:>14,.0f}{'(no TF)':>14}")
                continue
            assert theirs[0] == count, (theirs[0], count)
            tf_rate = theirs[0] / theirs[1]
            print(f"{label:<22}{rate:>14,.0f}{tf_rate:>14,.0f}{rate / tf_rate:>7.1f}x")


if __name__ == "__main__":
    main()
