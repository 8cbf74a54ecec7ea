"""An index must follow its file's chain of frames (Hardening 2, item 4).

An index can be well-formed, cover its file from byte 0 to the end with no gap, and still point at a
frame embedded inside another record's data: every CRC of the embedded frame passes, so random access
and record ranges returned its bytes as a record. Now such an index is refused, naming the index file
and line; a header that is merely damaged is still reported by the read of its record alone.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import tfrec
from tfrec.data import ShardOptions, TFRecordDataset
from tfrec.errors import InvalidArgumentError
from tfrec.record import masked_crc


def _frame(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


EMBEDDED = _frame(b"EMBEDDED")  # a whole frame inside the first record's data
PAD = b"x" * 10


def _hostile(tmp_path: Path) -> tuple[str, list[bytes]]:
    """A file of three records, the first holding a frame, and an index that points at that frame."""
    records = [PAD + EMBEDDED + b"yy", b"second", b"third"]
    path = tmp_path / "a.tfrecord"
    data = b"".join(map(_frame, records))
    path.write_bytes(data)
    inner = 12 + len(PAD)  # where the embedded frame starts
    lines = [(0, inner), (inner, len(EMBEDDED)), (inner + len(EMBEDDED), len(data) - inner - len(EMBEDDED))]
    Path(str(path) + ".idx").write_text("".join(f"{offset} {length}\n" for offset, length in lines))
    return str(path), records


def test_random_access_refuses_an_index_pointing_inside_a_record(tmp_path: Path) -> None:
    path, _ = _hostile(tmp_path)
    source = tfrec.RecordFileSource(path)  # covers the file, no gaps: only the headers tell
    for read in (lambda: source[1], lambda: source.__getitems__([1, 2])):
        with pytest.raises(
            tfrec.RecordError, match=r"a\.tfrecord\.idx, line 1: the index gives a frame of 22"
        ):
            read()


def test_record_ranges_refuse_an_offset_inside_a_record(tmp_path: Path) -> None:
    path, records = _hostile(tmp_path)
    for reader in range(3):  # each of three readers starts at one line of the index
        dataset = TFRecordDataset(path, shard_options=ShardOptions(shard=(reader, 3), shard_by="records"))
        with pytest.raises(InvalidArgumentError, match=r"a\.tfrecord\.idx, line 2: offset 22 lies inside"):
            list(dataset)
    assert list(TFRecordDataset(path)) == records  # read from its start, the file is fine


def test_the_index_built_for_the_file_is_accepted(tmp_path: Path) -> None:
    path, records = _hostile(tmp_path)
    tfrec.build_index(path)
    assert tfrec.RecordFileSource(path).__getitems__([2, 0, 1]) == [records[2], records[0], records[1]]
    got = [
        record
        for reader in range(3)
        for record in TFRecordDataset(path, shard_options=ShardOptions(shard=(reader, 3), shard_by="records"))
    ]
    assert got == records


def test_a_damaged_header_fails_its_record_only(tmp_path: Path) -> None:
    path = str(tmp_path / "d.tfrecord")
    records = [bytes([i]) * 30 for i in range(5)]
    tfrec.write_records(path, records)
    tfrec.build_index(path)
    data = bytearray(Path(path).read_bytes())
    data[2 * 46 + 1] ^= 0x01  # the length field of record 2 (frames of 46 bytes)
    Path(path).write_bytes(bytes(data))
    source = tfrec.RecordFileSource(path)
    assert [source[i] for i in (0, 1, 3, 4)] == [records[i] for i in (0, 1, 3, 4)]
    with pytest.raises(tfrec.ChecksumError, match="record 2, offset 92: length CRC"):
        source[2]
