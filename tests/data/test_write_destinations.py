"""Writers and what is already at their output: refused unless overwrite=True, replaced whole with it;
and writers given URLs (fsspec's memory:// and file://), publishing each object only when whole.

The samples are rows of scikit-learn's wine table (data this project did not make).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.data.tfds.directory import from_tfds_dir, write_tfds_dir
from tfrec.data.writing import publish
from tfrec.errors import InvalidArgumentError, MissingFileError, OptionalDependencyError, OutputExistsError
from tfrec.features import FeaturesDict, Tensor

datasets = pytest.importorskip("sklearn.datasets")
fsspec = pytest.importorskip("fsspec")

COLUMNS = ("alcohol", "malic_acid", "color_intensity")
FEATURES = FeaturesDict(
    {**{name: Tensor(shape=(), dtype=np.float32) for name in COLUMNS}, "target": np.int64}
)


def wine(rows: int | None = None) -> list[dict[str, Any]]:
    frame = datasets.load_wine(as_frame=True).frame
    frame = frame if rows is None else frame.iloc[:rows]
    return [
        {**{name: np.float32(row[name]) for name in COLUMNS}, "target": int(row["target"])}
        for _, row in frame.iterrows()
    ]


def targets(paths: Any) -> list[int]:
    return [int(FEATURES.deserialize_example(r)["target"]) for p in paths for r in tfrec.read_records(p)]


def memory_url(name: str) -> str:
    return f"memory://tfrec-tests/{uuid.uuid4().hex}/{name}"


def memory_names(url: str) -> list[str]:
    fs, inner = fsspec.core.url_to_fs(url)
    return sorted(entry.rsplit("/", 1)[-1] for entry in fs.ls(inner, detail=False))


# -- refusing an earlier output ----------------------------------------------------------------------------


def test_record_writer_replaces_a_file_as_tf_does_and_refuses_it_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "wine.tfrecord"
    tfrec.write_records(path, [FEATURES.serialize_example(s) for s in wine(5)])
    with pytest.raises(OutputExistsError, match="overwrite=True") as caught:
        tfrec.RecordWriter(path, overwrite=False)
    assert caught.value.paths == [str(path)] and caught.value.option == "overwrite=True"
    assert sorted(os.listdir(tmp_path)) == ["wine.tfrecord"]  # no temporary file made
    with tfrec.RecordWriter(path, overwrite=True) as writer:
        writer.write(FEATURES.serialize_example(wine(1)[0]))
        assert len(targets([path])) == 5  # the old file stays whole until the new one is
    assert len(targets([path])) == 1


@pytest.mark.parametrize(
    ("earlier", "kind"),
    [
        ({"num_shards": 3}, "another count"),
        ({"num_shards": 2}, "the same count"),
        ({"num_shards": 2, "compression": "gzip"}, "another compression"),
        ({"num_shards": 2, "index": True}, "with index files"),
    ],
)
def test_write_dataset_refuses_an_earlier_set_unless_overwrite(
    tmp_path: Path, earlier: dict[str, Any], kind: str
) -> None:
    samples = wine()
    prefix = tmp_path / "out" / "wine"
    tfrec.write_dataset(samples[:100], prefix, FEATURES, **earlier)
    before = sorted(os.listdir(tmp_path / "out"))
    with pytest.raises(OutputExistsError, match=r"wine-00000-of-0000\d.*pass overwrite=True") as caught:
        tfrec.write_dataset(samples, prefix, FEATURES, num_shards=2)
    assert caught.value.paths and all("wine-0000" in path for path in caught.value.paths), kind
    assert sorted(os.listdir(tmp_path / "out")) == before  # nothing written, nothing removed
    summary = tfrec.write_dataset(samples, prefix, FEATURES, num_shards=2, overwrite=True)
    assert sorted(os.listdir(tmp_path / "out")) == [
        "wine-00000-of-00002.tfrecord",
        "wine-00001-of-00002.tfrecord",
    ]
    assert sorted(targets(tfrec.data.expand_paths(f"{prefix}-*"))) == sorted(s["target"] for s in samples)
    assert summary.records == len(samples)


def test_temporary_files_of_the_prefix_count_as_an_earlier_output(tmp_path: Path) -> None:
    left = tmp_path / ".wine-00000.5f2a9c01.tmp"  # what a killed writer leaves
    left.write_bytes(b"")
    with pytest.raises(OutputExistsError, match="temporary files") as caught:
        tfrec.ShardedWriter(tmp_path / "wine", num_shards=1)
    assert caught.value.paths == [str(left)]
    tfrec.write_dataset(wine(3), tmp_path / "wine", FEATURES, num_shards=1, overwrite=True)
    assert left.exists()  # another writer's file: left alone
    tfrec.write_dataset(wine(3), tmp_path / "wine-extra", FEATURES, num_shards=1)  # another prefix


def test_a_set_published_meanwhile_is_refused_at_close_and_nothing_is_kept(tmp_path: Path) -> None:
    writer = tfrec.ShardedWriter(tmp_path / "wine", num_shards=2, features=FEATURES)
    writer.write_many(wine(10))
    with pytest.raises(OutputExistsError, match="temporary files"):  # the first writer is at work
        tfrec.write_dataset(wine(3), tmp_path / "wine", FEATURES, num_shards=3)
    tfrec.write_dataset(wine(3), tmp_path / "wine", FEATURES, num_shards=3, overwrite=True)
    with pytest.raises(OutputExistsError, match="wine-00000-of-00003"):
        writer.close()
    assert sorted(os.listdir(tmp_path)) == [f"wine-0000{i}-of-00003.tfrecord" for i in range(3)]


def test_output_exists_error_is_a_usage_error_and_a_file_exists_error(tmp_path: Path) -> None:
    tfrec.write_records(tmp_path / "x.tfrecord", [b"a"])
    with pytest.raises(OutputExistsError) as caught:
        tfrec.write_records(tmp_path / "x.tfrecord", [b"b"], overwrite=False)
    assert isinstance(caught.value, InvalidArgumentError) and isinstance(caught.value, FileExistsError)
    assert list(tfrec.read_records(tmp_path / "x.tfrecord")) == [b"a"]


# -- replacing an earlier output whole ----------------------------------------------------------------------


def test_overwrite_removes_the_old_set_only_after_the_new_one_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = tmp_path / "wine"
    tfrec.write_dataset(wine(40), prefix, FEATURES, num_shards=4)  # 4 old shards, 2 new ones
    steps: list[tuple[str, str, str]] = []
    move, remove = publish.move_file, publish.remove_file
    monkeypatch.setattr(publish, "move_file", lambda a, b: (steps.append(("move", a, b)), move(a, b))[1])
    monkeypatch.setattr(publish, "remove_file", lambda a: (steps.append(("remove", a, "")), remove(a))[1])
    tfrec.write_dataset(wine(), prefix, FEATURES, num_shards=2, overwrite=True)
    old = [f"{prefix}-0000{i}-of-00004.tfrecord" for i in range(4)]
    aside = [(source, target) for kind, source, target in steps if kind == "move" and source in old]
    assert [source for source, _ in aside] == old  # hidden first, in index order: not removed
    assert all(os.path.basename(target).startswith(".") for _, target in aside)
    new = [
        i
        for i, (kind, _, target) in enumerate(steps)
        if kind == "move" and target.endswith("-of-00002.tfrecord")
    ]
    removed = [(i, path) for i, (kind, path, _) in enumerate(steps) if kind == "remove"]
    assert [path for _, path in removed] == [target for _, target in aside]
    assert min(i for i, _ in removed) > max(new)  # removed once the new set is whole


def test_a_failed_rename_puts_the_old_set_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = tmp_path / "wine"
    tfrec.write_dataset(wine(20), prefix, FEATURES, num_shards=2)
    move = publish.move_file
    moves: list[str] = []

    def failing(source: str, target: str) -> None:
        moves.append(target)
        if len(moves) == 4:  # both old shards moved aside, the first new one published
            raise OSError(28, "No space left on device")
        move(source, target)

    monkeypatch.setattr(publish, "move_file", failing)
    with pytest.raises(OSError, match="No space left"):
        tfrec.write_dataset(wine(), prefix, FEATURES, num_shards=2, overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["wine-00000-of-00002.tfrecord", "wine-00001-of-00002.tfrecord"]
    assert len(targets(tfrec.data.expand_paths(f"{prefix}-*"))) == 20


_DIES = """
import os, sys
import numpy as np
import tfrec
from tfrec.data.writing import publish
from tfrec.features import FeaturesDict, Tensor

