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


# -- arenas: where batched decoders may put their output columns ------------------------------------


def test_an_arena_hands_out_aligned_arrays_until_it_is_full() -> None:
    import numpy as np

    from tfrec.allocator import ALIGN, Arena

    arena = Arena(memoryview(bytearray(1000)))
    first = arena.empty(3, np.int64)
    second = arena.empty(10, np.float32)
    assert first is not None and second is not None
    assert arena.offset(first) == 0 and arena.offset(second) == ALIGN
    assert arena.empty(1000, np.uint8) is None  # no room: the caller allocates as usual
    assert arena.offset(np.zeros(3)) is None and arena.offset(second[::2]) is None


def test_an_arena_locates_the_byte_strings_made_from_it() -> None:
    import numpy as np

    from tfrec.allocator import Arena

    arena = Arena(memoryview(bytearray(1000)))
    copied = arena.copy(np.frombuffer(b"ab\x00cd\x00ef\x00", np.uint8).reshape(3, 3))
    assert copied is not None
    values = arena.strings_of(copied.view("V3").reshape(-1))
    assert values == [b"ab\x00", b"cd\x00", b"ef\x00"]  # bytes, NULs kept
    assert arena.bytes_values(list(values)) == (0, 3)
    assert arena.bytes_values([b"ab\x00", b"cd\x00"]) is None and arena.bytes_values([b"x"] * 3) is None


def test_decoding_into_an_arena_gives_the_same_columns() -> None:
    import numpy as np

    import tfrec
    from tfrec.allocator import Arena, use_arena

    rng = np.random.default_rng(0)
    spec = {
        "image": tfrec.FixedLenFeature([], tfrec.string),
        "emb": tfrec.FixedLenFeature([16], tfrec.float32),
        "tokens": tfrec.FixedLenFeature([4], tfrec.int64),
        "text": tfrec.FixedLenFeature([], tfrec.string, default_value=b""),
    }

    def record(i: int, fixed: bool) -> bytes:
        value = {"image": rng.bytes(700), "emb": rng.standard_normal(16).astype(np.float32)}
        value["tokens"] = rng.integers(0, 100 if fixed else 10**6, 4)
        if not fixed:
            value["text"] = "x" * (i % 7)
        return tfrec.encode_example(value)

    for fixed in (True, False):  # the fixed-layout decoder, then the lockstep one
        records = [record(i, fixed) for i in range(64)]
        expected = tfrec.parse_example(records, spec)
        arena = Arena(memoryview(bytearray(1 << 20)))
        with use_arena(arena):
            got = tfrec.parse_example(records, spec)
        assert got.keys() == expected.keys()
        for key, value in expected.items():
            assert got[key].dtype == value.dtype and got[key].shape == value.shape
            assert got[key].tolist() == value.tolist()
        assert arena.offset(got["emb"]) is not None  # written by the decoder into the arena
        assert arena.bytes_values(got["image"].tolist()) is not None
        small = Arena(memoryview(bytearray(100)))  # no room: allocated as usual, same columns
        with use_arena(small):
            assert tfrec.parse_example(records, spec)["image"].tolist() == expected["image"].tolist()
