"""Frames gathered from mapped files: equal to sequential reads for any keys; damage and changed files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec
import tfrec.data.random_access.shard_files as shard_files_module
from tfrec.data import RecordFileSource, build_index
from tfrec.record import frame
from tfrec.record.mapped import frames_ok, gather_frames, map_file, mapped_size

# Lengths around a 4 KiB page and the 2 KiB average where large frames are copied one slice each.
LENGTHS = st.one_of(st.integers(0, 40), st.sampled_from([4084, 4096, 4100, 2032, 5000, 70_000]))


def write(path: Path, records: list[bytes]) -> str:
    tfrec.write_records(path, records)
    build_index(path)
    return str(path)


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[bytes]]:
    """Three files of records of many lengths: empty ones, and frames that cross 4 KiB pages."""
    directory = tmp_path_factory.mktemp("mapped")
    rng = np.random.default_rng(3)
    sizes = [0, 1, 7, 100, 4084, 4096, 4100, 9000, 70_000, 0, 33]
    files = [[rng.bytes(int(rng.choice(sizes))) for _ in range(n)] for n in (40, 1, 25)]
    paths = [write(directory / f"m-{i}.tfrecord", records) for i, records in enumerate(files)]
    return paths, [record for records in files for record in records]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_getitems_equals_sequential_reads(shards: tuple[list[str], list[bytes]], data: st.DataObject) -> None:
    paths, expected = shards
    keys = data.draw(st.lists(st.integers(-len(expected), len(expected) - 1), max_size=80))  # duplicates too
    source = RecordFileSource(paths)
    assert source.__getitems__(keys) == [expected[k] for k in keys]
    assert all(view is None or mapped_size(view) == len(view) for view in source._files._maps)


@settings(max_examples=60, deadline=None)
@given(records=st.lists(LENGTHS, min_size=1, max_size=30), picks=st.data())
def test_gather_frames_of_one_and_many_files(
    tmp_path_factory: pytest.TempPathFactory, records: list[int], picks: st.DataObject
) -> None:
    directory = tmp_path_factory.mktemp("gather")
    payloads = [bytes([n % 251]) * n for n in records]
    path = write(directory / "g.tfrecord", payloads)
    offsets, lengths = tfrec.data.read_index(path + ".idx")
    fd = os.open(path, os.O_RDONLY)
    try:
        view = map_file(fd, os.fstat(fd).st_size)
        assert view is not None
        chosen = np.array(picks.draw(st.lists(st.integers(0, len(payloads) - 1), min_size=1, max_size=40)))
        files = np.array(picks.draw(st.lists(st.integers(0, 2), min_size=len(chosen), max_size=len(chosen))))
        gathered = gather_frames([view, view, view], files, offsets[chosen], lengths[chosen])
        assert gathered is not None
        buf, ends, order = gathered
        assert frames_ok(buf, ends)
        asked = chosen if order is None else chosen[order]
        assert list(frame.slice_records(buf, 0, ends)) == [payloads[k] for k in asked]
        assert buf[ends[-1] :] == bytes(len(buf) - int(ends[-1]))  # zero padding after the last frame
        if order is not None:  # sorted by file, then offset
            key = files[order] * (1 << 40) + offsets[chosen][order]
            assert (np.diff(key) >= 0).all()
    finally:
        os.close(fd)


def test_damage_is_found_and_named_as_before(tmp_path: Path) -> None:
    path = write(tmp_path / "d.tfrecord", [b"a" * 10, b"b" * 20, b"c" * 30])
    data = bytearray(Path(path).read_bytes())
    data[26 + 12 + 3] ^= 1  # record 1's data
    Path(path).write_bytes(bytes(data))
    offsets, lengths = tfrec.data.read_index(path + ".idx")
    fd = os.open(path, os.O_RDONLY)
    try:
        view = map_file(fd, len(data))
        assert view is not None
        buf, ends, _ = gather_frames([view], np.zeros(3, np.int64), offsets, lengths) or (b"", None, None)
        assert not frames_ok(buf, ends)
        buf, ends, _ = gather_frames([view], np.zeros(2, np.int64), offsets[[0, 2]], lengths[[0, 2]]) or (
            b"",
            None,
            None,
        )
        assert frames_ok(buf, ends)
    finally:
        os.close(fd)
    source = RecordFileSource([path])
    with pytest.raises(tfrec.ChecksumError) as caught:
        source.__getitems__([2, 0, 1])
    assert (caught.value.path, caught.value.index, caught.value.offset, caught.value.part) == (
        path,
        1,
        26,
        "data",
    )
    assert source.__getitems__([2, 0]) == [b"c" * 30, b"a" * 10]


def test_a_file_that_shrank_under_its_map_raises(tmp_path: Path) -> None:
    path = write(tmp_path / "s.tfrecord", [bytes([i]) * 5000 for i in range(6)])
    source = RecordFileSource([path])
    assert source.__getitems__([5, 0]) == [bytes([5]) * 5000, b"\x00" * 5000]
    assert source._files._maps[0] is not None  # mapped by the batched read
    os.truncate(path, 3 * 5016)  # never read past the end of the map: the size is checked first
    with pytest.raises(tfrec.TfrecError) as caught:
        source.__getitems__([5, 0])
    assert isinstance(caught.value, tfrec.TruncatedRecordError)
    assert source.__getitems__([1, 0]) == [b"\x01" * 5000, b"\x00" * 5000]  # what is left reads


def test_files_that_cannot_be_mapped_are_read_with_pread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "p.tfrecord", [b"x", b"", b"yz"])
    monkeypatch.setattr(shard_files_module, "map_file", lambda fd, size: None)
    source = RecordFileSource([path])
    assert source.__getitems__([2, 1, 0, 2]) == [b"yz", b"", b"x", b"yz"]
    assert source._files._maps == [None] and source._files._unmappable == [True]


def test_close_drops_the_maps_and_copies_map_again(tmp_path: Path) -> None:
    import pickle

    path = write(tmp_path / "c.tfrecord", [b"abc", b"defg"])
    source = RecordFileSource([path])
    assert source.__getitems__([1, 0]) == [b"defg", b"abc"]
    copy = pickle.loads(pickle.dumps(source))
    assert copy._files._maps == [None]
    source.close()
    assert source._files._maps == [None]
    assert source.__getitems__([1]) == [b"defg"] and copy.__getitems__([0, 1]) == [b"abc", b"defg"]


def test_map_file_refuses_what_it_cannot_map(tmp_path: Path) -> None:
    path = tmp_path / "e"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert map_file(fd, 0) is None
        assert map_file(fd, 10) is None  # longer than the file
    finally:
        os.close(fd)


def test_map_files_0_in_the_environment_maps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "n.tfrecord", [b"ab", b"c"])
    monkeypatch.setenv("TFREC_MAP_FILES", "0")
    source = RecordFileSource([path])
    assert source.__getitems__([1, 0]) == [b"c", b"ab"]
    assert source._files._maps == [None] and source._files._unmappable == [True]


def test_gather_in_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tfrec.record.mapped as mapped

    monkeypatch.setattr(mapped, "_PIECE", 100)  # many pieces, and frames larger than a piece
    rng = np.random.default_rng(9)
    records = [rng.bytes(int(n)) for n in rng.integers(0, 300, 60)]
    paths = [write(tmp_path / f"p{i}.tfrecord", records[i::2]) for i in range(2)]
    expected = records[0::2] + records[1::2]
    keys = rng.integers(0, len(expected), 200).tolist()
    assert RecordFileSource(paths).__getitems__(keys) == [expected[k] for k in keys]


@pytest.mark.parametrize("distinct", [1, 3, frame.FEW_LENGTHS, frame.FEW_LENGTHS + 1, 40])
def test_frames_of_a_few_lengths_are_gathered_a_length_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, distinct: int
) -> None:
    # Up to FEW_LENGTHS lengths, each frame is one void item (no index per byte); more, index arrays.
    import tfrec.record.mapped as mapped

    calls: list[bool] = []
    by_length = mapped._gather_by_length
    monkeypatch.setattr(
        mapped, "_gather_by_length", lambda *args: calls.append(by_length(*args)) or calls[-1]
    )
    rng = np.random.default_rng(distinct)
    records = [rng.bytes(60 + int(n)) for n in rng.integers(0, distinct, 300)]
    paths = [write(tmp_path / f"few{i}.tfrecord", records[i::3]) for i in range(3)]
    expected = records[0::3] + records[1::3] + records[2::3]
    keys = rng.integers(-len(expected), len(expected), 500).tolist()  # repeats, and from the end
    assert RecordFileSource(paths).__getitems__(keys) == [expected[k] for k in keys]
    assert calls == [len({len(expected[k]) for k in keys}) <= frame.FEW_LENGTHS]


def test_scikit_learn_wine_rows_at_random(tmp_path: Path) -> None:
    # Rows of a real table as Examples: lengths vary by a few bytes (the label's and the floats'
    # encodings alike), so random reads take the few-lengths gather.
    datasets = pytest.importorskip("sklearn.datasets")
    wine = datasets.load_wine()
    records = [
        tfrec.encode_example({"features": row.astype(np.float32), "label": int(label), "row": i})
        for i, (row, label) in enumerate(zip(wine.data, wine.target, strict=True))
    ]
    assert 1 < len({len(r) for r in records}) <= frame.FEW_LENGTHS
    paths = [write(tmp_path / f"wine{i}.tfrecord", records[i::2]) for i in range(2)]
    expected = records[0::2] + records[1::2]
    keys = np.random.default_rng(0).permutation(len(expected)).tolist()
    assert RecordFileSource(paths).__getitems__(keys) == [expected[k] for k in keys]
