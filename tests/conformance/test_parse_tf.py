"""Conformance of Example parsing with real TensorFlow (skipped when TensorFlow is absent).

Every spec is written once, as tfrec specs; ``tf_spec`` turns it into the
equivalent ``tf.io`` spec, and ``assert_same`` compares the outputs part by
part: sparse indices/values/dense_shape, every ragged row_splits (dtype
included), dense shape and dtype, floats by bit pattern (NaN payloads, -0.0),
strings as exact bytes, and numpy scalar vs array vs bytes. Examples are
serialized both by TF's own protobuf (``tf.train.Example``) and by
``tfrec.encode_example``; both libraries must parse both forms identically.
Run with ``pytest -m conformance tests/conformance``.

Sections: 1 golden cases per spec kind (parse_example, parse_single_example,
the sequence variants) and invalid specs; 2 edge values; 3 hypothesis: valid
random batches and specs, then random specs where TF's error class must map
to tfrec's (InvalidArgumentError -> DecodeError/MissingFeatureError,
ValueError/TypeError -> SchemaError); 4 the schema-less codec against
protobuf; 5 error messages (TF's core, without the eager wrapper); 6 the
documented deliberate differences; 7 bugs this module found.

The reference for TF's behaviour is the measured spec of TF 2.21's parse
functions. Documented deliberate differences (odd wire forms, FLS stride
count, FLF wrong-dtype and too-many-strings messages, context Feature{} in
sequence examples, FLS with a 0-sized shape) are kept out of the generators.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tfrec
from tfrec.example import as_dtype

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.conformance

RF = tfrec.RaggedFeature
I64, F32, STR = tfrec.int64, tfrec.float32, tfrec.string


# -- data: one description, two serializers --------------------------------------------------------


class Feat(NamedTuple):
    """One Feature: kind "int64" | "float" | "bytes" | "none" (no kind set), and its values."""

    kind: str
    values: Any = None


Data = dict[str, Feat]


def ints(*values: int) -> Feat:
    return Feat("int64", np.array(values, np.int64))


def floats(*values: float) -> Feat:
    return Feat("float", np.array(values, np.float32))


def float_bits(*bits: int) -> Feat:
    """Floats given as float32 bit patterns (NaN payloads, -0.0, denormals)."""
    return Feat("float", np.array(bits, np.uint32).view(np.float32))


def strs(*values: bytes) -> Feat:
    return Feat("bytes", list(values))


NO_KIND = Feat("none")


def tf_feature(feat: Feat) -> Any:
    if feat.kind == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in feat.values]))
    if feat.kind == "float":
        # float32 -> Python float -> float32 keeps every bit of non-signalling values.
        return tf.train.Feature(float_list=tf.train.FloatList(value=feat.values.tolist()))
    if feat.kind == "bytes":
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=feat.values))
    return tf.train.Feature()


def tf_features(data: Data) -> Any:
    return tf.train.Features(feature={key: tf_feature(feat) for key, feat in data.items()})


def tfrec_value(feat: Feat) -> Any:
    if feat.kind == "none":
        return []  # an empty Python list has no kind: a Feature{}
    if feat.kind == "bytes":
        values = np.empty(len(feat.values), object)  # not dtype "S": that would drop trailing NULs
        values[:] = feat.values
        return values
    return feat.values


def tf_serialize(data: Data) -> bytes:
    return tf.train.Example(features=tf_features(data)).SerializeToString()


def tfrec_serialize(data: Data) -> bytes:
    return tfrec.encode_example({key: tfrec_value(feat) for key, feat in data.items()})


SERIALIZERS = {"tf": tf_serialize, "tfrec": tfrec_serialize}

Lists = dict[str, list[Feat]]


def tf_serialize_sequence(context: Data, lists: Lists) -> bytes:
    feature_lists = tf.train.FeatureLists(
        feature_list={
            key: tf.train.FeatureList(feature=[tf_feature(f) for f in steps]) for key, steps in lists.items()
        }
    )
    return tf.train.SequenceExample(
        context=tf_features(context), feature_lists=feature_lists
    ).SerializeToString()


def tfrec_serialize_sequence(context: Data, lists: Lists) -> bytes:
    return tfrec.encode_sequence_example(
        {key: tfrec_value(f) for key, f in context.items()},
        {key: [tfrec_value(f) for f in steps] for key, steps in lists.items()},
    )


SEQUENCE_SERIALIZERS = {"tf": tf_serialize_sequence, "tfrec": tfrec_serialize_sequence}


# -- specs: tfrec spec -> the equivalent tf.io spec ------------------------------------------------

_TF_DTYPES = {"int64": "int64", "float32": "float32", "object": "string"}


def tf_dtype(dtype: Any) -> Any:
    """tf.DType for a tfrec spec dtype; anything tfrec rejects is passed on unchanged."""
    try:
        return tf.as_dtype(_TF_DTYPES[as_dtype(dtype).name])
    except tfrec.SchemaError:
        return dtype


def tf_partition(partition: Any) -> Any:
    if not isinstance(partition, tuple):
        return partition  # not a partition: TF must reject it as tfrec does
    return getattr(tf.io.RaggedFeature, type(partition).__name__)(*partition)


def tf_spec(spec: Any) -> Any:
    if isinstance(spec, tfrec.FixedLenFeature):
        return tf.io.FixedLenFeature(spec.shape, tf_dtype(spec.dtype), spec.default_value)
    if isinstance(spec, tfrec.VarLenFeature):
        return tf.io.VarLenFeature(tf_dtype(spec.dtype))
    if isinstance(spec, tfrec.FixedLenSequenceFeature):
        return tf.io.FixedLenSequenceFeature(
            spec.shape, tf_dtype(spec.dtype), spec.allow_missing, spec.default_value
        )
    if isinstance(spec, tfrec.SparseFeature):
        return tf.io.SparseFeature(
            spec.index_key, spec.value_key, tf_dtype(spec.dtype), spec.size, spec.already_sorted
        )
    if isinstance(spec, tfrec.RaggedFeature):
        return tf.io.RaggedFeature(
            tf_dtype(spec.dtype),
            value_key=spec.value_key,
            partitions=tuple(tf_partition(p) for p in spec.partitions),
            row_splits_dtype=tf.as_dtype(np.dtype(spec.row_splits_dtype).name),
            validate=spec.validate,
        )
    return spec  # not a spec: TF must reject it as tfrec does


def tf_specs(specs: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if specs is None else {key: tf_spec(spec) for key, spec in specs.items()}


# -- running both libraries ------------------------------------------------------------------------


def tf_batch(records: list[bytes]) -> Any:
    return tf.constant(records, tf.string, shape=[len(records)])


def tf_parse_example(records: list[bytes], specs: dict[str, Any], names: list[str] | None = None) -> Any:
    return tf.io.parse_example(tf_batch(records), tf_specs(specs), example_names=names)


def tf_parse_single(record: bytes, specs: dict[str, Any]) -> Any:
    return tf.io.parse_single_example(tf.constant(record), tf_specs(specs))


def tf_parse_sequence(records: list[bytes], context: Any, sequence: Any) -> Any:
    return tf.io.parse_sequence_example(tf_batch(records), tf_specs(context), tf_specs(sequence))


def tf_parse_single_sequence(record: bytes, context: Any, sequence: Any) -> Any:
    return tf.io.parse_single_sequence_example(tf.constant(record), tf_specs(context), tf_specs(sequence))


class Outcome(NamedTuple):
    kind: str  # "ok" | "data" (bad data for the spec) | "schema" (bad spec)
    value: Any  # the result or the exception


# Spec problems that eager TF only finds when the op runs (graph mode: ValueError/TypeError at trace time).
TF_SPEC_PROBLEMS = re.compile(r"has unknown rank or unknown inner dimensions|is not fully defined")


def tf_outcome(call: Callable[[], Any]) -> Outcome:
    try:
        return Outcome("ok", call())
    except tf.errors.InvalidArgumentError as exc:
        return Outcome("schema" if TF_SPEC_PROBLEMS.search(str(exc)) else "data", exc)
    except ValueError as exc:
        # Eager only: a SparseFeature with more indices than values fails in a shape check
        # (graph mode: InvalidArgumentError "Number of elements in indices ... do not match").
        if re.fullmatch(r"Dimensions \d+ and \d+ are not compatible", str(exc)):
            return Outcome("data", exc)
        return Outcome("schema", exc)
    except TypeError as exc:
        return Outcome("schema", exc)


def tfrec_outcome(call: Callable[[], Any]) -> Outcome:
    try:
        return Outcome("ok", call())
    except (tfrec.DecodeError, tfrec.MissingFeatureError) as exc:
        return Outcome("data", exc)
    except tfrec.SchemaError as exc:
        return Outcome("schema", exc)


def assert_same_outcome(ours: Outcome, theirs: Outcome, where: str = "") -> None:
    assert ours.kind == theirs.kind, f"{where}: tfrec {ours.value!r} but TF {theirs.value!r}"
    if theirs.kind == "ok":
        assert_same(ours.value, theirs.value, where)


def tf_core(exc: BaseException) -> str:
    """The core of a TF kernel error message, without the eager wrapper."""
    message = str(exc)
    message = re.sub(r"^\{\{function_node [^}]*\}\} ", "", message)
    return re.sub(r" \[Op:\w+\]$", "", message)


# -- comparing outputs -----------------------------------------------------------------------------


def canon(x: Any) -> tuple[Any, ...]:
    """("sparse", indices, values, dense_shape) | ("ragged", row_splits, values) | ("dense", array)."""
    if isinstance(x, (tf.SparseTensor, tfrec.SparseArray)):
        return ("sparse", _np(x.indices), _np(x.values), _np(x.dense_shape))
    if isinstance(x, (tf.RaggedTensor, tfrec.RaggedArray)):
        return ("ragged", _np(x.row_splits), canon(x.values))
    return ("dense", _np(x))


def _np(x: Any) -> Any:
    return x.numpy() if isinstance(x, (tf.Tensor, tf.Variable)) else x


def assert_same_array(ours: Any, theirs: Any, where: str) -> None:
    """Same dtype, shape and bits; tfrec's side is always an ndarray (0-d where TF's .numpy() gives a
    numpy scalar or bytes: issue 15's "arrays everywhere")."""
    if isinstance(theirs, bytes):  # a 0-d string tensor's .numpy()
        theirs = np.array(theirs, object)
    assert type(ours) is np.ndarray, f"{where}: tfrec gave {type(ours).__name__}, not an ndarray"
    a, b = np.asarray(ours), np.asarray(theirs)
    assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if a.dtype.kind == "f":
        bits = f"u{a.dtype.itemsize}"
        same = np.array_equal(np.ascontiguousarray(a).view(bits), np.ascontiguousarray(b).view(bits))
        assert same, f"{where}: {a!r} vs {b!r} (float bits differ)"
    elif a.dtype == object:
        assert all(type(v) is bytes for v in a.ravel().tolist()), f"{where}: not all bytes: {a!r}"
        assert a.tolist() == b.tolist(), f"{where}: {a!r} vs {b!r}"
    else:
        assert np.array_equal(a, b), f"{where}: {a!r} vs {b!r}"


