"""parse_single_example's direct one-record path gives what the batch path gives, errors included."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import wirebuild as wb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.cache import clear_all
from tfrec.example.parse import examples

KEYS = ["a", "b", "label", "tokens"]
INTS = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(width=32, allow_nan=False)
BYTES = st.binary(max_size=6)


@contextlib.contextmanager
def _batch_path_only() -> Iterator[None]:
    """parse_single_example by the batch path alone: no one-record decoder for any spec (those of
    the specs seen before are forgotten, here and after)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(examples, "one_record_decoder", lambda plan, **options: None)
        clear_all()
        yield
    clear_all()


@st.composite
def features(draw: st.DrawFn) -> bytes:
    """One Feature message: a kind, a body laid out packed, loose or empty."""
    kind = draw(st.sampled_from(["int", "float", "bytes", "none"]))
    if kind == "none":
        return b""
    if kind == "bytes":
        return wb.strs(*draw(st.lists(BYTES, max_size=4)))
    values = draw(st.lists(INTS if kind == "int" else FLOATS, max_size=4))
    loose = draw(st.booleans())
    if kind == "int":
        return wb.int64_feature(wb.loose_ints(values) if loose else wb.packed_ints(values) if values else b"")
    return wb.float_feature(wb.loose_floats(values) if loose else wb.packed_floats(values) if values else b"")


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
    spec: dict[str, Any] = {}
    for key in keys:
        dtype = draw(st.sampled_from([tfrec.int64, tfrec.float32, tfrec.string]))
        if draw(st.booleans()):
            spec[key] = tfrec.FixedLenSequenceFeature(
                draw(st.sampled_from([(), (2,)])), dtype, allow_missing=True
            )
        else:
            shape = draw(st.sampled_from([(), (1,), (2,), (3,), (1, 2)]))
            default = None
            if draw(st.booleans()):
                size = int(np.prod(shape))
                default = np.full(size, b"x" if dtype == tfrec.string else 1, dtype).reshape(shape)
            spec[key] = tfrec.FixedLenFeature(shape, dtype, default_value=default)
    return spec


def _fitting(draw: st.DrawFn, spec: Any) -> bytes:
    """A Feature with what ``spec`` asks for, as writers lay it out."""
    size = int(np.prod(spec.shape))
    if isinstance(spec, tfrec.FixedLenSequenceFeature):
        size *= draw(st.integers(1, 3))
    if spec.dtype == tfrec.string:
        return wb.strs(*draw(st.lists(BYTES, min_size=size, max_size=size)))
    if spec.dtype == tfrec.int64:
        return wb.ints(*draw(st.lists(INTS, min_size=size, max_size=size)))
    return wb.floats(*draw(st.lists(FLOATS, min_size=size, max_size=size)))


@st.composite
def records(draw: st.DrawFn, spec: dict[str, Any]) -> bytes:
    """Mostly records that fit ``spec``; some with a feature of another kind, count or layout."""
    entries = [(key, _fitting(draw, value)) for key, value in spec.items() if draw(st.integers(0, 9))]
    entries += draw(st.lists(st.tuples(st.sampled_from([*KEYS, "other"]), features()), max_size=2))
    entries = draw(st.permutations(entries))
    data = wb.example(*(wb.entry(key, feature) for key, feature in entries))
    if data and draw(st.integers(0, 9)) == 0:  # now and then a cut or a flipped byte
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] if draw(st.booleans()) else data[:at] + bytes([data[at] ^ 0x08]) + data[at + 1 :]
    return data


def _outcome(data: bytes, spec: dict[str, Any]) -> Any:
    try:
        return ("ok", tfrec.parse_single_example(data, spec))
    except tfrec.TfrecError as exc:
        return ("error", type(exc), str(exc))


def _same(a: Any, b: Any) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a == b
    if list(a[1]) != list(b[1]):
        return False
    for x, y in zip(a[1].values(), b[1].values(), strict=True):
        if type(x) is not type(y) or x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.flags.writeable != y.flags.writeable or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_direct_path_is_the_batch_path(draw: st.DataObject) -> None:
    spec = draw.draw(specs())
    data = draw.draw(records(spec))
    direct = _outcome(data, spec)
    with _batch_path_only():
        batch = _outcome(data, spec)
    assert _same(direct, batch), (direct, batch)