features = FeaturesDict({"target": np.int64})
move, count, stop = publish.move_file, [0], int(sys.argv[2])

def dying(source, target):
    if count[0] == stop:
        os._exit(3)  # killed: no handler, no clean-up
    count[0] += 1
    move(source, target)

publish.move_file = dying
tfrec.write_dataset([{"target": 100 + i} for i in range(6)], sys.argv[1], features,
                    num_shards=int(sys.argv[3]), overwrite=True)
"""


@pytest.mark.parametrize("new_count", [2, 3])
def test_a_writer_killed_while_publishing_never_leaves_a_mix_nor_loses_the_old_set(
    tmp_path: Path, new_count: int
) -> None:
    features = FeaturesDict({"target": np.int64})
    old = list(range(4))
    script = tmp_path / "dies.py"
    script.write_text(textwrap.dedent(_DIES))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    moves = 2 + new_count  # the 2 old shards are moved aside first
    for stop in range(moves + 1):
        directory = tmp_path / f"stop{stop}"
        prefix = directory / "set"
        tfrec.write_dataset([{"target": t} for t in old], prefix, features, num_shards=2)
        done = subprocess.run([sys.executable, str(script), str(prefix), str(stop), str(new_count)], env=env)
        try:
            visible = sorted(
                int(features.deserialize_example(r)["target"])
                for p in tfrec.data.expand_paths(f"{prefix}-*")
                for r in tfrec.read_records(p)
            )
        except (MissingFileError, InvalidArgumentError):
            visible = None  # visibly incomplete, or two counts: readers refuse
        assert visible in (old, [100 + i for i in range(6)], None), (stop, visible)
        if visible != [100 + i for i in range(6)]:  # not replaced: every old record is still on disk
            everything = [
                int(features.deserialize_example(r)["target"])
                for name in os.listdir(directory)
                if "-of-00002" in name
                for r in tfrec.read_records(directory / name)
            ]
            assert sorted(set(everything) & set(old)) == old, stop
        assert done.returncode == (3 if stop < moves else 0)


def test_write_tfds_dir_refuses_a_dataset_then_replaces_it_whole(tmp_path: Path) -> None:
    samples = wine()
    write_tfds_dir(tmp_path, {"train": samples[:100], "test": samples[100:]}, FEATURES, name="wine")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(OutputExistsError, match=r"dataset_info\.json"):
        write_tfds_dir(tmp_path, {"train": samples}, FEATURES, name="wine", num_shards=2)
    assert sorted(os.listdir(tmp_path)) == before
    summaries = write_tfds_dir(
        tmp_path, {"train": samples}, FEATURES, name="wine", num_shards=2, overwrite=True
    )
    assert sorted(os.listdir(tmp_path)) == [
        "dataset_info.json",
        "features.json",
        "wine-train.tfrecord-00000-of-00002",
        "wine-train.tfrecord-00001-of-00002",
    ]  # the old test split went with the old dataset
    paths, _ = from_tfds_dir(tmp_path, "train")
    assert paths == summaries["train"].paths and len(targets(paths)) == len(samples)


# -- URLs ---------------------------------------------------------------------------------------------------


def test_write_dataset_to_memory_urls_reads_back_and_refuses_again() -> None:
    prefix = memory_url("wine")
    samples = wine()
    summary = tfrec.write_dataset(samples, prefix, FEATURES, num_shards=3, compression="gzip")
    assert summary.paths == [f"{prefix}-0000{i}-of-00003.tfrecord.gz" for i in range(3)]
    assert memory_names(prefix.rsplit("/", 1)[0]) == [p.rsplit("/", 1)[-1] for p in summary.paths]
    assert summary.bytes == sum(
        fsspec.core.url_to_fs(p)[0].size(fsspec.core.url_to_fs(p)[1]) for p in summary.paths
    )
    read = [int(x["target"]) for x in tfrec.TFRecordDataset(f"{prefix}-*", features=FEATURES)]
    assert sorted(read) == sorted(s["target"] for s in samples)
    with pytest.raises(OutputExistsError, match=r"memory://.*wine-00000-of-00003\.tfrecord\.gz"):
        tfrec.write_dataset(samples, prefix, FEATURES, num_shards=2)
    tfrec.write_dataset(samples[:10], prefix, FEATURES, num_shards=2, overwrite=True)
    assert memory_names(prefix.rsplit("/", 1)[0]) == [f"wine-0000{i}-of-00002.tfrecord" for i in range(2)]


def test_record_writer_to_a_memory_url_publishes_only_a_whole_object() -> None:
    url = memory_url("wine.tfrecord")
    directory = url.rsplit("/", 1)[0]
    with tfrec.RecordWriter(url) as writer:
        writer.write_many(FEATURES.serialize_example(s) for s in wine(10))
        assert memory_names(directory) == [n for n in memory_names(directory) if n.endswith(".tmp")]
    assert memory_names(directory) == ["wine.tfrecord"]
    assert len(list(tfrec.TFRecordDataset(url))) == 10
    with pytest.raises(OutputExistsError):
        tfrec.write_records(url, [b"x"], overwrite=False)
    assert tfrec.write_records(url, [b"x"]) == 1
    assert list(tfrec.TFRecordDataset(url)) == [b"x"]


def test_a_writer_killed_midway_leaves_no_object_that_looks_complete() -> None:
    prefix = memory_url("wine")
    directory = prefix.rsplit("/", 1)[0]
    with (
        pytest.raises(RuntimeError, match="killed"),
        tfrec.ShardedWriter(prefix, num_shards=2, features=FEATURES) as w,
    ):
        w.write_many(wine(50))
        raise RuntimeError("killed")
    assert memory_names(directory) == []
    url = f"{directory}/one.tfrecord"
    with pytest.raises(RuntimeError, match="killed"), tfrec.RecordWriter(url) as writer:
        writer.write(b"x")
        raise RuntimeError("killed")
    assert memory_names(directory) == ["one.tfrecord.partial"]  # kept under a name that is not the file's


def test_file_urls_are_local_paths(tmp_path: Path) -> None:
    summary = tfrec.write_dataset(wine(), f"file://{tmp_path}/wine", FEATURES, num_shards=2, index=True)
    assert sorted(os.listdir(tmp_path)) == [
        "wine-00000-of-00002.tfrecord",
        "wine-00000-of-00002.tfrecord.idx",
        "wine-00001-of-00002.tfrecord",
        "wine-00001-of-00002.tfrecord.idx",
    ]
    assert len(targets([tmp_path / os.path.basename(p) for p in summary.paths])) == 178
    tfrec.write_records(f"file://{tmp_path}/one.tfrecord", [b"x"])
    assert list(tfrec.read_records(tmp_path / "one.tfrecord")) == [b"x"]


def test_write_tfds_dir_to_a_memory_url() -> None:
    directory = memory_url("wine/1.0.0")
    write_tfds_dir(directory, {"train": wine()}, FEATURES, name="wine", num_shards=2)
    assert memory_names(directory) == [
        "dataset_info.json",
        "features.json",
        "wine-train.tfrecord-00000-of-00002",
        "wine-train.tfrecord-00001-of-00002",
    ]
    fs, inner = fsspec.core.url_to_fs(directory)
    info = json.loads(fs.cat_file(f"{inner}/dataset_info.json"))
    assert info["splits"][0]["shardLengths"] == ["89", "89"]
    saved = FeaturesDict.from_json(json.loads(fs.cat_file(f"{inner}/features.json")))
    read = list(tfrec.TFRecordDataset(f"{directory}/wine-train.tfrecord-*", features=saved))
    assert len(read) == 178
    write_tfds_dir(directory, {"train": wine(5)}, FEATURES, name="wine", overwrite=True)
    assert memory_names(directory) == [
        "dataset_info.json",
        "features.json",
        "wine-train.tfrecord-00000-of-00001",
    ]


def test_url_index_files_are_refused_and_fsspec_is_named_when_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(InvalidArgumentError, match="index=True"):
        tfrec.ShardedWriter(memory_url("wine"), num_shards=1, index=True)
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(OptionalDependencyError, match=r"pip install 'tfrec\[fsspec\]'"):
        tfrec.write_dataset([b"x"], "s3://bucket/wine", num_shards=1)
    with pytest.raises(OptionalDependencyError, match=r"tfrec\[fsspec\]"):
        tfrec.RecordWriter("gs://bucket/wine.tfrecord")
