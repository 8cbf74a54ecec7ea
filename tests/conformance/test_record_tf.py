"""Conformance of the record layer with real TensorFlow (skipped when TensorFlow is absent).

What TF writes, tfrec reads; what tfrec writes, TF reads, and the bytes are the
same as ``tf.io.TFRecordWriter``'s; on damaged files tfrec fails where TF fails,
after the same records, at the same offset, and where TF stops silently tfrec
still raises. Run with ``pytest -m conformance tests/conformance``.

TF behaviour pinned here (TF 2.21): a bad data CRC is reported at the data's
offset, everything else at the frame's; a cut inside a header and 1-11 trailing
bytes are silent. In compressed files TF is silent when the inflated bytes end
at or inside a header (e.g. a missing gzip/zlib trailer) but says "truncated
record at N" when they end inside data; it ignores anything after a zlib
stream and one byte after a gzip member, but 2+ bytes after a gzip member fail.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.conformance

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"

# (tfrec compression, TF compression_type, file suffix)
COMPRESSIONS = [(None, "", ".tfrecord"), ("gzip", "GZIP", ".tfrecord.gz"), ("zlib", "ZLIB", ".tfrecord.zz")]
COMPRESSION_IDS = ["none", "gzip", "zlib"]

# TF's DataLossError message names the frame: "corrupted record at N" / "truncated record at N".
TF_WHERE = re.compile(r"\b(corrupted|truncated) record at (\d+)")


def _load_make_golden() -> ModuleType:
    # tests/golden is not a package; a private module name avoids clashing with other imports of it.
    spec = importlib.util.spec_from_file_location("_conformance_make_golden", GOLDEN / "make_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_golden = _load_make_golden()


@functools.cache
def payloads(case: str) -> list[bytes]:
    return make_golden.payloads(case)


# -- helpers ------------------------------------------------------------------------------------


def tf_write(path: Path, records: list[bytes], compression_type: str, level: int | None = None) -> bytes:
    """Write ``records`` with tf.io.TFRecordWriter; return the file's bytes."""
    options = tf.io.TFRecordOptions(compression_type=compression_type, compression_level=level)
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for record in records:
            writer.write(record)
    return path.read_bytes()


def tf_read(path: Path, compression_type: str) -> tuple[list[bytes], str | None]:
    """Records tf.data yields, and the DataLossError message that ended reading (None if clean)."""
    records: list[bytes] = []
    try:
        for record in tf.data.TFRecordDataset(str(path), compression_type=compression_type):
            records.append(record.numpy())
    except tf.errors.DataLossError as exc:
        return records, exc.message
    return records, None


def tfrec_read(path: Path, compression: str | None) -> tuple[list[bytes], tfrec.RecordError | None]:
    """Records tfrec yields, and the RecordError that ended reading (None if clean)."""
    records: list[bytes] = []
    try:
        for record in tfrec.read_records(path, compression):
            records.append(record)
    except tfrec.RecordError as exc:
        return records, exc
    return records, None


def tf_where(message: str) -> tuple[str, int]:
    """("corrupted" | "truncated", offset) from a TF DataLossError message."""
    match = TF_WHERE.search(message)
    assert match is not None, f"no offset in TF's message: {message!r}"
    return match.group(1), int(match.group(2))


# -- 1. golden files: TF writes them, tfrec reads them ------------------------------------------