def _assert_same_canon(a: tuple[Any, ...], b: tuple[Any, ...], where: str) -> None:
    assert a[0] == b[0], f"{where}: {a[0]} vs {b[0]}"
    if a[0] == "sparse":
        for part, x, y in zip(("indices", "values", "dense_shape"), a[1:], b[1:], strict=True):
            assert_same_array(x, y, f"{where}.{part}")
    elif a[0] == "ragged":
        assert_same_array(a[1], b[1], f"{where}.row_splits")
        _assert_same_canon(a[2], b[2], f"{where}.values")
    else:
        assert_same_array(a[1], b[1], where)


def assert_same(ours: Any, theirs: Any, where: str = "") -> None:
    """tfrec output (a dict, tuple or one value) equals TF's, part by part."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        assert sorted(ours) == sorted(theirs), f"{where}: keys {sorted(ours)} vs {sorted(theirs)}"
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, tuple) and not isinstance(theirs, tf.SparseTensor):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), where
        for i, (x, y) in enumerate(zip(ours, theirs, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        _assert_same_canon(canon(ours), canon(theirs), where)


# -- checks shared by the golden tests -------------------------------------------------------------


def check_examples(examples: list[Data], specs: dict[str, Any]) -> None:
    """parse_example and parse_single_example agree with TF, whichever library serialized."""
    reference = None
    for how, serialize in SERIALIZERS.items():
        records = [serialize(example) for example in examples]
        theirs = tf_parse_example(records, specs)
        assert_same(tfrec.parse_example(records, specs), theirs, f"parse_example/{how}")
        if reference is None:
            reference = theirs
        else:  # TF reads tfrec's bytes as it reads its own
            assert_same(theirs, reference, f"TF on tfrec bytes vs TF bytes/{how}")
        for row, record in enumerate(records):
            ours_single = tfrec_outcome(lambda r=record: tfrec.parse_single_example(r, specs))
            theirs_single = tf_outcome(lambda r=record: tf_parse_single(r, specs))
            assert_same_outcome(ours_single, theirs_single, f"parse_single_example/{how}/{row}")


def check_sequence_examples(
    examples: list[tuple[Data, Lists]], context: dict[str, Any] | None, sequence: dict[str, Any] | None
) -> None:
    reference = None
    for how, serialize in SEQUENCE_SERIALIZERS.items():
        records = [serialize(*example) for example in examples]
        theirs = tf_parse_sequence(records, context, sequence)
        assert_same(tfrec.parse_sequence_example(records, context, sequence), theirs, f"psq/{how}")
        if reference is None:
            reference = theirs
        else:
            assert_same(theirs, reference, f"TF on tfrec bytes vs TF bytes/{how}")
        for row, record in enumerate(records):
            ours_single = tfrec_outcome(
                lambda r=record: tfrec.parse_single_sequence_example(r, context, sequence)
            )
            theirs_single = tf_outcome(lambda r=record: tf_parse_single_sequence(r, context, sequence))
            assert_same_outcome(ours_single, theirs_single, f"psse/{how}/{row}")


# -- 1. golden comparisons, one per spec kind ------------------------------------------------------

THREE = [
    {"i": ints(1, 2), "f": floats(1.5, -2.0), "s": strs(b"x", b"yy"), "n": NO_KIND},
    {"i": ints(3, 4), "f": floats(0.0, 3.25), "s": strs(b"", b"z")},
    {"i": ints(-1, 2**40), "f": floats(7.0, 8.0), "s": strs(b"\xff", b"q"), "n": NO_KIND},
]
RAGGED = [
    {
        "v": ints(1, 2, 3, 4, 5, 6),
        "len": ints(2, 0, 4),
        "spl": ints(0, 2, 2, 6),
        "ids": ints(0, 0, 2, 2, 2, 2),
    },
    {"v": ints(7, 8), "len": ints(1, 1), "spl": ints(0, 1, 2), "ids": ints(0, 1)},
    {},
    {"v": ints(9, 10, 11, 12), "len": ints(4), "spl": ints(0, 4), "ids": ints(0, 0, 0, 0)},
]
NESTED = [
    # 6 values -> inner rows [2, 1, 3] -> outer rows [1, 2]; uniform: 6 = 3 x 2
    {
        "v": floats(1, 2, 3, 4, 5, 6),
        "inner": ints(2, 1, 3),
        "outer": ints(1, 2),
        "ids": ints(0, 0, 1, 2, 2, 2),
    },
    {"v": floats(7, 8), "inner": ints(2), "outer": ints(1), "ids": ints(0, 0)},
    {"v": floats(), "inner": ints(), "outer": ints()},
]
SPARSE = [
    {
        "idx": ints(5, 1, 3, 1),
        "val": strs(b"a", b"b", b"c", b"d"),
        "r": ints(1, 0, 1, 0),
        "c": ints(2, 0, 1, 0),
    },
    {},
    {"idx": ints(0, 9), "val": strs(b"e", b""), "r": ints(0, 1), "c": ints(3, 3)},
    {"idx": ints(7), "val": strs(b"f"), "r": ints(2), "c": ints(0)},  # out of range: kept as is
]

GOLDEN: dict[str, tuple[list[Data], dict[str, Any]]] = {
    "flf-scalar-and-vectors": (
        THREE,
        {
            "i": tfrec.FixedLenFeature([2], I64),
            "f": tfrec.FixedLenFeature([2], F32),
            "s": tfrec.FixedLenFeature([2], STR),
        },
    ),
    "flf-multi-dim": (
        THREE,
        {"i": tfrec.FixedLenFeature([1, 2], I64), "f": tfrec.FixedLenFeature([2, 1, 1], F32)},
    ),
    "flf-0-d": (
        [{"a": ints(5), "b": strs(b"x\x00")}, {"a": ints(-5), "b": strs(b"")}],
        {
            "a": tfrec.FixedLenFeature([], I64),
            "b": tfrec.FixedLenFeature((), STR),
        },
    ),
    "flf-defaults": (
        THREE,
        {
            "n": tfrec.FixedLenFeature([2, 2], F32, default_value=[1.0, 2.0, 3.0, 4.0]),
            "missing-s": tfrec.FixedLenFeature([], STR, default_value=b"dflt"),
            "missing-i": tfrec.FixedLenFeature([3], I64, default_value=np.array([[7], [8], [9]])),
            "i": tfrec.FixedLenFeature([2], I64, default_value=[0, 0]),
        },
    ),
    "flf-default-fills-some-rows": (
        [{"a": ints(1, 2)}, {}, {"a": NO_KIND}, {"a": ints(3, 4)}],
        {"a": tfrec.FixedLenFeature([2], I64, default_value=[-1, -2])},
    ),
    "flf-zero-size": ([{"a": ints()}, {"a": ints()}], {"a": tfrec.FixedLenFeature([0], I64)}),
    "vlf": (
        [*THREE, {}],
        {
            "i": tfrec.VarLenFeature(I64),
            "f": tfrec.VarLenFeature(F32),
            "s": tfrec.VarLenFeature(STR),
            "n": tfrec.VarLenFeature(F32),
            "missing": tfrec.VarLenFeature(STR),
        },
    ),
    "vlf-ragged-lengths": (
        [{"a": ints(1)}, {"a": ints()}, {"a": ints(1, 2, 3, 4, 5)}, {"a": NO_KIND}, {}],
        {"a": tfrec.VarLenFeature(I64)},
    ),
    "fls-padding": (
        [
            {"a": ints(1, 2, 3, 4), "b": floats(1, 2), "s": strs(b"a")},
            {},
            {"a": ints(5, 6), "b": floats(), "s": strs(b"b", b"c", b"d")},
            {"a": NO_KIND},
        ],
        {
            "a": tfrec.FixedLenSequenceFeature([2], I64, allow_missing=True),
            "b": tfrec.FixedLenSequenceFeature([], F32, allow_missing=True, default_value=-1.5),
            "s": tfrec.FixedLenSequenceFeature([1], STR, allow_missing=True, default_value=b"zz"),
            "gone": tfrec.FixedLenSequenceFeature([2, 3], I64, allow_missing=True),
        },
    ),
    "fls-multi-dim": (
        [{"a": ints(*range(12))}, {"a": ints(*range(6))}],
        {"a": tfrec.FixedLenSequenceFeature([2, 3], I64, allow_missing=True, default_value=[9])},
    ),
    "sparse-1d": (
        SPARSE,
        {
            "sp": tfrec.SparseFeature("idx", "val", STR, 10),
            "sorted": tfrec.SparseFeature("idx", "val", STR, 10, already_sorted=True),
        },
    ),
    "sparse-2d": (
        SPARSE,
        {
            "sp": tfrec.SparseFeature(["r", "c"], "val", STR, [3, 4]),
            "sorted": tfrec.SparseFeature(["r", "c"], "val", STR, [3, 4], already_sorted=True),
        },
    ),
    "sparse-and-varlen-share-a-key": (
        SPARSE,
        {"sp": tfrec.SparseFeature(["idx"], "val", STR, [10]), "idx": tfrec.VarLenFeature(I64)},
    ),
    # One key read by two RaggedFeatures needs one row_splits_dtype (TF: "Conflicting partition type").
    **{
        f"ragged-no-partitions-{np.dtype(d).name}": (
            [*THREE, {}],
            {
                "i": RF(I64, row_splits_dtype=d),
                "f": RF(F32, row_splits_dtype=d),
                "s": RF(STR, value_key="s", row_splits_dtype=d),
                "other": RF(I64, value_key="i", row_splits_dtype=d),
            },
        )
        for d in (np.int32, tfrec.int64)
    },
    **{
        f"ragged-partitions-{np.dtype(d).name}": (
            RAGGED,
            {
                "lengths": RF(I64, "v", [RF.RowLengths("len")], row_splits_dtype=d),
                "splits": RF(I64, "v", [RF.RowSplits("spl")], row_splits_dtype=d),
                "starts": RF(I64, "v", [RF.RowStarts("spl")], row_splits_dtype=d),
                "limits": RF(I64, "v", [RF.RowLimits("spl")], row_splits_dtype=d),
                "ids": RF(I64, "v", [RF.ValueRowIds("ids")], row_splits_dtype=d),
                "uniform": RF(I64, "v", [RF.UniformRowLength(2)], row_splits_dtype=d),
            },
        )
        for d in (np.int32, np.int64)
    },
    **{
        f"ragged-nested-{np.dtype(d).name}": (
            NESTED,
            {
                "two": RF(F32, "v", [RF.RowLengths("outer"), RF.RowLengths("inner")], row_splits_dtype=d),
                "ids-inner": RF(
                    F32, "v", [RF.RowLengths("outer"), RF.ValueRowIds("ids")], row_splits_dtype=d
                ),
                "uniform-inner": RF(
                    F32, "v", [RF.RowLengths("inner"), RF.UniformRowLength(1)], row_splits_dtype=d
                ),
                "uniform-middle": RF(
                    F32, "v", [RF.UniformRowLength(1), RF.RowLengths("inner")], row_splits_dtype=d
                ),
                "two-uniform": RF(
                    F32, "v", [RF.UniformRowLength(1), RF.UniformRowLength(2)], row_splits_dtype=d
                ),
                "three": RF(
                    F32,
                    "v",
                    [RF.RowLengths("outer"), RF.UniformRowLength(1), RF.RowLengths("inner")],
                    row_splits_dtype=d,
                ),
            },
        )
        for d in (np.int32, np.int64)
    },
    **{
        f"ragged-validate-{np.dtype(d).name}": (
            RAGGED,
            {
                "lengths": RF(I64, "v", [RF.RowLengths("len")], validate=True, row_splits_dtype=d),
                "ids": RF(I64, "v", [RF.ValueRowIds("ids")], validate=True, row_splits_dtype=d),
                "uniform": RF(I64, "v", [RF.UniformRowLength(2)], validate=True, row_splits_dtype=d),
            },
        )
        for d in (np.int32, np.int64)
    },
    "ragged-inconsistent-partitions": (
        # validate=False: TF keeps whatever the partitions say (splits not starting at 0, too many rows).
        [
            {"v": ints(1, 2, 3, 4, 5, 6), "spl": ints(1, 3, 4), "len": ints(5, 5)},
            {"v": ints(1, 2, 3, 4, 5, 6)},
        ],
        {
            "splits": RF(I64, "v", [RF.RowSplits("spl")]),
            "starts": RF(I64, "v", [RF.RowStarts("spl")]),
            "limits": RF(I64, "v", [RF.RowLimits("spl")]),
            "lengths": RF(I64, "v", [RF.RowLengths("len")]),
        },
    ),
    "everything-missing": (
        [{}, {"zzz": ints(1)}],
        {
            "flf": tfrec.FixedLenFeature([2], STR, default_value=[b"a", b"b"]),
            "vlf": tfrec.VarLenFeature(F32),
            "fls": tfrec.FixedLenSequenceFeature([3], I64, allow_missing=True),
            "sf": tfrec.SparseFeature(["i", "j"], "v", F32, [2, 2]),
            "rf": RF(STR, partitions=[RF.RowLengths("l")]),
            "rf-splits": RF(STR, value_key="x", partitions=[RF.RowSplits("s")], row_splits_dtype=np.int64),
        },
    ),
}


@pytest.mark.parametrize(("examples", "specs"), list(GOLDEN.values()), ids=list(GOLDEN))
def test_golden_parse_example(examples: list[Data], specs: dict[str, Any]) -> None:
    check_examples(examples, specs)


def test_parse_example_of_a_scalar_is_single_parsing() -> None:
    record = tfrec_serialize(THREE[0])
    specs = {"i": tfrec.FixedLenFeature([2], I64), "s": tfrec.VarLenFeature(STR), "f": RF(F32)}
    assert_same(tfrec.parse_example(record, specs), tf.io.parse_example(tf.constant(record), tf_specs(specs)))


def test_empty_batch() -> None:
    specs = {
        "a": tfrec.FixedLenFeature([2], I64),
        "b": tfrec.VarLenFeature(STR),
        "c": tfrec.FixedLenSequenceFeature([3], F32, allow_missing=True),
        "d": RF(I64, row_splits_dtype=np.int64),
        "e": tfrec.SparseFeature("i", "v", F32, 4),
    }
    assert_same(tfrec.parse_example([], specs), tf_parse_example([], specs))


def test_example_names_do_not_change_the_output() -> None:
    records = [tfrec_serialize(e) for e in THREE]
    specs = {"i": tfrec.VarLenFeature(I64)}
    names = ["x", "y", "z"]
    assert_same(tfrec.parse_example(records, specs, names), tf_parse_example(records, specs, names))


# -- 1b. invalid specs: TF's ValueError/TypeError is tfrec's SchemaError ---------------------------


def _in_graph(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` traced by tf.function: spec problems eager TF meets in the kernel are ValueErrors there."""
    return lambda: tf.function(call)()


