"""Record ranges: indexed files split among readers by records, every record exactly once per epoch,
near-equal shares, exact resume, located errors; files without an index fall back or fail clearly."""

from __future__ import annotations

import pickle
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from datafiles import every_record, record, stop_and_resume, write_files
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data import ReadOptions, ShardOptions, TFRecordDataset
from tfrec.data.index.format import IndexLines
from tfrec.data.sharding.ranges import FileRange, RecordRanges, split_records
from tfrec.errors import DatasetStateError, InvalidArgumentError, ShardingError


def write_indexed(directory: Path, sizes: Sequence[int], *, index: bool = True) -> list[str]:
    paths = write_files(directory, sizes)
    if index:
        for path in paths:
            tfrec.build_index(path)
    return paths


def flatten(elements: list[Any]) -> list[bytes]:
    return [r for e in elements for r in (e if isinstance(e, list) else [e])]


def read_all(
    source: Any,
    readers: int,
    *,
    shard_by: str = "auto",
    index_paths: list[str] | None = None,
    **options: Any,
) -> list[list[bytes]]:
    """Each simulated rank's records (``shard=(r, readers)``), batches flattened."""
    shares = [ShardOptions((r, readers), shard_by, index_paths) for r in range(readers)]
    return [flatten(list(TFRecordDataset(source, shard_options=share, **options))) for share in shares]


def assert_once_and_even(shares: list[list[bytes]], sizes: Sequence[int]) -> None:
    counts = Counter(r for share in shares for r in share)
    assert sorted(counts) == every_record(sizes) and set(counts.values()) == {1}
    lengths = [len(share) for share in shares]
    assert max(lengths) - min(lengths) <= 1, lengths


# -- the split itself -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=5), st.integers(1, 9), st.integers(1, 5))
def test_split_records_covers_every_record_once_in_near_equal_shares(
    sizes: list[int], count: int, pieces: int
) -> None:
    total = sum(sizes)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_indexed(Path(tmp), sizes)
        if total < count:
            with pytest.raises(ShardingError, match=f"{total} record\\(s\\) in {len(sizes)} file\\(s\\)"):
                split_records(paths, count, pieces=pieces)
            return
        ranges = split_records(paths, count, pieces=pieces)
        assert ranges.count == count
        flat: list[tuple[int, int]] = []  # (file, record) in share order
        for share in ranges.readers:
            assert len(share) >= 1
            for piece in share:
                offsets, lengths = tfrec.read_index(piece.path + ".idx")
                assert 0 <= piece.start < piece.stop <= len(offsets)
                assert piece.offset == offsets[piece.start]
                assert piece.end == offsets[piece.stop - 1] + lengths[piece.stop - 1]
                flat += [(paths.index(piece.path), i) for i in range(piece.start, piece.stop)]
        # Shares are contiguous and in order: together they are all records, file after file.
        assert flat == [(f, i) for f, size in enumerate(sizes) for i in range(size)]
        shares = [ranges.records(c) for c in range(count)]
        assert max(shares) - min(shares) <= 1 and sum(shares) == total


def test_file_range_is_its_path_with_a_range() -> None:
    piece = FileRange("a.tfrecord", 3, 57, 9, 171)
    assert isinstance(piece, str) and piece.path == "a.tfrecord" and type(piece.path) is str
    assert piece.records == 6 and repr(piece) == "FileRange('a.tfrecord', records 3 to 8)"
    copy = pickle.loads(pickle.dumps(piece))
    assert copy == piece and hash(copy) == hash(piece) and copy.end == 171
    assert piece != FileRange("a.tfrecord", 0, 0, 3, 57) and piece != "a.tfrecord"
    assert len({piece, FileRange("a.tfrecord", 0, 0, 3, 57)}) == 2
    assert pickle.loads(pickle.dumps(RecordRanges(((piece,),)))).readers[0][0] == piece


# -- the dataset: every record once, near-equal shares ------------------------------------------------


