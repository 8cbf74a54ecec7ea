"""The batched columnar encoder against the per-record encoder: the same bytes for every record."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfrec
from tfrec.example import wire
from tfrec.example.batch_encode import (
    RAW,
    Column,
    RecordParts,
    encode_columns,
    encode_examples,
    varint_array,
)
from tfrec.example.codec import append_entry, encode_entries, encode_varints, join_entries

SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64]
DTYPES += [np.float16, np.float32, np.float64]
# Magnitudes at every varint length's edge, so that records of a batch share some layouts only.
EDGES = [0, 1, 127, 128, 16_383, 16_384, 2**21, 2**35, 2**63 - 1, -1, -(2**63)]


@st.composite
def numeric_columns(draw: st.DrawFn, rows: int) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    inner = draw(st.lists(st.integers(0, 3), max_size=2))
    # float64: within float32's range (beyond it, encode_example refuses); narrower: any value
    elements = st.floats(width=32) if dtype == np.float64 else None
    return draw(hnp.arrays(dtype, (rows, *inner), elements=elements))


@st.composite
def any_column(draw: st.DrawFn, rows: int) -> Any:
    form = draw(st.sampled_from(["numeric", "edges", "bytes", "text", "lists"]))
    if form == "numeric":
        return draw(numeric_columns(rows))
    if form == "edges":
        width = draw(st.integers(0, 3))
        return np.array(
            draw(st.lists(st.sampled_from(EDGES), min_size=rows * width, max_size=rows * width)), np.int64
        ).reshape(rows, width)
    if form == "bytes":
        return draw(st.lists(st.binary(max_size=200), min_size=rows, max_size=rows))
    if form == "text":
        return draw(st.lists(st.text(max_size=5), min_size=rows, max_size=rows))
    items = st.one_of(
        st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3), st.lists(st.floats(width=32), max_size=3)
    )
    return draw(st.lists(items, min_size=rows, max_size=rows))


@SETTINGS
@given(
    data=st.data(),
    rows=st.integers(0, 40),
    keys=st.lists(st.text(min_size=1, max_size=4), max_size=4, unique=True),
)
def test_columns_encode_as_each_row_alone(data: st.DataObject, rows: int, keys: list[str]) -> None:
    columns = {key: data.draw(any_column(rows), label=key) for key in keys}
    records = encode_examples(columns)
    assert len(records) == (rows if keys else 0)
    for row, record in enumerate(records):
        assert record == tfrec.encode_example({key: values[row] for key, values in columns.items()})


@SETTINGS
@given(
    data=st.data(),
    rows=st.integers(1, 60),
    kinds=st.lists(st.sampled_from([wire.INT64, wire.FLOAT, wire.BYTES, RAW]), min_size=1, max_size=5),
)
def test_typed_columns_encode_as_encode_typed_example(
    data: st.DataObject, rows: int, kinds: list[int]
) -> None:
    """Every layout path: the whole batch in one template, layouts of several records, records alone."""
    columns, per_row = [], [[] for _ in range(rows)]
    for number, kind in enumerate(kinds):
        key = f"k{number}".encode()
        if kind == wire.INT64:
            width = data.draw(st.integers(0, 3))
            values = np.array(
                data.draw(
                    st.lists(
                        st.sampled_from(EDGES[:4] if number % 2 else EDGES),
                        min_size=rows * width,
                        max_size=rows * width,
                    )
                ),
                np.int64,
            ).reshape(rows, width)
            columns.append(Column(key, kind, values))
            for row in range(rows):
                per_row[row].append((key, kind, values[row]))
        elif kind == wire.FLOAT:
            values = data.draw(hnp.arrays(np.float32, (rows, data.draw(st.integers(0, 3)))))
            columns.append(Column(key, kind, values))
            for row in range(rows):
                per_row[row].append((key, kind, values[row]))
        else:
            sizes = st.sampled_from([0, 1, 200]) if data.draw(st.booleans()) else st.just(3)
            blobs = [bytes(data.draw(sizes)) for _ in range(rows)]
            if kind == RAW:
                blobs = [encode_entries({key.decode(): blob}) for blob in blobs]
            columns.append(Column(key, kind, blobs))
            for row in range(rows):
                per_row[row].append(("raw", blobs[row]) if kind == RAW else (key, kind, [blobs[row]]))
    expected = []
    for entries in per_row:  # a RAW column's entries are spliced in as they are
        parts: list[bytes] = []
        for entry in entries:
            if entry[0] == "raw":
                parts.append(entry[1])
            else:
                append_entry(parts, *entry)
        expected.append(join_entries(parts))
    assert encode_columns(columns, rows) == expected
    # Joined into one buffer, each record between a row made from its length and zero bytes.
    parts = RecordParts(columns, rows)
    assert parts.lengths.tolist() == [len(record) for record in expected]
    assert parts.records() == expected
    framed = [marks(np.array([len(r)])).tobytes() + r + bytes(2) for r in expected]
    assert bytes(parts.joined(marks, 2)) == b"".join(framed)


def marks(lengths: np.ndarray) -> np.ndarray:
    """Three bytes before each record: its length's low byte, then 7 and 9."""
    out = np.empty((len(lengths), 3), np.uint8)
    out[:, 0], out[:, 1], out[:, 2] = lengths % 256, 7, 9
    return out


