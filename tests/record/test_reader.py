"""RecordReader / read_records: round trips, damage handling, progress, resume, life cycle."""

from __future__ import annotations

import builtins
import gzip
import io
import pickle
import random
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec
import tfrec.record.stream as stream_module

COMPRESSIONS = [None, "gzip", "zlib"]
SUFFIX = {None: ".tfrecord", "gzip": ".tfrecord.gz", "zlib": ".tfrecord.zz"}
HEADER, FOOTER = 12, 4


def compress(data: bytes, compression: str | None) -> bytes:
    if compression == "gzip":
        return gzip.compress(data, mtime=0)
    if compression == "zlib":
        return zlib.compress(data)
    return data


def frame_size(record: bytes) -> int:
    return HEADER + len(record) + FOOTER


def starts_of(records: list[bytes]) -> list[int]:
    """Offset of every record's header, plus the end of the stream."""
    offsets = [0]
    for record in records:
        offsets.append(offsets[-1] + frame_size(record))
    return offsets


def random_bytes(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


class NonSeekable:
    """A read-only stream without seek/tell, like a pipe or a socket."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)
        self.largest_read = 0  # a real file object allocates what read() asks for

    def read(self, size: int = -1) -> bytes:
        self.largest_read = max(self.largest_read, size)
        return self._inner.read(size)


# -- round trips --------------------------------------------------------------------------------

ROUND_TRIPS: dict[str, list[bytes]] = {
    "zero_records": [],
    "one_empty_record": [b""],
    "many_empty_records": [b""] * 50,
    "one_byte": [b"\x00"],
    "ascii": [b"hello", b"world"],
    "just_below_large": [random_bytes((1 << 16) - 1, 1)],
    "large_64k": [random_bytes((1 << 16) + 1, 2)],
    "large_1mib": [random_bytes((1 << 20) + 3, 3)],
    "equal_length_run": [bytes([i % 256]) * 7 for i in range(200)],
    "equal_length_run_of_empty_then_other": [b""] * 40 + [b"x"] * 40 + [b""],
    "equal_length_across_blocks": [random_bytes(1000, i) for i in range(2500)],
    "varying_lengths": [random_bytes(n, n) for n in (0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377)],
    "mixed_small_and_large": (
        [b"s"] * 40
        + [random_bytes(70_000, 4)]
        + [b"tt"] * 3
        + [random_bytes((1 << 20) + 17, 5), b""]
        + [random_bytes(100, 6)] * 35
        + [random_bytes(200_000, 7)]
    ),
}


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("case", list(ROUND_TRIPS))
def test_round_trip_through_a_path(tmp_path: Path, case: str, compression: str | None) -> None:
    records = ROUND_TRIPS[case]
    path = tmp_path / f"data{SUFFIX[compression]}"
    assert tfrec.write_records(path, records, compression) == len(records)
    got = list(tfrec.read_records(path))  # compression="auto": from the suffix
    assert got == records
    assert all(type(record) is bytes for record in got)


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("case", ["zero_records", "one_empty_record", "large_64k", "mixed_small_and_large"])
def test_round_trip_through_a_file_object(case: str, compression: str | None) -> None:
    records = ROUND_TRIPS[case]
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records, compression)
    buffer.seek(0)
    assert list(tfrec.read_records(buffer, compression)) == records


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_round_trip_through_a_non_seekable_stream(compression: str | None) -> None:
    records = ROUND_TRIPS["mixed_small_and_large"]
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records, compression)
    assert list(tfrec.read_records(NonSeekable(buffer.getvalue()), compression)) == records


@pytest.mark.parametrize("kind", ["str", "pathlib"])
def test_reader_accepts_str_and_pathlib_paths(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "data.tfrecord.gz"
    source = str(path) if kind == "str" else path
    tfrec.write_records(source, [b"a", b"b"], "gzip")
    reader = tfrec.RecordReader(source)
    assert reader.path == str(path)
    assert reader.compression == "gzip"
    assert list(reader) == [b"a", b"b"]


@pytest.mark.parametrize(
    ("suffix", "expected"),
    [
        (".tfrecord", None),
        (".tfrecord.gz", "gzip"),
        (".tfrecord.GZ", "gzip"),
        (".tfrecord.gzip", "gzip"),
        (".tfrecord.zz", "zlib"),
        (".tfrecord.zlib", "zlib"),
        (".txt", None),
    ],
)
def test_auto_compression_follows_the_suffix(tmp_path: Path, suffix: str, expected: str | None) -> None:
    path = tmp_path / f"data{suffix}"
    tfrec.write_records(path, [b"abc", b""], "auto")
    reader = tfrec.RecordReader(path)
    assert reader.compression == expected
    assert list(reader) == [b"abc", b""]
    raw = path.read_bytes()
    assert raw.startswith(b"\x1f\x8b") == (expected == "gzip")


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [("GZIP", "gzip"), ("ZLIB", "zlib"), ("", None), ("gzip", "gzip"), ("zlib", "zlib"), (None, None)],
)
def test_reader_accepts_tensorflow_spellings(
    tmp_path: Path, spelling: str | None, expected: str | None
) -> None:
    path = tmp_path / "data.bin"
    tfrec.write_records(path, [b"x"], expected)
    reader = tfrec.RecordReader(path, spelling)
    assert reader.compression == expected
    assert list(reader) == [b"x"]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_zero_byte_file_has_no_records(tmp_path: Path, compression: str | None) -> None:
    path = tmp_path / f"empty{SUFFIX[compression]}"
    path.write_bytes(b"")
    assert list(tfrec.read_records(path)) == []


def test_concatenated_gzip_members_are_read_through(ref: SimpleNamespace) -> None:
    data = gzip.compress(ref.frames([b"a", b"bb"]), mtime=0) + gzip.compress(ref.frames([b"ccc"]), mtime=0)
    assert list(tfrec.read_records(io.BytesIO(data), "gzip")) == [b"a", b"bb", b"ccc"]


def test_reader_reads_independently_framed_bytes(ref: SimpleNamespace) -> None:
    records = [b"", b"\x00", b"hello", bytes(range(256)) * 3]
    assert list(tfrec.read_records(io.BytesIO(ref.frames(records)), None)) == records


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(st.binary(max_size=300), max_size=60),
    compression=st.sampled_from(COMPRESSIONS),
)
def test_property_round_trip(records: list[bytes], compression: str | None) -> None:
    buffer = io.BytesIO()
    assert tfrec.write_records(buffer, records, compression) == len(records)
    buffer.seek(0)
    assert list(tfrec.read_records(buffer, compression)) == records


@settings(max_examples=25, deadline=None)
@given(
    length=st.integers(min_value=0, max_value=120),
    count=st.integers(min_value=0, max_value=120),
    tail=st.lists(st.binary(max_size=40), max_size=5),
)
def test_property_round_trip_of_equal_length_runs(length: int, count: int, tail: list[bytes]) -> None:
    records = [bytes([i % 251]) * length for i in range(count)] + tail
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records)
    assert list(tfrec.read_records(io.BytesIO(buffer.getvalue()), None)) == records


@settings(max_examples=20, deadline=None)
@given(
    sizes=st.lists(
        st.one_of(st.integers(0, 40), st.integers((1 << 16) - 2, (1 << 16) + 2), st.integers(0, 300_000)),
        max_size=8,
    ),
    compression=st.sampled_from(COMPRESSIONS),
)
def test_property_round_trip_of_small_and_large_records(sizes: list[int], compression: str | None) -> None:
    records = [random_bytes(size, i) for i, size in enumerate(sizes)]
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records, compression)
    assert list(tfrec.read_records(NonSeekable(buffer.getvalue()), compression)) == records


def small_frames(seed: int, count: int, nested: float = 0.05) -> list[bytes]:
    """Records of 0..120 bytes (found with numpy, not walked); a ``nested`` share of them hold whole
    frames (headers that validate inside a payload), and a few are large."""
    rng = random.Random(seed)
    records = []
    for i in range(count):
        kind = rng.random()
        if kind < nested:  # a frame inside the data: a header that validates where none starts
            inner = random_bytes(rng.randrange(0, 40), i)
            head = random_bytes(rng.randrange(0, 9), i)
            records.append(head + tfrec.record.frame.header(len(inner)) + inner)
        elif kind > 0.99:
            records.append(random_bytes(rng.choice([(1 << 16) - 1, (1 << 16) + 5, 3000]), i))
        else:
            records.append(random_bytes(rng.randrange(0, 120), i))
    return records


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), count=st.integers(0, 30_000))
def test_property_round_trip_of_many_small_frames(seed: int, count: int) -> None:
    records = small_frames(seed, count)
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records)
    chains: list[int] = []
    found = tfrec.record.frame.small_frame_chain
    with pytest.MonkeyPatch.context() as patch:  # counts the blocks split with numpy
        patch.setattr(tfrec.record.frame, "small_frame_chain", lambda *a: chains.append(1) or found(*a))
        assert list(tfrec.read_records(io.BytesIO(buffer.getvalue()), None)) == records
    assert chains or count < 2000
    batches = tfrec.read_batches(io.BytesIO(buffer.getvalue()), 1000, None)
    assert [record for batch in batches for record in batch] == records


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), where=st.floats(0, 1), part=st.sampled_from(["length", "data"]))
def test_skipping_damage_among_many_small_frames_keeps_every_other_record(
    seed: int, where: float, part: str
) -> None:
    records = small_frames(seed, 20_000, nested=0)  # a frame nested in the damage would be recovered
    damaged = int(where * (len(records) - 1))
    starts = starts_of(records)
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records)
    data = bytearray(buffer.getvalue())
    if part == "length" or not records[damaged]:
        data[starts[damaged] + 9] ^= 0x01  # the length CRC
    else:
        data[starts[damaged] + HEADER] ^= 0x01
    got = list(tfrec.read_records(io.BytesIO(bytes(data)), None, on_error="skip"))
    assert got == records[:damaged] + records[damaged + 1 :]
    with pytest.raises(tfrec.ChecksumError) as caught:
        list(tfrec.read_records(io.BytesIO(bytes(data)), None))
    assert (caught.value.index, caught.value.offset) == (damaged, starts[damaged])


# -- damage: on_error="raise" -------------------------------------------------------------------

# Three records at offsets 0, 26, 62; the stream ends at 108.
RECORDS = [b"a" * 10, b"b" * 20, b"c" * 30]


def flip(data: bytes, position: int) -> bytes:
    damaged = bytearray(data)
    damaged[position] ^= 0x01
    return bytes(damaged)


def cut_zlib_after_two_records(plain: bytes) -> bytes:
    # A full flush ends the deflate data on a byte boundary right after record 1.
    deflate = zlib.compressobj()
    return deflate.compress(plain[:62]) + deflate.flush(zlib.Z_FULL_FLUSH)


def cut_gzip_after_two_records(plain: bytes) -> bytes:
    deflate = zlib.compressobj(wbits=31)
    return deflate.compress(plain[:62]) + deflate.flush(zlib.Z_FULL_FLUSH)


def corrupt_zlib_after_two_records(plain: bytes) -> bytes:
    # 0x07: a final deflate block of the reserved type 3, which zlib rejects.
    return cut_zlib_after_two_records(plain) + b"\x07" + zlib.compress(plain[62:])


def corrupt_gzip_after_two_records(plain: bytes) -> bytes:
    return cut_gzip_after_two_records(plain) + b"\x07" + zlib.compress(plain[62:])


class Damage(NamedTuple):
    """A damaged copy of the three-record file and what reading it must do."""

    id: str
    damage: Callable[[bytes], bytes]  # frames of RECORDS -> file bytes
    compression: str | None
    yielded: int  # records returned before the error
    error: type[tfrec.RecordError]
    index: int
    offset: int
    part: str | None  # ChecksumError.part
    words: str  # part of the message


R, C, T = tfrec.RecordError, tfrec.ChecksumError, tfrec.TruncatedRecordError
TEXT = b"this is a text file, not a TFRecord file at all\n" * 3

# fmt: off
DAMAGE = [
    Damage("bad_length_crc", lambda p: flip(p, 26 + 8), None, 1, C, 1, 26, "length",
           "length CRC mismatch in a record header claiming 20 bytes"),
    Damage("bad_length_value", lambda p: flip(p, 26), None, 1, C, 1, 26, "length",
           "length CRC mismatch in a record header claiming 21 bytes"),
    Damage("bad_data_crc_in_data", lambda p: flip(p, 26 + 12 + 3), None, 1, C, 1, 26, "data",
           "data CRC mismatch in a record of 20 bytes"),
    Damage("bad_data_crc_in_footer", lambda p: flip(p, 62 - 1), None, 1, C, 1, 26, "data",
           "data CRC mismatch in a record of 20 bytes"),
    Damage("bad_data_crc_of_first_record", lambda p: flip(p, 12), None, 0, C, 0, 0, "data",
           "data CRC mismatch in a record of 10 bytes"),
    Damage("bad_data_crc_of_last_record", lambda p: flip(p, 62 + 12), None, 2, C, 2, 62, "data",
           "data CRC mismatch in a record of 30 bytes"),
    Damage("truncated_inside_header", lambda p: p[: 26 + 5], None, 1, T, 1, 26, None,
           "the stream ends 5 bytes into a 12-byte record header"),
    Damage("truncated_inside_data", lambda p: p[: 26 + 12 + 5], None, 1, T, 1, 26, None,
           "the record claims 20 bytes of data but the stream ends 5 bytes after its header"),
    Damage("truncated_inside_footer", lambda p: p[: 62 - 2], None, 1, T, 1, 26, None,
           "the record claims 20 bytes of data but the stream ends 22 bytes after its header"),
    Damage("truncated_right_after_header", lambda p: p[: 26 + 12], None, 1, T, 1, 26, None,
           "ends 0 bytes after its header"),
    Damage("trailing_garbage_3_bytes", lambda p: p + b"xyz", None, 3, T, 3, 108, None,
           "the stream ends 3 bytes into a 12-byte record header"),
    Damage("trailing_garbage_20_bytes", lambda p: p + b"x" * 20, None, 3, C, 3, 108, "length",
           "length CRC mismatch"),
    Damage("not_a_tfrecord_file", lambda p: TEXT, None, 0, C, 0, 0, "length",
           "is this a TFRecord file?"),
    Damage("gzip_file_read_as_plain", lambda p: gzip.compress(p, mtime=0), None, 0, C, 0, 0, "length",
           "the file looks gzip-compressed: pass compression='gzip'"),
    Damage("plain_file_read_as_gzip", lambda p: p, "gzip", 0, R, 0, 0, None,
           "the gzip stream is damaged"),
    Damage("plain_file_read_as_zlib", lambda p: p, "zlib", 0, R, 0, 0, None,
           "the zlib stream is damaged"),
    Damage("corrupt_gzip_stream", corrupt_gzip_after_two_records, "gzip", 2, R, 2, 62, None,
           "the gzip stream is damaged"),
    Damage("corrupt_zlib_stream", corrupt_zlib_after_two_records, "zlib", 2, R, 2, 62, None,
           "the zlib stream is damaged"),
    Damage("truncated_gzip_stream", cut_gzip_after_two_records, "gzip", 2, T, 2, 62, None,
           "the gzip stream ends before its end-of-stream marker"),
    Damage("truncated_zlib_stream", cut_zlib_after_two_records, "zlib", 2, T, 2, 62, None,
           "the zlib stream ends before its end-of-stream marker"),
    Damage("gzip_without_its_trailer", lambda p: gzip.compress(p, mtime=0)[:-8], "gzip", 3, T, 3, 108, None,
           "the gzip stream ends before its end-of-stream marker"),
    Damage("zlib_without_its_checksum", lambda p: zlib.compress(p)[:-4], "zlib", 3, T, 3, 108, None,
           "the zlib stream ends before its end-of-stream marker"),
    Damage("gzip_header_only", lambda p: gzip.compress(p, mtime=0)[:5], "gzip", 0, T, 0, 0, None,
           "the gzip stream ends before its end-of-stream marker"),
    Damage("trailing_data_after_zlib_stream", lambda p: zlib.compress(p) + b"junk", "zlib", 3, R, 3, 108,
           None, "unexpected data after the end of the zlib stream"),
    Damage("trailing_data_after_gzip_stream", lambda p: gzip.compress(p, mtime=0) + b"junk", "gzip", 3, R, 3,
           108, None, "unexpected data after the end of the gzip stream"),
    Damage("corrupt_second_gzip_member", lambda p: gzip.compress(p, mtime=0) + b"\x1f\x8bjunkjunk", "gzip", 3,
           R, 3, 108, None, "the gzip stream is damaged"),
]
# fmt: on


@pytest.fixture(scope="module")
def plain(ref: SimpleNamespace) -> bytes:
    data = ref.frames(RECORDS)
    assert len(data) == 108
    return data


@pytest.mark.parametrize("source_kind", ["path", "stream"])
@pytest.mark.parametrize("case", DAMAGE, ids=[case.id for case in DAMAGE])
def test_reader_yields_intact_records_then_raises_at_the_damage(
    tmp_path: Path, plain: bytes, source_kind: str, case: Damage
) -> None:
    data = case.damage(plain)
    path = tmp_path / "damaged.bin"
    path.write_bytes(data)
    source: Any = path if source_kind == "path" else NonSeekable(data)
    got: list[bytes] = []
    with pytest.raises(tfrec.RecordError) as info:
        for record in tfrec.read_records(source, case.compression):
            got.append(record)
    assert got == RECORDS[: case.yielded]
    exc = info.value
    assert type(exc) is case.error
    assert (exc.index, exc.offset) == (case.index, case.offset)
    where = str(path) if source_kind == "path" else "<stream>"
    assert exc.path == (str(path) if source_kind == "path" else None)
    assert str(exc).startswith(f"{where}, record {case.index}, offset {case.offset}: ")
    assert case.words in str(exc)
    if case.part is not None:
        assert isinstance(exc, tfrec.ChecksumError)
        assert exc.part == case.part


def test_plain_file_read_as_gzip_hints_at_no_compression(tmp_path: Path, plain: bytes) -> None:
    path = tmp_path / "plain.tfrecord.gz"  # wrong suffix: auto picks gzip
    path.write_bytes(plain)
    with pytest.raises(tfrec.RecordError, match=r"pass compression=None"):
        list(tfrec.read_records(path))


def test_length_crc_error_reports_stored_and_computed(ref: SimpleNamespace, plain: bytes) -> None:
    damaged = flip(plain, 26 + 8)
    with pytest.raises(tfrec.ChecksumError) as info:
        list(tfrec.read_records(io.BytesIO(damaged), None))
    good = ref.masked_crc((20).to_bytes(8, "little"))
    assert info.value.part == "length"
    assert info.value.computed == good
    assert info.value.stored == good ^ 0x01
    assert f"stored {good ^ 0x01:#010x}, computed {good:#010x}" in str(info.value)


def test_reader_reports_offset_of_bad_data_crc(ref: SimpleNamespace, plain: bytes) -> None:
    damaged = flip(plain, 26 + 12 + 3)
    with pytest.raises(tfrec.ChecksumError) as info:
        list(tfrec.read_records(io.BytesIO(damaged), None))
    exc = info.value
    assert (exc.part, exc.index, exc.offset) == ("data", 1, 26)
    assert exc.stored == ref.masked_crc(b"b" * 20)
    assert exc.computed == ref.masked_crc(b"bbbc" + b"b" * 16)
    assert f"stored {exc.stored:#010x}, computed {exc.computed:#010x}" in str(exc)


def test_bad_data_crc_in_a_large_record_is_reported(ref: SimpleNamespace) -> None:
    big = random_bytes(100_000, 9)
    data = ref.frames([b"x"]) + ref.header(len(big)) + big + b"\0\0\0\0"  # stored data CRC 0: wrong
    with pytest.raises(tfrec.ChecksumError) as info:
        list(tfrec.read_records(io.BytesIO(data), None))
    assert (info.value.part, info.value.index, info.value.offset) == ("data", 1, 17)
    assert info.value.stored == 0


@pytest.mark.parametrize("position", [0, 31, 32, 33, 39])
def test_bad_data_crc_inside_a_run_of_equal_records_is_reported(position: int) -> None:
    records = [bytes([i]) * 9 for i in range(40)]
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records)
    data = flip(buffer.getvalue(), position * 25 + 12)
    got: list[bytes] = []
    with pytest.raises(tfrec.ChecksumError) as info:
        for record in tfrec.read_records(io.BytesIO(data), None):
            got.append(record)
    assert got == records[:position]
    assert (info.value.part, info.value.index, info.value.offset) == ("data", position, position * 25)


@pytest.mark.parametrize("position", [0, 5, 35])
def test_bad_length_inside_a_run_of_equal_records_is_reported(position: int) -> None:
    records = [bytes([i]) * 9 for i in range(40)]
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records)
    data = flip(buffer.getvalue(), position * 25 + 1)
    got: list[bytes] = []
    with pytest.raises(tfrec.ChecksumError) as info:
        for record in tfrec.read_records(io.BytesIO(data), None):
            got.append(record)
    assert got == records[:position]
    assert (info.value.part, info.value.index, info.value.offset) == ("length", position, position * 25)


def test_verify_checksums_false_reads_a_record_with_a_bad_data_crc(plain: bytes) -> None:
    damaged = flip(plain, 26 + 12 + 3)
    got = list(tfrec.read_records(io.BytesIO(damaged), None, verify_checksums=False))
    assert got == [RECORDS[0], b"bbbc" + b"b" * 16, RECORDS[2]]


def test_verify_checksums_false_ignores_a_bad_length_crc(plain: bytes) -> None:
    damaged = flip(plain, 26 + 8)
    assert list(tfrec.read_records(io.BytesIO(damaged), None, verify_checksums=False)) == RECORDS


# -- a length field claiming ~2**60 bytes -------------------------------------------------------


@pytest.mark.parametrize("source_kind", ["path", "stream", "gzip_path"])
def test_huge_length_fails_fast_without_allocating(
    tmp_path: Path, ref: SimpleNamespace, source_kind: str
) -> None:
    claimed = 1 << 60
    data = ref.frames([b"ok"]) + ref.header(claimed) + b"only a few bytes of data"
    compression = "gzip" if source_kind == "gzip_path" else None
    path = tmp_path / "huge.bin"
    path.write_bytes(compress(data, compression))
    source: Any = NonSeekable(data) if source_kind == "stream" else path
    got: list[bytes] = []
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(tfrec.TruncatedRecordError) as info:
            for record in tfrec.read_records(source, compression):
                got.append(record)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == [b"ok"]
    assert (info.value.index, info.value.offset) == (1, 18)
    assert f"the record claims {claimed} bytes of data" in str(info.value)
    assert peak < 8 << 20, f"peak {peak} bytes"
    assert elapsed < 2.0
    if isinstance(source, NonSeekable):
        assert 0 < source.largest_read <= 64 << 20


def test_huge_length_with_skip_ends_reading(ref: SimpleNamespace) -> None:
    data = ref.frames([b"ok"]) + ref.header(1 << 60) + b"tail"
    assert list(tfrec.read_records(NonSeekable(data), None, on_error="skip")) == [b"ok"]


# -- damage: on_error="skip" / "warn" -----------------------------------------------------------

# Ten records of different lengths; record i is bytes([i]) * (10 + 3 * i).
TEN = [bytes([i + 1]) * (10 + 3 * i) for i in range(10)]
TEN_STARTS = starts_of(TEN)


def zero_fill(data: bytes, start: int, stop: int) -> bytes:
    return data[:start] + bytes(stop - start) + data[stop:]


class Recovery(NamedTuple):
    """A damaged copy of the ten-record file and what skipping must recover."""

    id: str
    damage: Callable[[bytes], bytes]  # frames of TEN -> file bytes
    compression: str | None
    recovered: list[int]  # indices of the records read back
    warnings: int  # one per damage


ALL_BUT_4 = [0, 1, 2, 3, 5, 6, 7, 8, 9]

# fmt: off
RECOVERY = [
    Recovery("bad_data_crc", lambda p: flip(p, TEN_STARTS[4] + 12), None, ALL_BUT_4, 1),
    Recovery("two_bad_data_crcs", lambda p: flip(flip(p, TEN_STARTS[2] + 14), TEN_STARTS[7] + 12), None,
             [0, 1, 3, 4, 5, 6, 8, 9], 2),
    Recovery("bad_length_crc_resyncs", lambda p: flip(p, TEN_STARTS[4] + 9), None, ALL_BUT_4, 1),
    Recovery("bad_length_value_resyncs", lambda p: flip(p, TEN_STARTS[4] + 2), None, ALL_BUT_4, 1),
    Recovery("bad_first_length_resyncs", lambda p: flip(p, 0), None, list(range(1, 10)), 1),
    Recovery("zero_filled_region", lambda p: zero_fill(p, TEN_STARTS[3] + 15, TEN_STARTS[6] + 20), None,
             [0, 1, 2, 7, 8, 9], 2),
    Recovery("truncated_data", lambda p: p[: TEN_STARTS[7] + 15], None, list(range(7)), 1),
    Recovery("trailing_garbage_3_bytes", lambda p: p + b"xyz", None, list(range(10)), 1),
    Recovery("trailing_garbage_20_bytes", lambda p: p + b"x" * 20, None, list(range(10)), 1),
    Recovery("truncated_gzip", lambda p: gzip.compress(p, mtime=0)[:-8], "gzip", list(range(10)), 1),
    Recovery("corrupt_zlib", lambda p: zlib.compress(p)[:2] + b"\x07" + zlib.compress(p)[3:], "zlib", [], 1),
    Recovery("trailing_data_after_zlib", lambda p: zlib.compress(p) + b"junk", "zlib", list(range(10)), 1),
    Recovery("gzip_bad_data_crc", lambda p: gzip.compress(flip(p, TEN_STARTS[4] + 12), mtime=0), "gzip",
             ALL_BUT_4, 1),
    Recovery("gzip_bad_length_resyncs", lambda p: gzip.compress(flip(p, TEN_STARTS[4] + 9), mtime=0), "gzip",
             ALL_BUT_4, 1),
]
# fmt: on


@pytest.fixture(scope="module")
def ten(ref: SimpleNamespace) -> bytes:
    return ref.frames(TEN)


@pytest.mark.parametrize("case", RECOVERY, ids=[case.id for case in RECOVERY])
def test_skip_recovers_every_intact_record(ten: bytes, case: Recovery) -> None:
    data = case.damage(ten)
    got = list(tfrec.read_records(io.BytesIO(data), case.compression, on_error="skip"))
    assert got == [TEN[i] for i in case.recovered]


@pytest.mark.parametrize("case", RECOVERY, ids=[case.id for case in RECOVERY])
def test_warn_recovers_every_intact_record_with_one_warning_per_damage(
    tmp_path: Path, ten: bytes, case: Recovery
) -> None:
    path = tmp_path / "damaged.bin"
    path.write_bytes(case.damage(ten))
    with pytest.warns(tfrec.TfrecWarning) as caught:
        got = list(tfrec.read_records(path, case.compression, on_error="warn"))
    assert got == [TEN[i] for i in case.recovered]
    assert len(caught) == case.warnings
    assert all(str(w.message).startswith(f"skipped damaged data: {path}, record ") for w in caught)


def test_skip_resyncs_after_a_bad_length_in_a_large_record(ref: SimpleNamespace) -> None:
    big = random_bytes(300_000, 11)
    records = [b"first", big, b"after", random_bytes(70_000, 12), b"last"]
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records)
    data = flip(buffer.getvalue(), frame_size(b"first") + 7)  # top byte of the big record's length
    got = list(tfrec.read_records(io.BytesIO(data), None, on_error="skip"))
    assert got == [b"first", b"after", records[3], b"last"]


def test_skip_recovers_records_after_a_zero_filled_region_across_blocks() -> None:
    records = [random_bytes(5000, i) for i in range(600)]  # ~3 MiB: several read blocks
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records)
    starts = starts_of(records)
    data = zero_fill(buffer.getvalue(), starts[100] + 20, starts[420] + 7)
    got = list(tfrec.read_records(io.BytesIO(data), None, on_error="skip"))
    assert got == records[:100] + records[421:]


def test_warn_message_names_the_damage(plain: bytes) -> None:
    with pytest.warns(tfrec.TfrecWarning, match=r"<stream>, record 1, offset 26: data CRC mismatch"):
        got = list(tfrec.read_records(io.BytesIO(flip(plain, 40)), None, on_error="warn"))
    assert got == [RECORDS[0], RECORDS[2]]


# -- progress and resume ------------------------------------------------------------------------

PROGRESS_RECORDS = (
    [b"s" * 5] * 40
    + [random_bytes(70_000, 21)]
    + [b"t" * 3] * 50
    + [random_bytes(n, n) for n in range(0, 300, 37)]
    + [random_bytes((1 << 20) + 5, 22), b"", b"end"]
)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_reader_offset_and_index_name_the_next_record(tmp_path: Path, compression: str | None) -> None:
    path = tmp_path / f"data{SUFFIX[compression]}"
    tfrec.write_records(path, PROGRESS_RECORDS, compression)
    starts = starts_of(PROGRESS_RECORDS)
    reader = tfrec.RecordReader(path)
    assert (reader.offset, reader.index) == (0, 0)
    iterator = iter(reader)
    for i, expected in enumerate(PROGRESS_RECORDS):
        assert next(iterator) == expected
        assert (reader.offset, reader.index) == (starts[i + 1], i + 1)
    with pytest.raises(StopIteration):
        next(iterator)
    assert (reader.offset, reader.index) == (starts[-1], len(PROGRESS_RECORDS))


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("stop", [0, 1, 39, 40, 41, 60, 91, len(PROGRESS_RECORDS) - 1, len(PROGRESS_RECORDS)])
def test_reader_resumes_from_a_saved_offset_and_index(
    tmp_path: Path, compression: str | None, stop: int
) -> None:
    path = tmp_path / f"data{SUFFIX[compression]}"
    tfrec.write_records(path, PROGRESS_RECORDS, compression)
    reader = tfrec.RecordReader(path)
    iterator = iter(reader)
    for _ in range(stop):
        next(iterator)
    state = (reader.offset, reader.index)
    assert state == (starts_of(PROGRESS_RECORDS)[stop], stop)
    reader.close()
    resumed = tfrec.RecordReader(path, start_offset=state[0], start_index=state[1])
    assert list(resumed) == PROGRESS_RECORDS[stop:]
    assert resumed.index == len(PROGRESS_RECORDS)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_resumed_reader_reports_true_index_and_offset_of_damage(
    tmp_path: Path, ref: SimpleNamespace, compression: str | None
) -> None:
    starts = starts_of(TEN)
    data = flip(ref.frames(TEN), starts[6] + 12)
    path = tmp_path / f"data{SUFFIX[compression]}"
    path.write_bytes(compress(data, compression))
    reader = tfrec.RecordReader(path, start_offset=starts[3], start_index=3)
    got: list[bytes] = []
    with pytest.raises(tfrec.ChecksumError) as info:
        for record in reader:
            got.append(record)
    assert got == TEN[3:6]
    assert (info.value.index, info.value.offset) == (6, starts[6])


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_reader_resumes_on_a_file_object(compression: str | None) -> None:
    buffer = io.BytesIO()
    tfrec.write_records(buffer, TEN, compression)
    starts = starts_of(TEN)
    buffer.seek(0)
    resumed = tfrec.RecordReader(buffer, compression, start_offset=starts[4], start_index=4)
    assert list(resumed) == TEN[4:]


class CountingReads(io.BytesIO):
    """A seekable stream that counts the bytes read from it (as a remote fsspec file would fetch them)."""

    bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


def test_reader_seeks_a_seekable_stream_to_the_start_offset_instead_of_reading_up_to_it() -> None:
    records = [random_bytes(1000, i) for i in range(100)]
    buffer = io.BytesIO()
    tfrec.write_records(buffer, records)
    starts = starts_of(records)
    stream = CountingReads(b"prefix" + buffer.getvalue())
    stream.seek(6)  # offsets count from where the stream is when the reader starts
    assert list(tfrec.RecordReader(stream, None, start_offset=starts[90], start_index=90)) == records[90:]
    assert stream.bytes_read == starts[100] - starts[90]
    stream.seek(6)
    with pytest.raises(tfrec.TruncatedRecordError, match=f"start_offset {starts[100] + 1} is past the end"):
        list(tfrec.RecordReader(stream, None, start_offset=starts[100] + 1))


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_start_offset_at_the_end_gives_no_records(tmp_path: Path, compression: str | None) -> None:
    path = tmp_path / f"data{SUFFIX[compression]}"
    tfrec.write_records(path, TEN, compression)
    end = starts_of(TEN)[-1]
    assert list(tfrec.RecordReader(path, start_offset=end, start_index=10)) == []


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_start_offset_past_the_end_raises(tmp_path: Path, compression: str | None) -> None:
    path = tmp_path / f"data{SUFFIX[compression]}"
    tfrec.write_records(path, TEN, compression)
    end = starts_of(TEN)[-1]
    with pytest.raises(tfrec.TruncatedRecordError) as info:
        list(tfrec.RecordReader(path, start_offset=end + 100, start_index=10))
    assert info.value.offset == end + 100
    assert f"start_offset {end + 100} is past the end" in str(info.value)


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("stop", [0, 2, 41, 92])
def test_pickled_reader_resumes_at_the_next_record(
    tmp_path: Path, compression: str | None, stop: int
) -> None:
    path = tmp_path / f"data{SUFFIX[compression]}"
    tfrec.write_records(path, PROGRESS_RECORDS, compression)
    reader = tfrec.RecordReader(path, on_error="skip")
    iterator = iter(reader)
    for _ in range(stop):
        next(iterator)
    copy = pickle.loads(pickle.dumps(reader))
    assert (copy.offset, copy.index) == (reader.offset, reader.index)
    assert (copy.compression, copy.on_error, copy.path) == (compression, "skip", str(path))
    assert list(copy) == PROGRESS_RECORDS[stop:]
    assert next(iterator) == PROGRESS_RECORDS[stop]  # the original is unaffected
    reader.close()


def test_reader_over_a_file_object_cannot_be_pickled() -> None:
    with pytest.raises(TypeError, match="pass a path"):
        pickle.dumps(tfrec.RecordReader(io.BytesIO(b"")))


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"on_error": "ignore"}, "on_error must be 'raise', 'skip' or 'warn'"),
        ({"start_offset": -1}, "start_offset and start_index must be >= 0"),
        ({"start_index": -1}, "start_offset and start_index must be >= 0"),
        ({"compression": "lz4"}, "unknown compression 'lz4'"),
        ({"compression": 3}, "compression must be a string or None"),
    ],
)
def test_reader_rejects_invalid_arguments(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(tfrec.TfrecError) as info:
        tfrec.RecordReader(io.BytesIO(b""), **kwargs)
    assert words in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"on_error": "ignore"},
        {"start_offset": -1},
        {"start_index": -1},
        {"compression": "lz4"},
        {"compression": 3},
    ],
)
def test_reader_rejects_invalid_arguments_with_invalid_argument_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(tfrec.InvalidArgumentError):
        tfrec.RecordReader(io.BytesIO(b""), **kwargs)


# -- file life cycle ----------------------------------------------------------------------------


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_reader_on_a_file_object_does_not_close_it(compression: str | None) -> None:
    buffer = io.BytesIO()
    tfrec.write_records(buffer, [b"a", b"b"], compression)
    buffer.seek(0)
    with tfrec.RecordReader(buffer, compression) as reader:
        assert list(reader) == [b"a", b"b"]
    reader.close()
    assert not buffer.closed


def test_reader_on_a_file_object_does_not_close_it_after_an_error(plain: bytes) -> None:
    buffer = io.BytesIO(flip(plain, 40))
    with pytest.raises(tfrec.ChecksumError):
        list(tfrec.read_records(buffer, None))
    assert not buffer.closed


@pytest.fixture
def opened_files(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every file a reader opens by path (its stream module opens them)."""
    files: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        handle = builtins.open(*args, **kwargs)  # noqa: SIM115 (the reader closes it)
        files.append(handle)
        return handle

    monkeypatch.setattr(stream_module, "open", spy, raising=False)
    return files


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_reader_on_a_path_closes_its_file_when_exhausted(
    tmp_path: Path, opened_files: list[Any], compression: str | None
) -> None:
    path = tmp_path / f"data{SUFFIX[compression]}"
    tfrec.write_records(path, TEN, compression)
    reader = tfrec.RecordReader(path)
    assert list(reader) == TEN
    assert len(opened_files) == 1
    assert opened_files[0].closed


def test_reader_on_a_path_closes_its_file_on_error(
    tmp_path: Path, plain: bytes, opened_files: list[Any]
) -> None:
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(flip(plain, 40))
    with pytest.raises(tfrec.ChecksumError):
        list(tfrec.read_records(path))
    assert len(opened_files) == 1
    assert opened_files[0].closed


def test_reader_on_a_path_closes_its_file_when_closed_early(tmp_path: Path, opened_files: list[Any]) -> None:
    path = tmp_path / "data.tfrecord"
    tfrec.write_records(path, TEN)
    with tfrec.RecordReader(path) as reader:
        assert next(iter(reader)) == TEN[0]
        assert not opened_files[0].closed
    assert opened_files[0].closed
    reader.close()  # idempotent


def test_reader_opens_nothing_before_iteration(tmp_path: Path, opened_files: list[Any]) -> None:
    path = tmp_path / "data.tfrecord"
    tfrec.write_records(path, TEN)
    reader = tfrec.RecordReader(path)
    assert opened_files == []
    assert repr(reader) == f"<RecordReader {path} offset=0 index=0>"


def test_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        list(tfrec.read_records(tmp_path / "missing.tfrecord"))


def test_reader_is_its_own_iterator(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    tfrec.write_records(path, [b"a", b"b", b"c"])
    reader = tfrec.RecordReader(path)
    assert next(reader) == b"a"
    assert iter(reader) is iter(reader)
    assert list(reader) == [b"b", b"c"]
    assert list(reader) == []  # exhausted, like any iterator
