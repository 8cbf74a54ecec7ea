"""ShardedWriter and write_dataset: names, round trips in each mode, atomicity, index files, summaries."""

from __future__ import annotations

import io
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.data import ShardedWriter, WriteSummary, build_index, shard_name, write_dataset
from tfrec.errors import EncodeError, InvalidArgumentError, OptionalDependencyError, TfrecError
from tfrec.features import ClassLabel, FeaturesDict, Tensor, Text

SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
record_lists = st.lists(st.binary(max_size=300), max_size=60)


def read_shards(paths: list[str]) -> list[list[bytes]]:
    return [list(tfrec.read_records(path)) for path in paths]


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


# -- names ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (("out/train", 0, 1), "out/train-00000-of-00001.tfrecord"),
        (("out/train", 15, 16, ""), "out/train-00015-of-00016"),
        (("t", 7, 100_000), "t-000007-of-100000.tfrecord"),  # tfds widens both numbers together
        (("t", 99_999, 99_999 + 1), "t-099999-of-100000.tfrecord"),
    ],
)
def test_shard_name(args: tuple[Any, ...], name: str) -> None:
    assert shard_name(*args) == name


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"num_shards": 2}, ["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]),
        ({"num_shards": 1, "compression": "gzip"}, ["train-00000-of-00001.tfrecord.gz"]),
        ({"num_shards": 1, "compression": "zlib"}, ["train-00000-of-00001.tfrecord.zz"]),
        (
            {"num_shards": 1, "compression": "gzip", "suffix": ".tfrecord.gz"},
            ["train-00000-of-00001.tfrecord.gz"],
        ),
        ({"num_shards": 1, "suffix": ".tfrec"}, ["train-00000-of-00001.tfrec"]),
        ({"max_records": 2}, [f"train-0000{i}-of-00003.tfrecord" for i in range(3)]),
        (
            {"max_records": 3, "index": True},
            [f"train-0000{i}-of-00002.tfrecord{end}" for i in range(2) for end in ("", ".idx")],
        ),
    ],
)
def test_names_are_exact(tmp_path: Path, options: dict[str, Any], names: list[str]) -> None:
    with ShardedWriter(tmp_path / "train", **options) as writer:
        writer.write_many([b"a", b"b", b"c", b"d", b"e"])
    assert listing(tmp_path) == names
    assert [os.path.basename(p) for p in writer.summary.paths] == [n for n in names if not n.endswith(".idx")]


def test_missing_directories_are_created(tmp_path: Path) -> None:
    summary = write_dataset([b"x"], tmp_path / "a" / "b" / "train", num_shards=1)
    assert summary.paths == [str(tmp_path / "a" / "b" / "train-00000-of-00001.tfrecord")]


# -- round trips ----------------------------------------------------------------------------------------


@SETTINGS
@given(records=record_lists, num_shards=st.integers(1, 7), batched=st.booleans())
def test_num_shards_round_robin(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes], num_shards: int, batched: bool
) -> None:
    directory = tmp_path_factory.mktemp("n")
    with ShardedWriter(directory / "d", num_shards=num_shards) as writer:
        if batched:  # write_many in two calls: round-robin continues across calls
            writer.write_many(records[:7])
            writer.write_many(records[7:])
        else:
            for record in records:
                writer.write(record)
    summary = writer.summary
    assert summary.paths == [shard_name(directory / "d", i, num_shards) for i in range(num_shards)]
    assert read_shards(summary.paths) == [records[k::num_shards] for k in range(num_shards)]
    check_summary(summary, records)


@SETTINGS
@given(records=record_lists, max_records=st.integers(1, 9))
def test_max_records_rolls_over(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes], max_records: int
) -> None:
    directory = tmp_path_factory.mktemp("r")
    with ShardedWriter(directory / "d", max_records=max_records) as writer:
        writer.write_many(records[:5])
        for record in records[5:]:
            writer.write(record)
    count = max(1, math.ceil(len(records) / max_records))
    assert writer.summary.paths == [shard_name(directory / "d", i, count) for i in range(count)]
    chunks = [records[k : k + max_records] for k in range(0, len(records), max_records)] or [[]]
    assert read_shards(writer.summary.paths) == chunks
    check_summary(writer.summary, records)


