"""TFRecordDataset in one process: every record once per epoch, exact resume, seeds, batching, decoding."""

from __future__ import annotations

import pickle
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from datafiles import every_record, stop_and_resume, write_examples, write_files
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data import ReadOptions, ShardOptions, TFRecordDataset
from tfrec.errors import DatasetStateError, ShardingError
from tfrec.features import FeaturesDict, Scalar, Tensor

SPEC = {
    "id": tfrec.FixedLenFeature([], tfrec.int64),
    "score": tfrec.FixedLenFeature([], tfrec.float32),
    "tags": tfrec.VarLenFeature(tfrec.int64),
}


def flatten(batches: list[Any]) -> list[bytes]:
    return [r for b in batches for r in (b if isinstance(b, list) else [b])]


def pipelines() -> st.SearchStrategy[Callable[[TFRecordDataset], TFRecordDataset]]:
    """Chains of shuffle / batch / prefetch that keep every record (raw bytes out)."""

    def chain(buffer: int | None, batch: int | None, prefetch: bool) -> Callable[[TFRecordDataset], Any]:
        def apply(ds: TFRecordDataset) -> TFRecordDataset:
            if buffer:
                ds = ds.shuffle(buffer)
            if batch:
                ds = ds.batch(batch)
            return ds.prefetch(2) if prefetch else ds

        return apply

    return st.builds(chain, st.none() | st.integers(1, 300), st.none() | st.integers(1, 40), st.booleans())


layouts = st.tuples(
    st.lists(st.integers(0, 300), min_size=1, max_size=5).filter(any),
    st.integers(1, 4),
    st.integers(1, 4),
    st.booleans(),
)


@settings(max_examples=30, deadline=None)
@given(layouts, pipelines(), st.integers(1, 3), st.integers(0, 2**32))
def test_every_record_exactly_once_per_shard_and_epoch(
    layout: tuple[list[int], int, int, bool],
    pipeline: Callable[[TFRecordDataset], Any],
    shards: int,
    seed: int,
) -> None:
    sizes, cycle, block, shuffle_files = layout
    sizes = sizes + [1] * max(0, shards - len(sizes))  # at least one file per shard
    with tempfile.TemporaryDirectory() as tmp:
        write_files(Path(tmp), sizes, gzip_every=2)
        seen: list[bytes] = []
        for shard in range(shards):
            ds = TFRecordDataset(tmp, cycle_length=cycle, read_options=ReadOptions(block_length=block),
                                 shuffle_files=shuffle_files, seed=seed,
                                 shard_options=ShardOptions(shard=(shard, shards)))  # fmt: skip
            seen += flatten(list(pipeline(ds).repeat(2)))
        counts = Counter(seen)
        assert sorted(counts) == every_record(sizes)
        assert set(counts.values()) == {2}


@settings(max_examples=30, deadline=None)
@given(layouts, pipelines(), st.integers(0, 2**32), st.data())
def test_resume_from_any_state_continues_exactly(
    layout: tuple[list[int], int, int, bool],
    pipeline: Callable[[TFRecordDataset], Any],
    seed: int,
    data: st.DataObject,
) -> None:
    sizes, cycle, block, shuffle_files = layout
    with tempfile.TemporaryDirectory() as tmp:
        write_files(Path(tmp), sizes, gzip_every=2)
        ds = pipeline(TFRecordDataset(tmp, cycle_length=cycle, read_options=ReadOptions(block_length=block),
                                      shuffle_files=shuffle_files, seed=seed)).repeat(2)  # fmt: skip
        expected = list(ds)
        resumed, _ = stop_and_resume(ds, data.draw(st.integers(0, len(expected))))
        assert resumed == expected


def test_state_argument_starts_there(tmp_path: Path) -> None:
    write_files(tmp_path, [50, 30])
    ds = TFRecordDataset(tmp_path, seed=3, cycle_length=2).shuffle(20).batch(7)
    expected = list(ds)
    it = iter(ds)
    next(it), next(it)
    state = it.state()
    again = TFRecordDataset(tmp_path, seed=3, cycle_length=2).with_state(state)
    # state= belongs to the dataset it was saved from: the ops must be chained again, then resume()
    assert list(again.shuffle(20).batch(7).resume(state)) == expected[2:]
    with pytest.raises(DatasetStateError, match="ops"):
        iter(again)


