"""RecordBatch and read_batches: one buffer per batch, read by the batched decoders as it is."""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.allocator import keep_freed_memory
from tfrec.example.columns.column import record_spans
from tfrec.record.batch import PAD, RecordBatch
from tfrec.record.read_ahead import ReadAhead


@settings(max_examples=50, deadline=None)
@given(
    records=st.lists(st.binary(max_size=40), max_size=30),
    size=st.integers(1, 8),
    compression=st.sampled_from([None, "gzip", "zlib"]),
)
def test_batches_hold_the_records_in_order_and_say_where_to_resume(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes], size: int, compression: str | None
) -> None:
    path = tmp_path_factory.mktemp("b") / "x.tfrecord"
    tfrec.write_records(path, records, compression=compression)
    batches = list(tfrec.read_batches(path, size, compression))
    assert [list(b) for b in batches] == [records[i : i + size] for i in range(0, len(records), size)]
    for number, batch in enumerate(batches):
        assert batch.start_index == number * size
        assert batch.path == str(path)
        rest = tfrec.RecordReader(
            path, compression, start_offset=batch.end_offset, start_index=batch.start_index + len(batch)
        )
        assert list(rest) == records[number * size + len(batch) :]


def test_a_batch_of_records_in_memory_is_their_join_with_zero_padding() -> None:
    batch = RecordBatch.from_records([b"ab", b"", b"\x00cd"])
    assert batch.buffer == b"ab\x00cd" + bytes(PAD)
    assert (batch.starts.tolist(), batch.ends.tolist()) == ([0, 2, 2], [2, 2, 5])
    assert batch.lengths.tolist() == [2, 0, 3]
    assert (len(batch), batch[0], batch[-1], batch[1:]) == (3, b"ab", b"\x00cd", [b"", b"\x00cd"])
    with pytest.raises(IndexError, match="record 3 of a batch of 3"):
        batch[3]
    copy = pickle.loads(pickle.dumps(batch))
    assert list(copy) == list(batch) and copy.starts.dtype == np.int64
    assert repr(batch) == "<RecordBatch 3 records, 5 bytes: <stream> records 0..2>"


def test_a_read_batch_is_a_view_of_the_block_it_was_read_in(tmp_path: Path) -> None:
    records = [bytes([i]) * (i % 7) for i in range(50)]
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, records)
    first, second = tfrec.read_batches(path, 25)
    assert first.buffer is second.buffer  # one block, no copy: the spans sit between frame headers
    assert first.starts[0] == 12 and first.starts[1] == first.ends[0] + 4 + 12
    assert list(first) == records[:25] and list(second) == records[25:]
    # Pickled (e.g. to another process), a batch carries its records, not the whole block.
    copy = pickle.loads(pickle.dumps(first))
    assert list(copy) == records[:25] and len(copy.buffer) == sum(map(len, records[:25])) + PAD


def test_batches_spanning_blocks_are_joined_once(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    records = [tfrec.encode_example({"image": rng.bytes(3000), "label": i}) for i in range(500)]
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, records)  # 1.5 MB: more than one block is read
    batches = list(tfrec.read_batches(path, 64))
    assert [r for b in batches for r in b] == records
    joined = [b for b in batches if b.starts[0] == 0]  # a join starts at 0; a view after a header
    assert joined and all(len(b.buffer) == int(b.ends[-1]) + PAD for b in joined)
    for batch in joined:
        labels = tfrec.parse_example(batch, {"label": tfrec.FixedLenFeature([], tfrec.int64)})["label"]
        assert labels.tolist() == list(range(batch.start_index, batch.start_index + len(batch)))


def test_records_before_damage_are_handed_out_before_the_error(tmp_path: Path) -> None:
    records = [b"r%d" % i for i in range(10)]
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, records)
    data = bytearray(path.read_bytes())
    data[7 * (12 + 2 + 4) + 12] ^= 0xFF  # the data of record 7
    path.write_bytes(bytes(data))
    batches = tfrec.read_batches(path, 4)
    assert list(next(batches)) == records[:4]
    assert list(next(batches)) == records[4:7]  # the batch cut short by the damage
    with pytest.raises(tfrec.ChecksumError, match="data CRC mismatch") as caught:
        next(batches)
    assert (caught.value.index, caught.value.offset) == (7, 7 * 18)


