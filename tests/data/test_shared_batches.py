"""Pulls through shared-memory slots: exact round trips, what goes out of band, growth, fallback, cleanup."""

from __future__ import annotations

import gc
import os
import pickle
from collections.abc import Iterator
from multiprocessing import shared_memory
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfrec
from tfrec.data.parallel import slots as shared_batches
from tfrec.data.parallel.slots import (
    LEND_LIMIT,
    OUT_OF_BAND,
    PREFIX,
    SlotReader,
    SlotWriter,
    new_pool_id,
    segment_name,
    unlink_segments,
)

SLOTS = 3
BIG = OUT_OF_BAND // 8 + 1  # float64 values in an array that goes out of band


@pytest.fixture
def pool() -> Iterator[tuple[SlotWriter, SlotReader]]:
    pool_id = new_pool_id()
    writer, reader = SlotWriter(pool_id, 0, SLOTS), SlotReader(pool_id)
    yield writer, reader
    reader.close()
    writer.close()
    assert unlink_segments(pool_id, 1, SLOTS) == 0


def round_trip(pool: tuple[SlotWriter, SlotReader], items: list[Any], slot: int = 0) -> list[Any]:
    writer, reader = pool
    header, inband = writer.pack(items, slot)
    return reader.unpack(0, header, inband)


def fortran_only(array: np.ndarray) -> bool:
    return bool(array.flags.f_contiguous and not array.flags.c_contiguous)


def same(a: Any, b: Any) -> bool:
    """Equal type, dtype, shape, memory order and values (NaN equal to NaN, bytes by value)."""
    if isinstance(a, np.ndarray):
        return (
            type(b) is np.ndarray
            and a.dtype == b.dtype
            and a.shape == b.shape
            and fortran_only(a) == fortran_only(b)
            and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        )
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return type(b) is list and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and bool(a == b)