@pytest.mark.parametrize(
    ("sizes", "readers"),
    [([10], 3), ([7, 5], 5), ([1, 50, 3], 4), ([0, 9], 3), ([2, 2], 4)],
)
def test_fewer_files_than_readers_split_records(tmp_path: Path, sizes: list[int], readers: int) -> None:
    write_indexed(tmp_path, sizes)
    assert_once_and_even(read_all(tmp_path, readers), sizes)
    shuffled = read_all(tmp_path, readers, shuffle_files=True, cycle_length=2, seed=3)
    assert_once_and_even(shuffled, sizes)


def test_one_file_and_three_readers_read_contiguous_thirds(tmp_path: Path) -> None:
    write_indexed(tmp_path, [10])
    assert read_all(tmp_path, 3) == [
        [record(0, i) for i in range(0, 3)],
        [record(0, i) for i in range(3, 6)],
        [record(0, i) for i in range(6, 10)],
    ]


def test_shuffled_pieces_change_the_order_every_epoch(tmp_path: Path) -> None:
    write_indexed(tmp_path, [400])
    ds = TFRecordDataset(
        tmp_path, shuffle_files=True, seed=7, shard_options=ShardOptions(shard=(1, 2))
    ).repeat(3)
    epochs = [list(ds)[i * 200 : (i + 1) * 200] for i in range(3)]
    assert all(sorted(e) == sorted(record(0, i) for i in range(200, 400)) for e in epochs)
    assert len({tuple(e) for e in epochs}) == 3  # 16 pieces, a new order each epoch
    assert epochs[0][:12] == sorted(epochs[0][:12], key=lambda r: int(r.split(b":")[1]))  # runs in order
    again = TFRecordDataset(
        tmp_path, shuffle_files=True, seed=7, shard_options=ShardOptions(shard=(1, 2))
    ).repeat(3)
    assert list(again) == [r for e in epochs for r in e]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 60), min_size=1, max_size=4).filter(lambda s: sum(s) >= 8),
    st.integers(1, 8),
    st.integers(1, 3),
    st.integers(1, 3),
    st.booleans(),
    st.none() | st.integers(1, 50),
    st.none() | st.integers(1, 9),
    st.integers(0, 2**32),
)
def test_records_mode_any_layout_every_record_once_per_epoch(
    sizes: list[int],
    readers: int,
    cycle: int,
    block: int,
    shuffle_files: bool,
    buffer: int | None,
    batch: int | None,
    seed: int,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write_indexed(Path(tmp), sizes)
        seen: list[bytes] = []
        for rank in range(readers):
            ds = TFRecordDataset(tmp, shard_options=ShardOptions(shard=(rank, readers), shard_by="records"),
                                 cycle_length=cycle, read_options=ReadOptions(block_length=block),
                                 shuffle_files=shuffle_files, seed=seed)  # fmt: skip
            if buffer:
                ds = ds.shuffle(buffer)
            if batch:
                ds = ds.batch(batch)
            seen += flatten(list(ds.repeat(2)))
        counts = Counter(seen)
        assert sorted(counts) == every_record(sizes) and set(counts.values()) == {2}


def test_records_mode_balances_unequal_files(tmp_path: Path) -> None:
    write_indexed(tmp_path, [100, 5, 5, 5])
    by_files = read_all(tmp_path, 2)  # auto: enough files, so whole files: 105 and 10 records
    assert sorted(map(len, by_files)) == [10, 105]
    by_records = read_all(tmp_path, 2, shard_by="records")
    assert_once_and_even(by_records, [100, 5, 5, 5])
    assert by_records[0] == [record(0, i) for i in range(57)]  # 115 // 2


def test_auto_splits_files_when_there_are_enough(tmp_path: Path) -> None:
    write_indexed(tmp_path, [4, 4, 4])
    assert read_all(tmp_path, 3) == [[record(n, i) for i in range(4)] for n in range(3)]


# -- resuming -----------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 80), min_size=1, max_size=3).filter(lambda s: sum(s) >= 6),
    st.integers(2, 6),
    st.integers(1, 3),
    st.booleans(),
    st.none() | st.integers(1, 40),
    st.integers(0, 2**32),
    st.data(),
)
def test_resume_from_any_state_with_ranges(
    sizes: list[int],
    readers: int,
    cycle: int,
    shuffle_files: bool,
    buffer: int | None,
    seed: int,
    data: st.DataObject,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write_indexed(Path(tmp), sizes)
        rank = data.draw(st.integers(0, readers - 1))
        ds = TFRecordDataset(tmp, shard_options=ShardOptions(shard=(rank, readers), shard_by="records"),
                             cycle_length=cycle, shuffle_files=shuffle_files, seed=seed)  # fmt: skip
        ds = (ds.shuffle(buffer) if buffer else ds).repeat(2)
        expected = list(ds)
        resumed, state = stop_and_resume(ds, data.draw(st.integers(0, len(expected))))
        assert state["split"] == ["records", readers]
        assert resumed == expected


def test_a_state_of_another_split_is_refused(tmp_path: Path) -> None:
    write_indexed(tmp_path, [20, 20])
    it = iter(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 2), shard_by="records")))
    next(it)
    with pytest.raises(DatasetStateError, match=r"saved reading records split among 2 reader\(s\).*files"):
        TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 2))).resume(it.state())
    with pytest.raises(DatasetStateError, match=r"among 2 reader.*among 4"):
        TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 4))).resume(it.state())