def test_reader_batches_count_the_reader_on(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"a", b"bb", b"ccc"])
    reader = tfrec.RecordReader(path)
    first = next(reader.batches(2))
    assert list(first) == [b"a", b"bb"]
    assert (reader.index, reader.offset) == (2, first.end_offset)


@pytest.mark.parametrize("size", [0, -1, 1.5, True])
def test_batch_size_must_be_a_positive_int(tmp_path: Path, size: object) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"a"])
    with pytest.raises(tfrec.TfrecError, match="batch size must be a positive int"):
        next(tfrec.read_batches(path, size))  # type: ignore[arg-type]


def test_a_bad_batch_size_is_an_invalid_argument(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"a"])
    with pytest.raises(tfrec.InvalidArgumentError):
        next(tfrec.read_batches(path, 0))


def test_a_batch_after_skipped_damage_names_its_first_record(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [b"first", b"second", b"third"])
    data = bytearray(path.read_bytes())
    data[12 + 5 + 4 + 12] ^= 0xFF  # the data of record 1
    path.write_bytes(bytes(data))
    batches = list(tfrec.read_batches(path, 2, on_error="skip"))
    assert [list(b) for b in batches] == [[b"first", b"third"]]
    assert batches[0].start_index == 0


def _image_like(count: int) -> list[bytes]:
    rng = np.random.default_rng(0)
    return [
        tfrec.encode_example(
            {
                "image": rng.bytes(300),
                "label": int(rng.integers(10)),
                "emb": rng.random(8, dtype=np.float32),
                "tokens": rng.integers(0, 1000, size=int(rng.integers(1, 6))),
            }
        )
        for _ in range(count)
    ]


SPEC = {
    "image": tfrec.FixedLenFeature([], tfrec.string),
    "label": tfrec.FixedLenFeature([], tfrec.int64),
    "emb": tfrec.FixedLenFeature([8], tfrec.float32),
    "tokens": tfrec.VarLenFeature(tfrec.int64),
}


@pytest.mark.parametrize("same_lengths", [True, False], ids=["fixed layout", "lockstep"])
@pytest.mark.parametrize("source", ["read", "in memory"])
def test_parse_example_reads_a_batch_without_joining_it(
    tmp_path: Path, same_lengths: bool, source: str
) -> None:
    records = _image_like(64)
    if same_lengths:
        records = [records[0]] * 64
    if source == "read":
        path = tmp_path / "x.tfrecord"
        tfrec.write_records(path, [*records, b"after" * 200])  # room after the batch in its block
        batch = next(tfrec.read_batches(path, 64))
    else:
        batch = RecordBatch.from_records(records)
    assert record_spans(batch, 512)[0] is batch.buffer  # the decoders' buffer is the batch's own
    got, want = tfrec.parse_example(batch, SPEC), tfrec.parse_example(records, SPEC)
    assert got.keys() == want.keys()
    for key in SPEC:
        if key == "tokens":
            assert got[key] == want[key]
        else:
            np.testing.assert_array_equal(got[key], want[key])


def test_deserialize_batch_reads_a_record_batch(tmp_path: Path) -> None:
    features = tfrec.features.FeaturesDict({"label": np.int64, "text": tfrec.features.Text()})
    samples = [{"label": i, "text": f"t{i}"} for i in range(20)]
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [features.serialize_example(s) for s in samples])
    (batch,) = tfrec.read_batches(path, 32)
    out = features.deserialize_batch(batch)
    assert out["label"].tolist() == list(range(20))
    assert list(out["text"]) == [f"t{i}" for i in range(20)]


