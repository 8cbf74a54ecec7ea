"""A file gone when a dataset reads it is a MissingFileError naming the file and saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

import tfrec
from tfrec.data import TFRecordDataset


def test_a_file_deleted_after_the_dataset_was_made(tmp_path: Path) -> None:
    for n in range(2):
        tfrec.write_records(tmp_path / f"p-{n}.tfrecord", [b"a", b"b"])
    ds = TFRecordDataset(tmp_path)
    (tmp_path / "p-1.tfrecord").unlink()
    with pytest.raises(tfrec.MissingFileError, match="deleted or moved since") as caught:
        list(ds)
    assert caught.value.path == str(tmp_path / "p-1.tfrecord")


def test_a_file_deleted_before_reading_processes_open_it(tmp_path: Path) -> None:
    tfrec.write_records(tmp_path / "p.tfrecord", [b"a", b"b"])
    ds = TFRecordDataset(tmp_path, num_workers=1)
    (tmp_path / "p.tfrecord").unlink()
    with pytest.raises(tfrec.MissingFileError, match="deleted or moved since"):
        list(ds)


def test_memory_urls_are_not_seen_by_reading_processes() -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    try:
        for n in range(2):
            with fs.open(f"/vanish-test/p-{n}.tfrecord", "wb") as stream:
                tfrec.write_records(stream, [b"a", b"b"])
        assert sorted(TFRecordDataset("memory://vanish-test/")) == [b"a", b"a", b"b", b"b"]
        with pytest.raises(
            tfrec.MissingFileError, match="memory:// filesystem lives in the process"
        ) as caught:
            list(TFRecordDataset("memory://vanish-test/", num_workers=2))
        assert caught.value.path is not None and caught.value.path.startswith("memory://")
    finally:
        fs.rm("/vanish-test", recursive=True)
