"""CRCs of many short records a byte column at a time: the CRC32C of each record, as the backend's."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrec.record.crc import crc32c
from tfrec.record.crc_columns import MAX_ROW_CRC, RowCrcs


def padded(records: list[bytes]) -> np.ndarray:
    """The records as rows, each followed by zero bytes up to the longest."""
    rows = np.zeros((len(records), max(map(len, records), default=0)), np.uint8)
    for row, record in zip(rows, records, strict=True):
        row[: len(record)] = np.frombuffer(record, np.uint8)
    return rows


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=MAX_ROW_CRC), min_size=1, max_size=12))
def test_rows_of_any_lengths_give_each_records_crc(records: list[bytes]) -> None:
    lengths = np.array([len(r) for r in records], np.int64)
    crcs = RowCrcs(lengths)
    crcs.add_block(padded(records), lengths - 1)  # zero bytes after a record add nothing
    assert crcs.crcs().tolist() == [crc32c(r) for r in records]


@settings(max_examples=60, deadline=None)
@given(
    head=st.binary(max_size=8),
    middle=st.lists(st.binary(max_size=6), min_size=1, max_size=8),
    tail=st.binary(max_size=8),
    width=st.integers(0, 5),
)
def test_constants_and_blocks_around_pieces_of_differing_lengths(
    head: bytes, middle: list[bytes], tail: bytes, width: int
) -> None:
    """Constants and blocks before varying pieces have a count of bytes after them per record (an
    array), those after the pieces one count for every record (an int)."""
    count = len(middle)
    block = np.arange(count * width, dtype=np.uint8).reshape(count, width)
    records = [head + m + block[i].tobytes() + tail for i, m in enumerate(middle)]
    sizes = np.array([len(m) for m in middle], np.int64)
    lengths = np.array([len(r) for r in records], np.int64)
    crcs = RowCrcs(lengths)
    crcs.add_constant(head, sizes + width + len(tail))
    crcs.add_block(padded(middle), sizes - 1 + width + len(tail))
    crcs.add_block(block, width - 1 + len(tail))
    crcs.add_constant(tail, 0)
    assert crcs.crcs().tolist() == [crc32c(r) for r in records]


def test_no_bytes_is_the_crc_of_nothing() -> None:
    assert RowCrcs(np.zeros(3, np.int64)).crcs().tolist() == [crc32c(b"")] * 3