@pytest.fixture(scope="module")
def tf_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden set (with --large) freshly written by the installed TensorFlow."""
    outdir = tmp_path_factory.mktemp("golden")
    assert make_golden.main([str(outdir), "--large"]) == 0
    return outdir


GOLDEN_CASES = [
    pytest.param(case, compression, id=make_golden.file_name(case, compression))
    for case in make_golden.CASES + make_golden.LARGE_CASES
    for compression in make_golden.COMPRESSIONS
]


@pytest.mark.parametrize(("case", "compression_type"), GOLDEN_CASES)
def test_tfrec_reads_tf_written_golden_file(tf_golden: Path, case: str, compression_type: str) -> None:
    path = tf_golden / make_golden.file_name(case, compression_type)
    expected = payloads(case)
    reader = tfrec.read_records(path)  # "auto": compression from the suffix
    assert list(reader) == expected
    assert reader.index == len(expected)
    assert reader.offset == sum(len(record) + 16 for record in expected)
    # TF's own spelling of the compression gives the same.
    assert list(tfrec.read_records(path, compression_type)) == expected


def test_committed_golden_files_are_what_tf_writes(tf_golden: Path) -> None:
    committed = json.loads((GOLDEN / "manifest.json").read_text(encoding="utf-8"))["files"]
    fresh = json.loads((tf_golden / "manifest.json").read_text(encoding="utf-8"))["files"]
    names = {make_golden.file_name(c, t) for c in make_golden.CASES for t in make_golden.COMPRESSIONS}
    assert set(committed) == names
    assert set(fresh) - set(committed) == {
        make_golden.file_name(c, t) for c in make_golden.LARGE_CASES for t in make_golden.COMPRESSIONS
    }
    for name, entry in committed.items():
        assert fresh[name] == entry, name
        data = (GOLDEN / name).read_bytes()
        assert data == (tf_golden / name).read_bytes(), name
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name


# -- 2. tfrec writes, TF reads; the bytes are TF's ----------------------------------------------

WRITE_CASES = {
    "zero_records": lambda: [],
    "zero_length": lambda: [b""],
    "one_byte": lambda: [b"\x00"],
    "one_mib": lambda: payloads("one_mib"),
    "mixed": lambda: payloads("mixed"),
}


@pytest.mark.parametrize("case", list(WRITE_CASES))
@pytest.mark.parametrize(("compression", "compression_type", "suffix"), COMPRESSIONS, ids=COMPRESSION_IDS)
def test_tf_reads_what_tfrec_writes(
    tmp_path: Path, case: str, compression: str | None, compression_type: str, suffix: str
) -> None:
    records = WRITE_CASES[case]()
    path = tmp_path / f"out{suffix}"
    assert tfrec.write_records(path, records, compression) == len(records)
    assert tf_read(path, compression_type) == (records, None)


@pytest.mark.parametrize("case", list(WRITE_CASES))
@pytest.mark.parametrize(("compression", "compression_type", "suffix"), COMPRESSIONS, ids=COMPRESSION_IDS)
def test_tfrec_output_is_byte_identical_to_tf(
    tmp_path: Path, case: str, compression: str | None, compression_type: str, suffix: str
) -> None:
    records = WRITE_CASES[case]()
    expected = tf_write(tmp_path / f"tf{suffix}", records, compression_type)
    tfrec.write_records(tmp_path / f"many{suffix}", records, compression)
    assert (tmp_path / f"many{suffix}").read_bytes() == expected
    # One write() per record takes another code path than write_many().
    with tfrec.RecordWriter(tmp_path / f"one{suffix}", compression) as writer:
        for record in records:
            writer.write(record)
    assert (tmp_path / f"one{suffix}").read_bytes() == expected


@pytest.mark.parametrize("level", [1, 6, 9])
@pytest.mark.parametrize(("compression", "compression_type"), [("gzip", "GZIP"), ("zlib", "ZLIB")])
def test_explicit_compression_level_is_byte_identical_to_tf(
    tmp_path: Path, compression: str, compression_type: str, level: int
) -> None:
    # Level 0 is not compared: stored blocks follow TF's input buffering, which tfrec does not mimic.
    records = payloads("mixed")
    expected = tf_write(tmp_path / "tf", records, compression_type, level)
    tfrec.write_records(tmp_path / "ours", records, compression, compression_level=level)
    assert (tmp_path / "ours").read_bytes() == expected


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for hypothesis examples (function-scoped tmp_path cannot be used with @given)."""
    return tmp_path_factory.mktemp("hypothesis")