def test_same_seed_same_order_other_seed_or_epoch_other_order(tmp_path: Path) -> None:
    write_files(tmp_path, [200] * 4)

    def order(seed: int, epoch: int = 0) -> list[bytes]:
        ds = TFRecordDataset(tmp_path, shuffle_files=True, cycle_length=2, seed=seed).shuffle(100)
        ds.set_epoch(epoch)
        return list(ds)

    assert order(1) == order(1)
    assert order(1) != order(2)
    assert order(1, epoch=0) != order(1, epoch=1)
    assert sorted(order(1)) == sorted(order(2)) == every_record([200] * 4)
    repeated = list(
        TFRecordDataset(tmp_path, shuffle_files=True, cycle_length=2, seed=1).shuffle(100).repeat(2)
    )
    assert repeated[:800] == order(1) and repeated[800:] != repeated[:800]


def test_no_seed_draws_one_and_saves_it(tmp_path: Path) -> None:
    write_files(tmp_path, [300])
    ds = TFRecordDataset(tmp_path).shuffle(300)
    it = iter(ds)
    head = [next(it) for _ in range(10)]
    state = it.state()
    rest = list(it)
    assert list(ds.resume(state)) == rest
    assert len(head + rest) == 300
    assert list(ds) != list(ds)  # each iterator draws its own seed


def test_shuffle_leaves_the_global_rng_alone(tmp_path: Path) -> None:
    write_files(tmp_path, [100])
    np.random.seed(5)
    expected = np.random.random(3)
    np.random.seed(5)
    list(TFRecordDataset(tmp_path, shuffle_files=True, seed=0).shuffle(10))
    assert np.array_equal(np.random.random(3), expected)


def test_batches_decode_with_a_spec_through_the_batched_parser(tmp_path: Path) -> None:
    write_examples(tmp_path, files=2, per_file=10)
    batches = list(TFRecordDataset(tmp_path, spec=SPEC, cycle_length=2).batch(8))
    assert [len(b["id"]) for b in batches] == [8, 8, 4]
    ids = np.concatenate([b["id"] for b in batches])
    assert ids.tolist() == [n * 1000 + i for i in range(10) for n in range(2)]
    assert isinstance(batches[0]["tags"], tfrec.SparseArray)
    first = tfrec.parse_example([_example(1000 * (i % 2) + i // 2) for i in range(8)], SPEC)
    assert batches[0]["tags"] == first["tags"]
    unbatched = list(TFRecordDataset(tmp_path, spec=SPEC))
    assert unbatched[0]["id"] == 0 and unbatched[0]["tags"].values.tolist() == []


def _example(ident: int) -> bytes:
    i = ident % 1000
    return tfrec.encode_example(
        {"id": ident, "score": float(i) / 2, "tags": np.arange(ident % 4, dtype=np.int64)}
    )


def test_batches_decode_with_features_nested(tmp_path: Path) -> None:
    features = FeaturesDict({"meta": {"id": Scalar(np.int64)}, "tags": Tensor(shape=(None,), dtype=np.int64)})
    records = [features.serialize_example({"meta": {"id": i}, "tags": np.arange(i % 3)}) for i in range(10)]
    tfrec.write_records(tmp_path / "f.tfrecord", records)
    batch = next(iter(TFRecordDataset(tmp_path, features=features).batch(4)))
    assert batch["meta"]["id"].tolist() == [0, 1, 2, 3]
    assert isinstance(batch["tags"], tfrec.RaggedArray)
    padded = next(iter(TFRecordDataset(tmp_path, features=features).batch(4, pad=-1)))
    assert padded["tags"].tolist() == [[-1, -1], [0, -1], [0, 1], [-1, -1]]
    one = next(iter(TFRecordDataset(tmp_path, features=features).skip(2)))
    assert one["meta"]["id"] == 2 and one["tags"].tolist() == [0, 1]


def test_pad_sparse_values_and_values_by_key(tmp_path: Path) -> None:
    write_examples(tmp_path, files=1, per_file=4)
    batch = next(iter(TFRecordDataset(tmp_path, spec=SPEC).batch(4, pad={"tags": 9})))
    assert batch["tags"].tolist() == [[9, 9, 9], [0, 9, 9], [0, 1, 9], [0, 1, 2]]
    assert batch["id"].tolist() == [0, 1, 2, 3]


def test_map_filter_then_batch_collates(tmp_path: Path) -> None:
    write_examples(tmp_path, files=1, per_file=10)
    ds = TFRecordDataset(tmp_path, spec=SPEC).filter(lambda e: e["id"] % 2 == 0)
    ds = ds.map(lambda e: {"id": e["id"], "tags": e["tags"].values})
    batches = list(ds.batch(3, pad=True))
    assert [b["id"].tolist() for b in batches] == [[0, 2, 4], [6, 8]]
    assert batches[0]["tags"].tolist() == [[0, 0], [0, 1], [0, 0]]
    with pytest.raises(tfrec.TfrecError, match=r"tags: values of shapes .* pad=True"):
        list(ds.batch(3))


def test_take_skip_and_drop_remainder(tmp_path: Path) -> None:
    write_files(tmp_path, [10, 10])
    records = list(TFRecordDataset(tmp_path))
    assert list(TFRecordDataset(tmp_path).skip(3).take(5)) == records[3:8]
    assert list(TFRecordDataset(tmp_path).take(0)) == []
    assert [len(b) for b in TFRecordDataset(tmp_path).batch(6, drop_remainder=True)] == [6, 6, 6]
    assert list(TFRecordDataset(tmp_path).take(4).repeat(3)) == records[:4] * 3
    assert list(TFRecordDataset(tmp_path).repeat(0)) == []


def test_fewer_files_than_consumers_is_an_error(tmp_path: Path) -> None:
    write_files(tmp_path, [5, 5])
    with pytest.raises(ShardingError, match=r"2 file\(s\) cannot be split among 3 readers \(3 ranks\)"):
        iter(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 3))))
    with pytest.raises(ShardingError, match="out of range"):
        iter(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(3, 3))))