@SETTINGS
@given(records=record_lists, max_bytes=st.integers(1, 1200), batched=st.booleans())
def test_max_bytes_rolls_over(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes], max_bytes: int, batched: bool
) -> None:
    directory = tmp_path_factory.mktemp("b")
    with ShardedWriter(directory / "d", max_bytes=max_bytes, index=True) as writer:
        if batched:
            writer.write_many(records)
        else:
            for record in records:
                writer.write(record)
    shards = read_shards(writer.summary.paths)
    assert [r for shard in shards for r in shard] == records
    framed = [sum(len(r) + 16 for r in shard) for shard in shards]
    for k, shard in enumerate(shards):
        # A shard stays within the limit, unless it is one record that alone exceeds it ...
        assert framed[k] <= max_bytes or len(shard) == 1
        # ... and a shard is only closed when the next record would not fit.
        if k + 1 < len(shards):
            assert framed[k] + len(shards[k + 1][0]) + 16 > max_bytes
    assert all(shards) or len(shards) == 1
    check_summary(writer.summary, records)
    for shard in writer.summary.shards:  # the index written along equals the one built afterwards
        assert shard.index_path is not None
        rebuilt = build_index(shard.path, directory / "rebuilt.idx")
        assert Path(shard.index_path).read_bytes() == Path(rebuilt).read_bytes()


def check_summary(summary: WriteSummary, records: list[bytes]) -> None:
    assert summary.records == len(records) == sum(summary.shard_lengths)
    assert summary.data_bytes == sum(map(len, records))
    for shard, contents in zip(summary.shards, read_shards(summary.paths), strict=True):
        assert shard.records == len(contents)
        assert shard.data_bytes == sum(map(len, contents))
        assert shard.bytes == os.path.getsize(shard.path) == shard.data_bytes + 16 * shard.records


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_shards(tmp_path: Path, compression: str) -> None:
    records = [bytes([i]) * 100 for i in range(50)]
    summary = write_dataset(records, tmp_path / "c", num_shards=3, compression=compression)
    assert read_shards(summary.paths) == [records[k::3] for k in range(3)]
    assert all(shard.bytes == os.path.getsize(shard.path) < shard.data_bytes for shard in summary.shards)


def test_features_serialize_samples(tmp_path: Path) -> None:
    features = FeaturesDict(
        {
            "label": ClassLabel(names=["no", "yes"]),
            "emb": Tensor(shape=(3,), dtype=np.float32),
            "text": Text(),
        }
    )
    samples = [{"label": i % 2, "emb": np.full(3, i, np.float32), "text": f"sample {i}"} for i in range(10)]
    with ShardedWriter(tmp_path / "f", num_shards=2, features=features) as writer:
        writer.write(samples[0])
        writer.write_many(samples[1:])
    decoded = [features.deserialize_example(r) for shard in read_shards(writer.summary.paths) for r in shard]
    expected = samples[0::2] + samples[1::2]
    assert [d["text"] for d in decoded] == [s["text"] for s in expected]
    assert [int(d["label"]) for d in decoded] == [s["label"] for s in expected]
    assert all(np.array_equal(d["emb"], s["emb"]) for d, s in zip(decoded, expected, strict=True))


def test_empty_datasets(tmp_path: Path) -> None:
    fixed = write_dataset([], tmp_path / "n", num_shards=3)
    assert fixed.shard_lengths == [0, 0, 0]
    rolled = write_dataset([], tmp_path / "r", max_records=10)
    assert rolled.paths == [
        str(tmp_path / "r-00000-of-00001.tfrecord")
    ]  # one empty shard: the dataset exists
    assert read_shards(fixed.paths + rolled.paths) == [[], [], [], []]


# -- index files ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{"num_shards": 3}, {"max_records": 4}, {"max_bytes": 200}])
def test_index_files_equal_build_index(tmp_path: Path, options: dict[str, Any]) -> None:
    records = [os.urandom(n) for n in [0, 1, 50, 7, 300, 2, 90, 11, 0, 64]]
    summary = write_dataset(records, tmp_path / "i", index=True, **options)
    for shard in summary.shards:
        assert shard.index_path == shard.path + ".idx"
        written = Path(shard.index_path).read_bytes()
        rebuilt = Path(build_index(shard.path, tmp_path / "rebuilt.idx")).read_bytes()
        assert written == rebuilt
        assert written.count(b"\n") == shard.records


# -- atomicity ------------------------------------------------------------------------------------------


class Boom(Exception):
    pass


