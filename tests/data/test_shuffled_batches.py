"""RecordFileSource.shuffled_batches: batches of a record-level shuffle, as a source of batches."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tfrec.data import RecordFileSource, ShuffledBatches, write_dataset
from tfrec.errors import InvalidArgumentError, OutOfRangeError
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

FEATURES = FeaturesDict(
    {"id": Tensor(shape=(), dtype=np.int64), "label": ClassLabel(num_classes=3), "t": Text()}
)
COUNT = 1000


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> RecordFileSource:
    directory = tmp_path_factory.mktemp("shuffled")
    samples = [{"id": i, "label": i % 3, "t": f"r{i}é"} for i in range(COUNT)]
    write_dataset(samples, directory / "s", FEATURES, num_shards=12, index=True)
    return RecordFileSource(sorted(str(p) for p in directory.glob("s-*.tfrecord")), features=FEATURES)


def ids(batches: ShuffledBatches) -> list[list[int]]:
    return [batches[i]["id"].tolist() for i in range(len(batches))]


def test_each_epoch_holds_every_record_once_in_a_new_order(source: RecordFileSource) -> None:
    batches = source.shuffled_batches(64, seed=7, epochs=3)
    assert len(batches) == 3 * 16  # 15 batches of 64 and one of 40, per epoch
    epochs = [ids(batches)[e * 16 : (e + 1) * 16] for e in range(3)]
    flat = [[i for batch in epoch for i in batch] for epoch in epochs]
    assert all(sorted(epoch) == list(range(COUNT)) for epoch in flat)
    assert flat[0] != flat[1] != flat[2]
    assert [len(b) for b in epochs[0]] == [64] * 15 + [40]
    # Record-level: the first tenth of an epoch draws from nearly every one of the 12 files.
    first_tenth = np.concatenate([batches.keys(0), batches.keys(1)])
    files = np.searchsorted(np.cumsum(source.shard_lengths()), first_tenth, side="right")
    assert len(np.unique(files)) >= 11
    # The same seed gives the same batches; another seed others.
    assert ids(source.shuffled_batches(64, seed=7, epochs=3)) == ids(batches)
    assert ids(source.shuffled_batches(64, seed=8)) != epochs[0]


def test_a_batch_is_read_batch_of_its_keys(source: RecordFileSource) -> None:
    batches = source.shuffled_batches(100, seed=0, drop_remainder=True)
    keys = batches.keys(3)
    assert keys.tolist() == sorted(keys.tolist()) and len(keys) == 100
    batch, expected = batches[3], source.read_batch(keys.tolist())
    assert batch.keys() == expected.keys()
    assert all(np.array_equal(batch[k], expected[k]) for k in batch)
    assert batch["t"].tolist() == [f"r{source[k]['id']}é" for k in keys.tolist()]
    assert np.array_equal(batches[-1]["id"], batches[len(batches) - 1]["id"])
    copy = pickle.loads(pickle.dumps(batches))
    assert np.array_equal(copy[3]["id"], batch["id"])


def test_drop_remainder_and_errors(source: RecordFileSource) -> None:
    assert len(source.shuffled_batches(300, seed=1)) == 4
    assert len(source.shuffled_batches(300, seed=1, drop_remainder=True, epochs=2)) == 6
    with pytest.raises(OutOfRangeError, match="batch 4 is out of range for 4"):
        source.shuffled_batches(300, seed=1)[4]
    with pytest.raises(InvalidArgumentError, match="batch_size must be >= 1"):
        source.shuffled_batches(0, seed=1)
    with pytest.raises(InvalidArgumentError, match="seed must be >= 0"):
        source.shuffled_batches(8, seed=-1)
    with pytest.raises(InvalidArgumentError, match="epochs must be an integer"):
        source.shuffled_batches(8, seed=1, epochs=1.5)  # type: ignore[arg-type]


def test_grain_map_dataset_over_the_batches(source: RecordFileSource) -> None:
    grain = pytest.importorskip("grain")
    batches = source.shuffled_batches(128, seed=3, epochs=2)
    got = [batch["id"].tolist() for batch in grain.MapDataset.source(batches)]
    assert got == ids(batches)
    assert sorted(i for batch in got[: len(got) // 2] for i in batch) == list(range(COUNT))


def test_torch_data_loader_over_the_batches(source: RecordFileSource) -> None:
    torch = pytest.importorskip("torch")
    batches = source.shuffled_batches(128, seed=3)
    loader = torch.utils.data.DataLoader(batches, batch_size=None, num_workers=2)
    got = [batch["id"].tolist() for batch in loader]
    assert got == ids(batches)