SF = tfrec.SparseFeature
# name -> (parse function, specs); the specs are the ``features`` (or context, sequence) argument.
SPEC_ERRORS: dict[str, tuple[str, Any]] = {
    "pe-no-features": ("pe", {}),
    "pse-no-features": ("pse", {}),
    "pse-features-none": ("pse", None),
    "fls-not-allow-missing": ("pe", {"a": tfrec.FixedLenSequenceFeature([], I64)}),
    "flf-shape-none": ("pe", {"a": tfrec.FixedLenFeature(None, I64)}),
    "flf-unknown-first-dim": ("pe", {"a": tfrec.FixedLenFeature([None], I64)}),
    "flf-unknown-inner-dim": ("pe", {"a": tfrec.FixedLenFeature([2, None], I64)}),
    "flf-dtype-none": ("pe", {"a": tfrec.FixedLenFeature([], None)}),
    "vlf-dtype-none": ("pe", {"a": tfrec.VarLenFeature(None)}),
    "not-a-spec": ("pe", {"a": 3}),
    "flf-default-float-for-int": ("pe", {"a": tfrec.FixedLenFeature([2], I64, default_value=[1.5, 2.0])}),
    "flf-default-int-for-string": ("pe", {"a": tfrec.FixedLenFeature([], STR, default_value=3)}),
    "conflicting-sparse-types": ("pe", {"a": tfrec.VarLenFeature(I64), "s": SF("i", "a", F32, 3)}),
    "sparse-index-not-int": ("pe", {"i": tfrec.VarLenFeature(F32), "s": SF("i", "a", F32, 3)}),
    "dense-and-sparse": ("pe", {"a": tfrec.FixedLenFeature([], F32), "s": SF("i", "a", F32, 3)}),
    "dense-and-ragged": ("pe", {"a": tfrec.FixedLenFeature([], I64), "r": RF(I64, "a")}),
    "dense-and-ragged-partition": (
        "pe",
        {"a": tfrec.FixedLenFeature([], I64), "r": RF(I64, "v", [RF.RowLengths("a")])},
    ),
    "ragged-and-sparse": ("pe", {"a": tfrec.VarLenFeature(I64), "r": RF(I64, "a")}),
    "conflicting-ragged-types": ("pe", {"x": RF(I64, "a"), "y": RF(F32, "a")}),
    "ragged-partition-not-int": ("pe", {"x": RF(F32, "a"), "y": RF(I64, "b", [RF.RowLengths("a")])}),
    "conflicting-row-splits-dtype": ("pe", {"x": RF(I64, "a"), "y": RF(I64, "a", row_splits_dtype=np.int64)}),
    "sparse-size-not-list": ("pe", {"s": SF(["i", "j"], "v", F32, 3)}),
    "sparse-size-length": ("pe", {"s": SF(["i", "j"], "v", F32, [3])}),
    "sparse-no-index-key": ("pe", {"s": SF("", "v", F32, 3)}),
    "ragged-empty-value-key": ("pe", {"r": RF(I64, "")}),
    "ragged-value-key-not-str": ("pe", {"r": RF(I64, 3)}),
    "ragged-dtype-int32": ("pe", {"r": RF(np.int32)}),
    "ragged-splits-float": ("pe", {"r": RF(I64, row_splits_dtype=np.float32)}),
    "ragged-partition-not-partition": ("pe", {"r": RF(I64, partitions=("x",))}),
    "seq-nothing": ("psq", (None, None)),
    "seq-sparse-in-context": ("psq", ({"s": SF("i", "v", F32, 3)}, None)),
    "seq-fls-in-context": ("psq", ({"a": tfrec.FixedLenSequenceFeature([], I64, True)}, None)),
    "seq-flf-in-sequence": ("psq", (None, {"a": tfrec.FixedLenFeature([], I64)})),
    "seq-fls-default": ("psq", (None, {"a": tfrec.FixedLenSequenceFeature([], I64, True, default_value=1)})),
    "pse-seq-nothing": ("psse", (None, None)),
}
# Eager TF finds these in the kernel (InvalidArgumentError); traced, they are ValueErrors at call time.
SPEC_ERRORS_IN_GRAPH: dict[str, tuple[str, Any]] = {
    "flf-default-wrong-count": ("pe", {"a": tfrec.FixedLenFeature([2], I64, default_value=[1, 2, 3])}),
    "flf-default-not-broadcast": ("pe", {"a": tfrec.FixedLenFeature([2], I64, default_value=5)}),
    "fls-default-two-values": (
        "pe",
        {"a": tfrec.FixedLenSequenceFeature([], I64, True, default_value=[1, 2])},
    ),
    "fls-unknown-dim": ("pe", {"a": tfrec.FixedLenSequenceFeature([None], I64, True)}),
}
SPEC_ERROR_CALLS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "pe": (lambda r, s: tf_parse_example([r], s), lambda r, s: tfrec.parse_example([r], s)),
    "pse": (lambda r, s: tf.io.parse_single_example(r, tf_specs(s)), tfrec.parse_single_example),
    "psq": (lambda r, s: tf_parse_sequence([r], *s), lambda r, s: tfrec.parse_sequence_example([r], *s)),
    "psse": (
        lambda r, s: tf_parse_single_sequence(r, *s),
        lambda r, s: tfrec.parse_single_sequence_example(r, *s),
    ),
}


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize(
    ("function", "specs", "in_kernel"),
    [pytest.param(*case, False, id=name) for name, case in SPEC_ERRORS.items()]
    + [pytest.param(*case, True, id=name) for name, case in SPEC_ERRORS_IN_GRAPH.items()],
)
def test_spec_errors(function: str, specs: Any, in_kernel: bool, graph: bool) -> None:
    tf_call, our_call = SPEC_ERROR_CALLS[function]
    record = tfrec_serialize({"a": ints(1)})
    call = lambda: tf_call(record, specs)  # noqa: E731
    theirs = tf_outcome(_in_graph(call) if graph else call)
    if in_kernel and not graph:
        assert isinstance(theirs.value, tf.errors.InvalidArgumentError), theirs
    else:
        assert theirs.kind == "schema", theirs
    with pytest.raises(tfrec.SchemaError):
        our_call(record, specs)


