"""RecordFileSource: random access equals sequential reads; damage, range, pickling, threads; grain, torch."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import pickle
import random
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec
import tfrec.data.random_access.shard_files as shard_files_module
import tfrec.data.random_access.source as source_module
from tfrec import FixedLenFeature, RaggedArray, SparseArray, VarLenFeature
from tfrec.data import RecordFileSource, build_index, write_dataset
from tfrec.data.tfds.directory import from_tfds_dir
from tfrec.errors import InvalidArgumentError, MissingFileError, OutOfRangeError
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

SAMPLE = Path(__file__).parent.parent / "features" / "tfds_sample"


def write_shards(directory: Path, shards: list[list[bytes]], *, index: bool = False) -> list[str]:
    paths = []
    for number, records in enumerate(shards):
        path = directory / f"s-{number:05d}-of-{len(shards):05d}.tfrecord"
        tfrec.write_records(path, records)
        if index:
            build_index(path)
        paths.append(str(path))
    return paths


def same(a: Any, b: Any) -> bool:
    """Equal nested values: dicts, arrays (dtype, shape, values), Ragged/Sparse arrays, scalars."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (RaggedArray, SparseArray)):
        return type(a) is type(b) and a == b
    if isinstance(a, (np.ndarray, np.generic)):
        b_array = np.asarray(b)
        return (
            isinstance(b, (np.ndarray, np.generic))
            and a.dtype == b_array.dtype
            and np.shape(a) == b_array.shape
            and np.array_equal(a, b_array, equal_nan=a.dtype.kind == "f")
        )
    return type(a) is type(b) and a == b


@pytest.fixture
def three_shards(tmp_path: Path) -> tuple[list[str], list[bytes]]:
    rng = random.Random(3)
    shards = [[rng.randbytes(rng.randrange(0, 200)) for _ in range(count)] for count in (5, 0, 8)]
    shards[2][3] = rng.randbytes(70_000)  # one large record among small ones
    return write_shards(tmp_path, shards), [r for shard in shards for r in shard]


# -- reads ----------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shards=st.lists(st.lists(st.binary(max_size=120), max_size=12), min_size=1, max_size=4),
    indexed=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_access_equals_sequential_read(
    tmp_path_factory: pytest.TempPathFactory, shards: list[list[bytes]], indexed: bool, seed: int
) -> None:
    paths = write_shards(tmp_path_factory.mktemp("ra"), shards, index=indexed)
    expected = [record for path in paths for record in tfrec.read_records(path)]
    source = RecordFileSource(paths)
    assert len(source) == len(expected)
    assert source.shard_lengths() == list(map(len, shards))
    assert [source[i] for i in range(len(source))] == expected
    assert [source[-i] for i in range(1, len(source) + 1)] == expected[::-1]
    keys = (
        [random.Random(seed).randrange(-len(expected), len(expected)) for _ in range(20)] if expected else []
    )
    assert source.__getitems__(keys) == [expected[k] for k in keys]  # duplicates, negatives, any order
    assert source.__getitems__(np.array(keys, np.int64)) == [expected[k] for k in keys]