def test_large_batches_are_read_in_blocks_of_a_few_batches(tmp_path: Path) -> None:
    if not keep_freed_memory():
        pytest.skip("blocks stay at 1 MiB where the allocator is not tuned")
    rng = np.random.default_rng(2)
    records = [rng.bytes(int(n)) for n in rng.integers(2500, 3500, 12000)]  # 36 MB
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, records)
    batches = list(tfrec.read_batches(path, 1000))
    assert [r for b in batches for r in b] == records
    assert [b.start_index for b in batches] == list(range(0, 12000, 1000))
    # Blocks grow from 1 MiB to four batches while reading gets going; then most batches are
    # views (a join starts at 0, a view after a frame header) of blocks of several MiB.
    views = [b for b in batches if b.starts[0] != 0]
    assert len(views) > len(batches) // 2 and max(len(b.buffer) for b in views) > 8 * 2**20


def _big_file(tmp_path: Path, compression: str | None = None) -> tuple[Path, list[bytes]]:
    rng = np.random.default_rng(3)
    records = [rng.bytes(int(n)) for n in rng.integers(2500, 3500, 4000)]  # 12 MB: several blocks
    path = tmp_path / ("x.tfrecord.gz" if compression else "x.tfrecord")
    tfrec.write_records(path, records, compression=compression)
    return path, records


def test_clean_blocks_are_checked_without_a_crc_call_per_record(tmp_path: Path) -> None:
    path, records = _big_file(tmp_path)
    reader = tfrec.RecordReader(path)
    calls: list[int] = []
    check = reader._blocks.crc
    reader._blocks.crc = lambda data: calls.append(len(data)) or check(data)
    assert [r for b in reader.batches(1000) for r in b] == records
    # Only the first block (1 MiB, read before any read-ahead; records of 3 KB are checked one by
    # one faster without the block's CRC) and the records cut by block boundaries.
    assert len(calls) < len(records) // 8


@pytest.mark.parametrize("part", ["data", "crc"])
def test_damage_in_a_block_read_ahead_names_its_record(tmp_path: Path, part: str) -> None:
    path, records = _big_file(tmp_path)
    damaged = 3210
    offset = sum(len(r) + 16 for r in records[:damaged])
    data = bytearray(path.read_bytes())
    data[offset + 12 + (len(records[damaged]) if part == "crc" else 7)] ^= 0x10
    path.write_bytes(bytes(data))
    got: list[bytes] = []
    with pytest.raises(tfrec.ChecksumError, match="data CRC mismatch") as caught:
        for batch in tfrec.read_batches(path, 1000):
            got.extend(batch)
    assert (caught.value.index, caught.value.offset) == (damaged, offset)
    assert got == records[:damaged]
    kept = [r for b in tfrec.read_batches(path, 1000, on_error="skip") for r in b]
    assert kept == records[:damaged] + records[damaged + 1 :]


def test_damage_in_a_compressed_stream_ends_the_batches_after_whole_records(
    tmp_path: Path,
) -> None:
    path, records = _big_file(tmp_path, "gzip")
    data = bytearray(path.read_bytes())
    data[len(data) * 3 // 4] ^= 0xFF  # random bytes barely compress: about record 3000
    path.write_bytes(bytes(data))
    got: list[bytes] = []
    with pytest.raises(tfrec.RecordError) as caught:
        for batch in tfrec.read_batches(path, 1000):
            got.extend(batch)
    assert got == records[: len(got)] and 2000 < len(got) <= caught.value.index


class _Pipe(io.RawIOBase):
    """A stream that cannot seek, as a pipe or a socket."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._data.readinto(buffer)


@pytest.mark.parametrize(("seekable", "compression"), [(True, None), (False, None), (True, "gzip")])
def test_only_uncompressed_streams_that_can_seek_are_read_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seekable: bool, compression: str | None
) -> None:
    # Closing a reader waits for a read ahead: a pipe's could wait for data that never comes.
    path, records = _big_file(tmp_path, compression)
    blocks: list[int] = []
    real = ReadAhead.prefetch
    monkeypatch.setattr(ReadAhead, "prefetch", lambda self, size: blocks.append(size) or real(self, size))
    data = path.read_bytes()
    stream = io.BytesIO(data) if seekable else io.BufferedReader(_Pipe(data))
    assert [r for b in tfrec.read_batches(stream, 1000, compression) for r in b] == records
    assert bool(blocks) is (seekable and compression is None)