def test_rank_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(tmp_path, [3, 3, 3])
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert list(TFRecordDataset(tmp_path)) == [b"1:0", b"1:1", b"1:2"]
    assert len(list(TFRecordDataset(tmp_path, shard_options=ShardOptions(shard=(0, 1))))) == 9


def test_a_state_from_another_dataset_is_refused(tmp_path: Path) -> None:
    write_files(tmp_path, [5, 5])
    it = iter(TFRecordDataset(tmp_path).batch(2))
    next(it)
    with pytest.raises(DatasetStateError, match="ops"):
        TFRecordDataset(tmp_path).batch(3).resume(it.state())
    with pytest.raises(DatasetStateError, match="files"):
        TFRecordDataset(tmp_path / "part-00000.tfrecord").batch(2).resume(it.state())
    with pytest.raises(DatasetStateError):
        TFRecordDataset(tmp_path).resume({"format": "other"})


def test_dataset_and_state_pickle(tmp_path: Path) -> None:
    write_files(tmp_path, [20])
    ds = TFRecordDataset(tmp_path, seed=0).shuffle(8).batch(3)
    copy = pickle.loads(pickle.dumps(ds))
    assert list(copy) == list(ds)


def test_errors_carry_path_index_and_offset(tmp_path: Path) -> None:
    paths = write_files(tmp_path, [4])
    data = bytearray(Path(paths[0]).read_bytes())
    data[-1] ^= 1
    Path(paths[0]).write_bytes(bytes(data))
    ds = TFRecordDataset(tmp_path).batch(10)
    with pytest.raises(tfrec.ChecksumError) as caught:
        list(ds)
    assert (caught.value.path, caught.value.index, caught.value.offset) == (paths[0], 3, 3 * 19)
    with pytest.warns(tfrec.TfrecWarning):
        assert flatten(
            list(TFRecordDataset(tmp_path, read_options=ReadOptions(on_error="warn")).batch(10))
        ) == [b"0:0", b"0:1", b"0:2"]


def test_argument_errors() -> None:
    with pytest.raises(tfrec.TfrecError, match="cycle_length must be >= 1"):
        TFRecordDataset(__file__, cycle_length=0)
    with pytest.raises(tfrec.TfrecError, match="on_error"):
        TFRecordDataset(__file__, read_options=ReadOptions(on_error="ignore"))
    with pytest.raises(tfrec.SchemaError, match="not both"):
        TFRecordDataset(__file__, spec=SPEC, features=FeaturesDict({"id": Scalar(np.int64)}))


def test_reads_fsspec_memory_urls_with_compression_per_file(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    paths = write_files(tmp_path, [7, 5, 6], gzip_every=2)
    fs = fsspec.filesystem("memory")
    try:
        for path in paths:
            fs.pipe(f"/dataset-test/{Path(path).name}", Path(path).read_bytes())
        ds = TFRecordDataset("memory://dataset-test/part-*", cycle_length=2, seed=0).shuffle(4)
        assert sorted(ds) == every_record([7, 5, 6])
        it = iter(ds)
        head = [next(it) for _ in range(9)]
        assert head + list(ds.resume(it.state())) == list(ds)
    finally:
        fs.rm("/dataset-test", recursive=True)


def test_a_damaged_url_names_the_url(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    paths = write_files(tmp_path, [3])
    data = bytearray(Path(paths[0]).read_bytes())
    data[-1] ^= 1
    fs = fsspec.filesystem("memory")
    try:
        fs.pipe("/damaged-test/x.tfrecord", bytes(data))
        with pytest.raises(tfrec.ChecksumError) as caught:
            list(TFRecordDataset("memory://damaged-test/x.tfrecord"))
        assert caught.value.path == "memory:///damaged-test/x.tfrecord" and caught.value.index == 2
    finally:
        fs.rm("/damaged-test", recursive=True)
