"""Build the golden TFRecord files with real TensorFlow.

For every case in ``CASES`` this writes the records returned by
``payloads(case)`` with ``tf.io.TFRecordWriter`` once per compression:

* ``<case>.tfrecord``    -- no compression
* ``<case>.tfrecord.gz`` -- ``compression_type="GZIP"``
* ``<case>.tfrecord.zz`` -- ``compression_type="ZLIB"``

and then ``manifest.json``, which gives for every file its case, compression,
number of records, size in bytes and sha256.

Cases: ``empty`` (no records), ``zero_length`` (one record ``b""``),
``one_byte`` (one record ``b"\\x00"``) and ``mixed`` (1000 records of seeded
pseudo-random sizes 0..5000 bytes, including empty, all-0xFF, ASCII and
non-UTF-8 records). ``one_mib`` (one 1 MiB record) is only written with
``--large``, because it is too big to commit.

The committed set in ``tests/golden/`` was made with TensorFlow 2.21.0.
To make it again (TensorFlow must be installed)::

    python tests/golden/make_golden.py tests/golden

The output is deterministic: running it again gives byte-identical files.
Only numpy is imported at module level, so tests that do not have TensorFlow
can ``import make_golden`` and call ``payloads(case)`` to get the expected
records.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

SEED = 20240611
"""Seed of the numpy Generator behind ``mixed`` and ``one_mib``."""

CASES: tuple[str, ...] = ("empty", "zero_length", "one_byte", "mixed")
LARGE_CASES: tuple[str, ...] = ("one_mib",)

# TFRecordWriter compression_type -> file name suffix.
COMPRESSIONS: dict[str, str] = {
    "": ".tfrecord",
    "GZIP": ".tfrecord.gz",
    "ZLIB": ".tfrecord.zz",
}

MIXED_COUNT = 1000
MIXED_MAX_SIZE = 5000
ONE_MIB = 1 << 20

# A run of invalid UTF-8: a lone continuation byte, an overlong "/",
# a truncated 3-byte sequence, a surrogate, 0xFE/0xFF and a lone lead byte.
_NOT_UTF8 = b"\x80\xc0\xaf\xe2\x82\xed\xa0\x80\xfe\xff\xc3"


def _mixed() -> list[bytes]:
    """1000 records; sizes span 0..5000 but most are small to keep it small."""
    rng = np.random.Generator(np.random.PCG64(SEED))
    small = rng.integers(0, 501, size=MIXED_COUNT)
    large = rng.integers(0, MIXED_MAX_SIZE + 1, size=MIXED_COUNT)
    sizes = np.where(rng.random(MIXED_COUNT) < 0.2, large, small)
    sizes[::97] = 0  # some empty records (index 0, 97, 194, ...)
    sizes[1] = MIXED_MAX_SIZE  # the largest size appears at least once
    kinds = rng.integers(0, 5, size=MIXED_COUNT)

    records: list[bytes] = []
    for i in range(MIXED_COUNT):
        size, kind = int(sizes[i]), int(kinds[i])
        if kind == 0:  # all 0xFF
            data = b"\xff" * size
        elif kind == 1:  # printable ASCII
            data = rng.integers(0x20, 0x7F, size=size, dtype=np.uint8).tobytes()
        elif kind == 2:  # only bytes >= 0x80: never valid UTF-8 (if not empty)
            data = rng.integers(0x80, 0x100, size=size, dtype=np.uint8).tobytes()
        elif kind == 3:  # repeated invalid UTF-8 sequences
            data = (_NOT_UTF8 * (size // len(_NOT_UTF8) + 1))[:size]
        else:  # uniform random bytes
            data = rng.integers(0, 0x100, size=size, dtype=np.uint8).tobytes()
        records.append(data)
    return records


def payloads(case: str) -> list[bytes]:
    """Return the records of golden case ``case``, the same on every call."""
    if case == "empty":
        return []
    if case == "zero_length":
        return [b""]
    if case == "one_byte":
        return [b"\x00"]
    if case == "mixed":
        return _mixed()
    if case == "one_mib":
        rng = np.random.Generator(np.random.PCG64(SEED + 1))
        return [rng.integers(0, 0x100, size=ONE_MIB, dtype=np.uint8).tobytes()]
    raise ValueError(f"unknown golden case {case!r}; known: {CASES + LARGE_CASES}")


def file_name(case: str, compression: str) -> str:
    """Return the golden file name, e.g. ``mixed.tfrecord.gz``."""
    return case + COMPRESSIONS[compression]


def main(argv: list[str] | None = None) -> int:
    """Write the golden files and ``manifest.json`` into OUTDIR."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="directory to write into")
    parser.add_argument("--large", action="store_true", help="also write one_mib")
    args = parser.parse_args(argv)

    import tensorflow as tf  # only here: importing this module needs just numpy

    outdir: Path = args.outdir
    outdir.mkdir(parents=True, exist_ok=True)
    cases = CASES + (LARGE_CASES if args.large else ())

    files: dict[str, dict[str, object]] = {}
    for case in cases:
        records = payloads(case)
        for compression in COMPRESSIONS:
            name = file_name(case, compression)
            path = outdir / name
            options = tf.io.TFRecordOptions(compression_type=compression)
            with tf.io.TFRecordWriter(str(path), options) as writer:
                for record in records:
                    writer.write(record)
            data = path.read_bytes()
            files[name] = {
                "case": case,
                "compression": compression or "NONE",
                "records": len(records),
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            print(f"{name}: {len(records)} records, {len(data)} bytes")

    manifest = {
        "generator": "tests/golden/make_golden.py",
        "tensorflow": tf.__version__,
        "seed": SEED,
        "files": dict(sorted(files.items())),
    }
    text = json.dumps(manifest, indent=2) + "\n"
    (outdir / "manifest.json").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
