"""Property-based round trips: random nested schemas and matching values (hypothesis).

A small generator draws a schema tree (Tensor of any dtype, shape and
encoding, Text, ClassLabel, dicts, Sequences of any of them, nested), then
values for it together with the values they must decode to. Image is left out
(Pillow is slow and covered in test_connectors).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from featurecheck import assert_same, row
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tfrec import RaggedArray
from tfrec.features import ClassLabel, FeatureConnector, FeaturesDict, Sequence, Tensor, Text

NUMERIC = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
NUMERIC += [np.float16, np.float32, np.float64]
NAMES = ["a", "b", "c", "d"]
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# A spec is a plain tuple tree, so hypothesis can print and shrink it:
#   ("tensor", dtype, shape, encoding) | ("text",) | ("label", n, named) | ("dict", ((name, spec), ...))
#   | ("seq", item spec, length or None)


@st.composite
def tensor_specs(draw: st.DrawFn, fixed: bool) -> tuple[Any, ...]:
    """A Tensor; ``fixed``: no unknown dimension (items of a Sequence)."""
    if draw(st.booleans()) and not fixed:
        return ("tensor", object, draw(st.sampled_from([(), (2,), (None,)])), "none")
    dtype = draw(st.sampled_from(NUMERIC))
    encoding = draw(st.sampled_from(["none", "none", "bytes", "zlib"]))
    shapes = [(), (1,), (3,), (2, 2)]
    if not fixed:
        shapes += [(None,), (None, 2), (2, None)] + ([(None, None)] if encoding != "none" else [])
    return ("tensor", dtype, draw(st.sampled_from(shapes)), encoding)


def leaf_specs(fixed: bool) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.one_of(
        tensor_specs(fixed),
        st.just(("text",)),
        st.tuples(st.just("label"), st.integers(1, 4), st.booleans()),
    )


def dict_of(children: st.SearchStrategy[tuple[Any, ...]]) -> st.SearchStrategy[tuple[Any, ...]]:
    entries = st.lists(
        st.tuples(st.sampled_from(NAMES), children), min_size=1, max_size=3, unique_by=lambda e: e[0]
    )
    return st.tuples(st.just("dict"), entries.map(tuple))


# items of a Sequence: fixed-shape leaves, dicts and Sequences of them. A Sequence that holds or sits
# in another is stored ragged and has no fixed length.
ITEMS = st.recursive(
    leaf_specs(True),
    lambda children: st.one_of(dict_of(children), st.tuples(st.just("seq"), children, st.just(None))),
    max_leaves=4,
)
SEQUENCES = ITEMS.flatmap(
    lambda item: st.tuples(
        st.just("seq"), st.just(item), st.just(None) if has(item, "seq") else st.sampled_from([None, None, 2])
    )
)
NODES = st.recursive(
    st.one_of(leaf_specs(False), SEQUENCES),
    lambda children: dict_of(children),
    max_leaves=6,
)
SCHEMAS = dict_of(NODES)


def build(spec: tuple[Any, ...]) -> Any:
    kind = spec[0]
    if kind == "tensor":
        return Tensor(shape=spec[2], dtype=spec[1], encoding=spec[3])
    if kind == "text":
        return Text()
    if kind == "label":
        return (
            ClassLabel(names=[f"c{i}" for i in range(spec[1])])
            if spec[2]
            else ClassLabel(num_classes=spec[1])
        )
    if kind == "dict":
        return FeaturesDict({name: build(child) for name, child in spec[1]})
    return Sequence(build(spec[1]), length=spec[2])


def has(spec: tuple[Any, ...], kind: str) -> bool:
    if spec[0] == kind:
        return True
    if spec[0] == "dict":
        return any(has(child, kind) for _, child in spec[1])
    return spec[0] == "seq" and has(spec[1], kind)


def has_bytes_tensor(spec: tuple[Any, ...]) -> bool:
    if spec[0] == "tensor":
        return spec[3] != "none"
    if spec[0] == "dict":
        return any(has_bytes_tensor(child) for _, child in spec[1])
    return spec[0] == "seq" and has_bytes_tensor(spec[1])


# -- values: (what the user writes, what decoding gives) -----------------------------------------------


def elements(dtype: Any, encoding: str) -> st.SearchStrategy[Any]:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.integers(int(info.min), int(info.max))
    if dtype == np.float64 and encoding == "none":
        return st.floats(width=32)  # stored in a float_list: only float32-exact values are accepted
    return st.floats(width=8 * dtype.itemsize)


@st.composite
def tensor_values(draw: st.DrawFn, spec: tuple[Any, ...]) -> tuple[Any, Any]:
    _, dtype, shape, encoding = spec
    dims = tuple(draw(st.integers(0, 3)) if d is None else d for d in shape)
    if dtype is object:
        items = draw(
            st.lists(st.binary(max_size=4), min_size=int(np.prod(dims)), max_size=int(np.prod(dims)))
        )
        array = np.empty(len(items), object)
        array[:] = items
        array = array.reshape(dims)
        return (array.item(), array.item()) if not dims else (array, array)
    array = draw(hnp.arrays(np.dtype(dtype), dims, elements=elements(dtype, encoding)))
    return array, (array[()] if not dims else array)


@st.composite
def values(draw: st.DrawFn, spec: tuple[Any, ...]) -> tuple[Any, Any]:
    kind = spec[0]
    if kind == "tensor":
        return draw(tensor_values(spec))
    if kind == "text":
        text = draw(st.text(st.characters(exclude_categories=["Cs"]), max_size=5))
        return (text.encode() if draw(st.booleans()) else text), text
    if kind == "label":
        index = draw(st.integers(-1, spec[1] - 1))
        if index >= 0 and draw(st.booleans()):  # by name
            return (f"c{index}" if spec[2] else str(index)), np.int64(index)
        return index, np.int64(index)
    if kind == "dict":
        pairs = {name: draw(values(child)) for name, child in spec[1]}
        return {k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()}
    # a Sequence: its items' decoded values gathered per leaf into (nested) lists, see expected()
    item, length = spec[1], spec[2]
    low = 1 if has_bytes_tensor(item) else 0  # empty: see test_empty_sequence_decodes_to_the_item_shape
    count = length if length is not None else draw(st.integers(low, 3))
    items = [draw(values(item)) for _ in range(count)]
    given = [i[0] for i in items]
    if item[0] == "dict" and draw(st.booleans()):  # tfds' other spelling: a dict of lists
        given = {name: [g[name] for g in given] for name, _ in item[1]}
    return given, gather(item, [i[1] for i in items])


def gather(item: tuple[Any, ...], decoded: list[Any]) -> Any:
    """Per leaf of ``item`` (through dicts and Sequences), the list of its items' decoded values."""
    if item[0] == "dict":
        return {name: gather(child, [d[name] for d in decoded]) for name, child in item[1]}
    if item[0] == "seq":
        return gather(item[1], decoded)
    return decoded