def test_getitems_of_large_batches_reads_one_by_one(
    three_shards: tuple[list[str], list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, expected = three_shards
    monkeypatch.setattr(shard_files_module, "_BATCH_BYTES", 100)
    source = RecordFileSource(paths)
    keys = list(range(len(expected)))[::-1]
    assert source.__getitems__(keys) == [expected[k] for k in keys]
    assert source.__getitems__([]) == []


def test_getitems_reads_adjacent_frames_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    shards = [[rng.randbytes(rng.choice([0, 10, 3000, 9000])) for _ in range(40)] for _ in range(2)]
    paths = write_shards(tmp_path, shards, index=True)
    expected = shards[0] + shards[1]
    source = RecordFileSource(paths)
    calls: list[int] = []
    real = shard_files_module.read_frames.__globals__["pread"]

    def counting(fd: int, size: int, offset: int) -> bytes:
        calls.append(size)
        return real(fd, size, offset)

    monkeypatch.setitem(shard_files_module.read_frames.__globals__, "pread", counting)
    # Positioned reads are the path of files that cannot be mapped (mapped files are gathered from).
    monkeypatch.setattr(shard_files_module, "map_file", lambda fd, size: None)
    small = [i for i in range(80) if len(expected[i]) <= 10]
    for keys in ([3, 3, 1], small[::-1], list(range(80)), [rng.randrange(80) for _ in range(200)]):
        calls.clear()
        assert source.__getitems__(keys) == [expected[k] for k in keys]
        assert len(calls) <= len(set(keys))
    (tmp_path / "small").mkdir()
    small_paths = write_shards(tmp_path / "small", [[bytes([i]) * 20 for i in range(50)]] * 2)
    small_source = RecordFileSource(small_paths)
    keys = rng.sample(range(100), 100)
    calls.clear()
    assert small_source.__getitems__(keys) == [bytes([k % 50]) * 20 for k in keys]
    assert calls == [50 * 36, 50 * 36]  # consecutive frames: one read per file


def test_index_files_are_used_when_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = write_shards(tmp_path, [[b"a", b"bc"], [b"def"]], index=True)

    def no_scan(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("scanned although an index file exists")

    monkeypatch.setattr(source_module, "scan_index", no_scan)
    assert RecordFileSource(paths).__getitems__([0, 1, 2]) == [b"a", b"bc", b"def"]
    moved = [shutil.move(p + ".idx", tmp_path / f"{n}.index") for n, p in enumerate(paths)]
    assert RecordFileSource(paths, index_paths=moved)[2] == b"def"


def test_globs_are_expanded_in_order(tmp_path: Path) -> None:
    write_dataset([b"0", b"1", b"2", b"3"], tmp_path / "d", num_shards=2)
    source = RecordFileSource(str(tmp_path / "d-*.tfrecord"))
    assert source.paths == [str(tmp_path / f"d-0000{i}-of-00002.tfrecord") for i in range(2)]
    assert [source[i] for i in range(4)] == [b"0", b"2", b"1", b"3"]


# -- errors ---------------------------------------------------------------------------------------------


def test_out_of_range(three_shards: tuple[list[str], list[bytes]]) -> None:
    source = RecordFileSource(three_shards[0])
    for key in (13, -14, 10**20):
        with pytest.raises(OutOfRangeError, match=rf"record {key} is out of range for 13 records"):
            source[key]
    with pytest.raises(IndexError):  # what for loops, grain and torch expect
        source.__getitems__([0, 13])
    with pytest.raises(InvalidArgumentError, match="record keys are integers, not str"):
        source["1"]  # type: ignore[index]
    with pytest.raises(InvalidArgumentError, match="record keys are integers, not float"):
        source.__getitems__([0, 1.0])  # type: ignore[list-item]
    assert list(source) == three_shards[1]  # the old sequence protocol stops at the IndexError


@pytest.mark.parametrize("batched", [False, True])
def test_damaged_data_is_reported_with_path_index_offset(tmp_path: Path, batched: bool) -> None:
    paths = write_shards(tmp_path, [[b"x" * 10] * 3, [b"y" * 20] * 4], index=True)
    data = bytearray(Path(paths[1]).read_bytes())
    data[2 * 36 + 12 + 5] ^= 0x40  # shard 1, record 2 (frames of 36 bytes): a data byte
    Path(paths[1]).write_bytes(bytes(data))
    source = RecordFileSource(paths)
    with pytest.raises(tfrec.ChecksumError) as caught:
        source.__getitems__([0, 4, 5, 6]) if batched else source[5]
    error = caught.value
    assert (error.path, error.index, error.offset, error.part) == (paths[1], 2, 72, "data")
    assert str(error).startswith(
        f"{paths[1]}, record 2, offset 72: data CRC mismatch in a record of 20 bytes"
    )
    assert source[4] == b"y" * 20 and source.__getitems__([6, 0]) == [b"y" * 20, b"x" * 10]  # the rest reads


def test_damaged_length_is_reported(tmp_path: Path) -> None:
    paths = write_shards(tmp_path, [[b"abc", b"defg"]], index=True)
    data = bytearray(Path(paths[0]).read_bytes())
    data[19 + 9] ^= 1  # record 1's length CRC
    Path(paths[0]).write_bytes(bytes(data))
    for read in (lambda s: s[1], lambda s: s.__getitems__([0, 1])):
        with pytest.raises(tfrec.ChecksumError) as caught:
            read(RecordFileSource(paths))
        assert (caught.value.index, caught.value.offset, caught.value.part) == (1, 19, "length")
    os.remove(paths[0] + ".idx")
    with pytest.raises(tfrec.ChecksumError, match="record 1, offset 19: length CRC"):
        RecordFileSource(paths)  # no index file: the header scan finds it


def test_an_index_of_another_file_is_refused(tmp_path: Path) -> None:
    paths = write_shards(tmp_path, [[b"0123456789", b"abcde"]])
    Path(paths[0] + ".idx").write_text("0 21\n21 26\n")  # right total size, wrong frames
    source = RecordFileSource(paths)
    with pytest.raises(
        tfrec.RecordError, match="the index gives a frame of 21 bytes but the record header says 26"
    ):
        source[0]
    Path(paths[0] + ".idx").write_text("0 26\n")
    with pytest.raises(
        InvalidArgumentError, match=r"the index covers bytes 0 to 26 but .* has 47: .*rebuild it"
    ):
        RecordFileSource(paths)
    Path(paths[0] + ".idx").write_text("0 16\n20 27\n")  # the right span, but a frame left out
    with pytest.raises(InvalidArgumentError, match=r"\.idx, line 2: a gap between frames"):
        RecordFileSource(paths)


def test_a_file_changed_after_indexing(tmp_path: Path) -> None:
    paths = write_shards(tmp_path, [[b"abc", b"defg"]])
    source = RecordFileSource(paths)
    with open(paths[0], "ab") as file:
        file.write(b"more")
    with pytest.raises(tfrec.RecordError, match="the file has 43 bytes but its index covers 39: it changed"):
        source[0]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda d: tfrec.write_records(d / "x.tfrecord.gz", [b"a"]), InvalidArgumentError, "gzip-compressed"),
        (lambda d: None, MissingFileError, "no such file"),
    ],
)
def test_unusable_files(tmp_path: Path, make: Any, error: type[Exception], message: str) -> None:
    make(tmp_path)
    target = tmp_path / ("x.tfrecord.gz" if (tmp_path / "x.tfrecord.gz").exists() else "missing.tfrecord")
    with pytest.raises(error, match=message):
        RecordFileSource(target)
    with pytest.raises(MissingFileError, match="matched no file"):
        RecordFileSource(str(tmp_path / "nothing-*.tfrecord"))


