"""Converters on hostile input: a ConvertError naming the file and the place, bounded memory, and no
output published when the conversion fails (Hardening 2, item 10)."""

from __future__ import annotations

import gzip
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest
from childrun import run_child

import tfrec
from tfrec.cli import main
from tfrec.convert import read_csv, read_jsonl, read_webdataset, write_samples
from tfrec.errors import ConvertError
from tfrec.features import FeaturesDict

MiB = 1 << 20


class _Zeros:
    """A file of ``size`` zero bytes, read in pieces: archives are built without holding a member."""

    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        self.left -= size
        return bytes(size)


def _zeros_tar_gz(path: Path, members: list[tuple[str, int]]) -> Path:
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as packed,
        tarfile.open(fileobj=packed, mode="w|", format=tarfile.GNU_FORMAT) as archive,
    ):
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size = size
            archive.addfile(info, _Zeros(size))
    return path


def _published(directory: Path) -> list[str]:
    return sorted(os.listdir(directory)) if directory.exists() else []


# -- tar.gz bombs -----------------------------------------------------------------------------------

_CONVERT = """
from tfrec.cli import main
status = main(["convert", SRC, OUT, "--no-features-json"])
report({"status": status})
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS")
def test_a_member_over_the_limit_is_a_convert_error_not_a_memory_error(tmp_path: Path) -> None:
    # One member just past the documented limit, in 1 MiB of gzip: refused from its header alone.
    src = _zeros_tar_gz(tmp_path / "bomb.tar.gz", [("000.bin", tfrec.convert.MAX_MEMBER_BYTES + 1)])
    out = tmp_path / "out"
    code = f"SRC, OUT = {str(src)!r}, {str(out / 'bomb')!r}\n" + _CONVERT
    child = run_child(code, memory=768 * MiB, timeout=120)
    assert child.result == {"status": 1}, child.describe()
    assert "000.bin" in child.stderr and "bomb.tar.gz" in child.stderr
    assert f"larger than the limit of {tfrec.convert.MAX_MEMBER_BYTES} bytes" in child.stderr
    assert "MemoryError" not in child.stderr
    assert _published(out) == []


def test_a_member_over_a_given_limit_names_the_member_and_its_offset(tmp_path: Path) -> None:
    src = _zeros_tar_gz(tmp_path / "bomb.tar.gz", [("000.cls", 1), ("001.cls", 5 * MiB)])
    with pytest.raises(ConvertError) as caught:
        list(read_webdataset(src, types="cls=bytes", max_member_bytes=MiB))
    assert caught.value.path == str(src)
    assert caught.value.where == "member '001.cls' at byte 1024"
    assert "5242880 bytes, larger than the limit of 1048576 bytes" in str(caught.value)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS")
def test_many_large_members_are_written_in_chunks_bounded_by_bytes(tmp_path: Path) -> None:
    # 384 samples of 1 MiB: the writer used to hold 1024 samples (and their bytes) at once.
    src = _zeros_tar_gz(tmp_path / "many.tar.gz", [(f"{i:04d}.bin", MiB) for i in range(384)])
    out = tmp_path / "out"
    code = f"SRC, OUT = {str(src)!r}, {str(out / 'many')!r}\n" + _CONVERT
    child = run_child(code, memory=420 * MiB, timeout=180)
    assert child.result == {"status": 0}, child.describe()
    (shard,) = out.glob("many-*.tfrecord")
    assert sum(1 for _ in tfrec.read_records(shard)) == 384


def test_the_writers_chunks_are_bounded_by_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    write_many = tfrec.RecordWriter.write_many

    def spy(self: tfrec.RecordWriter, records: list[bytes]) -> None:
        sizes.append(sum(map(len, records)))
        write_many(self, records)

    monkeypatch.setattr(tfrec.RecordWriter, "write_many", spy)
    with tfrec.ShardedWriter(tmp_path / "x", num_shards=1) as writer:
        writer.write_many(bytes(MiB) for _ in range(100))
    assert sum(sizes) == 100 * MiB and max(sizes) <= 16 * MiB
    sizes.clear()
    tfrec.write_dataset((bytes(100) for _ in range(5000)), tmp_path / "small", num_shards=1)
    assert sizes == [1024 * 100] * 4 + [904 * 100]  # small records: 1024 at a time, as before


# -- CSV --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("row", [3, 1500], ids=["in-the-type-sample", "after-it"])
def test_a_csv_field_over_the_field_limit_names_the_file_and_row(tmp_path: Path, row: int) -> None:
    src = tmp_path / "wide.csv"
    lines = ["a,b"] + [f"{i},x" for i in range(2, 2000)]
    lines[row - 1] = f"{row},{'y' * 200_000}"
    src.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConvertError) as caught:
        list(read_csv(src))
    assert caught.value.path == str(src)
    assert caught.value.where is not None and caught.value.where.startswith(f"row {row}")
    assert "field_size_limit" in str(caught.value)


@pytest.mark.parametrize("row", [4, 5000], ids=["in-the-type-sample", "after-it"])
def test_a_csv_in_a_mixed_encoding_names_the_file_row_and_byte(tmp_path: Path, row: int) -> None:
    src = tmp_path / "mixed.csv"
    lines = [b"name,n"] + [f"caf\u00e9 {i},{i}".encode() for i in range(2, 6000)]
    lines[row - 1] = f"caf\u00e9 {row},{row}".encode("latin-1")  # one row saved in another encoding
    src.write_bytes(b"\n".join(lines) + b"\n")
    offset = sum(len(line) + 1 for line in lines[: row - 1]) + 3  # the 0xe9 of "caf\xe9"
    with pytest.raises(ConvertError) as caught:
        list(read_csv(src))
    assert caught.value.path == str(src)
    assert caught.value.where == f"row {row}, line {row}, byte offset {offset}"
    assert "not utf-8 text" in str(caught.value)
    assert main(["convert", str(src), str(tmp_path / "out" / "m")]) == 1
    assert _published(tmp_path / "out") == []


# -- JSON Lines -------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [2, 1500], ids=["in-the-type-sample", "after-it"])
@pytest.mark.parametrize("depth", [10_000, 200])
def test_jsonl_nested_too_deep_names_the_file_and_line(tmp_path: Path, line: int, depth: int) -> None:
    src = tmp_path / "deep.jsonl"
    lines = [json.dumps({"id": i, "v": [1]}) for i in range(1, 2000)]
    lines[line - 1] = '{"id": 0, "v": ' + "[" * depth + "1" + "]" * depth + "}"
    src.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConvertError) as caught:
        write_samples(read_jsonl(src), tmp_path / "out" / "d", progress=False)
    assert (caught.value.path, caught.value.where) == (str(src), f"line {line}")
    assert caught.value.problem.startswith("objects and lists nested deeper than 32 levels")
    assert _published(tmp_path / "out") == []


def test_jsonl_in_a_mixed_encoding_names_the_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "mixed.jsonl"
    lines = [json.dumps({"name": f"caf\u00e9 {i}"}, ensure_ascii=False).encode() for i in range(3000)]
    lines[2500] = lines[2500].decode().encode("latin-1")
    src.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(ConvertError) as caught:
        list(read_jsonl(src))
    assert (caught.value.path, caught.value.where) == (str(src), "line 2501")
    assert "can't decode byte 0xe9" in str(caught.value)


# -- TFRecord in, damaged ---------------------------------------------------------------------------


def _damaged(tmp_path: Path) -> Path:
    path = tmp_path / "damaged.tfrecord"
    tfrec.write_records(path, [tfrec.encode_example({"id": i}) for i in range(10)])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("out", ["copy", "one.tfrecord", "rows.jsonl", "rows.parquet"])
def test_converting_a_damaged_tfrecord_publishes_nothing(
    tmp_path: Path, out: str, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _damaged(tmp_path)
    target = tmp_path / "out" / out
    given: list[str] = []
    if out.endswith(".parquet"):
        pytest.importorskip("pyarrow")
        FeaturesDict({"id": tfrec.int64}).save(tmp_path / "schema")
        given = ["--features", str(tmp_path / "schema")]
    assert main(["convert", str(src), str(target), *given]) == 1
    err = capsys.readouterr().err
    assert f"{src}: record 5, offset 155: " in err
    assert f"1 damaged record(s) in the input: nothing was written to {target}" in err
    assert _published(tmp_path / "out") == []
    if out.endswith(".parquet"):  # features inferred from the damaged input: refused as early
        assert main(["convert", str(src), str(target)]) == 1
        assert f"{src}, record 5, offset 155: " in capsys.readouterr().err
        assert _published(tmp_path / "out") == []