def expected(spec: tuple[Any, ...], gathered: Any, depth: int = 0) -> Any:
    """What ``values`` must decode to: a leaf in one Sequence stacked, in more a RaggedArray per level."""
    if spec[0] == "dict":
        return {name: expected(child, gathered[name], depth) for name, child in spec[1]}
    if spec[0] == "seq":
        return expected(spec[1], gathered, depth + 1)
    if depth < 2:
        return stacked(spec, gathered) if depth else gathered
    splits = np.cumsum([0] + [len(r) for r in gathered]).astype(np.int64)
    return RaggedArray(expected(spec, [x for r in gathered for x in r], depth - 1), splits)


def stacked(item: tuple[Any, ...], decoded: list[Any]) -> Any:
    """What a Sequence of the leaf ``item`` decodes to: items stacked on a new first dimension."""
    if item[0] == "text" or (item[0] == "tensor" and item[1] is object):
        out = np.empty((len(decoded), *np.shape(decoded[0])) if decoded else (0,), object)
        for i, d in enumerate(decoded):
            out[i] = d
        return out
    if item[0] == "label":
        return np.array(decoded, np.int64).reshape(len(decoded))
    dtype, shape = np.dtype(item[1]), item[2]
    return np.stack([np.asarray(d, dtype) for d in decoded]) if decoded else np.empty((0, *shape), dtype)


# -- the properties ------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), spec=SCHEMAS)
def test_random_schema_round_trips(data: st.DataObject, spec: tuple[Any, ...]) -> None:
    features = build(spec)
    value, gathered = data.draw(values(spec), label="value")
    decoded = features.deserialize_example(features.serialize_example(value))
    assert_same(decoded, expected(spec, gathered))


@SETTINGS
@given(data=st.data(), spec=SCHEMAS)
def test_random_schema_batches(data: st.DataObject, spec: tuple[Any, ...]) -> None:
    features = build(spec)
    drawn = data.draw(st.lists(values(spec), min_size=1, max_size=3), label="values")
    batch = features.deserialize_batch([features.serialize_example(v) for v, _ in drawn])
    for r, (_, gathered) in enumerate(drawn):
        assert_same(row(batch, r), expected(spec, gathered), f"row {r}")


@SETTINGS
@given(spec=SCHEMAS)
def test_random_schema_json_round_trips(spec: tuple[Any, ...]) -> None:
    features = build(spec)
    loaded = FeatureConnector.from_json(features.to_json())
    assert loaded.to_json() == features.to_json()
    if not has(spec, "label"):  # class names are kept in labels files, not in the JSON
        assert loaded == features and hash(loaded) == hash(features)