def test_invalid_arguments(tmp_path: Path) -> None:
    paths = write_shards(tmp_path, [[b"a"]])
    features = FeaturesDict({"x": Text()})
    with pytest.raises(InvalidArgumentError, match="features= or spec=, not both"):
        RecordFileSource(paths, features=features, spec={"x": FixedLenFeature([], tfrec.string)})
    with pytest.raises(InvalidArgumentError, match="features must be a FeaturesDict, not dict"):
        RecordFileSource(paths, features={"x": Text()})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="2 index paths for 1 files"):
        RecordFileSource(paths, index_paths=["a.idx", "b.idx"])


# -- decoding -------------------------------------------------------------------------------------------


def test_features_getitems_equals_getitem_on_the_tfds_sample() -> None:
    pytest.importorskip("PIL")  # the sample has images
    paths, features = from_tfds_dir(SAMPLE, "train")
    source = RecordFileSource(paths, features=features)
    assert len(source) == 4
    keys = [3, 0, 2, 1, 1]
    batch = source.__getitems__(keys)
    for key, sample in zip(keys, batch, strict=True):
        single = source[key]
        assert same(sample, single), key
        assert same(single, features.deserialize_example(list(tfrec.read_records(paths[0]))[key]))


def test_features_decode(tmp_path: Path) -> None:
    features = FeaturesDict(
        {"label": ClassLabel(names=["a", "b"]), "v": Tensor(shape=(None,), dtype=np.int64), "t": Text()}
    )
    samples = [{"label": i % 2, "v": np.arange(i, dtype=np.int64), "t": str(i)} for i in range(9)]
    write_dataset(samples, tmp_path / "f", features, max_records=4)
    source = RecordFileSource(str(tmp_path / "f-*.tfrecord"), features=features)
    first = str(tmp_path / "f-00000-of-00003.tfrecord")
    assert repr(source) == f"RecordFileSource(3 files from {first!r}, 9 records, features)"
    for key, sample in zip([8, 0, 4, 4], source.__getitems__([8, 0, 4, 4]), strict=True):
        assert same(sample, source[key])
        assert sample["t"] == str(key) and int(sample["label"]) == key % 2
        assert np.array_equal(sample["v"], np.arange(key))


