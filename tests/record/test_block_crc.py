"""The data CRCs of a block of frames checked with one CRC pass: the same verdict as record by record."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrec.record import block_crc, frame
from tfrec.record.crc import crc32c, masked_crc


def _frames(records: list[bytes]) -> bytes:
    return b"".join(frame.header(len(r)) + r + frame.pack_crc(masked_crc(r)) for r in records)


def _register_after_zeros(register: int, zeros: int) -> int:
    # The backend's CRC of `zeros` zero bytes continued from a register: start and end inverted.
    from tfrec.record.crc import BYTE_TABLE

    for _ in range(zeros):
        register = int(BYTE_TABLE[register & 0xFF]) ^ (register >> 8)
    return register


@given(register=st.integers(0, 2**32 - 1), zeros=st.integers(0, 3000))
@settings(max_examples=60, deadline=None)
def test_a_register_moved_over_zero_bytes_is_what_feeding_them_one_by_one_leaves(
    register: int, zeros: int
) -> None:
    moved = block_crc._moved(np.array([register], np.uint32), np.array([zeros]))
    assert int(moved[0]) == _register_after_zeros(register, zeros)


def test_long_runs_of_zero_bytes_move_a_register_as_the_backend_does() -> None:
    # CRC32C(zeros) from the usual all-ones start: the all-ones register moved, then inverted.
    for zeros in (1 << 16, (1 << 24) + 5, (1 << 25) + 77):
        moved = block_crc._moved(np.array([0xFFFFFFFF], np.uint32), np.array([zeros]))
        assert int(moved[0]) ^ 0xFFFFFFFF == crc32c(bytes(zeros))


@given(
    records=st.lists(st.binary(max_size=300), min_size=1, max_size=20),
    before=st.binary(max_size=30),
    after=st.binary(max_size=30),
    known=st.booleans(),
    damage=st.none() | st.tuples(st.integers(0, 10**6), st.integers(0, 7)),
)
@settings(max_examples=200, deadline=None)
def test_the_block_check_agrees_with_checking_each_record(
    records: list[bytes],
    before: bytes,
    after: bytes,
    known: bool,
    damage: tuple[int, int] | None,
) -> None:
    buf = bytearray(before + _frames(records) + after)
    ends = np.cumsum([len(r) + 16 for r in records]) + len(before)
    if damage is not None:  # one bit of a record's data or of its stored CRC
        starts = [len(before), *ends[:-1]]
        places = [p for start, end in zip(starts, ends, strict=True) for p in range(start + 12, end)]
        place, bit = places[damage[0] % len(places)], damage[1]
        buf[place] ^= 1 << bit
    data = bytes(buf)
    verdict = block_crc.data_crcs_match(data, len(before), ends, crc32c(data) if known else None)
    assert verdict is (damage is None)


def test_damage_outside_the_frames_does_not_count() -> None:
    records = [b"x" * 10, b"", b"yz"]
    data = bytearray(b"\x01\x02" + _frames(records) + b"\x03")
    ends = np.cumsum([len(r) + 16 for r in records]) + 2
    data[0] ^= 0xFF
    data[-1] ^= 0xFF
    assert block_crc.data_crcs_match(bytes(data), 2, ends, crc32c(bytes(data)))


def test_records_of_64_kib_or_more_are_left_to_their_own_check() -> None:
    records = [b"a", bytes(1 << 16)]
    data = _frames(records)
    ends = np.cumsum([len(r) + 16 for r in records])
    assert block_crc.data_crcs_match(data, 0, ends, crc32c(data)) is None


def test_long_frames_are_checked_together_only_when_the_buffer_crc_is_known() -> None:
    # Without it, a CRC call per record of 2 KiB or more costs less than the pass and the numpy steps.
    records = [bytes([i]) * 3000 for i in range(10)]
    data = _frames(records)
    ends = np.cumsum([len(r) + 16 for r in records])
    assert block_crc.data_crcs_match(data, 0, ends) is None
    assert block_crc.data_crcs_match(data, 0, ends, crc32c(data)) is True


@given(
    lengths=st.lists(
        st.one_of(st.integers(0, 300), st.integers(1 << 16, (1 << 16) + 3000), st.sampled_from([1 << 17])),
        min_size=1,
        max_size=8,
    ),
    before=st.integers(0, 30),
    after=st.integers(0, 30),
    cuts=st.lists(st.floats(0, 1), max_size=6),
    damage=st.none() | st.tuples(st.integers(0, 10**7), st.integers(0, 7)),
)
@settings(max_examples=100, deadline=None)
def test_frames_of_any_length_check_against_the_sums_of_any_pieces_as_record_by_record(
    lengths: list[int], before: int, after: int, cuts: list[float], damage: tuple[int, int] | None
) -> None:
    # The sums of pieces of a span of large records, as its threads take them while they read it: the
    # pieces need not follow the frames, and may leave gaps and run past the frames at either end.
    rng = np.random.default_rng(len(lengths))
    records = [rng.bytes(n) for n in lengths]
    buf = bytearray(rng.bytes(before) + _frames(records) + rng.bytes(after))
    ends = np.cumsum([n + 16 for n in lengths]) + before
    if damage is not None:  # one bit of a record's data or of its stored CRC
        starts = [before, *ends[:-1]]
        places = [p for start, end in zip(starts, ends, strict=True) for p in range(start + 12, end)]
        place, bit = places[damage[0] % len(places)], damage[1]
        buf[place] ^= 1 << bit
    data = bytes(buf)
    u8 = np.frombuffer(data, np.uint8)
    bounds = sorted({0, len(data), *(int(cut * len(data)) for cut in cuts)})
    pieces = [(crc32c(u8[a:b]), a, b) for a, b in itertools.pairwise(bounds)][::2]  # every other one
    verdict = block_crc.data_crcs_match(data, before, ends, pieces=pieces)
    assert verdict is (damage is None)
