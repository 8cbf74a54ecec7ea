"""The dataset's grouped settings (ReadOptions, ShardOptions) and where its ops run (assemble.place)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from pathlib import Path
from typing import Any

import pytest
from datafiles import write_files

import tfrec
from tfrec.data import ReadOptions, ShardOptions, TFRecordDataset
from tfrec.data.pipeline.assemble import place
from tfrec.data.pipeline.batch import BatchOp
from tfrec.data.pipeline.decode import Decoder
from tfrec.data.pipeline.elements import DecodeOp, MapOp
from tfrec.data.pipeline.prefetch import PrefetchOp
from tfrec.data.pipeline.shuffle import ShuffleOp
from tfrec.data.pipeline.stage import PipelineRecipe
from tfrec.data.pipeline.take import TakeOp
from tfrec.errors import InvalidArgumentError, ShardingError

SPEC = {"id": tfrec.FixedLenFeature([], tfrec.int64)}


def test_options_are_exported_frozen_and_picklable() -> None:
    assert tfrec.ReadOptions is ReadOptions and tfrec.ShardOptions is ShardOptions
    read = ReadOptions(compression="gzip", on_error="skip", storage_options={"anon": True}, block_length=3)
    shard = ShardOptions(shard=(1, 4), shard_by="records", index_paths=[Path("a.idx")])
    assert shard.index_paths == ("a.idx",)  # kept as strings
    for options in (read, shard):
        assert pickle.loads(pickle.dumps(options)) == options
        with pytest.raises(dataclasses.FrozenInstanceError):
            options.shard = None  # type: ignore[misc,union-attr]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: ReadOptions(on_error="ignore"), InvalidArgumentError, "on_error must be"),
        (lambda: ReadOptions(block_length=0), InvalidArgumentError, "block_length must be >= 1"),
        (lambda: ReadOptions(compression="lz4"), tfrec.TfrecError, "unknown compression 'lz4'"),
        (lambda: ShardOptions(shard_by="bytes"), InvalidArgumentError, "shard_by must be"),
        (lambda: ShardOptions(index_paths="a.idx"), InvalidArgumentError, "a list of paths"),
        (lambda: ShardOptions(shard=(2, 2)), ShardingError, "shard index 2 of 2 is out of range"),
    ],
)
def test_options_are_checked_when_made(make: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()


def test_the_dataset_takes_few_arguments_and_only_option_objects(tmp_path: Path) -> None:
    assert len(inspect.signature(TFRecordDataset).parameters) <= 10
    write_files(tmp_path, [3])
    with pytest.raises(InvalidArgumentError, match=r"read_options must be a tfrec\.ReadOptions, not dict"):
        TFRecordDataset(tmp_path, read_options={"on_error": "skip"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"shard_options must be a tfrec\.ShardOptions"):
        TFRecordDataset(tmp_path, shard_options=(0, 2))  # type: ignore[arg-type]


def test_with_state_starts_the_chained_dataset_where_the_state_stood(tmp_path: Path) -> None:
    write_files(tmp_path, [20, 15])
    ds = TFRecordDataset(tmp_path, seed=1, cycle_length=2).shuffle(8).batch(3)
    expected = list(ds)
    it = iter(ds)
    next(it)
    resumed = ds.with_state(it.state())
    assert list(resumed) == expected[1:]
    assert list(ds) == expected  # the original dataset still starts at the beginning


def recipe(*ops: Any, decoded: bool = True) -> PipelineRecipe:
    return PipelineRecipe(("a.tfrecord",), ops=ops, decoder=Decoder(None, SPEC if decoded else None))


def test_place_decodes_once_where_nothing_later_needs_records() -> None:
    shuffle, batch, take, prefetch = ShuffleOp(10), BatchOp(4), TakeOp(5), PrefetchOp(2)
    alone = place(recipe(shuffle, take), 0)
    assert alone.processes is None and alone.consumer.ops == (shuffle, take, DecodeOp())
    assert place(recipe(shuffle, batch), 0).consumer.ops == (shuffle, batch)  # batch decodes
    assert place(recipe(shuffle, decoded=False), 0).consumer.ops == (shuffle,)  # raw bytes wanted
    parallel = place(recipe(shuffle, take, prefetch), 2)
    assert parallel.processes is not None
    assert parallel.processes.ops == (shuffle, DecodeOp())  # decoded in the processes
    assert parallel.consumer.ops == (take,) and not parallel.consumer_raw  # their prefetch is theirs
    later = place(recipe(shuffle, take, MapOp(abs)), 2)  # map decodes itself in the consumer
    assert later.processes is not None and later.processes.ops == (shuffle,)
    assert later.consumer.ops == (take, MapOp(abs)) and later.consumer_raw