def test_usual_record_takes_the_direct_path(monkeypatch: pytest.MonkeyPatch) -> None:
    data = tfrec.encode_example({"label": 3, "emb": np.ones(4, np.float32), "text": "hi", "tokens": [1, 300]})
    spec = {
        "label": tfrec.FixedLenFeature([], tfrec.int64),
        "emb": tfrec.FixedLenFeature([4], tfrec.float32),
        "text": tfrec.FixedLenFeature([], tfrec.string),
        "tokens": tfrec.FixedLenSequenceFeature([], tfrec.int64, allow_missing=True),
    }
    taken = []
    real = examples.one_record_decoder

    def counted(plan: Any, **options: Any) -> Any:
        decode = real(plan, **options)
        return lambda record: taken.append(1) or decode(record)

    monkeypatch.setattr(examples, "one_record_decoder", counted)
    clear_all()  # specs seen before keep the decoder they were given
    out = tfrec.parse_single_example(data, spec)
    assert out["label"] == np.array(3) and out["label"].shape == ()
    assert out["emb"].dtype == np.float32 and out["emb"].tolist() == [1.0] * 4
    assert out["text"] == np.array(b"hi", object) and out["text"].dtype == object
    assert out["tokens"].tolist() == [1, 300]
    assert taken == [1]


def test_spec_changed_in_place_is_validated_again() -> None:
    data = tfrec.encode_example({"x": [1, 2]})
    shape = [2]
    spec = {"x": tfrec.FixedLenFeature(shape, tfrec.int64)}
    assert tfrec.parse_single_example(data, spec)["x"].shape == (2,)
    shape[:] = [1, 2]  # the same spec object, another shape
    assert tfrec.parse_single_example(data, spec)["x"].shape == (1, 2)
    spec["x"] = tfrec.FixedLenFeature([3], tfrec.int64, default_value=[0, 0, 0])
    with pytest.raises(tfrec.DecodeError):
        tfrec.parse_single_example(data, spec)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_records_of_one_spec_in_a_row_are_the_batch_path(draw: st.DataObject) -> None:
    # The decoder remembers each entry's head from earlier records of its spec: records of one
    # spec, read in a row and again in reverse, still give what the batch path gives.
    spec = draw.draw(specs())
    data = draw.draw(st.lists(records(spec), min_size=2, max_size=8))
    with _batch_path_only():
        batch = [_outcome(record, spec) for record in data]
    for record, expected in [*zip(data, batch, strict=True), *reversed(list(zip(data, batch, strict=True)))]:
        direct = _outcome(record, spec)
        assert _same(direct, expected), (record, direct, expected)


def test_heads_of_other_lengths_and_places_are_read_again() -> None:
    # Lengths that change how many bytes a length takes, keys in another order, an extra key.
    spec = {"t": tfrec.FixedLenFeature([], tfrec.string), "n": tfrec.FixedLenFeature([], tfrec.int64)}
    parse = examples.single_example_parser(spec)
    for text, number in [(b"a", 1), (b"b" * 200, 300), (b"c", 2**40), (b"d" * 20_000, -1), (b"", 0)]:
        for value in (
            {"t": text, "n": number},
            {"n": number, "t": text},
            {"x": [1.0], "t": text, "n": number},
        ):
            out = parse(tfrec.encode_example(value))
            assert out["t"][()] == text and out["n"] == number and sorted(out) == ["n", "t"]


def test_text_not_utf8_fails_alike_one_record_and_batch() -> None:
    features = tfrec.features.FeaturesDict({"t": tfrec.features.Text()})
    record = tfrec.encode_example({"t": b"\xff"})
    with pytest.raises(tfrec.DecodeError) as one:
        features.deserialize_example(record)
    with pytest.raises(tfrec.DecodeError) as batch:
        features.deserialize_batch([record])
    assert str(one.value) == str(batch.value) and one.value.key == batch.value.key == "t"


def _unwrapped(outcome: Any, spec: dict[str, Any]) -> Any:
    """``outcome`` as ``single_example_parser(spec, bytes_scalars=True)`` gives it: a scalar string's
    0-d object array as its bytes."""
    if outcome[0] != "ok":
        return outcome
    values = dict(outcome[1])
    for key, feature in spec.items():
        if (
            isinstance(feature, tfrec.FixedLenFeature)
            and tuple(feature.shape) == ()
            and feature.dtype == object
        ):
            values[key] = values[key][()]
    return ("ok", values)