SEQUENCES: list[tuple[Data, Lists]] = [
    (
        {
            "id": ints(7),
            "vec": floats(1, 2),
            "tags": strs(b"a", b"\xff"),
            "rag": ints(1, 2, 3),
            "fl": floats(1),
        },
        {
            "tok": [ints(1), ints(2), ints(3)],
            "pair": [floats(1, 2), floats(3, 4)],
            "words": [strs(b"x", b"y"), strs(), NO_KIND, strs(b"")],
            "rv": [floats(1.5), floats(), floats(2, 3)],
        },
    ),
    ({"id": ints(8), "vec": floats(3, 4)}, {"tok": [], "pair": [floats(5, 6)], "words": []}),
    (
        {"id": ints(9), "vec": floats(5, 6), "tags": strs(), "rag": ints()},
        {"tok": [ints(4), ints(5)], "pair": [], "rv": [NO_KIND, floats(9)]},
    ),
]


SEQUENCE_SPECS: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {
    "context": (
        {
            "id": tfrec.FixedLenFeature([], I64),
            "vec": tfrec.FixedLenFeature([2], F32),
            "dflt": tfrec.FixedLenFeature([2], STR, default_value=[b"p", b"q"]),
            "tags": tfrec.VarLenFeature(STR),
            "rag": RF(I64, row_splits_dtype=np.int64),
            "rag-of-fl": RF(F32, value_key="fl"),
        },
        None,
    ),
    "sequence": (
        None,
        {
            "tok": tfrec.FixedLenSequenceFeature([], I64, allow_missing=True),
            "pair": tfrec.FixedLenSequenceFeature([2], F32, allow_missing=True),
            "pair-2d": tfrec.FixedLenSequenceFeature([1, 2], F32, allow_missing=True),
            "words": tfrec.VarLenFeature(STR),
            "rv": RF(F32, row_splits_dtype=np.int64),
            "nowhere": tfrec.FixedLenSequenceFeature([3], STR, allow_missing=True),
            "nowhere-vlf": tfrec.VarLenFeature(I64),
        },
    ),
    "both": (
        {"id": tfrec.FixedLenFeature([1], I64), "tok": tfrec.VarLenFeature(I64)},
        {"tok": tfrec.FixedLenSequenceFeature([1], I64, allow_missing=True), "words": RF(STR)},
    ),
}


@pytest.mark.parametrize(("context", "sequence"), list(SEQUENCE_SPECS.values()), ids=list(SEQUENCE_SPECS))
def test_golden_parse_sequence_example(context: Any, sequence: Any) -> None:
    check_sequence_examples(SEQUENCES, context, sequence)


def test_required_feature_list_present_with_no_steps() -> None:
    examples = [({}, {"tok": []}), ({}, {"tok": [ints(1), ints(2)]})]
    check_sequence_examples(examples, None, {"tok": tfrec.FixedLenSequenceFeature([], I64)})


def test_sequence_example_empty_batch() -> None:
    context = {"id": tfrec.FixedLenFeature([], I64, default_value=0), "t": tfrec.VarLenFeature(STR)}
    sequence = {"tok": tfrec.FixedLenSequenceFeature([], I64, allow_missing=True), "r": RF(F32)}
    theirs = tf_parse_sequence([], context, sequence)
    assert_same(tfrec.parse_sequence_example([], context, sequence), theirs)


# -- 2. edge values --------------------------------------------------------------------------------

NAN_BITS = (0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFFFFFFFF, 0x7FFFFFFF)  # quiet NaNs with payloads
FLOAT_EDGE_BITS = (
    *NAN_BITS,
    0x7F800000,  # +inf
    0xFF800000,  # -inf
    0x80000000,  # -0.0
    0x00000000,
    0x00000001,  # smallest denormal
    0x007FFFFF,  # largest denormal
    0x807FFFFF,
    0x00800000,  # smallest normal
    0x7F7FFFFF,  # largest finite
    0xFF7FFFFF,
    0x3F800000,
)
INT_EDGES = (0, 1, -1, -5, 127, 128, 300, 2**31 - 1, -(2**31), 2**32, 2**62, 2**63 - 1, -(2**63))
BYTES_EDGES = (b"", b"\xff\xfe", b"a\x00\x00", b"\x00", b"caf\xc3\xa9", b"\x80" * 300, bytes(range(256)))


def _edge_specs(n_floats: int, n_ints: int, n_bytes: int) -> dict[str, Any]:
    return {
        "f-vlf": tfrec.VarLenFeature(F32),
        "f-flf": tfrec.FixedLenFeature([n_floats], F32, default_value=[0.0] * n_floats),
        "f-rf": RF(F32, value_key="f"),
        "f-fls": tfrec.FixedLenSequenceFeature([], F32, allow_missing=True, default_value=float("nan")),
        "i-vlf": tfrec.VarLenFeature(I64),
        "i-flf": tfrec.FixedLenFeature([n_ints], I64, default_value=[0] * n_ints),
        "i-fls": tfrec.FixedLenSequenceFeature([1], I64, allow_missing=True, default_value=-(2**63)),
        "s-vlf": tfrec.VarLenFeature(STR),
        "s-flf": tfrec.FixedLenFeature([n_bytes], STR, default_value=[b"\x00"] * n_bytes),
        "s-rf": RF(STR, value_key="s", row_splits_dtype=np.int64),
    }


def _edge_examples() -> list[Data]:
    full = {"f": float_bits(*FLOAT_EDGE_BITS), "i": ints(*INT_EDGES), "s": strs(*BYTES_EDGES)}
    # Other spec keys read "f-vlf" etc.: give them the same data under their own names.
    full |= {f"{k}-{spec}": full[k] for k in "fis" for spec in ("vlf", "flf", "fls")}
    return [full, {}, {key: Feat(feat.kind, feat.values[::-1]) for key, feat in full.items()}]


def test_edge_values() -> None:
    check_examples(_edge_examples(), _edge_specs(len(FLOAT_EDGE_BITS), len(INT_EDGES), len(BYTES_EDGES)))


def test_edge_values_in_lockstep_batch() -> None:
    # >= 4 records with one layout take tfrec's lockstep decoder.
    examples = [e for e in _edge_examples() if e] * 3
    check_examples(examples, _edge_specs(len(FLOAT_EDGE_BITS), len(INT_EDGES), len(BYTES_EDGES)))


@pytest.mark.parametrize("bits", [0x7F800001, 0xFF800001, 0x7FBFFFFF], ids=hex)
def test_signalling_nan_bits_survive(bits: int) -> None:
    # Only tfrec can write these: TF's Python serializer goes through a double, which quiets them.
    records = [tfrec_serialize({"f": float_bits(bits, 0x7FC00001)})] * 5
    for specs in ({"f": tfrec.VarLenFeature(F32)}, {"f": tfrec.FixedLenFeature([2], F32)}):
        assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))
        assert_same(tfrec.parse_single_example(records[0], specs), tf_parse_single(records[0], specs))


def test_negative_ints_are_ten_byte_varints() -> None:
    record = tfrec_serialize({"i": ints(-1)})
    assert record.endswith(b"\xff" * 9 + b"\x01")
    assert record == tf_serialize({"i": ints(-1)})
    specs = {"i": tfrec.FixedLenFeature([], I64)}
    assert_same(tfrec.parse_single_example(record, specs), tf_parse_single(record, specs))


def test_empty_lists_and_missing_features() -> None:
    examples = [
        {"i": ints(), "f": floats(), "s": strs(), "i2": ints()},
        {"i": NO_KIND, "f": NO_KIND, "s": NO_KIND, "i2": NO_KIND},
        {},
        {"i": ints(1), "f": floats(1), "s": strs(b"")},
    ]
    specs = {
        "i": tfrec.VarLenFeature(I64),
        "f": RF(F32),
        "s": tfrec.FixedLenSequenceFeature([], STR, allow_missing=True),
        "i-rf": RF(I64, value_key="i2"),
    }
    check_examples(examples, specs)


def test_two_hundred_features() -> None:
    kinds = [ints(7, -7), floats(0.5), strs(b"v", b"")]
    example = {f"f{n:03d}": kinds[n % 3] for n in range(200)}
    specs: dict[str, Any] = {}
    for n in range(200):
        dtype = (I64, F32, STR)[n % 3]
        count = (2, 1, 2)[n % 3]
        specs[f"f{n:03d}"] = tfrec.FixedLenFeature([count], dtype) if n % 2 else tfrec.VarLenFeature(dtype)
    check_examples([example], specs)
    check_examples([example] * 5, specs)


def test_hundred_thousand_values() -> None:
    rng = np.random.default_rng(7)
    big_i = rng.integers(-(2**63), 2**63 - 1, 100_000, dtype=np.int64, endpoint=True)
    big_f = rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    examples = [
        {"i": Feat("int64", big_i), "f": Feat("float", big_f)},
        {"i": ints(1), "f": floats()},
        {"i": Feat("int64", big_i[::-1]), "f": Feat("float", big_f[:1000])},
    ]
    specs = {
        "i": tfrec.VarLenFeature(I64),
        "f": RF(F32),
        "f-fls": tfrec.FixedLenSequenceFeature([], F32, allow_missing=True),
    }
    examples = [e | {"f-fls": e["f"]} for e in examples]
    for how, serialize in SERIALIZERS.items():
        records = [serialize(e) for e in examples]
        assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs), how)
        dense = {"i": tfrec.FixedLenFeature([100_000], I64), "f": tfrec.FixedLenFeature([100_000], F32)}
        assert_same(tfrec.parse_single_example(records[0], dense), tf_parse_single(records[0], dense), how)


def test_batch_padding_across_lengths() -> None:
    examples = [{"a": ints(*range(n)), "s": strs(*[b"s"] * n)} for n in (0, 3, 1, 6, 2, 0, 5)]
    specs = {
        "a": tfrec.FixedLenSequenceFeature([], I64, allow_missing=True, default_value=-9),
        "s": tfrec.FixedLenSequenceFeature([], STR, allow_missing=True),
        "a-vlf": tfrec.VarLenFeature(I64),
        "a-rf": RF(I64, value_key="a-rag"),
    }
    examples = [e | {"a-vlf": e["a"], "a-rag": e["a"]} for e in examples]
    check_examples(examples, specs)


# -- 3. differential testing with hypothesis -------------------------------------------------------

KEYS = ("a", "b", "c", "d")
KINDS = ("int64", "float", "bytes")
DTYPE_OF = {"int64": I64, "float": F32, "bytes": STR}


def _quiet(bits: int) -> int:
    """Signalling NaNs would be quieted by TF's serializer (see above): make them quiet."""
    return bits | 0x400000 if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF else bits


int_values = st.one_of(st.sampled_from(INT_EDGES), st.integers(-(2**63), 2**63 - 1))
float_bit_values = st.one_of(st.sampled_from(FLOAT_EDGE_BITS), st.integers(0, 2**32 - 1).map(_quiet))
bytes_values = st.one_of(st.sampled_from(BYTES_EDGES[:5]), st.binary(max_size=6))
small_int_values = st.integers(-2, 6)


