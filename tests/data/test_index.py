"""Index files: build_index writes what DALI's and the tfrecord package's tfrecord2idx write; read_index
reads them."""

from __future__ import annotations

import importlib.util
import os
import pickle
import random
import runpy
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data import build_index, read_index
from tfrec.errors import InvalidArgumentError, MissingFileError

GOLDEN = Path(__file__).parent / "golden"
RECORD_GOLDEN = Path(__file__).parent.parent / "golden"
TFDS_TRAIN = (
    Path(__file__).parent.parent / "features/tfds_sample/tfrec_research_ordered-train.tfrecord-00000-of-00001"
)
HAVE_TFRECORD = importlib.util.find_spec("tfrecord") is not None


def expected_index(records: list[bytes]) -> bytes:
    """The index as tfrecord2idx writes it: "offset length\\n", length counting the 16 framing bytes."""
    lines, offset = [], 0
    for record in records:
        lines.append(f"{offset} {len(record) + 16}\n")
        offset += len(record) + 16
    return "".join(lines).encode()


def tfrecord2idx() -> Any:
    """The tfrecord package's own ``create_index``, loaded from its file alone.

    Importing the package would import its generated protos (which need a recent protobuf
    runtime); the tool itself needs only ``struct``.
    """
    spec = importlib.util.find_spec("tfrecord")
    assert spec is not None and spec.submodule_search_locations
    tool = os.path.join(next(iter(spec.submodule_search_locations)), "tools", "tfrecord2idx.py")
    return runpy.run_path(tool)["create_index"]


@pytest.mark.parametrize(
    ("source", "golden"),
    [(RECORD_GOLDEN / "mixed.tfrecord", "mixed.tfrecord.idx"), (TFDS_TRAIN, "tfds_sample_train.idx")],
)
def test_build_index_equals_tfrecord2idx_golden(tmp_path: Path, source: Path, golden: str) -> None:
    # The golden files were written by tfrecord.tools.tfrecord2idx (tfrecord 1.14.6).
    path = tmp_path / source.name
    shutil.copy(source, path)
    assert build_index(path) == str(path) + ".idx"
    assert (tmp_path / (source.name + ".idx")).read_bytes() == (GOLDEN / golden).read_bytes()


@pytest.mark.skipif(not HAVE_TFRECORD, reason="the tfrecord package is not installed")
def test_build_index_equals_tfrecord2idx_live(tmp_path: Path) -> None:
    rng = random.Random(12)
    shapes = [[], [0], [1], [0, 0, 5], [70_000, 3]] + [
        [rng.choice([0, 1, 100, 4000, 70_000]) for _ in range(rng.randrange(1, 30))] for _ in range(20)
    ]
    pairs, expected = [], []
    for number, lengths in enumerate(shapes):
        records = [rng.randbytes(n) for n in lengths]
        path = tmp_path / f"{number}.tfrecord"
        tfrec.write_records(path, records)
        build_index(path, tmp_path / f"{number}.ours.idx")
        pairs.append((path, tmp_path / f"{number}.theirs.idx"))
        expected.append(expected_index(records))
    create_index = tfrecord2idx()
    for path, theirs in pairs:
        create_index(str(path), str(theirs))
    for number, want in enumerate(expected):
        ours = (tmp_path / f"{number}.ours.idx").read_bytes()
        assert ours == (tmp_path / f"{number}.theirs.idx").read_bytes() == want, shapes[number]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lengths=st.lists(st.integers(0, 70_000), max_size=30))
def test_build_index_and_read_index_round_trip(
    tmp_path_factory: pytest.TempPathFactory, lengths: list[int]
) -> None:
    directory = tmp_path_factory.mktemp("round")
    records = [os.urandom(n) for n in lengths]
    path = directory / "x.tfrecord"
    tfrec.write_records(path, records)
    index_path = build_index(path)
    assert Path(index_path).read_bytes() == expected_index(records)
    offsets, frame_lengths = read_index(index_path)
    assert offsets.dtype == frame_lengths.dtype == np.int64
    assert frame_lengths.tolist() == [n + 16 for n in lengths]
    data = path.read_bytes()
    assert [
        data[o + 12 : o + n - 4] for o, n in zip(offsets.tolist(), frame_lengths.tolist(), strict=True)
    ] == records


def test_build_index_of_an_empty_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    assert Path(build_index(path)).read_bytes() == b""
    offsets, lengths = read_index(str(path) + ".idx")
    assert offsets.shape == lengths.shape == (0,)


def test_build_index_reads_headers_not_payloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Three 1 MiB records: the scan reads windows at the three headers only, never the payloads' bytes.
    records = [bytes([i]) * (1 << 20) for i in range(3)]
    path = tmp_path / "big.tfrecord"
    tfrec.write_records(path, records)
    import tfrec.record.positioned as positioned_module

    reads: list[tuple[int, int]] = []
    real = positioned_module.pread

    def spy(fd: int, size: int, offset: int) -> bytes:
        reads.append((offset, size))
        return real(fd, size, offset)

    monkeypatch.setattr(positioned_module, "pread", spy)
    build_index(path)
    frame = (1 << 20) + 16
    assert [offset for offset, _ in reads] == [0, frame, 2 * frame]  # one small window per header
    assert all(size <= 1 << 16 for _, size in reads)