@settings(max_examples=25, deadline=None)
@given(records=st.lists(st.binary(max_size=3000), max_size=20))
def test_random_records_match_tf_for_every_compression(scratch: Path, records: list[bytes]) -> None:
    for compression, compression_type, suffix in COMPRESSIONS:
        ours = scratch / f"ours{suffix}"
        tfrec.write_records(ours, records, compression, overwrite=True)  # hypothesis reuses scratch
        assert tf_read(ours, compression_type) == (records, None)
        assert ours.read_bytes() == tf_write(scratch / f"tf{suffix}", records, compression_type)


# -- 3. damaged files ---------------------------------------------------------------------------

# Sizes chosen to hit tfrec's paths: empty records, small ones read in blocks,
# and records >= 64 KiB that it reads on their own.
BASE_SIZES = (0, 1, 10, 100, 1000, 70000, 5, 300, 0, 2000, 65536, 50)
BASE_RECORDS = [
    np.random.Generator(np.random.PCG64(size)).integers(0, 256, size, dtype=np.uint8).tobytes()
    for size in BASE_SIZES
]
BASE_OFFSETS = [sum(size + 16 for size in BASE_SIZES[:k]) for k in range(len(BASE_SIZES))]
BASE_END = sum(size + 16 for size in BASE_SIZES)
FRAME_STARTS = [*BASE_OFFSETS, BASE_END]  # offset of record k, or of the end when k is the count
TARGETS = (0, 3, 5, 11)  # first, a small one, a large one, the last record

Files = dict[str | None, bytes]  # tfrec compression -> TF-written bytes of BASE_RECORDS
Corrupt = Callable[[Files], bytes]


@pytest.fixture(scope="module")
def base_files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    outdir = tmp_path_factory.mktemp("base")
    return {
        compression: tf_write(outdir / f"base{suffix}", BASE_RECORDS, compression_type)
        for compression, compression_type, suffix in COMPRESSIONS
    }


# Damage recipes: each turns the TF-written base files into the bytes of a damaged file.


def flipped(position: int, compression: str | None = None) -> Corrupt:
    """Flip one bit of the byte at ``position`` (negative: from the end)."""

    def make(files: Files) -> bytes:
        damaged = bytearray(files[compression])
        damaged[position] ^= 0x10
        return bytes(damaged)

    return make


def cut(size: int, compression: str | None = None) -> Corrupt:
    """Keep the first ``size`` bytes (negative: drop the last ``-size``)."""
    return lambda files: files[compression][:size]


def cut_fraction(fraction: float, compression: str) -> Corrupt:
    return lambda files: files[compression][: int(len(files[compression]) * fraction)]


def appended(tail: bytes, compression: str | None = None) -> Corrupt:
    return lambda files: files[compression] + tail


def whole(compression: str | None) -> Corrupt:
    return lambda files: files[compression]


def recompressed(inner: Corrupt, compression: str) -> Corrupt:
    """A whole, valid gzip/zlib stream holding damaged frames."""
    wbits = zlib.MAX_WBITS + (16 if compression == "gzip" else 0)

    def make(files: Files) -> bytes:
        deflate = zlib.compressobj(wbits=wbits)
        return deflate.compress(inner(files)) + deflate.flush()

    return make


ChecksumError, TruncatedRecordError = tfrec.ChecksumError, tfrec.TruncatedRecordError
ALL = len(BASE_RECORDS)
TEXT = b"This is a text file, not a TFRecord file.\n" * 3


def _tf_fails(
    name: str, corrupt: Corrupt, word: str, tf_offset: int, count: int, error: type, part: str | None = None
) -> object:
    return pytest.param(corrupt, word, tf_offset, count, error, part, id=name)