def test_varint_array_edges() -> None:
    values = np.array([*EDGES, 300], np.int64)
    data, lengths = varint_array(values)
    assert lengths.tolist() == [1, 1, 1, 2, 2, 3, 4, 6, 9, 10, 10, 2]
    assert data.tobytes() == b"".join(
        tfrec.encode_example({"x": int(v)})[-int(n) :] for v, n in zip(values, lengths, strict=True)
    )


@pytest.mark.parametrize(
    ("columns", "error"),
    [
        ({"a": np.arange(3), "b": np.arange(2)}, tfrec.InvalidArgumentError),
        ({"a": np.array([1e300, 1.0])}, tfrec.EncodeError),
        ({"a": np.array([2**64 - 1], np.uint64)}, tfrec.EncodeError),
        ({"a": ["ok", "\ud800"]}, tfrec.EncodeError),
        ({"a": [object()]}, tfrec.EncodeError),
    ],
)
def test_encode_examples_errors(columns: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        encode_examples(columns)


@SETTINGS
@given(
    values=hnp.arrays(
        np.int64,
        st.integers(0, 50),
        elements=st.one_of(st.integers(0, 2**56), st.integers(-(2**63), 2**63 - 1), st.integers(0, 300)),
    )
)
def test_varint_array_is_the_codecs_varints(values: np.ndarray) -> None:
    data, lengths = varint_array(values)
    assert data.tobytes() == encode_varints(values)
    assert lengths.sum() == len(data)


SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(width=32),
    st.booleans(),
    st.text(max_size=4),
    st.binary(max_size=4),
)


@SETTINGS
@given(
    data=st.data(),
    rows=st.integers(0, 30),
    keys=st.lists(st.text(min_size=1, max_size=4), max_size=4, unique=True),
    python=st.booleans(),
)
def test_samples_encode_as_each_alone(data: st.DataObject, rows: int, keys: list[str], python: bool) -> None:
    if python:  # Python values: one type per key, or mixed
        kinds = {
            key: data.draw(st.sampled_from([SCALARS, st.integers(0, 2**20), st.floats(width=32)]))
            for key in keys
        }
        samples = [{key: data.draw(kinds[key], label=key) for key in keys} for _ in range(rows)]
    else:  # rows of numpy columns: numpy scalars and arrays, bytes, str, lists
        columns = {key: data.draw(any_column(rows), label=key) for key in keys}
        samples = [{key: values[row] for key, values in columns.items()} for row in range(rows)]
    if samples and data.draw(st.booleans(), label="reorder one"):
        samples[-1] = dict(reversed(samples[-1].items()))
    expected = []
    for sample in samples:
        try:
            expected.append(tfrec.encode_example(sample))
        except tfrec.EncodeError:
            with pytest.raises(tfrec.EncodeError):
                encode_examples(samples)
            return
    assert encode_examples(samples) == expected


def _bytes_column(key: bytes, sizes: list[int]) -> Column:
    return Column(
        key, wire.BYTES, [bytes(range(size % 256)) * (size // 256) + bytes(size % 256) for size in sizes]
    )


@pytest.mark.parametrize(
    "column",
    [
        _bytes_column(b"b", [3, 3, 3]),  # short, one length: rows of a block
        _bytes_column(b"b", [300, 300]),  # one length, long: pieces
        _bytes_column(b"b", [1, 3, 2, 3]),  # heads of one length, sizes near each other: a table
        _bytes_column(b"b", [0, 100]),  # heads of one length, sizes far apart: found by sorting
        _bytes_column(b"b", [1, 200, 20_000, 5]),  # heads of several lengths: pieces
        Column(b"i", wire.INT64, np.array([[5], [7], [127]])),  # one byte each: a block
        Column(b"i", wire.INT64, np.array([[128], [16_383], [300]])),  # two bytes each: a block
        Column(b"i", wire.INT64, np.array([[1], [16_383], [0], [128]])),  # one or two: looked up
        Column(b"i", wire.INT64, np.array([[1], [16_384], [-1], [2**63 - 1]])),  # computed
        Column(b"i", wire.INT64, np.array([[1, 128], [16_384, 0], [-(2**63), 2]])),
        Column(b"f", wire.FLOAT, np.array([[np.nan, -0.0], [np.inf, 1e-45]], np.float32)),
    ],
)
@pytest.mark.parametrize("rows_before", [0, 1])
def test_every_part_layout_encodes_as_each_record_alone(column: Column, rows_before: int) -> None:
    """Each way a column's parts are laid out (block, table, pieces), beside a column whose records
    differ in length (their own heads then differ too), joined alone and into frames."""
    count = len(column.values)
    other = _bytes_column(b"o", [rows_before * 150 * i for i in range(count)])
    columns = [other, column]
    expected = []
    for row in range(count):
        parts: list[bytes] = []
        append_entry(parts, b"o", wire.BYTES, [other.values[row]])
        values = [column.values[row]] if column.kind == wire.BYTES else column.values[row]
        append_entry(parts, column.key, column.kind, values)
        expected.append(join_entries(parts))
    assert encode_columns(columns, count) == expected
    parts = RecordParts(columns, count)
    assert parts.lengths.tolist() == [len(record) for record in expected]
    framed = [marks(np.array([len(r)])).tobytes() + r + bytes(2) for r in expected]
    assert bytes(parts.joined(marks, 2)) == b"".join(framed)
