"""expand_paths: globs, brace patterns, directories, URLs; deterministic order; clear errors."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

import tfrec
from tfrec.data import expand_paths, open_binary
from tfrec.data.paths import expand_braces
from tfrec.errors import MissingFileError


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in ["b.tfrecord", "a.tfrecord", "c.tfrecord.gz", "features.json", "notes.txt", "x.idx",
                 ".hidden.tfrecord", "_SUCCESS", "sub/d.tfrecord", "sub/deeper/e.tfrecord"]:  # fmt: skip
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return tmp_path


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("x", ["x"]),
        ("x-{a,b}", ["x-a", "x-b"]),
        ("{00000..00003}", ["00000", "00001", "00002", "00003"]),
        ("{8..11}", ["8", "9", "10", "11"]),
        ("{3..1}", ["3", "2", "1"]),
        ("{0..1}-{a,b}", ["0-a", "0-b", "1-a", "1-b"]),
        ("{a,{b,c}d}", ["a", "bd", "cd"]),
        ("{x}", ["{x}"]),
        ("{}", ["{}"]),
    ],
)
def test_expand_braces(pattern: str, expected: list[str]) -> None:
    assert expand_braces(pattern) == expected


def test_unbalanced_brace_is_an_error() -> None:
    with pytest.raises(tfrec.TfrecError, match="unbalanced"):
        expand_braces("x{a,b")


def test_directory_yields_sorted_visible_data_files(tree: Path) -> None:
    assert expand_paths(tree) == [str(tree / n) for n in ["a.tfrecord", "b.tfrecord", "c.tfrecord.gz"]]


def test_glob_is_sorted_and_recursive_glob_reaches_subdirectories(tree: Path) -> None:
    assert expand_paths(str(tree / "*.tfrecord")) == [str(tree / "a.tfrecord"), str(tree / "b.tfrecord")]
    found = expand_paths(str(tree / "**" / "*.tfrecord"))
    names = [os.path.relpath(p, tree) for p in found]
    assert names == sorted(names)
    assert set(names) == {"a.tfrecord", "b.tfrecord", os.path.join("sub", "d.tfrecord"),
                          os.path.join("sub", "deeper", "e.tfrecord")}  # fmt: skip


def test_patterns_keep_their_order_and_duplicates_go(tree: Path) -> None:
    found = expand_paths([tree / "b.tfrecord", str(tree / "*.tfrecord"), str(tree / "{a,b}.tfrecord")])
    assert found == [str(tree / "b.tfrecord"), str(tree / "a.tfrecord")]


def test_brace_range_keeps_zero_padding(tmp_path: Path) -> None:
    for n in range(12):
        (tmp_path / f"s-{n:05d}-of-00012").write_bytes(b"")
    found = expand_paths(str(tmp_path / "s-{00002..00010}-of-00012"))
    assert found == [str(tmp_path / f"s-{n:05d}-of-00012") for n in range(2, 11)]


@pytest.mark.parametrize("pattern", ["missing.tfrecord", "*.nothing", "{a,b}.none", "nodir/"])
def test_no_match_is_a_file_not_found_error_naming_the_pattern(tree: Path, pattern: str) -> None:
    with pytest.raises(MissingFileError) as caught:
        expand_paths([str(tree / "a.tfrecord"), str(tree / pattern)])
    assert isinstance(caught.value, FileNotFoundError)
    assert str(tree / pattern) in str(caught.value)
    assert caught.value.path == str(tree / pattern)
    again = pickle.loads(pickle.dumps(caught.value))
    assert type(again) is MissingFileError and str(again) == str(caught.value)


def test_no_paths_and_wrong_types_are_errors() -> None:
    with pytest.raises(MissingFileError):
        expand_paths([])
    with pytest.raises(tfrec.TfrecError, match="not bytes"):
        expand_paths(b"x.tfrecord")  # type: ignore[arg-type]
    with pytest.raises(tfrec.TfrecError, match="not int"):
        expand_paths([3])  # type: ignore[list-item]


def test_file_urls_are_local_paths(tree: Path) -> None:
    assert expand_paths(f"file://{tree}/*.tfrecord") == [str(tree / "a.tfrecord"), str(tree / "b.tfrecord")]


def test_memory_urls_through_fsspec() -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    for name in ["b.tfrecord", "a.tfrecord", "meta.json"]:
        fs.pipe(f"/sources-test/{name}", b"data")
    try:
        # URLs come back in fsspec's canonical spelling (memory:/// here)
        assert expand_paths("memory://sources-test/") == [
            "memory:///sources-test/a.tfrecord", "memory:///sources-test/b.tfrecord"
        ]  # fmt: skip
        assert expand_paths("memory://sources-test/{b,a}.tfrecord") == [
            "memory:///sources-test/b.tfrecord", "memory:///sources-test/a.tfrecord"
        ]  # fmt: skip
        assert expand_paths("memory://sources-test/*.json") == ["memory:///sources-test/meta.json"]
        with open_binary("memory://sources-test/a.tfrecord") as stream:
            assert stream.read() == b"data"
        with pytest.raises(MissingFileError, match="memory://sources-test/none"):
            expand_paths("memory://sources-test/none")
    finally:
        fs.rm("/sources-test", recursive=True)


def test_url_without_fsspec_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(tfrec.OptionalDependencyError, match=r"tfrec\[fsspec\]"):
        expand_paths("s3://bucket/x.tfrecord")
