"""A saved iterator state is checked field by field: an edited one is a DatasetStateError naming the
field, never records silently lost or repeated, never a bare builtin."""

from __future__ import annotations

import copy
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.data import TFRecordDataset
from tfrec.errors import DatasetStateError

Edit = Callable[[dict[str, Any]], None]


def _files(directory: Path, sizes: list[int]) -> None:
    for n, size in enumerate(sizes):
        tfrec.write_records(directory / f"p-{n}.tfrecord", [f"{n}:{i}".encode() for i in range(size)])


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[TFRecordDataset, dict[str, Any], int]:
    directory = tmp_path_factory.mktemp("states")
    _files(directory, [1000, 1000, 1000, 680])
    ds = TFRecordDataset(directory, cycle_length=2, seed=0).shuffle(100).batch(8).take(400).repeat(2)
    it = iter(ds)
    for _ in range(40):
        next(it)
    return ds, it.state(), 40


def _slot(state: dict[str, Any]) -> dict[str, Any]:
    return state["pipeline"]["up"]["up"]["up"]["up"]  # repeat > take > batch > shuffle > files


def _set(path: str, value: Any) -> Edit:
    def edit(state: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = state
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[int(last) if isinstance(target, list) else last] = value

    return edit


FILES = "pipeline.up.up.up.up"
AT = "state." + FILES
EDITS: dict[str, tuple[Edit, str]] = {
    "pipeline None": (_set("pipeline", None), "state.pipeline"),
    "finished not a bool": (_set("finished", "no"), "state.finished"),
    "seed negative": (_set("seed", -1), "state.seed"),
    "epoch a float": (_set("epoch", 0.5), "state.epoch"),
    "pending not a list": (_set("pending", "b"), "state.pending"),
    "an unknown field": (_set("extra", 1), "state"),
    "a missing field": (lambda s: s.pop("split"), "state"),
    "fingerprint an int": (_set("fingerprint", 3), "state.fingerprint"),
    "split a string": (_set("split", "files"), "state.split"),
    "repeat pass past the end": (_set("pipeline.epoch", 5), "state.pipeline.epoch"),
    "repeat without its pass": (_set("pipeline.up", None), "state.pipeline.up"),
    "take left past count": (_set("pipeline.up.left", 401), "state.pipeline.up.left"),
    "take left zero while reading": (_set("pipeline.up.left", 0), "state.pipeline.up.up"),
    "batch done while reading": (_set("pipeline.up.up.done", True), "state.pipeline.up.up.up"),
    "batch pending ints": (_set("pipeline.up.up.pending", [1]), "state.pipeline.up.up.pending[0]"),
    "shuffle buffer overfull": (
        _set("pipeline.up.up.up.items", [b"x"] * 101),
        "state.pipeline.up.up.up.items",
    ),
    "shuffle buffer not records": (
        _set("pipeline.up.up.up.items", ["x"]),
        "state.pipeline.up.up.up.items[0]",
    ),
    "shuffle rng names a function": (
        _set("pipeline.up.up.up.rng.bit_generator", "seed"),
        "state.pipeline.up.up.up.rng",
    ),
    "shuffle rng state a string": (
        _set("pipeline.up.up.up.rng.state.state", "x"),
        "state.pipeline.up.up.up.rng.state.state",
    ),
    "shuffle up None": (_set("pipeline.up.up.up.up", None), "state.pipeline.up.up.up.up"),
    "next_file past the files": (_set(FILES + ".next_file", 9), AT + ".next_file"),
    "next_file skipping files": (_set(FILES + ".next_file", 4), AT + ".next_file"),
    "end_of_input with files left": (_set(FILES + ".end_of_input", True), AT + ".end_of_input"),
    "turn out of range": (_set(FILES + ".turn", 2), AT + ".turn"),
    "block out of range": (_set(FILES + ".block", 1), AT + ".block"),
    "slots too few": (_set(FILES + ".slots", [None]), AT + ".slots"),
    "slot not a tuple": (_set(FILES + ".slots.0", 7), AT + ".slots[0]"),
    "slot position past the files": (_set(FILES + ".slots.0.0", 7), AT + ".slots[0][0]"),
    "two slots one file": (_set(FILES + ".slots.1.0", 0), AT + ".slots[1][0]"),
    "offset past the file": (_set(FILES + ".slots.0.1", 10**6), AT + ".slots[0][1]"),
    "offset negative": (_set(FILES + ".slots.0.1", -1), AT + ".slots[0][1]"),
    "records taken huge": (_set(FILES + ".slots.0.3", 10**9), AT + ".slots[0][3]"),
}


def _tuples_to_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _tuples_to_lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_tuples_to_lists(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edited_state_is_refused_naming_the_field(
    saved: tuple[TFRecordDataset, dict[str, Any], int], name: str
) -> None:
    ds, state, _ = saved
    edit, field = EDITS[name]
    tampered = _tuples_to_lists(copy.deepcopy(state))  # as JSON would bring it back
    edit(tampered)
    before = np.random.get_state()[1].copy()  # type: ignore[index]
    with pytest.raises(DatasetStateError, match=re.escape(f"field {field}") + "[ :]"):
        ds.resume(tampered)
    assert (np.random.get_state()[1] == before).all()  # type: ignore[index]


def test_an_untampered_state_still_resumes_exactly(
    saved: tuple[TFRecordDataset, dict[str, Any], int],
) -> None:
    ds, state, cut = saved
    expected = list(ds)[cut:]
    assert [b for b in ds.resume(pickle.loads(pickle.dumps(state)))] == expected
    assert [b for b in ds.resume(_tuples_to_lists(state))] == expected  # JSON-like: lists for tuples


def test_a_state_that_is_not_a_dict(saved: tuple[TFRecordDataset, dict[str, Any], int]) -> None:
    ds, _, _ = saved
    for bad in (None, [], "state", 3):
        with pytest.raises(DatasetStateError):
            ds.resume(bad)  # type: ignore[arg-type]
        with pytest.raises(DatasetStateError):
            ds.with_state(bad)  # type: ignore[arg-type]


def test_more_records_handed_out_than_the_file_holds_there(tmp_path: Path) -> None:
    tfrec.write_records(tmp_path / "p.tfrecord", [b"%010d" % i for i in range(2000)])  # 26-byte frames
    ds = TFRecordDataset(tmp_path)
    it = iter(ds)
    next(it)
    state = it.state()
    position = state["pipeline"]["slots"][0][0]
    state["pipeline"]["slots"][0] = (position, 26 * 1900, 1900, 250)  # 250 handed out of the last 100
    with pytest.raises(DatasetStateError, match="holds 100 there"):
        list(ds.resume(state))


def test_reading_processes_states_are_checked(tmp_path: Path) -> None:
    _files(tmp_path, [400, 400])
    ds = TFRecordDataset(tmp_path, num_workers=2, seed=0).shuffle(50).batch(10).take(60)
    it = iter(ds)
    for _ in range(10):
        next(it)
    state = it.state()
    it.close()
    workers = state["pipeline"]["up"]["workers"]
    for edit, field in [
        (lambda s: s["pipeline"]["up"]["workers"].__setitem__(1, None), "workers[1]"),
        (lambda s: s["pipeline"]["up"].__setitem__("pulls", [1]), "pulls"),
        (lambda s: s["pipeline"]["up"].__setitem__("turn", 2), "turn"),
        (lambda s: s["pipeline"]["up"]["workers"][0]["up"]["up"].__setitem__("next_file", 2), "next_file"),
        (lambda s: s["pipeline"]["up"]["workers"][0]["up"].__setitem__("items", [b"x"] * 51), "items"),
    ]:
        tampered = copy.deepcopy(state)
        edit(tampered)
        with pytest.raises(DatasetStateError, match=re.escape(field)):
            ds.resume(tampered)
    assert workers[1] is not None
    assert list(ds)[10:] == list(ds.resume(state))
