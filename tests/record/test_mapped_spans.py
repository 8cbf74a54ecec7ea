"""Batches of large records handed out as spans of the file mapped (tfrec.record.mapped_spans)."""

from __future__ import annotations

import gc
import io
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from recordcheck import none_left, outcome, spans_mapped

import tfrec
from tfrec.record import block_crc, block_loop, mapped_spans
from tfrec.record.batch import PAD
from tfrec.record.mapped import MAP_FILES_ENV

KIB = 1024


@pytest.fixture(autouse=True)
def small_spans() -> Iterator[None]:
    """Spans of 400 KiB and sums of 96 KiB pieces, so that a file of a few MiB is several spans.
    (test_spans reads batches of records of any size, damaged or not, both mapped and read.)"""
    with spans_mapped(True):
        yield


def _write(path: Path, sizes: list[int], seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    records = [rng.bytes(size) for size in sizes]
    tfrec.write_records(path, records)
    return records


def _is_file_map(buffer: object) -> bool:
    return isinstance(buffer, mmap.mmap) and memoryview(buffer).readonly  # (span buffers are writable)


def test_jpegs_another_encoder_made_read_mapped_as_read_records_reads_them(tmp_path: Path) -> None:
    # Records of varying sizes from 64 KiB up, as image datasets have: crops of scikit-learn's sample
    # photographs, encoded by Pillow's JPEG encoder, in Examples with a label.
    datasets = pytest.importorskip("sklearn.datasets")
    image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(5)
    jpegs = []
    for photo in datasets.load_sample_images().images:
        for _ in range(12):
            top, left = rng.integers(0, 27), rng.integers(0, 40)
            crop = image.fromarray(photo[top : top + 400, left : left + 600])
            out = io.BytesIO()
            crop.save(out, "JPEG", quality=int(rng.integers(95, 100)))
            jpegs.append(out.getvalue())
    assert min(map(len, jpegs)) >= 64 * KIB and len(set(map(len, jpegs))) > 20
    records = [tfrec.encode_example({"image": jpeg, "label": k}) for k, jpeg in enumerate(jpegs)]
    path = tmp_path / "photos.tfrecord"
    tfrec.write_records(path, records)
    spec = {"image": tfrec.FixedLenFeature([], tfrec.string), "label": tfrec.FixedLenFeature([], tfrec.int64)}
    batches = list(tfrec.read_batches(path, 5))
    assert all(_is_file_map(batch.buffer) for batch in batches)
    assert [r for batch in batches for r in batch] == list(tfrec.read_records(path)) == records
    parsed = [tfrec.parse_example(batch, spec) for batch in batches]
    assert [v for p in parsed for v in p["image"].tolist()] == jpegs
    assert np.concatenate([p["label"] for p in parsed]).tolist() == list(range(len(jpegs)))


@pytest.mark.parametrize("part", ["data", "length", "stored data CRC"])
@pytest.mark.parametrize("record", [1, 5, 6, 11])  # spans of 6 records here: inside them, and first
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_damage_inside_a_mapped_span_is_named_at_its_record(
    tmp_path: Path, part: str, record: int, on_error: str
) -> None:
    path = tmp_path / "x.tfrecord"
    _write(path, [100 * KIB] * 12, seed=2)
    data = bytearray(path.read_bytes())
    frame = 100 * KIB + 16
    at = record * frame + {"data": 12 + 777, "length": 1, "stored data CRC": frame - 2}[part]
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    expected = outcome(tfrec.read_records(path, on_error=on_error))  # type: ignore[arg-type]
    assert expected[1] is None or expected[1][2] == record  # (the error names the damaged record)
    assert outcome(tfrec.read_batches(path, 3, on_error=on_error)) == expected  # type: ignore[arg-type]


def test_batches_of_large_records_are_slices_of_the_file_mapped(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    records = _write(path, [100 * KIB] * 30)
    batches = list(tfrec.read_batches(path, 3))
    assert all(_is_file_map(batch.buffer) for batch in batches)  # no batch was joined from two spans
    assert len({id(batch.buffer) for batch in batches}) >= 4  # spans of about 400 KiB
    for batch in batches:
        assert isinstance(batch[0], bytes)
        assert list(batch) == records[batch.start_index : batch.start_index + 3]
        assert len(batch.buffer) - int(batch.ends[-1]) >= PAD or batch is batches[-1]


@pytest.mark.parametrize(
    "sizes",
    [[100 * KIB + k for k in range(25)], [100 * KIB] * 9 + [90 * KIB] + [100 * KIB] * 10],
    ids=["lengths of their own", "one length but one"],
)
def test_the_sums_of_a_clean_span_check_its_records_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sizes: list[int]
) -> None:
    # The pieces' sums match: no span falls back to a CRC per record (which would be right, but
    # slow). Of one length but one, the first headers repeat and a later one does not: the span is
    # found again frame by frame, with the sums already taken.
    path = tmp_path / "x.tfrecord"
    records = _write(path, sizes)
    checks: list[bool | None] = []
    match = block_crc.data_crcs_match

    def spied(*args: object, **kwargs: object) -> bool | None:
        checks.append(match(*args, **kwargs))  # type: ignore[arg-type]
        return checks[-1]

    monkeypatch.setattr(block_crc, "data_crcs_match", spied)
    assert [r for b in tfrec.read_batches(path, 2) for r in b] == records
    assert len(checks) >= 4 and all(checks)


def test_kept_batches_and_arrays_decoded_from_them_outlive_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    records = _write(path, [70 * KIB + k for k in range(40)])
    kept = []
    with tfrec.RecordReader(path) as reader:
        for number, batch in enumerate(reader.batches(4)):
            if number % 3 == 0:
                kept.append((batch, np.frombuffer(batch.buffer, np.uint8)[batch.starts[0] : batch.ends[0]]))
            gc.collect()
    gc.collect()
    for batch, first in kept:
        assert list(batch) == records[batch.start_index : batch.start_index + len(batch)]
        assert first.tobytes() == records[batch.start_index]
    assert none_left("tfrec-fill")


def test_a_record_larger_than_a_span_is_a_span_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    records = _write(path, [100 * KIB, 3 * 1024 * KIB, 100 * KIB, 5])
    batches = list(tfrec.read_batches(path, 2))
    assert [list(b) for b in batches] == [records[:2], records[2:]]


def test_a_file_cut_short_before_its_span_is_mapped_raises_as_read_records_does(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    records = _write(path, [100 * KIB] * 30)
    frame = 100 * KIB + 16
    reader = tfrec.RecordReader(path)
    batches = reader.batches(4)
    got = list(next(batches))  # the first span is mapped: 4 records, then whole batches to 400 KiB
    cut = 20 * frame + 7  # far past that span's map: cut under the reader, before the next is mapped
    os.truncate(path, cut)
    with pytest.raises(tfrec.TruncatedRecordError) as caught:
        for batch in batches:
            got.extend(batch)
    assert got == records[:20] and caught.value.index == 20 and caught.value.offset == 20 * frame
    reader.close()


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("record", [5, 9, 11])  # in the span being handed out, at its last record, the next
def test_a_file_cut_short_under_its_mapped_span_is_reported_not_read(
    tmp_path: Path, on_error: str, record: int
) -> None:
    # A map read past the end of its file ends the process: a span whose file shrank hands out the
    # records the file still holds whole, then reports the truncation as read_records does.
    path = tmp_path / "x.tfrecord"
    records = _write(path, [100 * KIB] * 30)
    frame = 100 * KIB + 16
    reader = tfrec.RecordReader(path, on_error=on_error)  # type: ignore[arg-type]
    batches = reader.batches(3)  # spans of 6 records: 0-5, 6-11, ...
    got = [r for _ in range(3) for r in next(batches)]  # records 0-8: 6-11 are mapped
    os.truncate(path, record * frame + 100)
    rest, error = outcome(batches)
    kept = max(9, record)  # those handed out before the cut, then those it left whole
    assert got + rest == records[:kept]
    if on_error == "raise":
        assert error is not None and error[0] is tfrec.TruncatedRecordError
        assert error[2:] == (kept, kept * frame) and "shrank to" in str(error[1])
    else:
        assert error is None
    reader.close()


def test_a_file_cut_at_a_page_after_a_record_hands_it_out_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Frames of 25 pages, all in one span: cut after record 7, the bytes the decoders read after it
    # are gone from the map (a read there would end the process), so its batch is handed out copied.
    monkeypatch.setattr(mapped_spans, "MAP_SPAN_BYTES", 2 << 20)
    path = tmp_path / "x.tfrecord"
    records = _write(path, [25 * 4096 - 16] * 12)
    with tfrec.RecordReader(path) as reader:
        batches = reader.batches(4)
        assert _is_file_map(next(batches).buffer)
        os.truncate(path, 8 * 25 * 4096)
        batch = next(batches)
        assert isinstance(batch.buffer, bytes) and list(batch) == records[4:8]
        assert batch.buffer[int(batch.ends[-1]) :] == bytes(PAD)
        with pytest.raises(tfrec.TruncatedRecordError) as caught:
            next(batches)
        assert caught.value.index == 8


def test_damage_after_a_cut_is_not_reported(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    _write(path, [100 * KIB] * 12)
    frame = 100 * KIB + 16
    with path.open("r+b") as file:  # record 10's data, in the second span (records 6-11)
        file.seek(10 * frame + 500)
        byte = file.read(1)
        file.seek(-1, os.SEEK_CUR)
        file.write(bytes([byte[0] ^ 1]))
    reader = tfrec.RecordReader(path, on_error="warn")
    batches = reader.batches(3)
    got = [r for _ in range(3) for r in next(batches)]  # records 0-8: the span of 6-11 is mapped
    os.truncate(path, 9 * frame + 100)
    with pytest.warns(tfrec.TfrecWarning) as caught:
        got += [r for batch in batches for r in batch]
    assert len(got) == 9 and [str(w.message).count("shrank") for w in caught] == [1]
    reader.close()


def test_a_span_that_cannot_be_mapped_is_read_from_where_the_records_before_it_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small records are read a block ahead; the large ones after them, when the file cannot be
    # mapped (a file system without mmap), are read from the first byte not yet handed out.
    path = tmp_path / "x.tfrecord"
    records = _write(path, [1000] * 500 + [200 * KIB] * 10 + [1000] * 2000)
    monkeypatch.setattr(block_loop, "map_span", lambda *args, **kwargs: None)
    for verify in (True, False):
        expected = outcome(tfrec.read_records(path, verify_checksums=verify))
        assert outcome(tfrec.read_batches(path, 4, verify_checksums=verify)) == expected
        assert expected == (records, None)


def test_no_file_is_mapped_when_the_environment_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.tfrecord"
    records = _write(path, [100 * KIB] * 12)
    monkeypatch.setenv(MAP_FILES_ENV, "0")
    batches = list(tfrec.read_batches(path, 3))
    assert [r for b in batches for r in b] == records
    assert not any(_is_file_map(batch.buffer) for batch in batches)


def test_records_handed_out_one_by_one_then_in_batches_go_on_where_they_left_off(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    records = _write(path, [90 * KIB, 5, *[100 * KIB] * 20])
    reader = tfrec.RecordReader(path)
    first = [next(reader), next(reader), next(reader)]
    rest = [r for batch in reader.batches(6) for r in batch]
    assert first + rest == records
