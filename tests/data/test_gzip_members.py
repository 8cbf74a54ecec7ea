"""Gzip shards as a series of members: written, indexed, read at random, split by records; hostile inputs."""

from __future__ import annotations

import gzip
import os
import pickle
import random
import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec
import tfrec.data.index.members as members_module
from tfrec.cli import main
from tfrec.data import RecordFileSource, ShardedWriter, build_index
from tfrec.data.index.members import (
    GZIP_INDEX_HEADER,
    GzipIndex,
    read_gzip_index,
    scan_gzip_index,
    write_gzip_index,
)
from tfrec.data.sharding.ranges import split_records
from tfrec.errors import InvalidArgumentError, RecordError, TruncatedRecordError
from tfrec.record.frame import FRAMING


def records_of(count: int, seed: int = 0, most: int = 3000) -> list[bytes]:
    rng = random.Random(seed)
    # Compressible payloads of mixed sizes (text-like), so members hold many records.
    return [(b"record %d " % i) * rng.randrange(1, most // 10) for i in range(count)]


def write_members(path: Path, records: list[bytes], member_bytes: int = 1 << 14) -> list[tuple[int, int]]:
    with tfrec.RecordWriter(path, gzip_member_bytes=member_bytes) as writer:
        writer.write_many(records)
    members = writer.gzip_members
    assert members is not None
    return members


# -- writing ----------------------------------------------------------------------------------------------


def test_members_end_on_record_boundaries_and_form_one_gzip_stream(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord.gz"
    records = records_of(2000)
    members = write_members(path, records)
    assert len(members) > 5
    blob = path.read_bytes()
    inflated = gzip.decompress(blob)  # every member, one stream
    assert list(tfrec.read_records(path)) == records
    lengths = np.array([len(r) + FRAMING for r in records])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    for (offset, first), (end, last) in zip(members, [*members[1:], (len(blob), len(records))], strict=True):
        member = zlib.decompressobj(31).decompress(blob[offset:end])  # each member inflates alone
        assert member == inflated[starts[first] : starts[last]]


@pytest.mark.skipif(shutil.which("gzip") is None, reason="no gzip command")
def test_gzip_and_zcat_read_the_members(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord.gz"
    records = records_of(1500)
    write_members(path, records)
    subprocess.run(["gzip", "-t", str(path)], check=True)
    out = subprocess.run(["gzip", "-dc", str(path)], check=True, capture_output=True).stdout
    assert out == gzip.decompress(path.read_bytes())
    plain = tmp_path / "plain.tfrecord"
    plain.write_bytes(out)
    assert list(tfrec.read_records(plain)) == records


def test_one_member_without_gzip_member_bytes_is_unchanged(tmp_path: Path) -> None:
    a, b = tmp_path / "a.tfrecord.gz", tmp_path / "b.tfrecord.gz"
    tfrec.write_records(a, records_of(50))
    tfrec.write_records(b, records_of(50))
    assert a.read_bytes() == b.read_bytes()
    with tfrec.RecordWriter(a) as writer:
        assert writer.gzip_members is None


@pytest.mark.parametrize(
    ("compression", "member_bytes", "message"),
    [
        (None, 100, "gzip_member_bytes needs gzip compression, not none"),
        ("zlib", 100, "gzip_member_bytes needs gzip compression, not zlib"),
        ("gzip", 0, "gzip_member_bytes must be >= 1, not 0"),
    ],
)
def test_gzip_member_bytes_arguments(
    tmp_path: Path, compression: str | None, member_bytes: int, message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        tfrec.RecordWriter(tmp_path / "x.tfrecord", compression, gzip_member_bytes=member_bytes)


def test_an_empty_member_series_is_a_valid_empty_gzip_file(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord.gz"
    assert write_members(path, []) == []
    assert gzip.decompress(path.read_bytes()) == b""
    assert scan_gzip_index(path).count == 0


# -- the index -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("member_bytes", [1, 5000, 1 << 20])
def test_sharded_writer_index_equals_build_index(tmp_path: Path, member_bytes: int) -> None:
    records = records_of(1200, seed=member_bytes)
    with ShardedWriter(
        tmp_path / "t", num_shards=3, compression="gzip", index=True, gzip_member_bytes=member_bytes
    ) as writer:
        writer.write_many(records)
    for path in writer.summary.paths:
        written = Path(path + ".idx").read_bytes()
        assert written.startswith(GZIP_INDEX_HEADER)
        os.remove(path + ".idx")
        assert build_index(path) == path + ".idx"
        assert Path(path + ".idx").read_bytes() == written


@pytest.mark.parametrize("member_bytes", [1, 5000])
def test_samples_framed_together_end_members_between_frames(tmp_path: Path, member_bytes: int) -> None:
    # A FeaturesDict's samples reach the gzip writer framed together (a batch's frames in one buffer):
    # they are handed to it frame by frame, so members still end between records.
    features = tfrec.features.FeaturesDict({"id": np.int64, "text": tfrec.features.Text()})
    samples = [{"id": i, "text": "word " * (i % 50)} for i in range(900)]
    with ShardedWriter(
        tmp_path / "s",
        num_shards=2,
        features=features,
        compression="gzip",
        index=True,
        gzip_member_bytes=member_bytes,
    ) as writer:
        writer.write_many(samples)
    for shard, path in enumerate(writer.summary.paths):
        expected = [features.serialize_example(sample) for sample in samples[shard::2]]
        assert list(tfrec.read_records(path)) == expected
        written = Path(path + ".idx").read_bytes()
        os.remove(path + ".idx")
        build_index(path)
        assert Path(path + ".idx").read_bytes() == written
    source = RecordFileSource(writer.summary.paths, features=features)
    assert source[899]["id"] == 899


def test_an_empty_gzip_shard_has_an_index_of_its_header_alone(tmp_path: Path) -> None:
    summary = tfrec.write_dataset([b"a", b"b"], tmp_path / "t", num_shards=3, compression="gzip", index=True)
    empty = summary.paths[2]
    assert Path(f"{empty}.idx").read_bytes() == GZIP_INDEX_HEADER
    os.remove(f"{empty}.idx")
    build_index(empty)
    assert Path(f"{empty}.idx").read_bytes() == GZIP_INDEX_HEADER
    assert [RecordFileSource(summary.paths)[i] for i in (1, 0)] == [b"b", b"a"]


def test_sharded_writer_index_defaults_to_1_mib_members(tmp_path: Path) -> None:
    records = [os.urandom(4000) for _ in range(600)]  # 2.4 MB that does not compress: 3 members
    summary = tfrec.write_dataset(records, tmp_path / "t", num_shards=1, compression="gzip", index=True)
    index = read_gzip_index(summary.paths[0] + ".idx")
    first, _ = index.members()
    assert len(first) == 3
    assert index.offsets[first[1] - 1] + index.lengths[first[1] - 1] >= 1 << 20


def test_an_index_of_many_records_that_compress_to_little(tmp_path: Path) -> None:
    """100,000 empty records compress to a few KB; their index is far larger than the file, and valid."""
    path = tmp_path / "x.tfrecord.gz"
    write_members(path, [b""] * 100_000, 1 << 20)
    build_index(path)
    assert Path(f"{path}.idx").stat().st_size > 100 * path.stat().st_size
    assert len(RecordFileSource(path)) == 100_000
    assert len(split_records([str(path)], 3).readers) == 3


def test_gzip_index_text(tmp_path: Path) -> None:
    index = GzipIndex.from_members([(0, 0), (90, 2)], [20, 21, 20])
    write_gzip_index(tmp_path / "x.idx", index)
    assert (tmp_path / "x.idx").read_text() == "tfrec-gzip-index 1\n0 0 20\n0 20 21\n90 0 20\n"
    assert read_gzip_index(tmp_path / "x.idx") == index


def test_readers_of_dali_indexes_fail_on_a_gzip_index(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord.gz"
    write_members(path, records_of(300))
    build_index(path)
    # tfrec's reader of the DALI format names what the file is.
    with pytest.raises(InvalidArgumentError, match="line 1: a gzip index"):
        tfrec.read_index(f"{path}.idx")
    # The tfrecord package reads indexes with np.loadtxt: the header line is not numbers.
    with pytest.raises(ValueError):
        np.loadtxt(f"{path}.idx", dtype=np.int64)


def test_one_member_stays_sequential_only(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord.gz"
    tfrec.write_records(path, records_of(3000))  # one member, as TensorFlow writes
    with pytest.raises(
        InvalidArgumentError, match=r"can only be read from its start \(it is one gzip member"
    ):
        build_index(path)
    with pytest.raises(InvalidArgumentError, match="gzip-compressed"):
        RecordFileSource(path)


def test_a_large_unmarked_member_is_refused_before_it_is_inflated_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(members_module, "UNMARKED_MEMBER_BYTES", 1 << 20)
    path = tmp_path / "x.tfrecord.gz"
    tfrec.write_records(path, [bytes(1 << 19)] * 8)  # one member of 4 MiB, as TensorFlow writes
    with pytest.raises(InvalidArgumentError, match="gzip member 0 inflates to more than 1 MiB"):
        build_index(path)
    marked = tmp_path / "y.tfrecord.gz"
    write_members(marked, [bytes(1 << 19)] * 8, 1 << 30)  # tfrec's own member of 4 MiB: indexed
    assert scan_gzip_index(marked).count == 8


def test_members_not_on_record_boundaries_are_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.tfrecord"
    tfrec.write_records(plain, records_of(100))
    data = plain.read_bytes()
    cut = len(data) // 2 + 7  # inside a record
    path = tmp_path / "x.tfrecord.gz"
    path.write_bytes(gzip.compress(data[:cut], mtime=0) + gzip.compress(data[cut:], mtime=0))
    assert list(tfrec.read_records(path)) == records_of(100)  # still one valid stream
    with pytest.raises(InvalidArgumentError, match=r"record \d+ spans the end of gzip member 0"):
        build_index(path)


def test_other_members_on_record_boundaries_are_indexed(tmp_path: Path) -> None:
    """Members from any writer (here Python's gzip) are indexed when they end between records."""
    records = records_of(60)
    path = tmp_path / "x.tfrecord.gz"
    parts = []
    for half in (records[:30], records[30:]):
        buffer = tmp_path / "half.tfrecord"
        tfrec.write_records(buffer, half)
        parts.append(gzip.compress(buffer.read_bytes()))
    path.write_bytes(b"".join(parts))
    build_index(path)
    assert [RecordFileSource(path)[i] for i in range(60)] == records


# -- random access ------------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 2000), min_size=1, max_size=120),
    member_bytes=st.sampled_from([1, 300, 4096, 1 << 16]),
    seed=st.integers(0, 2**16),
)
def test_random_reads_equal_sequential_reads(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], member_bytes: int, seed: int
) -> None:
    directory = tmp_path_factory.mktemp("random")
    rng = random.Random(seed)
    records = [bytes(rng.randrange(4)) * size for size in sizes]
    path = directory / "x.tfrecord.gz"
    write_members(path, records, member_bytes)
    if rng.random() < 0.5:
        build_index(path)  # else the source scans the members itself
    source = RecordFileSource(path)
    sequential = list(tfrec.read_records(path))
    order = list(range(len(records)))
    rng.shuffle(order)
    assert [source[i] for i in order] == [sequential[i] for i in order]
    assert source.__getitems__(order) == [sequential[i] for i in order]
    assert pickle.loads(pickle.dumps(source))[-1] == sequential[-1]


def test_random_access_over_plain_and_gzip_files_together(tmp_path: Path) -> None:
    plain, packed = records_of(50, seed=1), records_of(70, seed=2)
    tfrec.write_records(tmp_path / "a.tfrecord", plain)
    write_members(tmp_path / "b.tfrecord.gz", packed, 2000)
    source = RecordFileSource([tmp_path / "a.tfrecord", tmp_path / "b.tfrecord.gz"])
    assert len(source) == 120
    assert source.__getitems__([119, 0, 60, 49, 50]) == [
        packed[69],
        plain[0],
        packed[10],
        plain[49],
        packed[0],
    ]
    source.close()
    assert source[55] == packed[5]


# -- hostile inputs ----------------------------------------------------------------------------------


def indexed(tmp_path: Path, count: int = 400) -> tuple[Path, list[str]]:
    path = tmp_path / "x.tfrecord.gz"
    write_members(path, records_of(count), 8000)
    build_index(path)
    return path, Path(f"{path}.idx").read_text().splitlines()


def test_an_index_with_a_member_beyond_the_file_is_refused(tmp_path: Path) -> None:
    path, lines = indexed(tmp_path)
    lines[-1] = f"{path.stat().st_size + 10} 0 {lines[-1].split()[2]}"
    Path(f"{path}.idx").write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidArgumentError) as caught:
        RecordFileSource(path)
    message = str(caught.value)
    assert f"{path}.idx, line {len(lines)} (record {len(lines) - 2}" in message
    assert "beyond the end of the file" in message


def test_a_member_that_inflates_to_more_than_the_index_says_is_refused(tmp_path: Path) -> None:
    path, lines = indexed(tmp_path)
    first = lines[1].split()
    assert first[:2] == ["0", "0"]
    # Drop the member's last record from the index: the member now inflates to more than it says.
    member = [n for n, line in enumerate(lines[1:], 1) if line.split()[0] == "0"]
    del lines[member[-1]]
    Path(f"{path}.idx").write_text("\n".join(lines) + "\n")
    source = RecordFileSource(path)
    with pytest.raises(RecordError) as caught:
        source[0]
    assert (caught.value.path, caught.value.index, caught.value.offset) == (str(path), 0, 0)
    assert "inflates to more than the" in str(caught.value)


def test_a_huge_frame_length_in_the_index_is_refused_before_inflating(tmp_path: Path) -> None:
    path, lines = indexed(tmp_path)
    last_of_first = max(n for n, line in enumerate(lines[1:], 1) if line.split()[0] == "0")
    member, offset, _ = lines[last_of_first].split()
    lines[last_of_first] = f"{member} {offset} {10**15}"
    Path(f"{path}.idx").write_text("\n".join(lines) + "\n")
    with pytest.raises(
        InvalidArgumentError, match=r"line \d+ \(record 0\): gzip member 0 .* is said to inflate"
    ):
        RecordFileSource(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: lines.insert(2, "0 5 20"), "expected offset"),
        (lambda lines: lines.__setitem__(0, "0 20"), "line 1:"),
        (lambda lines: lines.__setitem__(1, "0 0"), "three decimal integers"),
        (lambda lines: lines.__setitem__(1, "0 0 3"), "shorter than 16 bytes"),
    ],
)
def test_damaged_gzip_index_lines(tmp_path: Path, edit: object, message: str) -> None:
    path, lines = indexed(tmp_path)
    edit(lines)  # type: ignore[operator]
    Path(f"{path}.idx").write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidArgumentError, match=message):
        RecordFileSource(path)


def test_a_damaged_member_names_file_record_and_offset(tmp_path: Path) -> None:
    path, lines = indexed(tmp_path)
    second = next(n for n, line in enumerate(lines[1:], 1) if line.split()[0] != "0")
    member_offset = int(lines[second].split()[0])
    data = bytearray(path.read_bytes())
    data[member_offset + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    source = RecordFileSource(path)
    assert source[0] == records_of(400)[0]  # the first member is intact
    with pytest.raises(RecordError) as caught:
        source[second - 1]
    assert caught.value.path == str(path) and caught.value.index == second - 1
    sizes = [int(line.split()[2]) for line in lines[1:]]
    assert caught.value.offset == sum(sizes[: second - 1])
    assert "gzip member 1" in str(caught.value)


def test_a_truncated_file_is_seen_when_opened(tmp_path: Path) -> None:
    path, _ = indexed(tmp_path)
    source = RecordFileSource(path)
    with open(path, "r+b") as file:
        file.truncate(path.stat().st_size - 5)
    with pytest.raises(RecordError, match="it changed since the index was made"):
        source[-1]


def test_large_records_that_compress_well(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord.gz"
    records = [b"a", bytes(3 << 20), b"b" * 5, bytes((1 << 18) - 15)]
    write_members(path, records, 1)
    build_index(path)
    assert [RecordFileSource(path)[i] for i in (3, 1, 0, 2)] == [records[i] for i in (3, 1, 0, 2)]


def test_scan_reports_a_cut_stream(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord.gz"
    write_members(path, records_of(400), 8000)
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(TruncatedRecordError, match="ends inside a member"):
        build_index(path)


# -- splitting by records ------------------------------------------------------------------------------------


def test_gzip_datasets_split_by_records(tmp_path: Path) -> None:
    records = records_of(900)
    summary = tfrec.write_dataset(records, tmp_path / "t", num_shards=2, compression="gzip", index=True)
    ranges = split_records(summary.paths, 5)
    assert [ranges.records(c) for c in range(5)] == [180] * 5
    read = [
        list(tfrec.TFRecordDataset(summary.paths, shard_options=tfrec.ShardOptions(shard=(c, 5))))
        for c in range(5)
    ]
    assert sorted(r for share in read for r in share) == sorted(records)
    assert [len(share) for share in read] == [180] * 5


def test_a_gzip_file_with_a_plain_index_is_still_not_split(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord.gz"
    write_members(path, records_of(9))
    Path(f"{path}.idx").write_text("0 20\n")
    with pytest.raises(tfrec.ShardingError, match="unless it is a series of gzip members with a gzip index"):
        split_records([str(path)], 2)


# -- command line ------------------------------------------------------------------------------------


def test_cli_index_and_convert_write_gzip_indexes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.tfrecord"
    records = [tfrec.encode_example({"n": i}) for i in range(500)]
    tfrec.write_records(source, records)
    out = tmp_path / "out" / "t"
    assert (
        main(["convert", str(source), str(out), "--compression", "gzip", "--index", "--num-shards", "2"]) == 0
    )
    shard = Path(f"{out}-00000-of-00002.tfrecord.gz")
    written = Path(f"{shard}.idx").read_bytes()
    os.remove(f"{shard}.idx")
    assert main(["index", str(shard)]) == 0
    assert Path(f"{shard}.idx").read_bytes() == written
    assert RecordFileSource(shard)[3] == records[6]
    assert main(["convert", str(source), str(out), "--compression", "zlib", "--index"]) == 2
    assert "--index needs uncompressed or gzip shards" in capsys.readouterr().err