def feats(kind: str, small_ints: bool = False) -> st.SearchStrategy[Feat]:
    if kind == "int64":
        return st.lists(small_int_values if small_ints else int_values, max_size=5).map(lambda v: ints(*v))
    if kind == "float":
        return st.lists(float_bit_values, max_size=5).map(lambda v: float_bits(*v))
    return st.lists(bytes_values, max_size=5).map(lambda v: strs(*v))


@st.composite
def batches(draw: st.DrawFn, small_ints: bool = False) -> tuple[dict[str, str], list[Data]]:
    """Key -> kind, and a batch of Examples using those keys (each key keeps one kind).

    Half the batches give every record the same keys in the same order (tfrec's lockstep
    decoder); the others also drop keys.
    """
    kinds = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(KINDS), min_size=1))
    uniform = draw(st.booleans())
    size = draw(st.integers(4, 8) if uniform else st.integers(0, 6))
    examples = []
    for _ in range(size):
        example: Data = {}
        for key, kind in kinds.items():
            states = (
                ["no-kind", "values", "values"] if uniform else ["missing", "no-kind", "values", "values"]
            )
            state = draw(st.sampled_from(states))
            if state == "values":
                example[key] = draw(feats(kind, small_ints))
            elif state == "no-kind":
                example[key] = NO_KIND
        examples.append(example)
    return kinds, examples


def _count(example: Data, key: str) -> int:
    feat = example.get(key)
    return 0 if feat is None or feat.kind == "none" else len(feat.values)


def _shape_for(draw: st.DrawFn, size: int) -> list[int]:
    """A shape holding ``size`` values."""
    options = [[size], [1, size], [size, 1]]
    if size == 1:
        options.append([])
    if size == 4:
        options.append([2, 2])
    return draw(st.sampled_from(options))


def _values(draw: st.DrawFn, kind: str, count: int) -> list[Any]:
    feat = draw(feats(kind))
    pool = list(feat.values) or ([0] if kind == "int64" else [1.0] if kind == "float" else [b"d"])
    return [pool[i % len(pool)] for i in range(count)]


def _lengths(draw: st.DrawFn, total: int) -> list[int]:
    """Row lengths adding up to ``total`` (some rows may be empty)."""
    rows = draw(st.integers(1 if total else 0, 3))
    if not rows:
        return []
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=rows - 1, max_size=rows - 1)))
    bounds = [0, *cuts, total]
    return [bounds[i + 1] - bounds[i] for i in range(rows)]


def _divisors(counts: list[int]) -> list[int]:
    g = math.gcd(*counts) if counts else 0
    return [d for d in range(1, 4) if g % d == 0] if g else [1, 2, 3]


def _ragged_spec(draw: st.DrawFn, key: str, kind: str, examples: list[Data]) -> Any:
    """A RaggedFeature over ``key``, adding consistent partition features to the examples."""
    counts = [_count(e, key) for e in examples]
    partitions: list[Any] = []
    for level in range(draw(st.integers(0, 2))):  # innermost first
        how = draw(
            st.sampled_from(["RowLengths", "RowSplits", "RowStarts", "RowLimits", "ValueRowIds", "Uniform"])
        )
        if how == "Uniform":
            length = draw(st.sampled_from(_divisors(counts)))
            partitions.insert(0, RF.UniformRowLength(length))
            counts = [c // length for c in counts]
            continue
        part_key = f"{key}_p{level}"
        new_counts = []
        for example, count in zip(examples, counts, strict=True):
            lengths = _lengths(draw, count)
            ends = np.cumsum([0, *lengths]).tolist()
            values = {
                "RowLengths": lengths,
                "RowSplits": ends,
                "RowStarts": ends[:-1],
                "RowLimits": ends[1:],
                "ValueRowIds": np.repeat(np.arange(len(lengths)), lengths).tolist(),
            }[how]
            if how == "ValueRowIds":  # rows after the last id do not exist
                lengths = lengths[: max(values, default=-1) + 1]
            if values or not draw(st.booleans()):
                example[part_key] = ints(*values)
            new_counts.append(len(lengths))
        partitions.insert(0, getattr(RF, how)(part_key))
        counts = new_counts
    value_key = draw(st.sampled_from([None, key]))
    splits_dtype = draw(st.sampled_from([np.int32, np.int64]))
    return RF(DTYPE_OF[kind], value_key, tuple(partitions), splits_dtype, validate=draw(st.booleans()))


def _sparse_spec(draw: st.DrawFn, key: str, kind: str, examples: list[Data]) -> Any:
    rank = draw(st.integers(1, 2))
    sizes = [draw(st.integers(1, 5)) for _ in range(rank)]
    index_keys = [f"{key}_i{d}" for d in range(rank)]
    # Distinct indices within an example: TF sorts with an unstable sort (equal indices come out in
    # another order once the batch has more than 16 values), so only small cases pin duplicates.
    # Indices may be out of range (-1, >= size): neither library checks.
    index = st.tuples(*(st.integers(-1, size + 2) for size in sizes))
    for example in examples:
        count = _count(example, key)
        rows = draw(st.lists(index, min_size=count, max_size=count, unique=True))
        for d, index_key in enumerate(index_keys):
            if count or draw(st.booleans()):
                example[index_key] = ints(*(row[d] for row in rows))
    index_key: Any = index_keys if rank == 2 or draw(st.booleans()) else index_keys[0]
    size: Any = sizes if isinstance(index_key, list) else sizes[0]
    return tfrec.SparseFeature(index_key, key, DTYPE_OF[kind], size, draw(st.booleans()))


def valid_spec(draw: st.DrawFn, key: str, kind: str, examples: list[Data]) -> Any:
    """A spec for ``key`` that the examples satisfy (may add helper features to them)."""
    dtype = DTYPE_OF[kind]
    counts = {_count(e, key) for e in examples if key in e and e[key].kind != "none"}
    absent = any(key not in e or e[key].kind == "none" for e in examples)
    options = ["varlen", "sequence", "ragged", "sparse"]
    if len(counts) <= 1 and not (absent and counts == {0}):
        options.append("fixed")
    how = draw(st.sampled_from(options))
    if how == "varlen":
        return tfrec.VarLenFeature(dtype)
    if how == "fixed":
        size = counts.pop() if counts else draw(st.integers(1, 3))
        shape = _shape_for(draw, size)
        default = None
        if absent or draw(st.booleans()):
            default = _values(draw, kind, size)
            if kind == "float":
                default = np.array(default, np.float32)
            if draw(st.booleans()):
                default = np.array(default, dtype).reshape(shape)
        return tfrec.FixedLenFeature(shape, dtype, default)
    if how == "sequence":
        stride = draw(st.sampled_from(_divisors(sorted(counts))))
        shape = _shape_for(draw, stride)
        pad = _values(draw, kind, 1)[0] if draw(st.booleans()) else None
        return tfrec.FixedLenSequenceFeature(shape, dtype, True, pad)
    if how == "ragged":
        return _ragged_spec(draw, key, kind, examples)
    return _sparse_spec(draw, key, kind, examples)


HYPOTHESIS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@HYPOTHESIS
@given(data=st.data())
def test_random_valid_batches_parse_like_tf(data: st.DataObject) -> None:
    kinds, examples = data.draw(batches())
    specs = {key: valid_spec(data.draw, key, kind, examples) for key, kind in kinds.items()}
    how = data.draw(st.sampled_from(["tf", "tfrec", "mixed"]))
    records = [
        SERIALIZERS[data.draw(st.sampled_from(list(SERIALIZERS))) if how == "mixed" else how](e)
        for e in examples
    ]
    theirs = tf_parse_example(records, specs)  # the specs are valid for the data: TF must not raise
    assert_same(tfrec.parse_example(records, specs), theirs, "parse_example")
    if records:
        ours_single = tfrec_outcome(lambda: tfrec.parse_single_example(records[-1], specs))
        theirs_single = tf_outcome(lambda: tf_parse_single(records[-1], specs))
        assert_same_outcome(ours_single, theirs_single, "parse_single_example")


SHAPES = ([], [1], [2], [1, 2], [0], [None], [2, None], [None, 2])


def _no_uniform_over_ragged(partitions: list[Any]) -> bool:
    """No UniformRowLength outside a ragged partition: see test_uniform_row_length_over_ragged_rows."""
    kinds = [isinstance(p, RF.UniformRowLength) for p in partitions]  # outermost first
    return not any(uniform and not all(kinds[i:]) for i, uniform in enumerate(kinds))


@st.composite
def any_spec(draw: st.DrawFn) -> Any:
    """A spec, valid or not, over the key pool (never one of the documented differences)."""
    dtype = draw(st.sampled_from([I64, F32, STR]))
    kind = {I64: "int64", F32: "float", STR: "bytes"}[dtype]
    how = draw(st.sampled_from(["fixed", "varlen", "sequence", "sparse", "ragged"]))
    if how == "fixed":
        shape = draw(st.sampled_from(SHAPES))
        default = None
        if draw(st.booleans()) and None not in shape:
            default = _values(
                draw, kind, math.prod(shape)
            )  # right size: TF's eager reshape error is not a spec error
        return tfrec.FixedLenFeature(shape, dtype, default)
    if how == "varlen":
        return tfrec.VarLenFeature(dtype)
    if how == "sequence":
        shape = draw(st.sampled_from([s for s in SHAPES if 0 not in s]))  # 0-sized: TF crashes
        pad = _values(draw, kind, 1)[0] if draw(st.booleans()) else None
        return tfrec.FixedLenSequenceFeature(shape, dtype, draw(st.booleans()), pad)
    if how == "sparse":
        if draw(st.booleans()):
            return tfrec.SparseFeature(draw(st.sampled_from(KEYS)), draw(st.sampled_from(KEYS)), dtype, 4)
        index = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=2))
        return tfrec.SparseFeature(index, draw(st.sampled_from(KEYS)), dtype, [4] * len(index))
    partitions = draw(
        st.lists(
            st.one_of(
                st.sampled_from(KEYS).map(RF.RowLengths),
                st.sampled_from([1, 2]).map(RF.UniformRowLength),
            ),
            max_size=2,
        ).filter(_no_uniform_over_ragged)
    )
    value_key = draw(st.sampled_from([None, *KEYS]))
    return RF(dtype, value_key, tuple(partitions), draw(st.sampled_from([np.int32, np.int64])))