# -- errors and fallbacks -------------------------------------------------------------------------


def test_a_missing_index_falls_back_to_files_or_fails_saying_why(tmp_path: Path) -> None:
    paths = write_indexed(tmp_path, [6, 6])
    Path(paths[1] + ".idx").unlink()
    assert_once_and_even(read_all(tmp_path, 2), [6, 6])  # enough files: no index needed
    message = (
        r"2 file\(s\) cannot be split among 3 readers \(3 ranks\).*Records could be split instead of "
        rf"files if every file had an index, but {paths[1]} has no index \({paths[1]}\.idx does not exist"
    )
    with pytest.raises(ShardingError, match=message):
        iter(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 3))))
    with pytest.raises(
        ShardingError, match=r"shard_by='records' needs an index for every file, but .*no index"
    ):
        iter(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 2), shard_by="records")))


def test_compressed_files_split_by_files_only(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord.gz"
    tfrec.write_records(path, [record(0, i) for i in range(9)])
    with pytest.raises(InvalidArgumentError, match="gzip-compressed"):
        tfrec.build_index(path)
    Path(f"{path}.idx").write_text("0 20\n")  # a stray index cannot make it seekable
    with pytest.raises(
        ShardingError, match=r"a\.tfrecord\.gz is gzip-compressed, and a compressed file cannot"
    ):
        iter(TFRecordDataset(path, shard_options=ShardOptions(shard=(0, 2))))
    with pytest.raises(ShardingError, match="gzip-compressed"):
        iter(TFRecordDataset(path, shard_options=ShardOptions(shard_by="records")))
    assert len(list(TFRecordDataset(path))) == 9


def test_files_mode_ignores_indexes(tmp_path: Path) -> None:
    write_indexed(tmp_path, [10])
    with pytest.raises(ShardingError, match=r"1 file\(s\) cannot be split among 2 readers"):
        iter(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 2), shard_by="files")))


def test_fewer_records_than_readers(tmp_path: Path) -> None:
    write_indexed(tmp_path, [2])
    with pytest.raises(ShardingError, match=r"2 record\(s\) in 1 file\(s\) cannot be split among 3 readers"):
        iter(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 3))))


def test_index_paths_elsewhere_and_stale_indexes(tmp_path: Path) -> None:
    paths = write_files(tmp_path / "data", [12])
    index = str(tmp_path / "elsewhere.idx")
    tfrec.build_index(paths[0], index)
    assert_once_and_even(read_all(paths[0], 3, index_paths=[index]), [12])
    with pytest.raises(InvalidArgumentError, match=r"2 index path\(s\) for 1 file\(s\)"):
        TFRecordDataset(paths[0], shard_options=ShardOptions(index_paths=[index, index]))
    with pytest.raises(InvalidArgumentError, match="a list of paths"):
        TFRecordDataset(paths[0], shard_options=ShardOptions(index_paths=index))
    with pytest.raises(tfrec.MissingFileError, match=r"nowhere\.idx"):
        iter(
            TFRecordDataset(
                paths[0],
                shard_options=ShardOptions(shard=(0, 3), index_paths=[str(tmp_path / "nowhere.idx")]),
            )
        )
    with open(paths[0], "ab") as file:  # the file grew after its index was made
        file.write(Path(paths[0]).read_bytes()[:19])
    with pytest.raises(
        InvalidArgumentError, match=r"elsewhere\.idx: the index covers bytes 0 to 230 but .* has 249"
    ):
        iter(TFRecordDataset(paths[0], shard_options=ShardOptions(shard=(0, 3), index_paths=[index])))
    with pytest.raises(InvalidArgumentError, match="shard_by must be"):
        TFRecordDataset(paths[0], shard_options=ShardOptions(shard_by="bytes"))