DTYPES = [
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "longdouble", "complex64", "complex128",
    "datetime64[ns]", "timedelta64[s]", "S7", "U3", "V5", ">i4", ">f8", "<u2",
    [("a", "<i4"), ("b", ">f2", (2,))],
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("count", [0, 3, BIG])
def test_every_numeric_dtype_round_trips(pool: tuple[SlotWriter, SlotReader], dtype: Any, count: int) -> None:
    raw = np.random.default_rng(count).integers(0, 256, count * np.dtype(dtype).itemsize, np.uint8)
    array = raw.view(dtype)
    out = round_trip(pool, [{"x": array}])[0]["x"]
    assert out.dtype == array.dtype and out.tobytes() == array.tobytes() and out.flags.writeable


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.reshape(300, -1),  # C order
        lambda a: np.asfortranarray(a.reshape(300, -1)),  # F order stays F
        lambda a: a.reshape(300, -1)[:, ::3],  # strided: arrives contiguous
        lambda a: a.reshape(300, -1)[::-1],  # negative strides
        lambda a: a.reshape(300, -1).T,
        lambda a: a[:1].reshape(()),  # 0-d
        lambda a: a[:0].reshape(0, 5),  # empty
        lambda a: np.broadcast_to(a[:7], (BIG, 7)),  # zero strides, read-only
    ],
)
def test_layouts_round_trip(pool: tuple[SlotWriter, SlotReader], make: Any) -> None:
    array = make(np.arange(300 * (BIG // 300 + 1) * 3, dtype=np.float64))
    out = round_trip(pool, [array])[0]
    assert out.dtype == array.dtype and out.shape == array.shape and np.array_equal(out, array)
    assert out.flags.f_contiguous if fortran_only(array) else out.flags.c_contiguous
    assert out.flags.writeable


def test_object_arrays_round_trip(pool: tuple[SlotWriter, SlotReader]) -> None:
    big_bytes = np.array([bytes([i % 251]) * (i % 97) for i in range(4000)], dtype=object)
    items = [
        {
            "bytes": big_bytes.reshape(40, 100),
            "bytes_f": np.asfortranarray(big_bytes.reshape(40, 100)),
            "bytes_strided": big_bytes[::2],
            "small_bytes": np.array([b"a", b""], dtype=object),
            "empty": np.array([], dtype=object),
            "zero_d": np.array(b"x" * OUT_OF_BAND, dtype=object).reshape(()),
            "strings": np.array(["x" * 1000] * 100, dtype=object),
            "mixed": np.array([b"x" * OUT_OF_BAND, "y", None, 3], dtype=object),
        }
    ]
    out = round_trip(pool, items)
    assert same(out, items)
    assert all(type(v) is bytes for v in out[0]["bytes"].ravel())


def test_raw_records_and_other_values_round_trip(pool: tuple[SlotWriter, SlotReader]) -> None:
    records = [os.urandom(n % 300) for n in range(1000)]
    assert same(round_trip(pool, records), records)  # a pull of records
    assert same(round_trip(pool, [records, records[:3]]), [records, records[:3]])  # batches of records
    others = [
        1,
        "text",
        None,
        (1, b"x"),
        {"a": [np.float32(2.5)]},
        tfrec.RaggedArray(np.arange(BIG), np.array([0, 5, BIG])),
    ]
    out = round_trip(pool, others)
    assert out[:5] == others[:5] and out[5] == others[5]


def test_values_of_one_length_keep_their_nuls(pool: tuple[SlotWriter, SlotReader]) -> None:
    # Copied into the slot in one call as "V" items: NULs anywhere, at the end too, are kept.
    values = [os.urandom(40) + bytes(i % 3) + os.urandom(2 - i % 3) + b"\0" for i in range(3000)]
    items = [{"image": np.array(values, dtype=object)}, values]
    writer, _ = pool
    assert writer.pack(items, 0)[0] is not None  # both through shared memory
    out = round_trip(pool, items)
    assert list(out[0]["image"]) == values and out[1] == values


def test_large_buffers_skip_the_pipe(pool: tuple[SlotWriter, SlotReader]) -> None:
    writer, _ = pool
    images = np.array([os.urandom(3072) for _ in range(512)], dtype=object)
    items = [{"image": images, "embedding": np.ones((512, 128), np.float32), "label": np.arange(512)}]
    header, inband = writer.pack(items, 0)
    assert header is not None and len(header[2]) == 2  # image values and embedding
    assert len(inband) < 2 * 8 * 512 + 2000  # the labels and the images' lengths (4 KiB each), the rest
    header, inband = writer.pack([[os.urandom(3000) for _ in range(100)]], 1)
    assert header is not None and len(inband) < 2000
    header, inband = writer.pack([{"label": np.arange(100)}], 2)  # nothing large: all in band
    assert header is None and pickle.loads(inband)[0]["label"].tolist() == list(range(100))


def test_a_pack_leaves_no_reference_cycle_behind(pool: tuple[SlotWriter, SlotReader]) -> None:
    # A cycle would keep every pull (its arrays, bytes and views of the slot) alive until the garbage
    # collector ran, and make each collection walk them.
    writer, _ = pool
    images = np.array([os.urandom(3072) for _ in range(64)], dtype=object)
    items = [{"image": images, "x": np.full(BIG, 1.0), "text": np.array([b"t"] * 64, dtype=object)}]
    gc.collect()
    gc.disable()
    try:
        for slot in (0, None):  # through the slot and in band
            writer.pack(items, slot)
            assert gc.collect() == 0
    finally:
        gc.enable()


def test_what_is_handed_out_owns_its_memory(pool: tuple[SlotWriter, SlotReader]) -> None:
    first = [{"x": np.full(BIG, 1.0), "b": np.array([b"a" * 100] * 1000, dtype=object)}]
    out = round_trip(pool, first, slot=0)
    round_trip(pool, [{"x": np.full(BIG, 2.0), "b": np.array([b"b" * 100] * 1000, dtype=object)}], slot=0)
    assert same(out, first)  # the slot was overwritten, the arrays were not
    out[0]["x"][0] = 5.0  # and they are writable


def test_a_lending_reader_hands_out_views_and_returns_the_slot_when_they_go() -> None:
    pool_id = new_pool_id()
    writer, reader = SlotWriter(pool_id, 0, SLOTS), SlotReader(pool_id, lend=True)
    try:
        images = np.array([b"a" * 100] * 1000, dtype=object)
        items = [{"x": np.arange(BIG, dtype=np.float64).reshape(-1, 1), "b": images}]
        out = reader.unpack(0, *writer.pack(items, 2))
        assert same(out, items) and not out[0]["x"].flags.owndata and out[0]["x"].flags.writeable
        view = out[0]["x"][5:]  # a view of a view keeps the slot lent too
        del out
        gc.collect()
        assert reader.returned() == []
        del view
        gc.collect()
        assert reader.returned() == [(0, 2)]
        header, inband = writer.pack(items, 2)  # free again: the writer may fill it
        assert same(reader.unpack(0, header, inband), items)
    finally:
        reader.close()
        writer.close()
    assert unlink_segments(pool_id, 1, SLOTS) == 0


def test_a_lending_reader_copies_past_its_limit_and_outlives_the_segments() -> None:
    pool_id = new_pool_id()
    writer, reader = SlotWriter(pool_id, 0, LEND_LIMIT + 1), SlotReader(pool_id, lend=True)
    pulls = [[np.full(BIG, float(slot))] for slot in range(LEND_LIMIT + 1)]
    outs = [reader.unpack(0, *writer.pack(pull, slot)) for slot, pull in enumerate(pulls)]
    assert [not out[0].flags.owndata for out in outs] == [True] * LEND_LIMIT + [False]
    assert reader.returned() == [(0, LEND_LIMIT)]  # the copy gave its slot back at once
    reader.close()  # with arrays still lent: they keep their mapping
    writer.close()  # and the segments are unlinked under them
    assert unlink_segments(pool_id, 1, LEND_LIMIT + 1) == 0
    assert all(same(out, pull) for out, pull in zip(outs, pulls, strict=True))
    del outs
    gc.collect()


def test_a_slot_grows_when_a_pull_does_not_fit(pool: tuple[SlotWriter, SlotReader]) -> None:
    writer, _ = pool
    sizes = [BIG, 1 << 20, 3 << 20, BIG]  # float64 values
    generations = []
    for n in sizes:
        items = [np.arange(n, dtype=np.float64)]
        header, inband = writer.pack(items, 1)
        assert header is not None and header[0] == 1
        generations.append(header[1])
        assert same(pool[1].unpack(0, header, inband), items)
        segment = writer.segments[1]
        assert segment is not None and segment.size >= n * 8
    assert generations == [1, 2, 3, 3]  # replaced twice; a smaller pull reuses the large slot


def test_without_shared_memory_everything_goes_in_band(
    pool: tuple[SlotWriter, SlotReader], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shared_memory, "SharedMemory", refuse)
    items = [{"x": np.arange(BIG, dtype=np.float64), "b": np.array([b"z" * 100] * 1000, dtype=object)}]
    with pytest.warns(RuntimeWarning, match=r"no shared memory .*No space left.*--shm-size"):
        header, inband = pool[0].pack(items, 0)
    assert header is None and same(pool[1].unpack(0, header, inband), items)
    header, inband = pool[0].pack(items, 1)  # warned once
    assert header is None and same(pool[1].unpack(0, header, inband), items)


def test_a_killed_process_leaves_segments_that_the_pool_removes() -> None:
    pool_id = new_pool_id()
    writer = SlotWriter(pool_id, 1, SLOTS)
    for slot in range(2):
        writer.pack([np.zeros(BIG)], slot)
    names = [segment_name(pool_id, 1, slot) for slot in range(2)]
    assert all(name.startswith(PREFIX) and len(name) <= 30 for name in names)
    for segment in writer.segments:  # as if the process died: unmapped, never unlinked
        if segment is not None:
            segment.close()
    assert unlink_segments(pool_id, 2, SLOTS) == 2
    for name in names:
        with pytest.raises(FileNotFoundError):
            shared_memory.SharedMemory(name)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="lists POSIX shared memory where Linux does")
def test_a_segment_created_but_never_sized_is_removed_too() -> None:
    # A process killed between creating a segment and sizing it leaves an empty one, which cannot
    # be mapped to be unlinked the usual way.
    pool_id = new_pool_id()
    path = os.path.join("/dev/shm", segment_name(pool_id, 0, 1))
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
    assert unlink_segments(pool_id, 1, SLOTS) == 1
    assert not os.path.exists(path)


# Any byte order, but native datetimes: numpy pickles a non-native datetime array as a native one.
DTYPES_STRATEGY = (
    hnp.boolean_dtypes()
    | hnp.integer_dtypes(endianness="?")
    | hnp.unsigned_integer_dtypes(endianness="?")
    | hnp.floating_dtypes(endianness="?")
    | hnp.complex_number_dtypes(endianness="?")
    | hnp.datetime64_dtypes(endianness="=")
    | hnp.timedelta64_dtypes(endianness="=")
    | hnp.byte_string_dtypes(endianness="?")
    | hnp.unicode_string_dtypes(endianness="?")
)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        DTYPES_STRATEGY,
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=40),
    ),
    st.sampled_from([None, "F", "strided"]),
)
def test_any_array_round_trips(array: np.ndarray, layout: str | None) -> None:
    if layout == "F":
        array = np.asfortranarray(array)
    elif layout == "strided" and array.ndim:
        array = array[::2]
    big = np.repeat(array.reshape(-1), max(1, OUT_OF_BAND // max(array.nbytes, 1)))  # out of band too
    pool_id = new_pool_id()
    writer, reader = SlotWriter(pool_id, 0, 1), SlotReader(pool_id)
    try:
        for value in (array, big):
            out = reader.unpack(0, *writer.pack([value], 0))[0]
            assert out.dtype == value.dtype and out.shape == value.shape
            assert out.tobytes() == value.tobytes()
    finally:
        reader.close()
        writer.close()


def test_the_module_names_every_segment_it_can_make() -> None:
    assert shared_batches.segment_name("0a1b2c3d", 12, 2) == "tfrec_shm_0a1b2c3d_12_2"


def test_packed_strings_arrive_as_the_bytes_they_stand_for(pool: tuple[SlotWriter, SlotReader]) -> None:
    # A reading process's batch may hold strings of one length packed (parse_example_packed):
    # through a slot (large) or in band (small, or no slot free) they arrive as object arrays of bytes.
    from tfrec.example import parse_example_packed

    rng = np.random.default_rng(4)
    spec = {"image": tfrec.FixedLenFeature([], tfrec.string), "tag": tfrec.FixedLenFeature([], tfrec.string)}
    samples = [{"image": rng.bytes(OUT_OF_BAND // 64) + b"\x00", "tag": rng.bytes(3)} for _ in range(128)]
    records = [tfrec.encode_example(sample) for sample in samples]
    expected = tfrec.parse_example(records, spec)
    for slot in (0, None):
        header, inband = pool[0].pack([parse_example_packed(records, spec)], slot)
        assert (header is not None) == (slot is not None)  # the images went through the slot
        (got,) = pool[1].unpack(0, header, inband)
        assert same(got, expected)
