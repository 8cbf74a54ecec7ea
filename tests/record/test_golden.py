"""Golden files written by real TensorFlow: tfrec reads them back and writes the same bytes."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from types import ModuleType

import pytest

import tfrec

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
MANIFEST = json.loads((GOLDEN_DIR / "manifest.json").read_text(encoding="utf-8"))
FILES: dict[str, dict[str, object]] = MANIFEST["files"]
# manifest spelling (TF's) -> tfrec's
COMPRESSION = {"NONE": None, "GZIP": "gzip", "ZLIB": "zlib"}


@pytest.fixture(scope="module")
def payloads(make_golden: ModuleType) -> dict[str, list[bytes]]:
    return {case: make_golden.payloads(case) for case in make_golden.CASES}


def test_manifest_lists_every_case_in_every_compression(make_golden: ModuleType) -> None:
    expected = {
        make_golden.file_name(case, compression)
        for case in make_golden.CASES
        for compression in make_golden.COMPRESSIONS
    }
    assert set(FILES) == expected
    committed = {p.name for p in GOLDEN_DIR.iterdir() if ".tfrecord" in p.name}
    assert committed == expected


@pytest.mark.parametrize("name", sorted(FILES))
def test_golden_file_matches_its_manifest_entry(name: str) -> None:
    data = (GOLDEN_DIR / name).read_bytes()
    entry = FILES[name]
    assert len(data) == entry["size"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]


@pytest.mark.parametrize("name", sorted(FILES))
def test_golden_file_reads_back_to_its_payloads(name: str, payloads: dict[str, list[bytes]]) -> None:
    entry = FILES[name]
    records = list(tfrec.read_records(GOLDEN_DIR / name))  # compression from the suffix
    assert len(records) == entry["records"]
    assert records == payloads[str(entry["case"])]


@pytest.mark.parametrize("name", sorted(FILES))
def test_golden_file_reads_back_from_a_file_object(name: str, payloads: dict[str, list[bytes]]) -> None:
    entry = FILES[name]
    with (GOLDEN_DIR / name).open("rb") as file:
        records = list(tfrec.read_records(file, COMPRESSION[str(entry["compression"])]))
    assert records == payloads[str(entry["case"])]


@pytest.mark.parametrize("name", sorted(FILES))
def test_write_records_reproduces_the_golden_file_byte_for_byte(
    name: str, payloads: dict[str, list[bytes]]
) -> None:
    entry = FILES[name]
    buffer = io.BytesIO()
    count = tfrec.write_records(buffer, payloads[str(entry["case"])], COMPRESSION[str(entry["compression"])])
    assert count == entry["records"]
    assert buffer.getvalue() == (GOLDEN_DIR / name).read_bytes()


@pytest.mark.parametrize("name", sorted(FILES))
def test_record_writer_to_a_path_reproduces_the_golden_file(
    tmp_path: Path, name: str, payloads: dict[str, list[bytes]]
) -> None:
    entry = FILES[name]
    path = tmp_path / name
    with tfrec.RecordWriter(path, "auto") as writer:  # compression from the suffix
        for record in payloads[str(entry["case"])]:
            writer.write(record)
    assert path.read_bytes() == (GOLDEN_DIR / name).read_bytes()


def test_mixed_case_covers_the_interesting_records(make_golden: ModuleType) -> None:
    mixed = make_golden.payloads("mixed")
    assert len(mixed) == 1000
    assert mixed[0] == b""
    assert len(mixed[1]) == 5000 == max(map(len, mixed))
    assert make_golden.payloads("mixed") == mixed  # deterministic