def test_build_index_verifies_length_crcs(tmp_path: Path) -> None:
    records = [b"a" * 10, b"b" * 20, b"c" * 30]
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, records)
    data = bytearray(path.read_bytes())
    data[26 + 8] ^= 0xFF  # the length CRC of record 1 (at offset 26)
    path.write_bytes(bytes(data))
    with pytest.raises(tfrec.ChecksumError) as caught:
        build_index(path)
    error = caught.value
    assert (error.path, error.index, error.offset, error.part) == (str(path), 1, 26, "length")
    assert str(error).startswith(f"{path}, record 1, offset 26: length CRC mismatch")
    assert not Path(str(path) + ".idx").exists()


def test_build_index_does_not_check_data_crcs(tmp_path: Path) -> None:
    # Payloads are not read: a damaged payload is found when the record is read, not by the index.
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"hello", b"world"])
    data = bytearray(path.read_bytes())
    data[12] ^= 1
    path.write_bytes(bytes(data))
    assert Path(build_index(path)).read_bytes() == b"0 21\n21 21\n"


@pytest.mark.parametrize(
    ("cut", "index", "offset", "problem"),
    [
        (5, 1, 21, "the stream ends 5 bytes into a 12-byte record header"),
        (20, 1, 21, "the record claims 5 bytes of data but the stream ends 8 bytes after its header"),
    ],
)
def test_build_index_reports_truncation(
    tmp_path: Path, cut: int, index: int, offset: int, problem: str
) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"hello", b"world"])
    path.write_bytes(path.read_bytes()[: 21 + cut])
    with pytest.raises(tfrec.TruncatedRecordError) as caught:
        build_index(path)
    assert (caught.value.index, caught.value.offset) == (index, offset)
    assert problem in str(caught.value)


@pytest.mark.parametrize("name", ["x.tfrecord.gz", "x.tfrecord.zz"])
def test_build_index_refuses_compressed_files(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    tfrec.write_records(path, [b"a"])
    with pytest.raises(
        InvalidArgumentError, match=r"compressed: a (gzip|zlib) stream can only be read from its start"
    ):
        build_index(path)
    with pytest.raises(InvalidArgumentError, match="needs an uncompressed TFRecord file"):
        build_index(tmp_path / "plain.tfrecord", compression="gzip")


def test_build_index_hints_at_gzip_without_its_suffix(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"a" * 100], compression="gzip")
    with pytest.raises(tfrec.ChecksumError, match="looks gzip-compressed"):
        build_index(path)


def test_build_index_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="no such file") as caught:
        build_index(tmp_path / "nope.tfrecord")
    assert isinstance(caught.value, FileNotFoundError)


@pytest.mark.parametrize(
    ("text", "offsets", "lengths"),
    [
        (b"0 16\n16 20\n", [0, 16], [16, 20]),
        (b"0 16\n16 20", [0, 16], [16, 20]),  # no final newline
        (b"0 16\r\n16 20\r\n", [0, 16], [16, 20]),  # written on Windows
        (b"0\t16\n16  20 \n", [0, 16], [16, 20]),
        (b"0 17\n", [0], [17]),  # one line (np.loadtxt would give a 1-D array here)
        (b"", [], []),
        (b"100 16\n", [100], [16]),  # an index of part of a file
    ],
)
def test_read_index_reads_the_format_of_others(
    tmp_path: Path, text: bytes, offsets: list[int], lengths: list[int]
) -> None:
    path = tmp_path / "x.idx"
    path.write_bytes(text)
    got_offsets, got_lengths = read_index(path)
    assert got_offsets.tolist() == offsets and got_lengths.tolist() == lengths


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"0 16\n16\n", "line 2: expected 'offset length' (two decimal integers), found b'16'"),
        (b"0 16 3\n", "line 1: expected 'offset length'"),
        (b"0 16\n\n16 20\n", "line 2: expected 'offset length'"),
        (b"-1 16\n", "line 1: expected 'offset length'"),
        (b"0 1e3\n", "line 1: expected 'offset length'"),
        (b"\x00\x00\x00\x10", "line 1: expected 'offset length'"),
        (b"0 10\n", "line 1: a frame length of 10 bytes is shorter than the 16 bytes of framing"),
        (b"0 20\n10 20\n", "line 2: offset 10 lies inside the frame of the line before"),
        (b"0 " + b"9" * 19 + b"\n", "line 1: expected 'offset length'"),
    ],
)
def test_read_index_rejects_what_is_not_an_index(tmp_path: Path, text: bytes, message: str) -> None:
    path = tmp_path / "x.idx"
    path.write_bytes(text)
    with pytest.raises(InvalidArgumentError) as caught:
        read_index(path)
    assert str(caught.value).startswith(f"{path}, ")
    assert message in str(caught.value)


def test_read_index_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="no such index file"):
        read_index(tmp_path / "nope.idx")


def test_new_errors_survive_pickling() -> None:
    for error in (
        InvalidArgumentError("bad"),
        tfrec.errors.OutOfRangeError("out"),
        MissingFileError("gone"),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)
    assert issubclass(tfrec.errors.OutOfRangeError, IndexError)


def test_index_is_written_atomically(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"a"])
    build_index(path)
    assert sorted(os.listdir(tmp_path)) == ["x.tfrecord", "x.tfrecord.idx"]  # no temporary file left
