"""RecordWriter / write_records: byte layout, compression, temp files, partial files, life cycle."""

from __future__ import annotations

import io
import os
import re
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from recordcheck import decompress

import tfrec

COMPRESSIONS = [None, "gzip", "zlib"]
SUFFIX = {None: ".tfrecord", "gzip": ".tfrecord.gz", "zlib": ".tfrecord.zz"}
RECORDS = [b"", b"\x00", b"hello", bytes(range(256)), b"\xff" * 1000]


def temp_files(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


# -- byte layout --------------------------------------------------------------------------------


def test_frame_of_a_known_record_is_computed_by_hand(ref: SimpleNamespace) -> None:
    length = struct.pack("<Q", 5)
    assert length == b"\x05\x00\x00\x00\x00\x00\x00\x00"
    expected = (
        length
        + struct.pack("<I", ref.mask(ref.crc32c(length)))
        + b"hello"
        + struct.pack("<I", ref.mask(ref.crc32c(b"hello")))
    )
    buffer = io.BytesIO()
    with tfrec.RecordWriter(buffer) as writer:
        writer.write(b"hello")
    assert buffer.getvalue() == expected
    assert len(expected) == 12 + 5 + 4


def test_reference_framer_agrees_with_tensorflow_golden_files(ref: SimpleNamespace, golden_dir: Path) -> None:
    # Guards the test's own CRC32C: TF wrote these files.
    assert ref.frame(b"") == (golden_dir / "zero_length.tfrecord").read_bytes()
    assert ref.frame(b"\x00") == (golden_dir / "one_byte.tfrecord").read_bytes()


@pytest.mark.parametrize("method", ["write", "write_many", "write_records"])
def test_uncompressed_output_is_exactly_the_framing(ref: SimpleNamespace, method: str) -> None:
    buffer = io.BytesIO()
    if method == "write_records":
        assert tfrec.write_records(buffer, RECORDS) == len(RECORDS)
    else:
        with tfrec.RecordWriter(buffer) as writer:
            if method == "write":
                for record in RECORDS:
                    writer.write(record)
            else:
                assert writer.write_many(RECORDS) == len(RECORDS)
    assert buffer.getvalue() == ref.frames(RECORDS)


def test_writer_accepts_bytes_like_records(ref: SimpleNamespace) -> None:
    buffer = io.BytesIO()
    with tfrec.RecordWriter(buffer) as writer:
        writer.write(bytearray(b"ab"))
        writer.write(memoryview(b"cde"))
        assert writer.write_many([bytearray(b"f"), memoryview(b"gh"), b"i"]) == 3
    assert buffer.getvalue() == ref.frames([b"ab", b"cde", b"f", b"gh", b"i"])


def test_write_many_accepts_a_generator_of_many_records() -> None:
    def generate() -> Iterator[bytes]:
        for i in range(10_000):  # more than one internal batch
            yield i.to_bytes(4, "little") * (i % 7)

    buffer = io.BytesIO()
    assert tfrec.write_records(buffer, generate()) == 10_000
    assert list(tfrec.read_records(io.BytesIO(buffer.getvalue()), None)) == list(generate())


def test_write_many_handles_large_records_between_small_ones() -> None:
    records = [b"a", os.urandom(3 << 20), b"b", os.urandom(70_000), b""]
    buffer = io.BytesIO()
    assert tfrec.write_records(buffer, records) == 5
    assert list(tfrec.read_records(io.BytesIO(buffer.getvalue()), None)) == records


# -- compression --------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_output_decompresses_with_the_stdlib(ref: SimpleNamespace, compression: str) -> None:
    buffer = io.BytesIO()
    tfrec.write_records(buffer, RECORDS, compression)
    assert decompress(buffer.getvalue(), compression) == ref.frames(RECORDS)


def test_gzip_output_is_one_member_with_mtime_zero() -> None:
    buffer = io.BytesIO()
    tfrec.write_records(buffer, RECORDS, "gzip")
    data = buffer.getvalue()
    assert data[:3] == b"\x1f\x8b\x08"
    assert data[4:8] == b"\x00\x00\x00\x00"  # mtime 0: the same records give the same bytes
    inflate = zlib.decompressobj(31)
    inflate.decompress(data)
    assert inflate.eof and inflate.unused_data == b""


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_zero_records_still_make_a_valid_stream(compression: str | None) -> None:
    buffer = io.BytesIO()
    assert tfrec.write_records(buffer, [], compression) == 0
    assert decompress(buffer.getvalue(), compression) == b""
    assert (buffer.getvalue() == b"") == (compression is None)


@pytest.mark.parametrize(
    ("spelling", "expected"), [("GZIP", "gzip"), ("ZLIB", "zlib"), ("", None), ("auto", None), (None, None)]
)
def test_writer_accepts_tensorflow_spellings(
    ref: SimpleNamespace, spelling: str | None, expected: str
) -> None:
    buffer = io.BytesIO()
    tfrec.write_records(buffer, [b"x"], spelling)
    assert decompress(buffer.getvalue(), expected) == ref.frame(b"x")


@pytest.mark.parametrize(
    ("suffix", "expected"),
    [
        (".tfrecord", None),
        (".tfrecord.gz", "gzip"),
        (".tfrecord.gzip", "gzip"),
        (".zz", "zlib"),
        (".zlib", "zlib"),
    ],
)
def test_writer_auto_compression_follows_the_suffix(
    tmp_path: Path, ref: SimpleNamespace, suffix: str, expected: str | None
) -> None:
    path = tmp_path / f"data{suffix}"
    tfrec.write_records(path, RECORDS, "auto")
    assert decompress(path.read_bytes(), expected) == ref.frames(RECORDS)


@pytest.mark.parametrize(
    ("suffix", "expected"), [(".tfrecord", None), (".tfrecord.gz", "gzip"), (".zz", "zlib")]
)
def test_writer_default_compression_follows_the_suffix(
    tmp_path: Path, ref: SimpleNamespace, suffix: str, expected: str | None
) -> None:
    path = tmp_path / f"data{suffix}"
    tfrec.write_records(path, [b"x"])
    assert decompress(path.read_bytes(), expected) == ref.frame(b"x")
    with tfrec.RecordWriter(path, overwrite=True) as writer:
        writer.write(b"y")
    assert decompress(path.read_bytes(), expected) == ref.frame(b"y")


def test_writer_default_on_a_file_object_is_uncompressed(ref: SimpleNamespace) -> None:
    buffer = io.BytesIO()
    tfrec.write_records(buffer, [b"x"])
    assert buffer.getvalue() == ref.frame(b"x")


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
@pytest.mark.parametrize("level", [-1, 0, 1, 6, 9])
def test_valid_compression_levels_round_trip(ref: SimpleNamespace, compression: str, level: int) -> None:
    buffer = io.BytesIO()
    tfrec.write_records(buffer, RECORDS, compression, compression_level=level)
    assert decompress(buffer.getvalue(), compression) == ref.frames(RECORDS)


def test_compression_level_changes_the_output_size() -> None:
    records = [b"abcd" * 1000] * 20
    sizes = {}
    for level in (0, 9):
        buffer = io.BytesIO()
        tfrec.write_records(buffer, records, "zlib", compression_level=level)
        sizes[level] = len(buffer.getvalue())
    assert sizes[0] > 80_000 > 1_000 > sizes[9]


@pytest.mark.parametrize("level", [-2, 10, 100])
def test_invalid_compression_level_raises(level: int) -> None:
    with pytest.raises(tfrec.TfrecError, match=f"compression_level must be between 0 and 9.*not {level}"):
        tfrec.RecordWriter(io.BytesIO(), "gzip", compression_level=level)


@pytest.mark.parametrize("compression", ["lz4", "bz2", "GZ"])
def test_unknown_compression_raises(compression: str) -> None:
    with pytest.raises(tfrec.TfrecError, match=f"unknown compression {compression!r}"):
        tfrec.RecordWriter(io.BytesIO(), compression)


def test_non_string_compression_raises() -> None:
    with pytest.raises(tfrec.TfrecError, match="compression must be a string or None, not int"):
        tfrec.RecordWriter(io.BytesIO(), 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("compression", "level"), [("gzip", 10), ("lz4", None), (1, None)], ids=["level", "name", "type"]
)
def test_writer_argument_errors_are_invalid_argument_errors(compression: object, level: int | None) -> None:
    with pytest.raises(tfrec.InvalidArgumentError):
        tfrec.RecordWriter(io.BytesIO(), compression, compression_level=level)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("compression", "level"), [("lz4", None), ("gzip", 10)], ids=["unknown_compression", "bad_level"]
)
def test_invalid_arguments_leave_no_temp_file(tmp_path: Path, compression: str, level: int | None) -> None:
    with pytest.raises(tfrec.TfrecError):
        tfrec.RecordWriter(tmp_path / "data.tfrecord", compression, compression_level=level)
    assert os.listdir(tmp_path) == []


