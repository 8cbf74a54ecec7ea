"""tfrec.allocator: batched reading keeps freed heap memory for the next batch (glibc only)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GLIBC = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc") if hasattr(os, "confstr") else False

# Makes and drops batches of 1024 values of 3 KB (above Python's small-object size), as decoding
# an image column does, and prints the page faults per value once the heap is warm.
CHURN = """
import resource, sys
import tfrec
{setup}
source = bytes(range(256)) * 16_000
starts = range(0, 1024 * 3_700, 3_700)
def batch():
    return [source[s : s + 3_072] for s in starts]
for _ in range(3):
    batch()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    batch()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / (50 * 1024))
"""


def _faults_per_value(setup: str, **env: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", CHURN.format(setup=setup)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout)


@pytest.mark.skipif(not GLIBC, reason="tunes glibc's allocator only")
def test_batched_reading_keeps_freed_memory_for_the_next_batch() -> None:
    tuned = "from tfrec.allocator import keep_freed_memory; keep_freed_memory(); keep_freed_memory()"
    # glibc's default gives the freed batch back to the system: its pages fault in again next time.
    assert _faults_per_value("") > 0.2  # importing tfrec changes nothing
    assert _faults_per_value(tuned) < 0.02
    assert _faults_per_value(tuned, TFREC_MALLOC_TUNING="0") > 0.2


@pytest.mark.skipif(not GLIBC, reason="tunes glibc's allocator only")
def test_read_batches_and_datasets_tune_the_allocator(tmp_path: Path) -> None:
    for start in (
        "tfrec.write_records('x.tfrecord', [b'a'], overwrite=True); "
        "next(tfrec.read_batches('x.tfrecord', 4))",
        "tfrec.write_records('x.tfrecord', [b'a'], overwrite=True); "
        "list(tfrec.TFRecordDataset('x.tfrecord'))",
    ):
        setup = f"import os; os.chdir({str(tmp_path)!r}); {start}"
        assert _faults_per_value(setup) < 0.02, start