def test_errors_name_the_true_record_of_the_file(tmp_path: Path) -> None:
    paths = write_indexed(tmp_path, [12])
    data = bytearray(Path(paths[0]).read_bytes())
    frame = 19  # every record "0:i" / "0:ii" framed: 16 + 3 bytes for i < 10
    data[7 * frame + 14] ^= 1  # the data of record 7, in the second of three ranges (4..7)
    Path(paths[0]).write_bytes(bytes(data))
    assert list(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 3)))) == [
        record(0, i) for i in range(4)
    ]
    assert list(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(2, 3)))) == [
        record(0, i) for i in range(8, 12)
    ]
    with pytest.raises(tfrec.ChecksumError) as caught:
        list(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(1, 3))))
    assert (caught.value.path, caught.value.index, caught.value.offset) == (paths[0], 7, 7 * frame)
    assert type(caught.value.path) is str
    skipped = read_all(tmp_path, 3, read_options=ReadOptions(on_error="skip"))
    assert skipped[1] == [record(0, i) for i in (4, 5, 6)]


def test_skipped_damage_before_a_boundary_neither_duplicates_nor_loses(tmp_path: Path) -> None:
    paths = write_indexed(tmp_path, [12])
    data = bytearray(Path(paths[0]).read_bytes())
    frame = 19
    for k in (6, 7):  # two damaged length fields in a row, the last records of range 1 (4..7)
        data[k * frame] ^= 0x40
    Path(paths[0]).write_bytes(bytes(data))
    # The reader skips both frames but counts one: without the byte bound it would read record 8 too.
    shares = read_all(tmp_path, 3, read_options=ReadOptions(on_error="skip"))
    assert shares == [
        [record(0, i) for i in range(4)],
        [record(0, i) for i in (4, 5)],
        [record(0, i) for i in range(8, 12)],
    ]


def test_a_damaged_boundary_record_is_read_by_one_reader(tmp_path: Path) -> None:
    paths = write_indexed(tmp_path, [12])
    data = bytearray(Path(paths[0]).read_bytes())
    data[8 * 19] ^= 0x40  # the length of record 8: the first of range 2
    Path(paths[0]).write_bytes(bytes(data))
    with pytest.raises(tfrec.ChecksumError) as caught:
        list(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(2, 3))))
    assert (caught.value.index, caught.value.offset, caught.value.part) == (8, 8 * 19, "length")
    assert list(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(1, 3)))) == [
        record(0, i) for i in range(4, 8)
    ]
    with pytest.warns(tfrec.TfrecWarning):
        shares = read_all(tmp_path, 3, read_options=ReadOptions(on_error="warn"))
    assert shares[2] == [record(0, i) for i in range(9, 12)]


