"""Fuzz targets of the data layer: edited iterator states, damaged index files, path patterns.

Registered in ``fuzz_targets.TARGETS``. As there, ``run`` returns an outcome label and raises only when
tfrec misbehaves: an exception that is not a ``TfrecError``, or a wrong result (a record that is
neither in the files nor carried by the state; a file outside the pattern's tree; an untampered state
that does not resume exactly; the listing and the name-by-name brace expansions disagreeing).
"""

from __future__ import annotations

import atexit
import copy
import functools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tfrec
import tfrec.data.paths as paths_module
from tfrec.data import ShardOptions, TFRecordDataset, expand_paths
from tfrec.data.paths import expand_braces

SCRATCH = tempfile.mkdtemp(prefix="tfrec-fuzz-data-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
atexit.register(shutil.rmtree, SCRATCH, True)

SIZES = [300, 200, 150]
RECORDS = {f"{n}:{i:04d}".encode() * (1 + i % 3) for n, size in enumerate(SIZES) for i in range(size)}


def _outcome(function: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", function()
    except tfrec.TfrecError as exc:
        return type(exc).__name__, None


@functools.cache
def _files() -> str:
    directory = os.path.join(SCRATCH, "files")
    os.makedirs(directory)
    for n, size in enumerate(SIZES):
        path = os.path.join(directory, f"part-{n:05d}.tfrecord")
        tfrec.write_records(path, [f"{n}:{i:04d}".encode() * (1 + i % 3) for i in range(size)])
        tfrec.build_index(path)
    return directory


# -- iterator states -----------------------------------------------------------------------------


def _datasets() -> list[TFRecordDataset]:
    directory = _files()
    return [
        TFRecordDataset(directory, cycle_length=2, seed=0, shuffle_files=True)
        .shuffle(64)
        .batch(16)
        .repeat(2),
        TFRecordDataset(directory, seed=1).skip(5).take(400).shuffle(30),
        TFRecordDataset(directory, seed=2, shard_options=ShardOptions(shard=(1, 2), shard_by="records"))
        .shuffle(20)
        .batch(7, drop_remainder=True),
    ]


def _flat(items: list[Any]) -> list[bytes]:
    return [r for item in items for r in (item if isinstance(item, list) else [item])]


@functools.cache
def _saved() -> list[tuple[int, dict[str, Any], list[bytes]]]:
    """(dataset, state, what resuming it yields) at a few places in each dataset."""
    saved = []
    for number, ds in enumerate(_datasets_cached()):
        everything = list(ds)
        for cut in (1, len(everything) // 3, len(everything) - 1):
            it = iter(ds)
            for _ in range(cut):
                next(it)
            saved.append((number, _plain(it.state()), _flat(everything[cut:])))
            it.close()
    return saved


def _plain(value: Any) -> Any:
    """A state as JSON brings it back: lists for tuples, bytes kept (as the fuzzer edits them)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _nodes(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _nodes(item, (*path, i))
    return found


def _replacement(old: Any, choice: int) -> Any:
    if isinstance(old, bool):
        old = int(old)
    number = old if isinstance(old, int) else 0
    palette = [None, -1, 0, 1, number + 1, number - 1, number * 2 + 7, 2**64, 2**200, "x", [], {}, True,
               False, 1.5, b"x", [b"0:0001"] * 3, [0, 0, 0, 0], {"up": None}, [None, None]]  # fmt: skip
    return palette[choice % len(palette)]


def _edit(state: Any, program: bytes) -> Any:
    """Apply the edits ``program`` spells (3 bytes each: which node, what to put there)."""
    for at in range(0, len(program) - 2, 3):
        nodes = _nodes(state)
        path = nodes[int.from_bytes(program[at : at + 2], "little") % len(nodes)]
        op = program[at + 2]
        if not path:
            state = _replacement(state, op)
            continue
        parent = state
        for key in path[:-1]:
            parent = parent[key]
        if op >= 250 and isinstance(parent, dict):
            del parent[path[-1]]
        elif op >= 250 and isinstance(parent, list):
            parent.append(parent[path[-1]])
        else:
            parent[path[-1]] = _replacement(parent[path[-1]], op)
    return state


def _carried(value: Any) -> set[bytes]:
    if isinstance(value, bytes):
        return {value}
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*map(_carried, value)) if value else set()
    return set()


def _resume(number: int, state: Any) -> list[bytes]:
    return _flat(list(_datasets_cached()[number].resume(state)))


@functools.cache
def _datasets_cached() -> list[TFRecordDataset]:
    return _datasets()


def _state_from_json(data: bytes) -> Any:
    def bytes_back(value: dict[str, Any]) -> Any:
        return (
            value["$b"].encode("latin-1") if set(value) == {"$b"} and isinstance(value["$b"], str) else value
        )

    return json.loads(data.decode("utf-8", "replace"), object_hook=bytes_back)


def _state_to_json(state: Any) -> bytes:
    def encode(value: Any) -> Any:
        if isinstance(value, bytes):
            return {"$b": value.decode("latin-1")}
        raise TypeError(type(value))

    return json.dumps(state, default=encode).encode()


def _state_seeds() -> list[list[bytes]]:
    saved = _saved()
    edits = [bytes([i]) + bytes([7 * i % 256, i, 3 * i % 256]) for i in range(len(saved))]
    return [edits, [bytes([i]) + _state_to_json(state) for i, (_, state, _) in enumerate(saved)]]


def run_state(variant: int, data: bytes) -> str:
    saved = _saved()
    if not data:
        return "empty"
    number, state, expected = saved[data[0] % len(saved)]
    if variant == 0:
        state = _edit(copy.deepcopy(state), data[1:])
    else:
        try:
            state = _state_from_json(data[1:])
        except (ValueError, RecursionError):
            return "not json"
    label, got = _outcome(lambda: _resume(number, state))
    if got is not None:
        if state == saved[data[0] % len(saved)][1]:
            assert got == expected, "an untampered state did not resume exactly"
        unknown = [r for r in got if r not in RECORDS and r not in _carried(state)]
        assert not unknown, f"records neither in the files nor in the state: {unknown[:3]}"
    return label


# -- index files ---------------------------------------------------------------------------------


def _index_seeds() -> list[list[bytes]]:
    directory = _files()
    return [[Path(directory, f"part-{n:05d}.tfrecord.idx").read_bytes() for n in range(2)]]


def run_index(variant: int, data: bytes) -> str:
    directory = _files()
    paths = [os.path.join(directory, f"part-{n:05d}.tfrecord") for n in range(2)]
    index = os.path.join(SCRATCH, f"index-{os.getpid()}.idx")
    with open(index, "wb") as file:
        file.write(data)
    good = paths[1] + ".idx"
    labels = []

    def random_access() -> list[Any]:
        source = tfrec.RecordFileSource(paths, index_paths=[index, good])
        count = len(source)
        return [source[i] for i in {0, count // 2, count - 1} if 0 <= i < count]

    def split() -> list[bytes]:
        options = ShardOptions(shard=(0, 2), shard_by="records", index_paths=[index, good])
        return list(TFRecordDataset(paths, shard_options=options))

    for function in (random_access, split):
        label, got = _outcome(function)
        labels.append(label)
        unknown = [r for r in got or [] if r not in RECORDS]
        assert not unknown, f"{function.__name__}: records never written: {unknown[:3]}"
    return "+".join(sorted(set(labels)))


# -- path patterns -------------------------------------------------------------------------------

_TREE = ["x-00000001.tfrecord", "x-5a.tfrecord", "x-007.tfrecord", "a/p.tfrecord", "b/q.tfrecord",
         "sub/x-12.tfrecord", "sub/deeper/y.gz", ".hidden", "{x}.tfrecord", "x--3.tfrecord"]  # fmt: skip
_PATTERN_SEEDS = [b"x-{00000000..99999999}.tfrecord", b"{a,b}/*.tfrecord", b"**/*.tfrecord",
                  b"x-{0..9}{a,b}*", b"sub/x-[0-9]?.tfrecord", b"x-{-5..5}.tfrecord", b"{x,{sub,a}/*}*",
                  b"{x}.tfrecord"]  # fmt: skip


@functools.cache
def _tree() -> str:
    root = os.path.join(SCRATCH, "tree")
    for name in _TREE:
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        open(os.path.join(root, name), "wb").close()
    return root


def _expand(pattern: str, limit: int) -> tuple[str, list[str] | None]:
    saved, paths_module.MAX_EXPANSIONS = paths_module.MAX_EXPANSIONS, limit
    try:
        return _outcome(lambda: expand_paths(pattern))
    finally:
        paths_module.MAX_EXPANSIONS = saved


def run_pattern(variant: int, data: bytes) -> str:
    root = _tree()
    text = data[:200].decode("latin-1").replace("\x00", "")
    # Stay inside the tree: no path component starts with "." (so none is "..").
    while (safe := re.sub(r"(^|[/{,])\.", r"\1_", text)) != text:
        text = safe
    pattern = root + "/" + text.lstrip("/")
    label, found = _expand(pattern, paths_module.MAX_EXPANSIONS)
    for path in found or []:
        real = os.path.realpath(path)
        assert real.startswith(os.path.realpath(root) + os.sep) and os.path.isfile(real), f"outside: {path}"
    listed_label, listed = _expand(pattern, 1)  # every brace pattern of 2+ names listed
    # A name "**" is a recursive glob, which the listing (one directory's names) does not follow.
    few = label != "InvalidArgumentError" and paths_module._count(paths_module._brace_tree(pattern)) <= 4096
    # ... nor does it take a name that is a directory for the directory's files.
    names = expand_braces(pattern) if few else []
    recursive = any("**" in name or os.path.isdir(name) for name in names)
    if {label, listed_label} <= {"ok", "MissingFileError"} and not recursive:
        found, listed = sorted(found or []), sorted(listed or [])
        assert listed == found, f"the listing found {listed}, the names {found}"
    return label + ("" if listed_label == label else f"/listing {listed_label}")