@pytest.mark.parametrize("spec_kind", ["fixed", "varlen"])
def test_spec_decode(tmp_path: Path, spec_kind: str) -> None:
    records = [tfrec.encode_example({"id": i, "xs": np.arange(i % 3, dtype=np.float32)}) for i in range(6)]
    paths = write_shards(tmp_path, [records])
    spec: dict[str, Any] = {"id": FixedLenFeature([], tfrec.int64)}
    if spec_kind == "varlen":
        spec["xs"] = VarLenFeature(tfrec.float32)
    source = RecordFileSource(paths, spec=spec)
    assert repr(source).endswith("6 records, spec)")
    keys = [5, 1, 2, 0]
    batch = source.__getitems__(keys)
    for key, item in zip(keys, batch, strict=True):
        assert same(item, source[key]) and same(item, tfrec.parse_single_example(records[key], spec))
        assert int(item["id"]) == key


def test_read_batch_is_the_batched_decode_of_those_records(tmp_path: Path) -> None:
    features = FeaturesDict(
        {"label": ClassLabel(names=["a", "b"]), "v": Tensor(shape=(None,), dtype=np.int64), "t": Text()}
    )
    samples = [{"label": i % 2, "v": np.arange(i, dtype=np.int64), "t": str(i)} for i in range(9)]
    write_dataset(samples, tmp_path / "f", features, max_records=4)
    paths = sorted(str(p) for p in tmp_path.glob("f-*.tfrecord"))
    records = [r for path in paths for r in tfrec.read_records(path)]
    source = RecordFileSource(paths, features=features)
    keys = [8, 0, 4, 4, -1, 3]
    batch = source.read_batch(keys)
    assert same(batch, features.deserialize_batch([records[k] for k in keys]))
    assert batch["t"].tolist() == [str(k % 9) for k in keys]
    rows = source_module._rows(batch, len(keys))
    assert all(same(row, source[key]) for row, key in zip(rows, keys, strict=True))
    assert same(source.read_batch([]), features.deserialize_batch([]))
    assert same(pickle.loads(pickle.dumps(source.read_batch))([2, 1]), source.read_batch([2, 1]))


@pytest.mark.parametrize("spec_kind", ["fixed", "varlen", "raw"])
def test_read_batch_with_a_spec_or_raw(tmp_path: Path, spec_kind: str) -> None:
    records = [tfrec.encode_example({"id": i, "xs": np.arange(i % 3, dtype=np.float32)}) for i in range(6)]
    paths = write_shards(tmp_path, [records[:2], records[2:]], index=True)
    spec: dict[str, Any] = {"id": FixedLenFeature([], tfrec.int64)}
    if spec_kind == "varlen":
        spec = {**spec, "xs": VarLenFeature(tfrec.float32)}
    source = RecordFileSource(paths, spec=None if spec_kind == "raw" else spec)
    keys = np.array([5, 1, 2, 0, 5])  # grain hands over Python ints; a batched key array works too
    chosen = [records[k] for k in keys]
    expected = chosen if spec_kind == "raw" else tfrec.parse_example(chosen, spec)
    assert same(source.read_batch(keys), expected)
    in_order = [records[k] for k in (0, 2, 5)]  # sorted keys: gathered, nothing to put back
    assert same(
        source.read_batch([0, 2, 5]), in_order if spec_kind == "raw" else tfrec.parse_example(in_order, spec)
    )
    with pytest.raises(OutOfRangeError, match="record 6 is out of range"):
        source.read_batch([1, 6])
    with pytest.raises(InvalidArgumentError, match="integers, not str"):
        source.read_batch([1, "2"])


