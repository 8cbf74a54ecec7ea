"""A brace pattern naming millions of paths is matched against the files that exist, in bounded memory
and time, with the results (and order) of trying its names one by one."""

from __future__ import annotations

from pathlib import Path

import pytest
from childrun import run_child
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrec
import tfrec.data.paths as paths_module
from tfrec.data import expand_paths

NAMES = [
    "x-00000005.tfrecord", "x-00000003.tfrecord", "x-99999999.tfrecord", "x-12.tfrecord", "y-1.tfrecord",
    "x-00000007-b.tfrecord", "x-00000007-a.tfrecord", "x--3.tfrecord", "x-007.tfrecord", "{x}-1.tfrecord",
]  # fmt: skip


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("braces")
    for name in NAMES:
        (directory / name).write_bytes(b"")
    (directory / "x-00000004.tfrecord").mkdir()
    return directory


def test_a_range_of_a_hundred_million_names_in_bounded_memory_and_time(tree: Path) -> None:
    child = run_child(
        f"""
        import time
        from tfrec.data import expand_paths
        start = time.perf_counter()
        found = expand_paths({str(tree)!r} + "/x-{{00000000..99999999}}.tfrecord")
        report([[p.rsplit("/", 1)[-1] for p in found], time.perf_counter() - start])
        """,
        timeout=60,
        memory=1 << 30,
    )
    assert child.result is not None, child.describe()
    names, seconds = child.result
    assert names == ["x-00000003.tfrecord", "x-00000005.tfrecord", "x-99999999.tfrecord"]
    assert seconds < 5


def test_many_names_with_braces_in_directories_is_an_argument_error(tree: Path) -> None:
    with pytest.raises(tfrec.InvalidArgumentError, match="braces in the file name"):
        expand_paths(str(tree) + "/{0000000..9999999}/x.tfrecord")


PIECES = st.sampled_from(
    ["x-", "y-", "-", ".tfrecord", "*", "?", "[0-9]", "{0..9}", "{00000000..00000009}", "{9..0}",
     "{-5..5}", "{a,b}", "{{x},y}", "{x,{-1,-3}}", "0000000", "{3,5,7}", "{000..007}", "{x}", "{}"]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=5))
def test_matching_against_the_listing_finds_what_trying_each_name_finds(
    tree: Path, pieces: list[str]
) -> None:
    pattern = str(tree) + "/" + "".join(pieces)
    try:
        one_by_one = expand_paths(pattern)
    except tfrec.MissingFileError:
        one_by_one = []
    limit = paths_module.MAX_EXPANSIONS
    paths_module.MAX_EXPANSIONS = 1  # match every brace pattern of 2+ names against the listing
    try:
        try:
            matched = expand_paths(pattern)
        except tfrec.MissingFileError:
            matched = []
    finally:
        paths_module.MAX_EXPANSIONS = limit
    assert sorted(matched) == sorted(one_by_one)
    if not any(char in pattern for char in "*?["):  # else a name several expansions match may sort by another
        assert matched == one_by_one