@HYPOTHESIS
@given(
    batch=batches(small_ints=True),
    specs=st.dictionaries(st.sampled_from(KEYS), any_spec(), min_size=1, max_size=3),
    how=st.sampled_from(list(SERIALIZERS)),
)
def test_random_specs_fail_like_tf(
    batch: tuple[dict[str, str], list[Data]], specs: dict[str, Any], how: str
) -> None:
    _, examples = batch
    records = [SERIALIZERS[how](e) for e in examples]
    theirs = tf_outcome(lambda: tf_parse_example(records, specs))
    ours = tfrec_outcome(lambda: tfrec.parse_example(records, specs))
    assert_same_outcome(ours, theirs, "parse_example")
    if records:
        theirs = tf_outcome(lambda: tf_parse_single(records[0], specs))
        ours = tfrec_outcome(lambda: tfrec.parse_single_example(records[0], specs))
        assert_same_outcome(ours, theirs, "parse_single_example")


@st.composite
def sequence_batches(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, str], list[tuple[Data, Lists]]]:
    """Context key -> kind, feature list key -> kind, and a batch of SequenceExamples using them."""
    context_kinds = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(KINDS), max_size=3))
    list_kinds = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(KINDS), max_size=3))
    examples = []
    for _ in range(draw(st.integers(0, 5))):
        context: Data = {}
        for key, kind in context_kinds.items():
            state = draw(st.sampled_from(["missing", "no-kind", "values", "values"]))
            if state != "missing":
                context[key] = draw(feats(kind)) if state == "values" else NO_KIND
        lists: Lists = {}
        for key, kind in list_kinds.items():
            if draw(st.integers(0, 3)):
                lists[key] = draw(st.lists(st.one_of(feats(kind), st.just(NO_KIND)), max_size=4))
        examples.append((context, lists))
    return context_kinds, list_kinds, examples


def _context_spec(draw: st.DrawFn, key: str, kind: str, contexts: list[Data]) -> Any:
    dtype = DTYPE_OF[kind]
    options: list[Any] = [
        tfrec.VarLenFeature(dtype),
        RF(dtype, row_splits_dtype=draw(st.sampled_from([np.int32, np.int64]))),
    ]
    counts = {len(c[key].values) for c in contexts if key in c and c[key].kind != "none"}
    no_kind = any(key in c and c[key].kind == "none" for c in contexts)  # a documented difference
    missing = any(key not in c for c in contexts)
    if len(counts) <= 1 and not no_kind:
        size = counts.pop() if counts else draw(st.integers(1, 3))
        if size or not missing:
            default = _values(draw, kind, size) if missing or not contexts or draw(st.booleans()) else None
            options.append(tfrec.FixedLenFeature(_shape_for(draw, size), dtype, default))
    return draw(st.sampled_from(options))


def _feature_list_spec(draw: st.DrawFn, key: str, kind: str, lists: list[Lists]) -> Any:
    dtype = DTYPE_OF[kind]
    options: list[Any] = [
        tfrec.VarLenFeature(dtype),
        RF(dtype, row_splits_dtype=draw(st.sampled_from([np.int32, np.int64]))),
    ]
    counts = {0 if f.kind == "none" else len(f.values) for steps in lists for f in steps.get(key, [])}
    if len(counts) <= 1 and counts != {0}:
        size = counts.pop() if counts else draw(st.integers(1, 3))
        missing = any(key not in steps for steps in lists)
        allow_missing = missing or draw(st.booleans())
        options.append(tfrec.FixedLenSequenceFeature(_shape_for(draw, size), dtype, allow_missing))
    return draw(st.sampled_from(options))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_sequence_examples_parse_like_tf(data: st.DataObject) -> None:
    context_kinds, list_kinds, examples = data.draw(sequence_batches())
    contexts = [context for context, _ in examples]
    lists = [steps for _, steps in examples]
    context = {key: _context_spec(data.draw, key, kind, contexts) for key, kind in context_kinds.items()}
    sequence = {key: _feature_list_spec(data.draw, key, kind, lists) for key, kind in list_kinds.items()}
    assume(context or sequence)
    required_context = any(
        isinstance(s, tfrec.FixedLenFeature) and s.default_value is None for s in context.values()
    )
    assume(examples or not required_context)  # see test_empty_batch_with_required_context_feature
    serialize = SEQUENCE_SERIALIZERS[data.draw(st.sampled_from(list(SEQUENCE_SERIALIZERS)))]
    records = [serialize(*example) for example in examples]
    context_arg, sequence_arg = context or None, sequence or None
    theirs = tf_parse_sequence(records, context_arg, sequence_arg)
    assert_same(tfrec.parse_sequence_example(records, context_arg, sequence_arg), theirs, "psq")
    if records:
        ours_single = tfrec_outcome(
            lambda: tfrec.parse_single_sequence_example(records[0], context_arg, sequence_arg)
        )
        theirs_single = tf_outcome(lambda: tf_parse_single_sequence(records[0], context_arg, sequence_arg))
        assert_same_outcome(ours_single, theirs_single, "psse")


# -- 4. codec: encode/decode against protobuf ------------------------------------------------------