def test_ranges_over_fsspec_urls_with_their_index(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    paths = write_indexed(tmp_path, [11])
    fs = fsspec.filesystem("memory")
    try:
        fs.pipe("/ranges-test/a.tfrecord", Path(paths[0]).read_bytes())
        url = "memory://ranges-test/a.tfrecord"
        with pytest.raises(ShardingError, match="has no index"):
            iter(TFRecordDataset(url, shard_options=ShardOptions(shard=(0, 2))))
        fs.pipe("/ranges-test/a.tfrecord.idx", Path(paths[0] + ".idx").read_bytes())
        assert_once_and_even(read_all(url, 2), [11])
        it = iter(TFRecordDataset(url, shard_options=ShardOptions(shard=(1, 2))))
        head = [next(it) for _ in range(2)]
        assert head + list(
            TFRecordDataset(url, shard_options=ShardOptions(shard=(1, 2))).resume(it.state())
        ) == [record(0, i) for i in range(5, 11)]
    finally:
        fs.rm("/ranges-test", recursive=True)


# -- reading processes and ranks from the environment ---------------------------------------------


def test_reading_processes_split_one_file_by_records(tmp_path: Path) -> None:
    write_indexed(tmp_path, [90])
    ds = TFRecordDataset(tmp_path, num_workers=2, shuffle_files=True, seed=2).shuffle(16).batch(8)
    first = flatten(list(ds.repeat(2)))
    counts = Counter(first)
    assert sorted(counts) == every_record([90]) and set(counts.values()) == {2}
    it = iter(ds)
    head = [next(it) for _ in range(3)]
    state = pickle.loads(pickle.dumps(it.state()))
    it.close()
    assert state["split"] == ["records", 2]
    assert flatten(head + list(ds.resume(state))) == first[:90]
    with pytest.raises(ShardingError, match=r"1 file\(s\) cannot be split among 2 readers .*num_workers"):
        iter(TFRecordDataset(tmp_path, num_workers=2, shard_options=ShardOptions(shard_by="files")))


def test_ranks_from_the_environment_times_reading_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_indexed(tmp_path, [25, 6])
    shares = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        shares.append(flatten(list(TFRecordDataset(tmp_path, num_workers=2).batch(4))))
    counts = Counter(r for share in shares for r in share)
    assert sorted(counts) == every_record([25, 6]) and set(counts.values()) == {1}
    assert sorted(map(len, shares)) == [15, 16]  # 4 readers of 7 or 8 records


# -- index lines: only the lines a split needs are parsed ------------------------------------------


@pytest.mark.parametrize(
    ("text", "count", "offsets"),
    [
        (b"", 0, [0]),
        (b"0 19\n19 20\n", 2, [0, 19, 39]),
        (b"0 19\r\n19 20", 2, [0, 19, 39]),
        (b" 0\t19 \n", 1, [0, 19]),
    ],
)
def test_index_lines_count_and_offsets(text: bytes, count: int, offsets: list[int]) -> None:
    lines = IndexLines(text, "x.idx")
    assert lines.count == count
    assert [lines.offset(k) for k in range(count + 1)] == offsets
    if text:
        parsed, lengths = tfrec.data.index.format.parse_index(text, "x.idx")
        assert [*parsed.tolist(), int(parsed[-1] + lengths[-1])] == offsets


def test_index_lines_check_the_lines_they_read() -> None:
    lines = IndexLines(b"0 19\n19 x\n39 5\n", "x.idx")
    assert lines.offset(0) == 0
    with pytest.raises(InvalidArgumentError, match=r"x\.idx, line 2: expected 'offset length' .* b'19 x'"):
        lines.offset(1)
    with pytest.raises(InvalidArgumentError, match=r"x\.idx, line 3: a frame length of 5 bytes is shorter"):
        lines.offset(3)


def test_a_wrong_offset_at_a_cut_is_a_located_error_not_a_silent_one(tmp_path: Path) -> None:
    paths = write_files(tmp_path, [12])
    lines = [f"{i * 19} 19" for i in range(10)] + ["190 20", "210 20"]
    lines[4] = "77 19"  # record 4 (the first of range 1 of 3) said to start two bytes late
    Path(paths[0] + ".idx").write_text("\n".join(lines) + "\n")
    with pytest.raises(tfrec.ChecksumError) as caught:
        list(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(1, 3))))
    assert (caught.value.path, caught.value.index, caught.value.offset) == (paths[0], 4, 77)
    # Range 0 reads on to its byte end: record 4 starts before byte 77, so it is range 0's.
    assert list(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 3)))) == [
        record(0, i) for i in range(5)
    ]
    shares = read_all(tmp_path, 3, read_options=ReadOptions(on_error="skip"))  # nothing twice, nothing lost
    assert sorted(r for share in shares for r in share) == every_record([12])
