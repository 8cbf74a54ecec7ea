"""Read a TFRecord file written by TensorFlow, verify it, and write it back byte for byte.

Usage: ``python examples/demo.py [PATH]`` (default: a gzip file TensorFlow wrote,
shipped in tests/golden/).
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
import time
from pathlib import Path

import tfrec

SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "golden" / "mixed.tfrecord.gz"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else SAMPLE
    start = time.perf_counter()
    records = list(tfrec.read_records(path))  # compression from the suffix; both CRCs checked
    seconds = time.perf_counter() - start
    sizes = [len(r) for r in records]
    print(
        f"{path.name}: {len(records)} records, {sum(sizes)} bytes of data, CRCs verified "
        f"(backend {tfrec.record.crc_backend()}) in {seconds * 1000:.1f} ms"
    )
    if sizes:
        print(f"record sizes: min {min(sizes)}, max {max(sizes)}, mean {sum(sizes) / len(sizes):.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        tfrec.write_records(copy, records, compression="auto")
        same = copy.read_bytes() == path.read_bytes()
        back = list(tfrec.read_records(copy))
    print(
        f"rewritten: {'byte-identical to the original' if same else 'different bytes'}, "
        f"read back {'the same' if back == records else 'DIFFERENT'} records "
        f"(sha256 of the data {hashlib.sha256(b''.join(records)).hexdigest()[:16]})"
    )
    return 0 if back == records else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