def _tf_fail_cases() -> list[object]:
    """Uncompressed damage TF reports: TF's word and offset, records before it, tfrec's error."""
    cases = []
    for k in TARGETS:
        at, size = BASE_OFFSETS[k], BASE_SIZES[k]
        data_at, foot = at + 12, at + 12 + size
        cases += [
            _tf_fails(f"length-crc-r{k}", flipped(at + 9), "corrupted", at, k, ChecksumError, "length"),
            _tf_fails(f"length-field-r{k}", flipped(at), "corrupted", at, k, ChecksumError, "length"),
            _tf_fails(f"data-crc-r{k}", flipped(foot + 1), "corrupted", data_at, k, ChecksumError, "data"),
            _tf_fails(f"cut-in-footer-r{k}", cut(foot + 2), "truncated", at, k, TruncatedRecordError),
        ]
        if size:
            middle = data_at + size // 2
            cases += [
                _tf_fails(f"data-r{k}", flipped(middle), "corrupted", data_at, k, ChecksumError, "data"),
                _tf_fails(f"cut-in-data-r{k}", cut(middle), "truncated", at, k, TruncatedRecordError),
            ]
    for n in (12, 13, 100):
        garbage = appended(b"\xab" * n)
        cases.append(_tf_fails(f"garbage-{n}", garbage, "corrupted", BASE_END, ALL, ChecksumError, "length"))
    cases += [
        _tf_fails("text-file", lambda files: TEXT, "corrupted", 0, 0, ChecksumError, "length"),
        _tf_fails("gzip-as-plain", whole("gzip"), "corrupted", 0, 0, ChecksumError, "length"),
        _tf_fails("zlib-as-plain", whole("zlib"), "corrupted", 0, 0, ChecksumError, "length"),
    ]
    return cases


@pytest.mark.parametrize(("corrupt", "word", "tf_offset", "count", "error", "part"), _tf_fail_cases())
def test_tfrec_fails_where_tf_fails(
    tmp_path: Path,
    base_files: Files,
    corrupt: Corrupt,
    word: str,
    tf_offset: int,
    count: int,
    error: type[tfrec.RecordError],
    part: str | None,
) -> None:
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(corrupt(base_files))
    tf_records, tf_message = tf_read(path, "")
    assert tf_message is not None, "TF read the damaged file without error"
    assert tf_where(tf_message) == (word, tf_offset)
    assert tf_records == BASE_RECORDS[:count]

    records, err = tfrec_read(path, None)
    assert records == tf_records
    assert type(err) is error
    assert err.index == count
    # TF gives the data's offset for a bad data CRC, the frame's otherwise.
    assert err.offset + (12 if part == "data" else 0) == tf_offset
    if part is not None:
        assert isinstance(err, tfrec.ChecksumError)
        assert err.part == part


def _tf_silent_cases() -> list[object]:
    """Uncompressed damage TF passes over: records before it, offset of tfrec's error."""
    cases = []
    for k in TARGETS:
        at = BASE_OFFSETS[k]
        cases += [pytest.param(cut(at + n), k, at, id=f"cut-in-header-r{k}+{n}") for n in (1, 5, 11)]
    cases += [pytest.param(appended(b"\xab" * n), ALL, BASE_END, id=f"garbage-{n}") for n in (1, 5, 11)]
    cases.append(pytest.param(lambda files: b"hi\n", 0, 0, id="short-text-file"))
    return cases


@pytest.mark.parametrize(("corrupt", "count", "offset"), _tf_silent_cases())
def test_tfrec_raises_where_tf_stops_silently(
    tmp_path: Path, base_files: Files, corrupt: Corrupt, count: int, offset: int
) -> None:
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(corrupt(base_files))
    assert tf_read(path, "") == (BASE_RECORDS[:count], None)

    records, err = tfrec_read(path, None)
    assert records == BASE_RECORDS[:count]
    assert isinstance(err, tfrec.TruncatedRecordError)
    assert (err.index, err.offset) == (count, offset)


