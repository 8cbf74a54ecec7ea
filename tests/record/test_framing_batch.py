"""Framing a batch at once: the same bytes as RecordWriter frames record by record."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.record.frame import FOOTER
from tfrec.record.framing_batch import (
    FRAMED_BYTES,
    Frames,
    frame_heads,
    frame_parts,
    frame_records,
    seal_frames,
)


def written_one_by_one(records: list[bytes]) -> bytes:
    out = io.BytesIO()
    with tfrec.RecordWriter(out) as writer:
        for record in records:
            writer.write(record)
    return out.getvalue()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_frames_are_the_writers_frames(records: list[bytes]) -> None:
    frames = frame_records(records)
    assert frames.data == written_one_by_one(records)
    assert list(frames) == records
    assert [frames[i] for i in range(-len(records), len(records))] == records * 2
    assert frames.lengths.tolist() == [len(r) for r in records]


@pytest.mark.parametrize(
    "index", [slice(None), slice(1, 3), slice(2, 2), slice(None, None, 2), slice(1, None, 3)]
)
def test_a_slice_of_frames_is_the_frames_of_the_slice(index: slice) -> None:
    records = [b"a", b"", b"bcd", bytes(70_000), b"e"]
    part = frame_records(records)[index]
    assert isinstance(part, Frames)
    assert part.data == frame_records(records[index]).data
    assert list(part) == records[index]


def test_an_index_past_the_end_raises() -> None:
    with pytest.raises(IndexError):
        frame_records([b"a"])[1]


def test_frame_heads_are_headers() -> None:
    lengths = np.array([0, 1, 255, 65_536, 2**33], np.int64)
    heads = frame_heads(lengths)
    assert [row.tobytes() for row in heads] == [tfrec.record.frame.header(int(n)) for n in lengths]


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_write_frames_writes_what_write_many_writes(tmp_path, compression: str | None) -> None:
    records = [bytes([i]) * i for i in range(50)]
    with tfrec.RecordWriter(tmp_path / "a", compression) as writer:
        assert writer.write_frames(frame_records(records[:20])) == 20
        writer.write_frames(frame_records(records[20:]))
    with tfrec.RecordWriter(tmp_path / "b", compression) as writer:
        writer.write_many(records)
    assert list(tfrec.read_records(tmp_path / "a", compression)) == records
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes() or compression is not None


def laid_out(records: list[bytes]) -> bytearray:
    """Frames of ``records`` with their headers and zero bytes for footers, as the batch encoder lays them."""
    heads = frame_heads(np.array([len(r) for r in records], np.int64))
    return bytearray(b"".join(h.tobytes() + r + bytes(FOOTER) for h, r in zip(heads, records, strict=True)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_sealed_frames_are_the_frames_of_the_records(records: list[bytes]) -> None:
    lengths = np.array([len(r) for r in records], np.int64)
    frames = seal_frames(laid_out(records), lengths)
    assert frames.data == frame_records(records).data
    assert list(frames) == records and all(type(r) is bytes for r in frames)
    assert frames[::2].data == frame_records(records[::2]).data
    assert frames[1:].data == frame_records(records[1:]).data
    assert frames[:] is frames or not records  # all of them: the same buffer, not a copy


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_write_frames_of_a_sealed_buffer_to_gzip_members(tmp_path, compression: str | None) -> None:
    records = [bytes([i]) * (i * 37) for i in range(60)]
    lengths = np.array([len(r) for r in records], np.int64)
    buffer = laid_out(records)
    members = {"gzip_member_bytes": 500} if compression else {}
    with tfrec.RecordWriter(tmp_path / "a", compression, **members) as writer:
        writer.write_frames(seal_frames(buffer, lengths))
    assert list(tfrec.read_records(tmp_path / "a", compression)) == records
    if compression:
        assert writer.gzip_members is not None and len(writer.gzip_members) > 5


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(st.binary(max_size=40), st.builds(bytes, st.integers(900, 5000))), max_size=300),
    st.sampled_from([None, "gzip", "zlib"]),
)
def test_write_many_writes_what_write_writes(records: list[bytes], compression: str | None) -> None:
    """Batches of small records (framed together) and of large ones (framed one by one) alike."""
    many = io.BytesIO()
    with tfrec.RecordWriter(many, compression=compression) as writer:
        assert writer.write_many(records) == len(records)
    assert list(tfrec.read_records(io.BytesIO(many.getvalue()), compression=compression)) == records
    if compression is None:
        assert many.getvalue() == written_one_by_one(records)


def _parts() -> st.SearchStrategy[tuple[list[object], list[bytes]]]:
    """Parts of records (constants, blocks, pieces as bytes or as one array) and the records they make."""

    @st.composite
    def build(draw: st.DrawFn) -> tuple[list[object], list[bytes]]:
        count = draw(st.integers(1, 8))
        parts: list[object] = []
        records = [b""] * count
        for kind in draw(st.lists(st.sampled_from(["constant", "block", "pieces", "flat"]), max_size=6)):
            if kind == "constant":
                constant = draw(st.binary(max_size=5))
                parts.append(constant)
                records = [r + constant for r in records]
            elif kind == "block":
                rows = draw(st.lists(st.binary(min_size=3, max_size=3), min_size=count, max_size=count))
                parts.append(np.frombuffer(b"".join(rows), np.uint8).reshape(count, 3))
                records = [r + row for r, row in zip(records, rows, strict=True)]
            else:  # pieces of lengths that differ, a little or much (written byte by byte)
                pieces = draw(st.lists(st.binary(max_size=20), min_size=count, max_size=count))
                lengths = np.array([len(p) for p in pieces], np.int64)
                joined = np.frombuffer(b"".join(pieces), np.uint8)
                parts.append((joined if kind == "flat" else pieces, lengths))
                records = [r + p for r, p in zip(records, pieces, strict=True)]
        return parts, records

    return build()


@settings(max_examples=80, deadline=None)
@given(_parts())
def test_frames_of_parts_are_the_frames_of_their_records(made: tuple[list[object], list[bytes]]) -> None:
    parts, records = made
    frames = frame_parts(parts, np.array([len(r) for r in records], np.int64))  # type: ignore[arg-type]
    assert frames is not None
    assert bytes(frames.data) == written_one_by_one(records)
    assert list(frames) == records


def test_longer_records_are_left_to_frame_records() -> None:
    long = np.zeros((2, FRAMED_BYTES + 1), np.uint8)
    assert frame_parts([long], np.array([FRAMED_BYTES + 1] * 2)) is None
    assert frame_parts([long[:, :-1]], np.array([FRAMED_BYTES] * 2)) is not None