def proto_values(feature: Any) -> Any:
    """A tf.train.Feature's values in decode_example's form."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None
    if kind == "int64_list":
        return np.array(feature.int64_list.value, np.int64)
    if kind == "float_list":
        return np.array(feature.float_list.value, np.float32)
    return list(feature.bytes_list.value)


def assert_same_decoded(ours: Any, theirs: Any, where: str) -> None:
    if theirs is None or isinstance(theirs, list):
        assert ours == theirs and all(type(v) is bytes for v in ours or []), (
            f"{where}: {ours!r} vs {theirs!r}"
        )
    else:
        assert_same_array(ours, theirs, where)


def assert_decodes_like_protobuf(record: bytes) -> None:
    decoded = tfrec.decode_example(record)
    proto = tf.train.Example.FromString(record)
    assert sorted(decoded) == sorted(proto.features.feature), "keys"
    for key, feature in proto.features.feature.items():
        assert_same_decoded(decoded[key], proto_values(feature), key)


def examples_data(small_ints: bool = False) -> st.SearchStrategy[Data]:
    return st.dictionaries(
        st.text(max_size=4),
        st.one_of(*(feats(kind, small_ints) for kind in KINDS), st.just(NO_KIND)),
        max_size=5,
    )


@settings(max_examples=60, deadline=None)
@given(example=examples_data())
def test_encode_example_reads_back_in_protobuf(example: Data) -> None:
    record = tfrec_serialize(example)
    proto = tf.train.Example.FromString(record)
    assert sorted(proto.features.feature) == sorted(example)
    for key, feat in example.items():
        expected = None if feat.kind == "none" else feat.values
        assert_same_decoded(proto_values(proto.features.feature[key]), expected, key)
    assert_decodes_like_protobuf(record)


@settings(max_examples=60, deadline=None)
@given(example=examples_data())
def test_decode_example_reads_tf_serialized(example: Data) -> None:
    record = tf_serialize(example)
    decoded = tfrec.decode_example(record)
    assert sorted(decoded) == sorted(example)
    for key, feat in example.items():
        expected = None if feat.kind == "none" else feat.values
        assert_same_decoded(decoded[key], expected, key)
    assert_decodes_like_protobuf(record)


@settings(max_examples=40, deadline=None)
@given(
    context=examples_data(),
    lists=st.dictionaries(
        st.text(max_size=3),
        st.lists(st.one_of(*(feats(kind) for kind in KINDS), st.just(NO_KIND)), max_size=4),
        max_size=3,
    ),
)
def test_sequence_codec_matches_protobuf(context: Data, lists: Lists) -> None:
    for serialize in SEQUENCE_SERIALIZERS.values():
        record = serialize(context, lists)
        ours_context, ours_lists = tfrec.decode_sequence_example(record)
        proto = tf.train.SequenceExample.FromString(record)
        assert sorted(ours_context) == sorted(proto.context.feature) == sorted(context)
        for key, feature in proto.context.feature.items():
            assert_same_decoded(ours_context[key], proto_values(feature), key)
        assert sorted(ours_lists) == sorted(proto.feature_lists.feature_list) == sorted(lists)
        for key, steps in proto.feature_lists.feature_list.items():
            assert len(ours_lists[key]) == len(steps.feature)
            for step, feature in enumerate(steps.feature):
                assert_same_decoded(ours_lists[key][step], proto_values(feature), f"{key}[{step}]")


def test_edge_values_codec_both_ways() -> None:
    for example in _edge_examples():
        assert_decodes_like_protobuf(tfrec_serialize(example))
        assert_decodes_like_protobuf(tf_serialize(example))
        for key, feat in example.items():  # one feature: no map order to differ, the bytes are TF's
            assert tfrec_serialize({key: feat}) == tf_serialize({key: feat}), key


# -- 5. error messages -----------------------------------------------------------------------------


ERRORS: dict[str, tuple[list[Data], dict[str, Any], type[Exception]]] = {
    "missing-int64": ([{"a": ints(1)}, {}], {"a": tfrec.FixedLenFeature([], I64)}, tfrec.MissingFeatureError),
    "missing-float": ([{}], {"a": tfrec.FixedLenFeature([2], F32)}, tfrec.MissingFeatureError),
    "missing-string": ([{"b": ints(1)}], {"a": tfrec.FixedLenFeature([], STR)}, tfrec.MissingFeatureError),
    "no-kind-is-missing": (
        [{"a": NO_KIND}],
        {"a": tfrec.FixedLenFeature([], I64)},
        tfrec.MissingFeatureError,
    ),
    "count-int64-too-many": (
        [{"a": ints(1)}, {"a": ints(1, 2, 3)}],
        {"a": tfrec.FixedLenFeature([2], I64)},
        tfrec.DecodeError,
    ),
    "count-int64-too-few": ([{"a": ints(1)}], {"a": tfrec.FixedLenFeature([2, 2], I64)}, tfrec.DecodeError),
    "count-int64-empty": (
        [{"a": ints()}],
        {"a": tfrec.FixedLenFeature([], I64, default_value=3)},
        tfrec.DecodeError,
    ),
    "count-float": ([{"a": floats(1, 2, 3)}], {"a": tfrec.FixedLenFeature([1, 2], F32)}, tfrec.DecodeError),
    "count-bytes-too-few": (
        [{"a": strs(b"x")}] * 3,
        {"a": tfrec.FixedLenFeature([2], STR)},
        tfrec.DecodeError,
    ),
    "count-bytes-empty": ([{"a": strs()}], {"a": tfrec.FixedLenFeature([], STR)}, tfrec.DecodeError),
    "stride": (
        [{"a": ints(1, 2)}, {"a": ints(1, 2, 3)}],
        {"a": tfrec.FixedLenSequenceFeature([2], I64, allow_missing=True)},
        tfrec.DecodeError,
    ),
    "stride-multi-dim": (
        [{"a": strs(b"a", b"b", b"c")}],
        {"a": tfrec.FixedLenSequenceFeature([2, 2], STR, allow_missing=True)},
        tfrec.DecodeError,
    ),
    "type-varlen": ([{"a": ints(1)}, {"a": floats(1)}], {"a": tfrec.VarLenFeature(I64)}, tfrec.DecodeError),
    "type-varlen-empty-list": ([{"a": strs()}], {"a": tfrec.VarLenFeature(F32)}, tfrec.DecodeError),
    "type-ragged": ([{"a": strs(b"x")}], {"r": RF(I64, value_key="a")}, tfrec.DecodeError),
    "type-ragged-partition": (
        [{"v": ints(1), "l": floats(1)}],
        {"r": RF(I64, "v", [RF.RowLengths("l")])},
        tfrec.DecodeError,
    ),
    "type-sparse-index": (
        [{"i": floats(1), "v": ints(1)}],
        {"s": tfrec.SparseFeature("i", "v", I64, 3)},
        tfrec.DecodeError,
    ),
    "type-sparse-value": (
        [{"i": ints(1), "v": ints(1)}],
        {"s": tfrec.SparseFeature("i", "v", STR, 3)},
        tfrec.DecodeError,
    ),
}


ERROR_CASES = [pytest.param(*case, id=name) for name, case in ERRORS.items()]


@pytest.mark.parametrize("names", [None, ["first", "second", "third"]], ids=["no-names", "names"])
@pytest.mark.parametrize(("examples", "specs", "error"), ERROR_CASES)
def test_error_message_is_tf_core(
    examples: list[Data], specs: dict[str, Any], error: type[Exception], names: list[str] | None
) -> None:
    records = [tfrec_serialize(e) for e in examples]
    names = names[: len(records)] if names else None
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_parse_example(records, specs, names)
    with pytest.raises(error) as ours:
        tfrec.parse_example(records, specs, names)
    assert str(ours.value) == tf_core(theirs.value)


SINGLE_ERROR_CASES = [pytest.param(*case, id=name) for name, case in ERRORS.items()]


@pytest.mark.parametrize(("examples", "specs", "error"), SINGLE_ERROR_CASES)
def test_single_example_error_message_is_tf_core(
    examples: list[Data], specs: dict[str, Any], error: type[Exception]
) -> None:
    record = tfrec_serialize(examples[-1])
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_parse_single(record, specs)
    with pytest.raises(error) as ours:
        tfrec.parse_single_example(record, specs)
    assert str(ours.value) == tf_core(theirs.value)


SequenceCase = tuple[list[tuple[Data, Lists]], Any, Any, type[Exception]]
SEQUENCE_ERRORS: dict[str, SequenceCase] = {
    "list-type": (
        [({}, {"a": [ints(1), floats(1)]})],
        None,
        {"a": tfrec.VarLenFeature(I64)},
        tfrec.DecodeError,
    ),
    "list-type-empty-step": ([({}, {"a": [ints(1), strs()]})], None, {"a": RF(I64)}, tfrec.DecodeError),
    "list-required": (
        [({}, {}), ({}, {})],
        None,
        {"a": tfrec.FixedLenSequenceFeature([], I64)},
        tfrec.MissingFeatureError,
    ),
    "list-step-count": (
        [({}, {"a": [ints(1, 2), ints(1, 2, 3, 4)]})],
        None,
        {"a": tfrec.FixedLenSequenceFeature([2], I64, True)},
        tfrec.DecodeError,
    ),
    "list-step-no-kind": (
        [({}, {"a": [ints(1), NO_KIND]})],
        None,
        {"a": tfrec.FixedLenSequenceFeature([], I64, True)},
        tfrec.DecodeError,
    ),
    "list-step-count-2d": (
        [({}, {"a": [ints(1, 2), ints(3, 4, 5, 6)]})],
        None,
        {"a": tfrec.FixedLenSequenceFeature([1, 2], I64, True)},
        tfrec.DecodeError,
    ),
    "list-step-count-before-later-absence": (
        [({}, {"a": [ints(1), ints(1, 2, 3)]}), ({}, {})],
        None,
        {"a": tfrec.FixedLenSequenceFeature([2], I64)},
        tfrec.DecodeError,
    ),
    "list-total-not-multiple": (
        [({}, {"a": [ints(1, 2, 3)]})],
        None,
        {"a": tfrec.FixedLenSequenceFeature([2], I64, True)},
        tfrec.DecodeError,
    ),
    "list-largest-total-not-multiple": (
        [({}, {}), ({}, {"a": [ints(1, 2)]}), ({}, {"a": [ints(1, 2), ints(3)]})],
        None,
        {"a": tfrec.FixedLenSequenceFeature([1, 2], I64)},
        tfrec.DecodeError,
    ),
    "list-type-before-other-list-count": (
        [({}, {"a": [ints(1), ints(1, 2)], "b": [floats(1)]})],
        None,
        {"a": tfrec.FixedLenSequenceFeature([], I64, True), "b": tfrec.VarLenFeature(I64)},
        tfrec.DecodeError,
    ),
    "context-type": (
        [({"a": floats(1)}, {})],
        {"a": tfrec.FixedLenFeature([], I64)},
        None,
        tfrec.DecodeError,
    ),
    "context-type-empty-list": (
        [({"a": floats()}, {})],
        {"a": tfrec.VarLenFeature(I64)},
        None,
        tfrec.DecodeError,
    ),
    "context-missing": (
        [({"a": ints(1)}, {}), ({}, {})],
        {"a": tfrec.FixedLenFeature([], I64)},
        None,
        tfrec.MissingFeatureError,
    ),
    "context-missing-everywhere": (
        [({}, {}), ({}, {})],
        {"a": tfrec.FixedLenFeature([2], F32)},
        None,
        tfrec.MissingFeatureError,
    ),
    "context-count": (
        [({"a": ints(1, 2)}, {})],
        {"a": tfrec.FixedLenFeature([], I64)},
        None,
        tfrec.DecodeError,
    ),
    "context-count-too-few": (
        [({"a": ints(1, 2)}, {}), ({"a": ints(1)}, {})],
        {"a": tfrec.FixedLenFeature([2], I64)},
        None,
        tfrec.DecodeError,
    ),
    "context-count-too-few-with-default": (
        [({"a": ints(1)}, {})],
        {"a": tfrec.FixedLenFeature([2], I64, default_value=[0, 0])},
        None,
        tfrec.DecodeError,
    ),
    "context-empty-list-before-later-absence": (
        [({"a": ints()}, {}), ({}, {}), ({"a": ints(1)}, {})],
        {"a": tfrec.FixedLenFeature([], I64)},
        None,
        tfrec.DecodeError,
    ),
    "context-type-before-earlier-count": (
        [({"a": ints(1, 2)}, {}), ({"b": floats(1)}, {})],
        {"a": tfrec.FixedLenFeature([], I64), "b": tfrec.VarLenFeature(I64)},
        None,
        tfrec.DecodeError,
    ),
    "list-type-before-context-count": (
        [({"a": ints(1, 2)}, {"b": [floats(1)]})],
        {"a": tfrec.FixedLenFeature([], I64)},
        {"b": tfrec.VarLenFeature(I64)},
        tfrec.DecodeError,
    ),
    "context-count-before-list-count": (
        [({"a": ints(1, 2)}, {"b": [ints(1, 2)]})],
        {"a": tfrec.FixedLenFeature([], I64)},
        {"b": tfrec.FixedLenSequenceFeature([], I64, True)},
        tfrec.DecodeError,
    ),
}


@pytest.mark.parametrize("names", [None, ["first", "second", "third"]], ids=["no-names", "names"])
@pytest.mark.parametrize(
    ("examples", "context", "sequence", "error"),
    [pytest.param(*case, id=name) for name, case in SEQUENCE_ERRORS.items()],
)
def test_sequence_error_message_is_tf_core(
    examples: list[tuple[Data, Lists]], context: Any, sequence: Any, error: type[Exception], names: Any
) -> None:
    records = [tfrec_serialize_sequence(*e) for e in examples]
    names = names[: len(records)] if names else None
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf.io.parse_sequence_example(tf_batch(records), tf_specs(context), tf_specs(sequence), names)
    with pytest.raises(error) as ours:
        tfrec.parse_sequence_example(records, context, sequence, names)
    assert str(ours.value) == tf_core(theirs.value)


@pytest.mark.parametrize(
    ("examples", "context", "sequence", "error"),
    [pytest.param(*case, id=name) for name, case in SEQUENCE_ERRORS.items()],
)
def test_single_sequence_error_message_is_tf_core(
    examples: list[tuple[Data, Lists]], context: Any, sequence: Any, error: type[Exception]
) -> None:
    record = tfrec_serialize_sequence(*examples[-1])
    specs = tf_specs(context), tf_specs(sequence)
    for name in (None, "one"):
        theirs = tf_outcome(
            lambda name=name: tf.io.parse_single_sequence_example(
                tf.constant(record), *specs, example_name=name
            )
        )
        ours = tfrec_outcome(
            lambda name=name: tfrec.parse_single_sequence_example(record, context, sequence, name)
        )
        assert_same_outcome(ours, theirs)
        if theirs.kind == "data":
            assert str(ours.value) == tf_core(theirs.value)


def test_error_key_attribute() -> None:
    for examples, specs, error in ERRORS.values():
        with pytest.raises(error) as ours:
            tfrec.parse_example([tfrec_serialize(e) for e in examples], specs)
        assert ours.value.key in str(ours.value)


# -- 6. documented deliberate differences, pinned (TF does one thing, tfrec the documented other) --


def test_flf_wrong_dtype_message_uses_the_varlen_form() -> None:
    records = [tfrec_serialize({"a": floats(1)})]
    specs = {"a": tfrec.FixedLenFeature([], I64)}
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_parse_example(records, specs)
    assert tf_core(theirs.value) == (
        "Name: <unknown>, Key: a, Index: 0.  Data types don't match. "
        "Data type: float but expected type: int64"
    )
    with pytest.raises(tfrec.DecodeError) as ours:
        tfrec.parse_example(records, specs)
    assert str(ours.value) == (
        "Name: <unknown>, Key: a, Index: 0.  Data types don't match. Expected type: int64, Actual type: float"
    )


def test_flf_too_many_strings_message_is_the_count_message() -> None:
    records = [tfrec_serialize({"a": strs(b"x", b"y")})]
    specs = {"a": tfrec.FixedLenFeature([], STR)}
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_parse_example(records, specs)
    assert tf_core(theirs.value) == "Name: <unknown>, Key: a, Index: 0.  Can't parse serialized Example."
    with pytest.raises(tfrec.DecodeError) as ours:
        tfrec.parse_example(records, specs)
    assert str(ours.value) == (
        "Name: <unknown>, Key: a, Index: 0.  Number of bytes values != expected.  "
        "Values size: 2 but output shape: []"
    )


def test_context_feature_with_no_kind_is_present_with_no_values() -> None:
    """Issue 15: a context Feature{} is present with 0 values (TF 2.21), so the default does not apply."""
    records = [tfrec_serialize_sequence({"a": NO_KIND}, {})]
    context = {"a": tfrec.FixedLenFeature([], I64, default_value=4)}
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_parse_sequence(records, context, None)
    with pytest.raises(tfrec.DecodeError) as ours:
        tfrec.parse_sequence_example(records, context, None)
    assert str(ours.value) == tf_core(theirs.value)


def test_row_ids_beyond_the_bound_are_refused_before_int32_narrows_them() -> None:
    # Hardening 2, item 5 (was the ValueRowIds case of test_partition_values_wrap_to_int32_row_splits):
    # TF casts the stored id 2**40 to int32 (0) and parses one row; the id as stored implies 2**40
    # rows, beyond the documented bound, so tfrec refuses the record.
    records = [tfrec.encode_example({"c": [b"x"], "b": [2**40]})]
    specs = {"r": RF(STR, "c", [RF.ValueRowIds("b")], row_splits_dtype=np.int32)}
    assert canon(tf_parse_example(records, specs)["r"])[1].tolist() == [0, 1]
    with pytest.raises(tfrec.DecodeError, match="value_rowids imply 1099511627777 rows"):
        tfrec.parse_example(records, specs)


# -- 7. bugs found by this module: regression tests -------------------------------------------------


def test_lockstep_finds_key_not_in_first_record() -> None:
    records = [tfrec.encode_example({"b": 1})] * 3 + [tfrec.encode_example({"a": 7})]
    specs = {"a": tfrec.VarLenFeature(I64)}
    assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))


def test_lockstep_sees_duplicate_key() -> None:
    first = tfrec.encode_example({"a": 1, "b": 2})
    # Same layout, but the second entry's key is "a" again: protobuf and TF take the last entry.
    duplicate = first.replace(b"\n\x01b", b"\n\x01a")
    records = [first] * 3 + [duplicate]
    specs = {"a": tfrec.VarLenFeature(I64)}
    assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))


def test_empty_batch_ragged_partition() -> None:
    specs = {"r": RF(I64, partitions=[RF.RowLengths("l")])}
    assert_same(tfrec.parse_example([], specs), tf_parse_example([], specs))


def test_empty_int_default() -> None:
    specs = {"a": tfrec.FixedLenFeature([0], I64, default_value=[])}
    records = [tfrec.encode_example({"a": np.array([], np.int64)})]
    assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))


def test_float_array_default_for_int64() -> None:
    specs = {"a": tfrec.FixedLenFeature([2], I64, default_value=np.array([1.0, 2.0]))}
    assert_same(tfrec.parse_example([b""], specs), tf_parse_example([b""], specs))


def test_conflicting_row_splits_dtype() -> None:
    specs = {"x": RF(I64, "a"), "y": RF(I64, "a", row_splits_dtype=np.int64)}
    records = [tfrec.encode_example({"a": 1})]
    with pytest.raises(ValueError, match="Conflicting partition type"):
        tf_parse_example(records, specs)
    with pytest.raises(tfrec.SchemaError):
        tfrec.parse_example(records, specs)


def test_lockstep_index_error_after_short_record() -> None:
    empty = np.array([], np.int64)
    records = [
        tfrec.encode_example({"a": empty, "b": empty, "c": empty, "d": [0], "d_i0": [0]}),
        tfrec.encode_example({"a": empty, "b": empty, "c": empty, "d": empty}),
        tfrec.encode_example({"a": [2**63 - 1]}),
        tfrec.encode_example({}),
    ]
    specs = {"d_i0": tfrec.VarLenFeature(I64)}
    assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))


def test_uniform_row_length_across_examples() -> None:
    records = [tfrec.encode_example({"a": [1]}), tfrec.encode_example({"a": [2]})]
    specs = {"a": RF(I64, partitions=[RF.UniformRowLength(2)])}
    assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))  # TF: [[], [[1, 2]]]


def test_empty_batch_with_required_context_feature() -> None:
    context = {"a": tfrec.FixedLenFeature([], I64)}
    assert_same_outcome(
        tfrec_outcome(lambda: tfrec.parse_sequence_example([], context)),
        tf_outcome(lambda: tf_parse_sequence([], context, None)),
    )


def test_empty_batch_sequence_varlen() -> None:
    sequence = {"a": tfrec.VarLenFeature(I64)}
    assert_same(tfrec.parse_sequence_example([], None, sequence), tf_parse_sequence([], None, sequence))


def test_bad_entry_beats_missing_feature_in_one_record() -> None:
    records = [tfrec_serialize({"c": ints(1, 2)})]
    specs = {"a": tfrec.FixedLenFeature([], I64), "c": tfrec.FixedLenFeature([], I64)}
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_parse_example(records, specs)
    with pytest.raises(tfrec.DecodeError) as ours:
        tfrec.parse_example(records, specs)
    assert str(ours.value) == tf_core(theirs.value)


def test_last_bad_entry_on_the_wire_is_reported() -> None:
    records = [tfrec_serialize({"a": ints(1, 2), "b": strs(b"x")})]
    specs = {"a": tfrec.FixedLenFeature([], I64), "b": tfrec.VarLenFeature(I64)}
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_parse_example(records, specs)
    with pytest.raises(tfrec.DecodeError) as ours:
        tfrec.parse_example(records, specs)
    assert str(ours.value) == tf_core(theirs.value)  # TF: "Key: b ... Data types don't match ..."


def test_a_feature_not_asked_for_is_never_read() -> None:
    # Key "b"'s list length is an 11-byte varint: protobuf rejects the record, but TF never looks
    # inside a Feature it was not asked for, and neither does tfrec, in a batch or alone.
    def field(tag: int, payload: bytes) -> bytes:  # short payloads: a one-byte length
        return bytes([tag, len(payload)]) + payload

    def record(b_feature: bytes) -> bytes:
        features = {b"a": b"\x1a\x03\x0a\x01\x07", b"b": b_feature}
        entries = b"".join(field(0x0A, field(0x0A, k) + field(0x12, f)) for k, f in features.items())
        return field(0x0A, entries)

    good, bad = record(b"\x1a\x03\x0a\x01\x05"), record(b"\x1a\x82" + b"\x80" * 9 + b"\x00\x0a\x00")
    specs = {"a": tfrec.FixedLenFeature([], I64)}
    for records in ([good, bad, good, good], [bad, bad]):
        assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))
    assert_same(tfrec.parse_single_example(bad, specs), tf_parse_single(bad, specs))
    with pytest.raises(tfrec.DecodeError):
        tfrec.decode_example(bad)  # the schema-less decoder reads every feature, as protobuf does


# Three bad entries (a count, a count, a kind) and a missing required feature, in every wire order:
# TF checks a record's entries from the last on the wire to the first, then the missing features.
BAD_ENTRIES = {"a": ints(1, 2, 3), "b": floats(1), "c": ints(1)}
BAD_ENTRY_SPECS = {
    "a": tfrec.FixedLenFeature([], I64),
    "b": tfrec.FixedLenFeature([2], F32),
    "c": tfrec.VarLenFeature(STR),
    "d": tfrec.FixedLenFeature([], I64),
}


@pytest.mark.parametrize("order", ["abc", "acb", "bac", "bca", "cab", "cba", "ab", "ca", ""])
def test_the_last_bad_entry_on_the_wire_is_reported_in_any_order(order: str) -> None:
    record = tfrec_serialize({key: BAD_ENTRIES[key] for key in order})
    good = tfrec_serialize({"a": ints(1), "b": floats(1, 2), "c": strs(), "d": ints(1)})
    for records in ([record], [good, record, record]):
        theirs = tf_outcome(lambda: tf_parse_example(records, BAD_ENTRY_SPECS))  # noqa: B023
        ours = tfrec_outcome(lambda: tfrec.parse_example(records, BAD_ENTRY_SPECS))  # noqa: B023
        assert str(ours.value) == tf_core(theirs.value)
    theirs = tf_outcome(lambda: tf_parse_single(record, BAD_ENTRY_SPECS))
    ours = tfrec_outcome(lambda: tfrec.parse_single_example(record, BAD_ENTRY_SPECS))
    assert str(ours.value) == tf_core(theirs.value)


def test_parse_errors_come_before_sparse_and_ragged_assembly() -> None:
    # TF pairs a SparseFeature's indices with its values, and builds RaggedTensors, after parsing.
    records = [
        tfrec_serialize({"i": ints(0, 1), "v": ints(5), "u": ints(1, 2, 3)}),
        tfrec_serialize({"i": ints(0), "v": ints(5), "u": ints(1), "z": strs(b"x")}),
    ]
    specs = {
        "r": RF(I64, "u", [RF.UniformRowLength(5)]),
        "s": tfrec.SparseFeature("i", "v", I64, 3),
        "z": tfrec.VarLenFeature(I64),
    }
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf_parse_example(records, specs)
    with pytest.raises(tfrec.DecodeError) as ours:
        tfrec.parse_example(records, specs)
    assert str(ours.value) == tf_core(theirs.value)


def test_uniform_row_length_over_ragged_rows() -> None:
    records = [tfrec_serialize({"a": ints(1, 1, 1)})]  # 3 values, 3 rows of 1: TF makes 1 row of 2
    specs = {"a": RF(I64, partitions=(RF.UniformRowLength(2), RF.RowLengths("a")))}
    assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))
    assert_same(tfrec.parse_single_example(records[0], specs), tf_parse_single(records[0], specs))


def test_sparse_counts_agree_over_the_batch_only() -> None:
    records = [tfrec.encode_example({"i": [0, 1]}), tfrec.encode_example({"v": [5, 6]})]
    specs = {"s": tfrec.SparseFeature("i", "v", I64, 3)}
    assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))


def test_unsorted_value_rowids_fail_validation() -> None:
    records = [tfrec.encode_example({"v": [7, 8, 9], "ids": [1, 0, 1]})]
    specs = {"r": RF(I64, "v", [RF.ValueRowIds("ids")], validate=True)}
    assert_same_outcome(
        tfrec_outcome(lambda: tfrec.parse_example(records, specs)),
        tf_outcome(lambda: tf_parse_example(records, specs)),
    )


@pytest.mark.parametrize("partition", ["RowLengths", "RowSplits"])
def test_partition_values_wrap_to_int32_row_splits(partition: str) -> None:
    records = [tfrec.encode_example({"c": [b"x"], "b": [2**40 if partition != "RowSplits" else -(2**63)]})]
    specs = {"r": RF(STR, "c", [getattr(RF, partition)("b")], row_splits_dtype=np.int32)}
    assert_same(tfrec.parse_example(records, specs), tf_parse_example(records, specs))