@pytest.mark.parametrize("options", [{"num_shards": 3}, {"max_records": 2}, {"max_bytes": 40}])
@pytest.mark.parametrize("index", [False, True])
def test_an_exception_leaves_nothing(tmp_path: Path, options: dict[str, Any], index: bool) -> None:
    with pytest.raises(Boom) as caught, ShardedWriter(tmp_path / "x", index=index, **options) as writer:
        writer.write_many([b"0123456789"] * 7)  # several shards finished and pending
        assert not any(name.startswith("x-") for name in listing(tmp_path))  # no final name before close
        raise Boom
    assert listing(tmp_path) == []  # neither final names nor temporary files
    if sys.version_info >= (3, 11):
        assert any("no shard was kept" in note for note in caught.value.__notes__)


def test_a_failure_while_renaming_removes_published_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = ShardedWriter(tmp_path / "x", max_records=1)
    writer.write_many([b"a", b"b", b"c"])
    real_replace = os.replace
    calls = []

    def failing_replace(source: str, target: str) -> None:
        calls.append(target)
        if str(target).endswith("-00002-of-00003.tfrecord"):
            raise OSError("disk full")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        writer.close()
    assert any(str(t).endswith("-00000-of-00003.tfrecord") for t in calls)  # one was published, then removed
    assert listing(tmp_path) == []


def test_abort_removes_everything(tmp_path: Path) -> None:
    writer = ShardedWriter(tmp_path / "x", num_shards=2, index=True)
    writer.write_many([b"a", b"b", b"c"])
    writer.abort()
    assert listing(tmp_path) == []
    with pytest.raises(TfrecError, match="closed ShardedWriter"):
        writer.write(b"d")
    with pytest.raises(TfrecError, match="aborted"):
        writer.close()


def test_close_is_idempotent_and_the_summary_waits_for_it(tmp_path: Path) -> None:
    writer = ShardedWriter(tmp_path / "x", num_shards=2)
    writer.write(b"a")
    with pytest.raises(TfrecError, match="once the ShardedWriter is closed"):
        writer.summary  # noqa: B018
    assert repr(writer) == f"ShardedWriter({str(tmp_path / 'x')!r}, num_shards=2, 1 records, open)"
    first = writer.close()
    assert writer.close() is first is writer.summary
    with pytest.raises(TfrecError, match="closed ShardedWriter"):
        writer.write(b"b")


# -- arguments ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "give exactly one of num_shards, max_records, max_bytes; found none"),
        ({"num_shards": 2, "max_records": 5}, "found num_shards=2, max_records=5"),
        ({"num_shards": 0}, "num_shards must be an int >= 1, not 0"),
        ({"max_records": -1}, "max_records must be an int >= 1, not -1"),
        ({"max_bytes": 1.5}, "max_bytes must be an int >= 1, not 1.5"),
        ({"num_shards": True}, "num_shards must be an int >= 1, not True"),
        ({"num_shards": 1, "compression": "zlib", "index": True}, "index=True needs uncompressed shards"),
        ({"num_shards": 1, "suffix": ".tfrecord.gz"}, "suffix '.tfrecord.gz' names gzip compression"),
        ({"num_shards": 1, "features": {"a": int}}, "features must be a FeaturesDict, not dict"),
    ],
)
def test_invalid_arguments(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        ShardedWriter(tmp_path / "x", **options)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert listing(tmp_path) == []


def test_without_features_only_bytes(tmp_path: Path) -> None:
    with (
        pytest.raises(EncodeError, match="pass features="),
        ShardedWriter(tmp_path / "x", num_shards=1) as writer,
    ):
        writer.write({"label": 1})
    assert listing(tmp_path) == []


# -- write_dataset's progress bar -----------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("progress", "terminal", "shown"),
    [(None, False, False), (None, True, True), (False, True, False), (True, False, True)],
)
def test_progress_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, progress: bool | None, terminal: bool, shown: bool
) -> None:
    pytest.importorskip("tqdm")
    stderr = FakeTerminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    summary = write_dataset((b"x" for _ in range(3000)), tmp_path / "p", num_shards=2, progress=progress)
    assert summary.records == 3000
    output = stderr.getvalue()
    assert ("3.00k records" in output and "records/s" in output) == shown, output


def test_progress_true_needs_tqdm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails as if tqdm were not installed
    with pytest.raises(OptionalDependencyError, match=r"pip install 'tfrec\[progress\]'"):
        write_dataset([b"x"], tmp_path / "p", num_shards=1, progress=True)
    assert write_dataset([b"x"], tmp_path / "q", num_shards=1).records == 1  # auto: quietly without a bar