def _same_unwrapped(a: Any, b: Any) -> bool:
    if a[0] != b[0] or a[0] == "error":
        return bool(a == b)
    if list(a[1]) != list(b[1]):
        return False
    for x, y in zip(a[1].values(), b[1].values(), strict=True):
        if type(x) is bytes or type(y) is bytes:
            if type(x) is not type(y) or x != y:
                return False
        elif not _same(("ok", {"v": x}), ("ok", {"v": y})):
            return False
    return True


def _parsed_by(parse: Any, data: bytes) -> Any:
    try:
        return ("ok", parse(data))
    except tfrec.TfrecError as exc:
        return ("error", type(exc), str(exc))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_bytes_scalars_parser_gives_scalar_strings_as_bytes(draw: st.DataObject) -> None:
    # Records of one spec in a row and again (the second time through the compiled layouts): each
    # gives parse_single_example's value, a scalar string as its bytes, or its error.
    spec = draw.draw(specs())
    data = draw.draw(st.lists(records(spec), min_size=1, max_size=6))
    parse = examples.single_example_parser(spec, bytes_scalars=True)
    for record in [*data, *data]:
        expected = _unwrapped(_outcome(record, spec), spec)
        assert _same_unwrapped(_parsed_by(parse, record), expected), record


@st.composite
def one_writers_records(draw: st.DrawFn, spec: dict[str, Any]) -> list[bytes]:
    """Records laid out alike (the keys in one order, an extra key now and then), values varying in
    length between records; now and then one cut or with a flipped byte."""
    keys = draw(st.permutations(list(spec)))
    extra = draw(st.sampled_from([None, 0, len(keys)]))
    out = []
    for _ in range(draw(st.integers(2, 8))):
        entries = [(key, _fitting(draw, spec[key])) for key in keys]
        if extra is not None:
            entries.insert(extra, ("other", wb.ints(draw(INTS))))
        data = wb.example(*(wb.entry(key, feature) for key, feature in entries))
        if draw(st.integers(0, 5)) == 0:
            at = draw(st.integers(0, len(data) - 1))
            data = data[:at] if draw(st.booleans()) else data[:at] + bytes([data[at] ^ 0x08]) + data[at + 1 :]
        out.append(data)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_records_of_one_layout_are_the_batch_path(draw: st.DataObject) -> None:
    # Records of one writer take the compiled decoder of their layout from the second on; damaged
    # ones, and values of another length, fall back to the walk, then to the batch path.
    spec = draw.draw(specs())
    data = draw.draw(one_writers_records(spec))
    with _batch_path_only():
        batch = [_outcome(record, spec) for record in data]
    parse = examples.single_example_parser(spec)
    for _ in range(2):
        for record, expected in zip(data, batch, strict=True):
            assert _same(_outcome(record, spec), expected), record
            assert _same(_parsed_by(parse, record), expected), record


def test_a_layout_seen_twice_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfrec.example.parse import single

    compiled = []
    real = single.layout_decoder
    monkeypatch.setattr(single, "layout_decoder", lambda *args: compiled.append(1) or real(*args))
    spec = {
        "compiled_once": tfrec.FixedLenFeature([2], tfrec.float32),
        "n": tfrec.FixedLenFeature([], tfrec.int64),
        "t": tfrec.FixedLenFeature([], tfrec.string, default_value=b"none"),
    }
    parse = examples.single_example_parser(spec, bytes_scalars=True)
    for n in range(5):
        floats = np.array([n, -n], np.float32)
        out = parse(tfrec.encode_example({"compiled_once": floats, "n": 200 + n, "t": b"x" * n}))
        assert out["compiled_once"].tolist() == [n, -n] and out["n"] == 200 + n and out["t"] == b"x" * n
    assert compiled == [1]
    out = parse(tfrec.encode_example({"compiled_once": np.ones(2, np.float32), "n": 1}))  # another layout
    assert out["t"] == b"none" and out["n"].shape == () and out["n"].dtype == np.int64


