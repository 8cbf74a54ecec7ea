"""Batches of large records: read into one buffer each, sized by their frames (tfrec.record.spans)."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recordcheck import outcome, spans_mapped

import tfrec
from tfrec.record import spans
from tfrec.record.batch import PAD
from tfrec.record.mapped import MAP_FILES_ENV
from tfrec.record.spans import PAGE

KIB = 1024


@pytest.fixture(autouse=True)
def _spans_read_not_mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spans read into buffers of their own, as where files are not mapped (test_mapped_spans
    covers maps)."""
    monkeypatch.setenv(MAP_FILES_ENV, "0")


def _records(sizes: list[int], seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(size) for size in sizes]


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.one_of(st.integers(0, 300 * KIB), st.integers(0, 64)), max_size=14),
    size=st.integers(1, 6),
    compression=st.sampled_from([None, "gzip", "zlib"]),
    verify=st.booleans(),
)
@pytest.mark.parametrize("mapped", [False, True], ids=["read", "mapped"])
def test_read_batches_equals_read_records_on_records_of_any_size(
    tmp_path_factory: pytest.TempPathFactory,
    mapped: bool,
    sizes: list[int],
    size: int,
    compression: str | None,
    verify: bool,
) -> None:
    records = _records(sizes)
    path = tmp_path_factory.mktemp("s") / "x.tfrecord"
    tfrec.write_records(path, records, compression=compression)
    with spans_mapped(mapped):
        batches = list(tfrec.read_batches(path, size, compression, verify_checksums=verify))
    assert [list(b) for b in batches] == [records[i : i + size] for i in range(0, len(records), size)]
    assert list(tfrec.read_records(path, compression)) == records
    for number, batch in enumerate(batches):
        assert batch.start_index == number * size
        rest = tfrec.RecordReader(
            path, compression, start_offset=batch.end_offset, start_index=batch.start_index + len(batch)
        )
        assert list(rest) == records[number * size + len(batch) :]


@settings(max_examples=50, deadline=None)
@given(
    sizes=st.lists(
        st.one_of(st.integers(64 * KIB, 200 * KIB), st.integers(0, 3000)), min_size=1, max_size=12
    ),
    size=st.integers(1, 5),
    where=st.floats(0, 1, exclude_max=True),
    damage=st.sampled_from(["flip", "flip length", "truncate"]),
    on_error=st.sampled_from(["raise", "skip"]),
)
@pytest.mark.parametrize("mapped", [False, True], ids=["read", "mapped"])
def test_damage_gives_read_batches_the_errors_of_read_records(
    tmp_path_factory: pytest.TempPathFactory,
    mapped: bool,
    sizes: list[int],
    size: int,
    where: float,
    damage: str,
    on_error: str,
) -> None:
    path = tmp_path_factory.mktemp("d") / "x.tfrecord"
    tfrec.write_records(path, _records(sizes, seed=1))
    data = bytearray(path.read_bytes())
    at = int(where * len(data))
    if damage == "truncate":
        del data[at:]
    else:
        if damage == "flip length":  # a byte of the length field of the frame at or before `at`
            starts = np.cumsum([0, *[n + 16 for n in sizes]])
            at = int(starts[np.searchsorted(starts, at, "right") - 1]) + at % 8
        data[at] ^= 0x20
    path.write_bytes(bytes(data))
    expected = outcome(tfrec.read_records(path, on_error=on_error))  # type: ignore[arg-type]
    with spans_mapped(mapped):
        got = outcome(tfrec.read_batches(path, size, on_error=on_error))  # type: ignore[arg-type]
    assert got == expected


def _large_file(tmp_path: Path, count: int = 40, size: int = 100 * KIB) -> tuple[Path, list[bytes]]:
    records = _records([size] * count, seed=2)
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, records)
    return path, records


