"""`tfrec head` streams a large record and shows its values cut short, in bounded memory; damage in
it is reported, never shown (Hardening 2, item 11)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from childrun import run_child

import tfrec
from tfrec.cli import main, peek
from tfrec.convert import record_to_json

MiB = 1 << 20

RECORDS = [
    tfrec.encode_example(
        {"id": 7, "score": np.array([0.5, np.nan, -np.inf], np.float32), "name": "caf\u00e9"}
    ),
    tfrec.encode_example({"raw": b"\xff\x00\x80", "ids": np.arange(-3, 3), "nested/key": [b"a", b"bc"]}),
    tfrec.encode_example({"empty": np.zeros(0, np.int64), "big": np.array([2**63 - 1, -(2**63)])}),
    tfrec.encode_sequence_example(
        context={"id": 1}, feature_lists={"tokens": [[1, 2], [3]], "words": [[b"x"], [b"y", b"\xfe"]]}
    ),
]


def _head(paths: list[Path], limit: int | None = None) -> list[dict]:
    return list(peek.head_rows([str(p) for p in paths], [], limit))


@pytest.mark.parametrize("crc", ["default", "crcmod"])
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_a_streamed_record_shows_as_a_whole_one_does(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fresh_crc_backend: pytest.MonkeyPatch,
    compression: str | None,
    crc: str,
) -> None:
    if crc == "crcmod":  # the CRC taken piece by piece with crcmod, as without google-crc32c
        fresh_crc_backend.setenv("TFREC_CRC_BACKEND", "crcmod")
    path = tmp_path / ("x.tfrecord" + (".gz" if compression else ""))
    tfrec.write_records(path, RECORDS, compression=compression)
    whole = _head([path])
    assert whole == [record_to_json(r) for r in RECORDS]
    monkeypatch.setattr(peek, "WHOLE_BYTES", 0)  # every record streamed
    assert _head([path]) == whole


def test_a_large_record_is_shown_cut_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "large.tfrecord"
    ids = np.arange(400_000)
    record = tfrec.encode_example({"raw": b"abc" * MiB, "ids": ids, "label": 3})
    tfrec.write_records(path, [record, RECORDS[0]])
    assert main(["head", str(path)]) == 0
    first, second = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert first["label"] == [3]
    assert first["raw"] == [{"truncated": ("abc" * 342)[: peek.SHOWN_BYTES], "bytes": 3 * MiB}]
    assert first["ids"]["truncated"] == list(range(peek.SHOWN_VALUES))
    assert first["ids"]["bytes"] > 400_000
    assert second == record_to_json(RECORDS[0])


def test_damage_in_a_large_record_is_reported_not_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "damaged.tfrecord"
    tfrec.write_records(path, [RECORDS[0], tfrec.encode_example({"raw": bytes(3 * MiB)}), RECORDS[1]])
    data = bytearray(path.read_bytes())
    second = len(RECORDS[0]) + 16
    data[second + 12 + 2 * MiB] ^= 0x01
    path.write_bytes(bytes(data))
    assert main(["head", str(path)]) == 1
    captured = capsys.readouterr()
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        record_to_json(RECORDS[0]),
        record_to_json(RECORDS[1]),
    ]
    assert f"{path}: record 1, offset {second}: " in captured.err and "data CRC mismatch" in captured.err


def test_head_stops_before_reading_a_record_it_will_not_show(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [RECORDS[0], tfrec.encode_example({"raw": bytes(3 * MiB)})])
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x01  # the second record is damaged, but never read
    path.write_bytes(bytes(data))
    damage: list = []
    assert list(peek.head_rows([str(path)], damage, 1)) == [record_to_json(RECORDS[0])]
    assert damage == []


_HEAD = """
from tfrec.cli import main
report({"status": main(["head", PATH])})
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS")
@pytest.mark.parametrize("damaged", [False, True], ids=["intact", "damaged"])
def test_head_of_a_large_record_runs_in_memory_far_below_its_size(tmp_path: Path, damaged: bool) -> None:
    size = 192 * MiB
    path = tmp_path / "large.tfrecord"
    tfrec.write_records(path, [tfrec.encode_example({"raw": bytes(size)}), RECORDS[0]])
    if damaged:
        with open(path, "r+b") as file:
            file.seek(size // 2)
            file.write(b"\x01")
    small = tmp_path / "small.tfrecord"
    tfrec.write_records(small, RECORDS)
    # What the same command takes on a small file, plus 64 MiB: a third of the record.
    probe = run_child("import resource\n" + _HEAD.replace("PATH", repr(str(small))) + _PEAK)
    assert probe.returncode == 0, probe.describe()
    cap = probe.result["peak"] + 64 * MiB
    child = run_child(_HEAD.replace("PATH", repr(str(path))), memory=cap, timeout=120)
    assert child.returncode == 0, child.describe()
    assert child.result == {"status": 1 if damaged else 0}
    rows = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
    large = {"raw": [{"truncated": "\u0000" * peek.SHOWN_BYTES, "bytes": size}]}
    assert rows == ([] if damaged else [large]) + [record_to_json(RECORDS[0])]
    if damaged:
        assert f"{path}: record 0, offset 0: " in child.stderr and "data CRC mismatch" in child.stderr


def test_head_minus_n(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, RECORDS)
    assert main(["head", "-n", "0", str(path)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["head", "-n", "-1", str(path)]) == 2
    assert "-n must be 0 or more" in capsys.readouterr().err


_PEAK = """
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmPeak:"))
report({"peak": peak})
"""