# -- pickling and threads -------------------------------------------------------------------------------


def test_pickled_copies_reopen_their_files(three_shards: tuple[list[str], list[bytes]]) -> None:
    paths, expected = three_shards
    source = RecordFileSource(paths)
    fresh = pickle.loads(pickle.dumps(source))  # before any read
    assert source[12] == expected[12]  # now the original has files open
    copy = pickle.loads(pickle.dumps(source))
    assert copy._files._fds == [None, None, None]  # no file descriptor travelled
    source.close()
    assert [copy[i] for i in range(len(copy))] == expected == [fresh[i] for i in range(len(fresh))]
    assert repr(copy) == repr(source)
    assert source[0] == expected[0]  # closed sources reopen too


def read_in_worker(source: RecordFileSource, keys: list[int]) -> list[bytes]:
    return source.__getitems__(keys)


def test_a_spawned_process_reads(three_shards: tuple[list[str], list[bytes]]) -> None:
    paths, expected = three_shards
    source = RecordFileSource(paths)
    source[0]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        assert pool.submit(read_in_worker, source, [12, 3, 7]).result() == [expected[k] for k in (12, 3, 7)]


def test_threads_share_a_source(three_shards: tuple[list[str], list[bytes]]) -> None:
    paths, expected = three_shards
    source = RecordFileSource(paths)  # files opened lazily, by the threads themselves
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        try:
            start.wait()
            for _ in range(300):
                keys = [rng.randrange(len(expected)) for _ in range(rng.randrange(1, 6))]
                got = source.__getitems__(keys) if seed % 2 else [source[k] for k in keys]
                assert got == [expected[k] for k in keys]
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    # one descriptor per non-empty file, not per thread
    assert sum(fd is not None for fd in source._files._fds) == 2


# -- grain and PyTorch ----------------------------------------------------------------------------------


def test_grain_map_dataset(three_shards: tuple[list[str], list[bytes]]) -> None:
    grain = pytest.importorskip("grain")
    paths, expected = three_shards
    source = RecordFileSource(paths)
    assert isinstance(source, grain.sources.RandomAccessDataSource)
    dataset = grain.MapDataset.source(source)
    assert len(dataset) == len(expected) and list(dataset) == expected
    shuffled = list(dataset.shuffle(seed=7))
    assert sorted(shuffled) == sorted(expected) and shuffled == list(
        grain.MapDataset.source(source).shuffle(seed=7)
    )
    batches = list(grain.MapDataset.source(source).map(len).batch(4))
    assert np.concatenate(batches).tolist() == list(map(len, expected))


def test_grain_batches_of_keys_read_with_read_batch(tmp_path: Path) -> None:
    """grain shuffles record numbers, read_batch reads each batch: MapDataset.source(source)'s batches."""
    grain = pytest.importorskip("grain")
    features = FeaturesDict(
        {"id": Tensor(shape=(), dtype=np.int64), "x": Tensor(shape=(2,), dtype=np.float32), "t": Text()}
    )
    samples = [{"id": i, "x": np.full(2, i, np.float32), "t": f"text {i}"} for i in range(23)]
    write_dataset(samples, tmp_path / "g", features, num_shards=3, index=True)
    source = RecordFileSource(str(tmp_path / "g-*.tfrecord"), features=features)
    for drop_remainder in (False, True):
        plain = grain.MapDataset.source(source).shuffle(seed=5).batch(4, drop_remainder=drop_remainder)
        keys = grain.MapDataset.range(len(source)).shuffle(seed=5)
        fast = keys.batch(4, drop_remainder=drop_remainder, batch_fn=source.read_batch)
        assert len(fast) == len(plain) == (5 if drop_remainder else 6)
        for got, expected in zip(list(fast), list(plain), strict=True):  # iterated in grain's threads
            assert same(got["id"], expected["id"]) and same(got["x"], expected["x"])
            assert got["t"].tolist() == expected["t"].tolist()  # grain stacks str into "<U"; ours: objects
    ids = np.concatenate([batch["id"] for batch in fast]).tolist()
    assert len(set(ids)) == 20 and ids != sorted(ids)