def test_a_batch_of_large_records_is_a_view_with_room_for_the_decoders(tmp_path: Path) -> None:
    path, records = _large_file(tmp_path)
    batches = list(tfrec.read_batches(path, 8))
    assert [r for b in batches for r in b] == records
    for batch in batches[1:]:  # (the first may join what the first block read)
        assert not isinstance(batch.buffer, bytes)  # a span's buffer, its records between frames
        assert batch.starts[0] - 12 < PAGE  # the frame sits at its offset within a page, as in the file
        assert len(batch.buffer) - int(batch.ends[-1]) >= PAD or batch is batches[-1]
        assert (
            isinstance(batch[0], bytes) and list(batch) == records[batch.start_index : batch.start_index + 8]
        )


def test_a_kept_batch_is_never_overwritten_by_later_ones(tmp_path: Path) -> None:
    path, records = _large_file(tmp_path, count=60)
    kept = []
    for number, batch in enumerate(tfrec.read_batches(path, 4)):
        if number % 3 == 0:
            kept.append(batch)
        gc.collect()
    for batch in kept:
        assert list(batch) == records[batch.start_index : batch.start_index + len(batch)]
    # An array decoded from a batch (a view of its buffer) keeps the buffer from reuse too.
    views = []
    for batch in tfrec.read_batches(path, 4):
        views.append(
            (batch.start_index, np.frombuffer(batch.buffer, np.uint8)[batch.starts[0] : batch.ends[0]])
        )
    for index, view in views:
        assert view.tobytes() == records[index]


def test_batches_of_large_records_follow_their_varying_sizes(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    sizes = [int(n) for n in rng.integers(64 * KIB, 400 * KIB, 50)] + [10] * 5 + [200 * KIB] * 5
    records = _records(sizes, seed=5)
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, records)
    for size in (1, 3, 16, 100):
        batches = list(tfrec.read_batches(path, size))
        assert [len(b) for b in batches[:-1]] == [size] * (len(batches) - 1)
        assert [r for b in batches for r in b] == records


def test_large_records_are_checked_against_their_data_crc(tmp_path: Path) -> None:
    path, records = _large_file(tmp_path, count=10)
    data = bytearray(path.read_bytes())
    frame = 100 * KIB + 16
    data[6 * frame + 12 + 50_000] ^= 1
    path.write_bytes(bytes(data))
    got: list[bytes] = []
    with pytest.raises(tfrec.ChecksumError, match="data CRC mismatch") as caught:
        for batch in tfrec.read_batches(path, 4):
            got.extend(batch)
    assert got == records[:6] and (caught.value.index, caught.value.offset) == (6, 6 * frame)
    kept = [r for b in tfrec.read_batches(path, 4, verify_checksums=False) for r in b]
    assert len(kept) == 10 and kept[:6] == records[:6]


@pytest.mark.parametrize("byte", [0, 3, 8, 11])  # in the length, or in its CRC
def test_a_damaged_header_among_equal_ones_is_found(tmp_path: Path, byte: int) -> None:
    # Equal records repeat their header, which the span walk checks once: a changed one is checked.
    path, records = _large_file(tmp_path, count=12)
    data = bytearray(path.read_bytes())
    data[7 * (100 * KIB + 16) + byte] ^= 0x04
    path.write_bytes(bytes(data))
    expected = outcome(tfrec.read_records(path))
    assert expected[0] == records[:7] and expected[1] is not None
    for size in (3, 12):
        assert outcome(tfrec.read_batches(path, size)) == expected


def test_a_pool_releases_its_free_maps_but_the_last_two_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # (MADV_FREE'd maps took 40% longer to fill the next time: a reader reads on in the last two.)
    released: list[int] = []
    pool = spans.SpanPool()
    maps = [pool.take(PAGE * (k + 1)) for k in range(4)]
    sizes = [len(m) for m in maps]
    del maps
    again = pool.take(PAGE)  # the first, taken again: the last taken now
    monkeypatch.setattr(spans, "_free", lambda buffer: released.append(len(buffer)))
    pool.release()
    assert len(again) == PAGE and sorted(released) == sorted(sizes[1:3])