def test_threads_sharing_a_decoder_over_many_layouts_get_every_value() -> None:
    # Layouts learned, compiled and forgotten (more than are remembered) while other threads decode.
    from concurrent.futures import ThreadPoolExecutor

    spec = {
        "threads_a": tfrec.FixedLenFeature([], tfrec.int64),
        "threads_b": tfrec.FixedLenFeature([2], tfrec.float32),
        "threads_c": tfrec.FixedLenFeature([], tfrec.string, default_value=b"-"),
    }
    records = []
    for n in range(40):
        value: dict[str, Any] = {"threads_a": n * 1000, "threads_b": np.array([n, 1], np.float32)}
        if n % 3:
            value["threads_c"] = b"c" * n
        extra = {f"extra{k}": [k] for k in range(n % 20)}  # 20 layouts by the count of extra keys
        records.append(tfrec.encode_example({**extra, **value} if n % 2 else {**value, **extra}))
    expected = [(n * 1000, [n, 1.0], b"c" * n if n % 3 else b"-") for n in range(40)]
    parse = examples.single_example_parser(spec, bytes_scalars=True)

    def decode_all(_: int) -> list[Any]:
        return [
            (int(out["threads_a"]), out["threads_b"].tolist(), out["threads_c"])
            for out in (parse(record) for record in records * 5)
        ]

    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(decode_all, range(4)):
            assert got == expected * 5


@st.composite
def some_writers_records(draw: st.DrawFn, spec: dict[str, Any]) -> list[bytes]:
    """Records in a few layouts, taking turns: the keys in an order of their own, some left out (an
    optional key missing is another layout; a required one is the batch path's error to report)."""
    layouts = [
        draw(st.lists(st.sampled_from([*spec, "other"]), min_size=1, max_size=len(spec) + 1, unique=True))
        for _ in range(draw(st.integers(2, 3)))
    ]
    out = []
    for n in range(draw(st.integers(4, 12))):
        entries = [
            (key, wb.ints(draw(INTS)) if key == "other" else _fitting(draw, spec[key]))
            for key in layouts[n % len(layouts)]
        ]
        out.append(wb.example(*(wb.entry(key, feature) for key, feature in entries)))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_records_of_several_layouts_in_turns_are_the_batch_path(draw: st.DataObject) -> None:
    # Layouts that come back are compiled into one decoder, which tells them apart where they part.
    spec = draw.draw(specs())
    data = draw.draw(some_writers_records(spec))
    with _batch_path_only():
        batch = [_outcome(record, spec) for record in data]
    parse = examples.single_example_parser(spec)
    for _ in range(3):
        for record, expected in zip(data, batch, strict=True):
            assert _same(_outcome(record, spec), expected), record
            assert _same(_parsed_by(parse, record), expected), record


def test_a_record_lacking_an_optional_key_takes_the_compiled_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfrec.example.parse import single

    compiled: list[int] = []
    real = single.layout_decoder
    monkeypatch.setattr(single, "layout_decoder", lambda *args: compiled.append(len(args[0])) or real(*args))
    spec = {
        "lacking_n": tfrec.FixedLenFeature([], tfrec.int64),
        "lacking_t": tfrec.FixedLenFeature([], tfrec.string, default_value=b"none"),
    }
    full = tfrec.encode_example({"lacking_n": 1, "lacking_t": b"x"})
    short = tfrec.encode_example({"lacking_n": 2})
    turns = [full, full, short, short] + [full, short] * 3
    outs = [tfrec.parse_single_example(record, spec) for record in turns]
    assert compiled == [1, 2]  # the usual layout, then both: the turns that follow compile nothing
    assert [(int(out["lacking_n"]), out["lacking_t"][()]) for out in outs[-2:]] == [(1, b"x"), (2, b"none")]
    assert outs[-1]["lacking_t"].dtype == object and outs[-1]["lacking_t"].shape == ()


def test_specs_mutated_between_calls_are_honoured() -> None:
    data = tfrec.encode_example({"x": [1, 2], "y": [3.0]})
    spec: dict[str, Any] = {"x": tfrec.FixedLenFeature([2], tfrec.int64)}
    assert list(tfrec.parse_single_example(data, spec)) == ["x"]
    spec["y"] = tfrec.FixedLenFeature([1], tfrec.float32)  # a key added
    assert tfrec.parse_single_example(data, spec)["y"].tolist() == [3.0]
    del spec["x"]  # a key removed
    assert list(tfrec.parse_single_example(data, spec)) == ["y"]
    spec["y"] = tfrec.FixedLenFeature([1], tfrec.int64)  # replaced by one of another kind
    with pytest.raises(tfrec.DecodeError):
        tfrec.parse_single_example(data, spec)