def test_grain_batched_read_push_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With grain's batched-read push-down on (an experiment, off in grain 0.2), batch asks _getitems."""
    grain = pytest.importorskip("grain")
    batch_module = pytest.importorskip("grain._src.python.dataset.transformations.batch")
    if not hasattr(batch_module, "_is_batch_map_pushdown_experiment_enabled"):
        pytest.skip("this grain has no batched-read push-down switch")
    features = FeaturesDict({"id": Tensor(shape=(), dtype=np.int64), "t": Text()})
    write_dataset([{"id": i, "t": f"text {i}"} for i in range(10)], tmp_path / "p", features, num_shards=2)
    source = RecordFileSource(str(tmp_path / "p-*.tfrecord"), features=features)
    expected = [b["id"].tolist() for b in grain.MapDataset.source(source).shuffle(seed=5).batch(4)]
    calls: list[int] = []

    def getitems(self: RecordFileSource, keys: list[int]) -> list[Any]:
        calls.append(len(keys))
        return self.__getitems__(keys)

    monkeypatch.setattr(RecordFileSource, "_getitems", getitems)
    monkeypatch.setattr(batch_module, "_is_batch_map_pushdown_experiment_enabled", lambda: True)
    pushed = [b["id"].tolist() for b in grain.MapDataset.source(source).shuffle(seed=5).batch(4)]
    assert pushed == expected and sorted(calls) == [2, 4, 4]


def test_grain_data_loader_with_features(tmp_path: Path) -> None:
    grain = pytest.importorskip("grain")
    features = FeaturesDict(
        {"id": Tensor(shape=(), dtype=np.int64), "x": Tensor(shape=(2,), dtype=np.float32)}
    )
    samples = [{"id": i, "x": np.full(2, i, np.float32)} for i in range(10)]
    write_dataset(samples, tmp_path / "g", features, num_shards=3)
    source = RecordFileSource(str(tmp_path / "g-*.tfrecord"), features=features)
    sampler = grain.samplers.IndexSampler(len(source), shuffle=True, seed=1, num_epochs=1)
    loader = grain.DataLoader(data_source=source, sampler=sampler, worker_count=0)
    ids = [int(sample["id"]) for sample in loader]
    assert sorted(ids) == list(range(10)) and ids != list(range(10))


def test_torch_map_style_dataset(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    features = FeaturesDict(
        {"id": Tensor(shape=(), dtype=np.int64), "x": Tensor(shape=(3,), dtype=np.float32)}
    )
    samples = [{"id": i, "x": np.full(3, i, np.float32)} for i in range(10)]
    write_dataset(samples, tmp_path / "t", features, num_shards=2)
    source = RecordFileSource(str(tmp_path / "t-*.tfrecord"), features=features)
    loader = torch.utils.data.DataLoader(source, batch_size=4)
    batches = list(loader)
    assert [b["id"].tolist() for b in batches] == [[0, 2, 4, 6], [8, 1, 3, 5], [7, 9]]
    assert batches[0]["x"].dtype == torch.float32 and batches[0]["x"].shape == (4, 3)
    generator = torch.Generator().manual_seed(0)
    shuffled = torch.utils.data.DataLoader(
        source, batch_size=3, shuffle=True, generator=generator, num_workers=2
    )
    ids = sorted(i for b in shuffled for i in b["id"].tolist())
    assert ids == list(range(10))
