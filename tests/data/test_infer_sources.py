"""tfrec.infer_features reads what a dataset reads: paths, lists, globs, braces, directories, URLs,
compression per file, the sample across files; records and a single path as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tfrec
from tfrec.features import FeaturesDict, Tensor, Text
from tfrec.features.infer import propose_features


def infer_from_one_path(path: Path) -> FeaturesDict:
    """The features layer's proposal from the records of one file, read as they are."""
    return propose_features(tfrec.read_records(path))


def doc(n: int, what: str, missing: int = 0) -> str:
    return f"inferred from {n} records: {what}" + (
        f", missing in {missing} record{'s' * (missing != 1)}" if missing else ""
    )


def write_parts(directory: Path) -> list[Path]:
    """Three files, one gzip-compressed: "id" everywhere, "name" only from the second file on."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = [
        [{"id": i} for i in range(3)],
        [{"id": i, "name": f"n{i}"} for i in range(3, 6)],
        [{"id": i, "name": f"n{i}"} for i in range(6, 9)],
    ]
    paths = []
    for n, part in enumerate(rows):
        path = directory / f"part-{n:05d}.tfrecord{'.gz' if n == 1 else ''}"
        tfrec.write_records(path, [tfrec.encode_example(r) for r in part])
        paths.append(path)
    (directory / "features.json").write_text("{}")  # a sidecar a directory listing leaves out
    return paths


def proposal(n: int, named: int) -> FeaturesDict:
    """What n records of write_parts' files give when ``named`` of them have a "name"."""
    expected: dict[str, object] = {"id": Tensor(shape=(), dtype=np.int64, doc=doc(n, "1 value each"))}
    if named == n:
        expected["name"] = Text(doc=doc(n, "1 value each"))
    elif named:
        expected["name"] = Tensor(shape=(None,), dtype=str, doc=doc(n, "1 value each", missing=n - named))
    return FeaturesDict(expected)


def test_every_kind_of_source_gives_the_same_proposal(tmp_path: Path) -> None:
    paths = write_parts(tmp_path / "data")
    everything = proposal(9, named=6)
    assert tfrec.infer_features(tmp_path / "data") == everything
    assert tfrec.infer_features(str(tmp_path / "data" / "part-*")) == everything
    assert tfrec.infer_features(str(tmp_path / "data" / "part-{00000..00002}.tfrecord*")) == everything
    assert tfrec.infer_features([str(p) for p in paths]) == everything
    assert tfrec.infer_features(iter(paths)) == everything  # any iterable of paths, PathLike too
    assert tfrec.infer_features(paths[1]) == proposal(3, named=3)  # gzip from the suffix
    assert tfrec.infer_features(paths[1]) == infer_from_one_path(paths[1])
    assert tfrec.infer_features is tfrec.data.infer_features


def test_the_sample_is_read_file_after_file(tmp_path: Path) -> None:
    write_parts(tmp_path)
    assert tfrec.infer_features(tmp_path, sample=3) == proposal(3, named=0)
    assert tfrec.infer_features(tmp_path, sample=5) == proposal(5, named=2)
    assert tfrec.infer_features(tmp_path, sample=None) == proposal(9, named=6)
    assert tfrec.infer_features(tmp_path, sample=100) == proposal(9, named=6)


def test_records_as_before(tmp_path: Path) -> None:
    records = [tfrec.encode_example({"id": i}) for i in range(4)]
    assert tfrec.infer_features(records) == proposal(4, named=0)
    assert tfrec.infer_features(iter(records), sample=2) == proposal(2, named=0)
    assert tfrec.infer_features([]) == FeaturesDict({})


def test_user_mistakes_are_tfrec_errors(tmp_path: Path) -> None:
    write_parts(tmp_path)
    with pytest.raises(tfrec.InvalidArgumentError, match=r"not one record \(bytes\)"):
        tfrec.infer_features(tfrec.encode_example({"id": 1}))  # type: ignore[arg-type]
    with pytest.raises(tfrec.InvalidArgumentError, match="not float"):
        tfrec.infer_features(1.5)  # type: ignore[arg-type]
    with pytest.raises(tfrec.MissingFileError, match=r"nothing-\*\.tfrecord: matched no file"):
        tfrec.infer_features(str(tmp_path / "nothing-*.tfrecord"))
    with pytest.raises(tfrec.InvalidArgumentError, match="sample must be >= 1"):
        tfrec.infer_features(tmp_path, sample=0)
    with pytest.raises(tfrec.InvalidArgumentError, match=r"paths must be str or os\.PathLike, not bytes"):
        tfrec.infer_features([str(tmp_path), b"x"])  # type: ignore[list-item]


def test_errors_name_the_file_and_its_record(tmp_path: Path) -> None:
    write_parts(tmp_path / "bad-record")
    last = tmp_path / "bad-record" / "part-00003.tfrecord"
    tfrec.write_records(last, [tfrec.encode_example({"id": 9}), b"\xff" * 12])
    with pytest.raises(tfrec.DecodeError, match=r"part-00003\.tfrecord, record 1: not a valid Example"):
        tfrec.infer_features(tmp_path / "bad-record")

    paths = write_parts(tmp_path / "damaged")
    data = bytearray(paths[0].read_bytes())
    data[-1] ^= 1
    paths[0].write_bytes(bytes(data))
    with pytest.raises(tfrec.ChecksumError) as caught:
        tfrec.infer_features(tmp_path / "damaged")
    assert (caught.value.path, caught.value.index) == (str(paths[0]), 2)

    write_parts(tmp_path / "kinds")
    tfrec.write_records(tmp_path / "kinds" / "part-00003.tfrecord", [tfrec.encode_example({"id": 1.5})])
    with pytest.raises(tfrec.SchemaError, match=r"key 'id' holds different kinds .*record 0 of .*part-00003"):
        tfrec.infer_features(tmp_path / "kinds")


def test_fsspec_urls_with_storage_options(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    paths = write_parts(tmp_path)
    fs = fsspec.filesystem("memory")
    try:
        for path in paths:
            fs.pipe(f"/infer-test/{path.name}", path.read_bytes())
        got = tfrec.infer_features("memory://infer-test/part-*", storage_options={}, sample=None)
        assert got == proposal(9, named=6)
        assert tfrec.infer_features(["memory://infer-test/part-00001.tfrecord.gz"]) == proposal(3, named=3)
    finally:
        fs.rm("/infer-test", recursive=True)