def _compressed_fail_cases() -> list[object]:
    cases = []
    for c in ("gzip", "zlib"):
        # Flips inside the deflate data, away from the gzip/zlib headers (the base streams are ~139 KB).
        cases += [pytest.param(c, flipped(at, c), id=f"{c}-flip-at-{at}") for at in (100, 70_000, 130_000)]
        cases.append(pytest.param(c, whole(None), id=f"plain-as-{c}"))
    cases += [
        pytest.param("gzip", flipped(-6, "gzip"), id="gzip-bad-crc32"),
        pytest.param("gzip", flipped(-2, "gzip"), id="gzip-bad-size"),
        pytest.param("zlib", flipped(-2, "zlib"), id="zlib-bad-adler32"),
        pytest.param("gzip", appended(b"\xab\xab", "gzip"), id="gzip-then-2-bytes"),
        pytest.param("gzip", appended(TEXT, "gzip"), id="gzip-then-text"),
    ]
    return cases


@pytest.mark.parametrize(("compression", "corrupt"), _compressed_fail_cases())
def test_damaged_compressed_stream_fails_in_both(
    tmp_path: Path, base_files: Files, compression: str, corrupt: Corrupt
) -> None:
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(corrupt(base_files))
    tf_records, tf_message = tf_read(path, compression.upper())
    assert tf_message is not None, "TF read the damaged stream without error"

    records, err = tfrec_read(path, compression)
    assert isinstance(err, tfrec.RecordError)
    assert (err.index, err.offset) == (len(records), FRAME_STARTS[len(records)])
    # How many records come first depends on TF's 256 KiB buffering; tfrec salvages at least as many.
    assert tf_records == BASE_RECORDS[: len(tf_records)]
    assert records == BASE_RECORDS[: len(records)]
    assert len(records) >= len(tf_records)


@pytest.mark.parametrize("fraction", [0.005, 0.3, 0.7, 0.999])
@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_truncated_compressed_stream_reads_alike(
    tmp_path: Path, base_files: Files, compression: str, fraction: float
) -> None:
    # What inflates before the cut ends inside a record's data: TF says "truncated record at N".
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(cut_fraction(fraction, compression)(base_files))
    tf_records, tf_message = tf_read(path, compression.upper())
    assert tf_message is not None
    word, tf_offset = tf_where(tf_message)
    assert word == "truncated"
    assert tf_records == BASE_RECORDS[: len(tf_records)]

    records, err = tfrec_read(path, compression)
    assert records == tf_records
    assert isinstance(err, tfrec.TruncatedRecordError)
    assert (err.index, err.offset) == (len(records), tf_offset)


def _compressed_silent_cases() -> list[object]:
    """Compressed damage TF passes over: records before it, tfrec's error type."""
    cases = [
        pytest.param("gzip", cut(-8, "gzip"), ALL, TruncatedRecordError, id="gzip-no-trailer"),
        pytest.param("gzip", cut(-1, "gzip"), ALL, TruncatedRecordError, id="gzip-cut-1"),
        pytest.param("gzip", appended(b"\xab", "gzip"), ALL, tfrec.RecordError, id="gzip-then-1-byte"),
        pytest.param("zlib", cut(-4, "zlib"), ALL, TruncatedRecordError, id="zlib-no-adler32"),
        pytest.param("zlib", cut(-1, "zlib"), ALL, TruncatedRecordError, id="zlib-cut-1"),
        pytest.param("zlib", appended(b"\xab", "zlib"), ALL, tfrec.RecordError, id="zlib-then-1-byte"),
        pytest.param("zlib", appended(TEXT, "zlib"), ALL, tfrec.RecordError, id="zlib-then-text"),
        pytest.param("zlib", lambda f: f["zlib"] * 2, ALL, tfrec.RecordError, id="zlib-then-zlib"),
    ]
    for c in ("gzip", "zlib"):
        # Whole streams whose content ends inside a header, or with a few garbage bytes.
        in_header = recompressed(cut(BASE_OFFSETS[5] + 5), c)
        garbage = recompressed(appended(b"\xab" * 5), c)
        cases += [
            pytest.param(c, in_header, 5, TruncatedRecordError, id=f"{c}-of-cut-in-header"),
            pytest.param(c, garbage, ALL, TruncatedRecordError, id=f"{c}-of-5-garbage-bytes"),
        ]
    return cases


