"""Cutting the records out of a block of frames: the data of each frame, as bytes, whatever their lengths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrec.record import frame
from tfrec.record.framing_batch import frame_records


def cut(records: list[bytes], lead: bytes = b"") -> list[bytes]:
    """slice_records over ``records`` framed after ``lead`` bytes, with a byte of garbage after them."""
    framed = frame_records(records)
    buf = lead + framed.data + b"\xff"
    ends = len(lead) + np.cumsum(np.asarray(framed.lengths, np.int64) + frame.FRAMING)
    out = frame.slice_records(buf, len(lead), ends)
    assert all(type(record) is bytes for record in out)
    return list(out)


# Records of one length (one void view), of a few lengths (a length at a time) and of many (one
# struct call): the three ways slice_records takes, each side of its limit of lengths.
@pytest.mark.parametrize(
    "lengths",
    [
        [5] * 9,
        [0] * 3,
        [38] * 30 + [37] + [38] * 5 + [36],
        [0, 1, 0, 2],
        list(range(frame.FEW_LENGTHS)) * 2,
        list(range(frame.FEW_LENGTHS + 1)) * 2,
        [3, 70_000, 3],  # a length past the counted ones
    ],
)
def test_records_are_the_frames_data(lengths: list[int]) -> None:
    rng = np.random.default_rng(len(lengths))
    # no NUL inside a record, one at the end of each: a NUL dropped anywhere would show
    records = [rng.integers(1, 256, n).astype(np.uint8).tobytes()[1:] + b"\x00"[:n] for n in lengths]
    assert [len(record) for record in records] == lengths
    assert cut(records, b"\x07" * 3) == records  # trailing NULs kept


def test_no_frames_no_records() -> None:
    assert list(frame.slice_records(b"", 0, np.empty(0, np.int64))) == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=12), max_size=40), st.binary(max_size=3))
def test_any_records_come_out_as_they_went_in(records: list[bytes], lead: bytes) -> None:
    assert cut(records, lead) == records