# -- temp file, close, flush --------------------------------------------------------------------


def test_writer_writes_a_hidden_temp_file_and_renames_it_on_close(
    tmp_path: Path, ref: SimpleNamespace
) -> None:
    path = tmp_path / "data.tfrecord"
    writer = tfrec.RecordWriter(path)
    writer.write(b"abc")
    writer.flush()
    (temp,) = temp_files(tmp_path)
    assert re.fullmatch(r"\.data\.tfrecord\.[0-9a-f]{8}\.tmp", temp)
    assert not path.exists()
    assert (tmp_path / temp).read_bytes() == ref.frame(b"abc")
    writer.close()
    assert os.listdir(tmp_path) == ["data.tfrecord"]
    assert path.read_bytes() == ref.frame(b"abc")


def test_writer_replaces_an_existing_file_only_on_close(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    path.write_bytes(b"old")
    with tfrec.RecordWriter(path, overwrite=True) as writer:
        writer.write(b"new")
        writer.flush()
        assert path.read_bytes() == b"old"
    assert list(tfrec.read_records(path)) == [b"new"]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_flush_makes_every_record_so_far_readable(
    tmp_path: Path, ref: SimpleNamespace, compression: str | None
) -> None:
    with tfrec.RecordWriter(tmp_path / "data.bin", compression) as writer:
        writer.write_many(RECORDS)
        writer.flush()
        writer.flush()  # idempotent
        (temp,) = temp_files(tmp_path)
        data = (tmp_path / temp).read_bytes()
        if compression is not None:  # the stream is not finished yet: inflate what is there
            data = zlib.decompressobj(31 if compression == "gzip" else 15).decompress(data)
        assert data == ref.frames(RECORDS)


def test_close_and_flush_are_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    writer = tfrec.RecordWriter(path)
    writer.write(b"x")
    writer.close()
    writer.close()
    writer.flush()
    assert list(tfrec.read_records(path)) == [b"x"]
    assert repr(writer) == f"<RecordWriter {path} closed>"


@pytest.mark.parametrize("method", ["write", "write_many"])
def test_write_after_close_raises(tmp_path: Path, method: str) -> None:
    path = tmp_path / "data.tfrecord"
    writer = tfrec.RecordWriter(path)
    writer.close()
    with pytest.raises(tfrec.TfrecError, match=re.escape(f"{path}: write to a closed RecordWriter")):
        if method == "write":
            writer.write(b"x")
        else:
            writer.write_many([b"x"])
    assert list(tfrec.read_records(path)) == []


def test_writer_path_is_a_str(tmp_path: Path) -> None:
    with tfrec.RecordWriter(tmp_path / "data.tfrecord") as writer:
        assert writer.path == str(tmp_path / "data.tfrecord")
        assert repr(writer) == f"<RecordWriter {writer.path} open>"


def test_writer_into_a_missing_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        tfrec.RecordWriter(tmp_path / "missing" / "data.tfrecord")


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_written_file_permissions_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    if sys.platform == "win32":
        pytest.skip("POSIX permission bits")
    old = os.umask(umask)
    try:
        tfrec.write_records(tmp_path / "data.tfrecord", [b"x"])
    finally:
        os.umask(old)
    assert (tmp_path / "data.tfrecord").stat().st_mode & 0o777 == mode


# -- failures inside `with`, abort ----------------------------------------------------------------


class Boom(Exception):
    pass


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_exception_inside_with_keeps_a_partial_file(tmp_path: Path, compression: str | None) -> None:
    path = tmp_path / f"data{SUFFIX[compression]}"
    records = [*RECORDS, os.urandom(200_000)]
    with pytest.raises(Boom) as info, tfrec.RecordWriter(path, compression) as writer:
        writer.write_many(records[:3])
        for record in records[3:]:
            writer.write(record)
        raise Boom("stop")
    partial = Path(f"{path}.partial")
    assert not path.exists()
    assert sorted(os.listdir(tmp_path)) == [partial.name]
    assert list(tfrec.read_records(partial, compression)) == records
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == [
            f"tfrec: {path} was not completed; records written so far are in {partial}"
        ]


def test_abort_keeps_a_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord.gz"
    writer = tfrec.RecordWriter(path, "gzip")
    writer.write(b"a")
    writer.write(b"b")
    partial = writer.abort()
    assert partial == f"{path}.partial"
    assert writer.abort() is None  # already finished
    writer.close()  # no-op after abort: nothing is published
    assert os.listdir(tmp_path) == ["data.tfrecord.gz.partial"]
    assert list(tfrec.read_records(partial, "gzip")) == [b"a", b"b"]
    with pytest.raises(tfrec.TfrecError, match="closed"):
        writer.write(b"c")


def test_abort_after_close_does_nothing(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    writer = tfrec.RecordWriter(path)
    writer.write(b"a")
    writer.close()
    assert writer.abort() is None
    assert os.listdir(tmp_path) == ["data.tfrecord"]


# -- file objects -------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_writer_on_a_file_object_does_not_close_it(ref: SimpleNamespace, compression: str | None) -> None:
    buffer = io.BytesIO()
    buffer.write(b"prefix")
    with tfrec.RecordWriter(buffer, compression) as writer:
        assert writer.path is None
        writer.write(b"x")
    assert not buffer.closed
    data = buffer.getvalue()
    assert data.startswith(b"prefix")
    assert decompress(data[6:], compression) == ref.frame(b"x")
    assert repr(writer) == "<RecordWriter <stream> closed>"


def test_writer_on_a_file_object_aborts_without_closing_it(ref: SimpleNamespace) -> None:
    buffer = io.BytesIO()
    with pytest.raises(Boom), tfrec.RecordWriter(buffer, "zlib") as writer:
        writer.write(b"x")
        raise Boom
    assert not buffer.closed
    assert zlib.decompress(buffer.getvalue()) == ref.frame(b"x")  # the stream was finished
    assert writer.abort() is None


def test_write_to_closed_file_object_stream_raises_with_stream_name() -> None:
    writer = tfrec.RecordWriter(io.BytesIO())
    writer.close()
    with pytest.raises(tfrec.TfrecError, match="<stream>: write to a closed RecordWriter"):
        writer.write(b"x")