@pytest.mark.parametrize(("compression", "corrupt", "count", "error"), _compressed_silent_cases())
def test_tfrec_raises_where_tf_ignores_compressed_damage(
    tmp_path: Path, base_files: Files, compression: str, corrupt: Corrupt, count: int, error: type
) -> None:
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(corrupt(base_files))
    assert tf_read(path, compression.upper()) == (BASE_RECORDS[:count], None)

    records, err = tfrec_read(path, compression)
    assert records == BASE_RECORDS[:count]
    assert type(err) is error
    assert (err.index, err.offset) == (count, FRAME_STARTS[count])


@pytest.mark.parametrize(
    ("compression", "make", "count"),
    [
        pytest.param(None, lambda files: b"", 0, id="none-0-bytes"),
        pytest.param("gzip", lambda files: b"", 0, id="gzip-0-bytes"),
        pytest.param("zlib", lambda files: b"", 0, id="zlib-0-bytes"),
        pytest.param("gzip", lambda files: files["gzip"] * 2, 2, id="gzip-two-members"),
    ],
)
def test_edge_files_read_alike(
    tmp_path: Path, base_files: Files, compression: str | None, make: Corrupt, count: int
) -> None:
    path = tmp_path / "edge.tfrecord"
    path.write_bytes(make(base_files))
    expected = BASE_RECORDS * count
    assert tf_read(path, (compression or "").upper()) == (expected, None)
    assert tfrec_read(path, compression) == (expected, None)


# -- 4. TF and tfrec in one process -------------------------------------------------------------

_IMPORTS = {
    "tfrec": "import tfrec\nfrom tfrec.proto import example_pb2, feature_pb2\n",
    "tensorflow": "import tensorflow as tf\n",
}

_INTEROP = """
theirs = tf.train.Example(features=tf.train.Features(feature={
    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[3, -1])),
    "emb": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, -1.25])),
    "raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"\\x00\\xff", b""])),
}))
data = theirs.SerializeToString(deterministic=True)

ours = example_pb2.Example()
ours.features.feature["label"].int64_list.value.extend([3, -1])
ours.features.feature["emb"].float_list.value.extend([0.5, -1.25])
ours.features.feature["raw"].bytes_list.value.extend([b"\\x00\\xff", b""])
assert isinstance(ours.features.feature["label"], feature_pb2.Feature)
assert ours.SerializeToString(deterministic=True) == data
assert example_pb2.Example.FromString(data) == ours
assert tf.train.Example.FromString(ours.SerializeToString()) == theirs
assert example_pb2.Example.DESCRIPTOR.full_name == "tfrec.Example"
assert tf.train.Example.DESCRIPTOR.full_name == "tensorflow.Example"
print("ok")
"""


@pytest.fixture(scope="module")
def interop_runs() -> dict[str, subprocess.CompletedProcess[str]]:
    """Both import orders, run in parallel subprocesses (each pays TF's slow start)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    orders = {"tfrec-first": ("tfrec", "tensorflow"), "tensorflow-first": ("tensorflow", "tfrec")}
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-W", "error", "-c", "".join(_IMPORTS[m] for m in order) + _INTEROP],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, order in orders.items()
    }
    runs = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        runs[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return runs


@pytest.mark.parametrize("order", ["tfrec-first", "tensorflow-first"])
def test_tfrec_and_tensorflow_share_a_process(
    interop_runs: dict[str, subprocess.CompletedProcess[str]], order: str
) -> None:
    run = interop_runs[order]
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"
