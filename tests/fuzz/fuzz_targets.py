"""Fuzz targets: seed inputs, and a ``run`` that feeds one (mutated) input to tfrec.

``run`` returns a short outcome label; it raises only when tfrec misbehaves: an
exception that is not a ``TfrecError``, or a result that is wrong (an
``AssertionError``: a record that was never written returned without an error,
or two decoding paths disagreeing). Shared by the seeded CI pass
(``test_fuzz.py``, hypothesis in child processes) and the coverage-guided pass
(``fuzz_atheris.py``).
"""

from __future__ import annotations

import atexit
import functools
import io
import json
import os
import shutil
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tfrec
from tfrec import infer_features
from tfrec.features import ClassLabel, FeaturesDict, Image, Scalar, Sequence, Tensor, Text

SCRATCH = tempfile.mkdtemp(prefix="tfrec-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
atexit.register(shutil.rmtree, SCRATCH, True)  # a child killed outright leaves it (in the temp dir)


@dataclass
class Target:
    """A fuzz target: seeds to mutate and a function that runs one input (variant picks a seed family)."""

    name: str
    seeds: list[list[bytes]]  # one list of seeds per variant
    run: Callable[[int, bytes], str]
    variants: list[str] = field(default_factory=list)


def _outcome(function: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", function()
    except tfrec.TfrecError as exc:
        return type(exc).__name__, None


# -- framing -----------------------------------------------------------------------------------

RECORDS = [f"record {i} ".encode() * (1 + i * 37 % 50) for i in range(40)] + [bytes(70_000), b""]
KNOWN = set(RECORDS)
_COMPRESSIONS = [None, "gzip", "zlib", "gzip", "zlib"]  # the last two: frames mutated, then compressed


def _file(records: list[bytes], compression: str | None) -> bytes:
    stream = io.BytesIO()
    tfrec.write_records(stream, records, compression=compression)
    return stream.getvalue()


def _framing_seeds() -> list[list[bytes]]:
    return [
        [_file(RECORDS[:3], compression), _file(RECORDS[:40], compression), _file(RECORDS, compression)]
        for compression in _COMPRESSIONS[:3]
    ] + [[_file(RECORDS[:3], None), _file(RECORDS, None)]] * 2


def _compress(data: bytes, compression: str | None) -> bytes:
    if compression == "gzip":
        compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        return compressor.compress(data) + compressor.flush()
    return zlib.compress(data)


def _offsets(records: list[bytes]) -> list[int]:
    ends, at = [0], 0
    for record in records:
        at += len(record) + 16
        ends.append(at)
    return ends


_RESUME_AT = _offsets(RECORDS)


def _read_into(got: list[bytes], source: Any, compression: str | None, on_error: Any, start: int) -> None:
    """Append the records of ``source`` to ``got`` (those before an error stay there)."""
    with tfrec.RecordReader(source, compression, on_error=on_error, start_offset=start) as reader:
        got.extend(reader)


def run_framing(variant: int, data: bytes) -> str:
    """Read ``data`` as a file of each way: path and stream, raise and skip, from a resumed offset.

    Every record returned must be one that was written: damage is never silent.
    """
    compression = _COMPRESSIONS[variant]
    if variant >= 3:
        data = _compress(data, compression)
    path = os.path.join(SCRATCH, f"input-{os.getpid()}")
    with open(path, "wb") as file:
        file.write(data)
    labels = []
    resume = _RESUME_AT[len(data) % len(_RESUME_AT)]
    for source_kind in ("path", "stream"):
        for on_error in ("raise", "skip"):
            for start in (0, resume):
                source: Any = path if source_kind == "path" else io.BytesIO(data)
                got: list[bytes] = []
                label, _ = _outcome(functools.partial(_read_into, got, source, compression, on_error, start))
                unknown = [record[:40] for record in got if record not in KNOWN]
                assert not unknown, f"{source_kind}/{on_error}/{start}: records never written: {unknown}"
                labels.append(label)
    return "+".join(sorted(set(labels)))


# -- Example and its parsers ---------------------------------------------------------------------

EXAMPLES = [
    {
        "i": [1, -2, 3],
        "f": [0.5, 1.5],
        "s": [b"a", b"bc"],
        "fixed": [4, 5],
        "idx": [0, 2],
        "val": [1.0, 2.0],
        "lengths": [2, 1],
        "rowids": [0, 0, 1],
        "one": 7,
        "text": "hello",
    },
    {"i": [9] * 40, "f": [], "s": [b"x" * 300], "fixed": [1, 2], "one": -1, "text": ""},
    {},
]

PARSE_SPEC: dict[str, Any] = {
    "fixed": tfrec.FixedLenFeature([2], tfrec.int64, default_value=[0, 0]),
    "one": tfrec.FixedLenFeature([], tfrec.int64, default_value=0),
    "text": tfrec.FixedLenFeature([], tfrec.string, default_value=b""),
    "f": tfrec.VarLenFeature(tfrec.float32),
    "s": tfrec.VarLenFeature(tfrec.string),
    "sparse": tfrec.SparseFeature("idx", "val", tfrec.float32, 10),
    "lengths_ragged": tfrec.RaggedFeature(
        tfrec.int64, value_key="i", partitions=[tfrec.RaggedFeature.RowLengths("lengths")]
    ),
    "rowids_ragged": tfrec.RaggedFeature(
        tfrec.int64, value_key="i", partitions=[tfrec.RaggedFeature.ValueRowIds("rowids")], validate=True
    ),
    "uniform_ragged": tfrec.RaggedFeature(
        tfrec.int64, value_key="i", partitions=[tfrec.RaggedFeature.UniformRowLength(1)]
    ),
    "seq": tfrec.FixedLenSequenceFeature([], tfrec.int64, allow_missing=True, default_value=0),
}
_GOOD_EXAMPLE = tfrec.encode_example(EXAMPLES[0])
_KINDS = {np.dtype(np.int64): tfrec.int64, np.dtype(np.float32): tfrec.float32}


def run_example(variant: int, data: bytes) -> str:
    """decode_example, and every parse function with a spec of every kind; decoders must agree."""
    labels = []
    label, decoded = _outcome(lambda: tfrec.decode_example(data))
    labels.append(label)
    label, _ = _outcome(lambda: tfrec.parse_single_example(data, PARSE_SPEC))
    labels.append(label)
    label, _ = _outcome(lambda: tfrec.parse_example([_GOOD_EXAMPLE, data, data, _GOOD_EXAMPLE], PARSE_SPEC))
    labels.append(label)
    if decoded is not None:  # every feature is well formed: each parser must read the same values
        for key, values in decoded.items():
            if values is None or isinstance(values, list) or not key.isascii():
                continue  # a key that is not UTF-8 comes back surrogate-escaped: not a spec key
            spec = {key: tfrec.VarLenFeature(_KINDS[values.dtype])}
            single = tfrec.parse_single_example(data, spec)[key].values
            batch = tfrec.parse_example([data, data], spec)[key]
            floats = values.dtype.kind == "f"
            assert np.array_equal(single, values, equal_nan=floats), (key, single, values)
            first = batch.values[batch.indices[:, 0] == 0]
            assert np.array_equal(first, values, equal_nan=floats), (key, first, values)
    return "+".join(sorted(set(labels)))


# -- SequenceExample ---------------------------------------------------------------------------------

_SEQUENCES = [
    tfrec.encode_sequence_example(
        {"id": 3, "name": "x", "ids": [1, 2]},
        {"tokens": [[1, 2], [3]], "scores": [[0.5], [1.5]], "words": [[b"a"], [b"b"]]},
    ),
    tfrec.encode_sequence_example({"id": 4}, {"tokens": [[7]] * 30}),
    tfrec.encode_sequence_example({}, {}),
]
_CONTEXT_SPEC = {
    "id": tfrec.FixedLenFeature([], tfrec.int64, default_value=0),
    "name": tfrec.VarLenFeature(tfrec.string),
    "ragged": tfrec.RaggedFeature(tfrec.int64, value_key="ids"),
}
_SEQUENCE_SPEC = {
    "tokens": tfrec.VarLenFeature(tfrec.int64),
    "scores": tfrec.FixedLenSequenceFeature([1], tfrec.float32, allow_missing=True),
    "words": tfrec.RaggedFeature(tfrec.string),
}


def run_sequence_example(variant: int, data: bytes) -> str:
    labels = [
        _outcome(lambda: tfrec.decode_sequence_example(data))[0],
        _outcome(lambda: tfrec.parse_single_sequence_example(data, _CONTEXT_SPEC, _SEQUENCE_SPEC))[0],
        _outcome(lambda: tfrec.parse_sequence_example([_SEQUENCES[0], data], _CONTEXT_SPEC, _SEQUENCE_SPEC))[
            0
        ],
    ]
    return "+".join(sorted(set(labels)))


# -- FeaturesDict decoding -------------------------------------------------------------------------


def _png() -> bytes | None:
    try:
        from PIL import Image as PILImage
    except ImportError:
        return None
    out = io.BytesIO()
    PILImage.fromarray(np.arange(48, dtype=np.uint8).reshape(4, 4, 3)).save(out, format="PNG")
    return out.getvalue()


FEATURES = FeaturesDict(
    {
        "label": ClassLabel(names=["no", "yes"]),
        "text": Text(),
        "scalar": Scalar(np.float32),
        "static": Tensor(shape=(2, 2), dtype=np.int16, encoding="zlib"),
        "rows": Tensor(shape=(None, 3), dtype=np.uint8, encoding="bytes"),
        "dynamic": Tensor(shape=(None, None), dtype=np.float32, encoding="zlib"),
        "list": Tensor(shape=(None,), dtype=np.int64),
        "nested": {
            "a": Tensor(shape=(3,), dtype=np.float32),
            "b": Sequence(Tensor(shape=(), dtype=np.int64)),
        },
        "ragged": Sequence(Sequence(Tensor(shape=(), dtype=np.int64))),
        **({"image": Image(shape=(None, None, 3))} if _png() is not None else {}),
    }
)
_FEATURE_VALUES = {
    "label": "yes",
    "text": "héllo",
    "scalar": 0.5,
    "static": np.array([[1, -1], [256, 2]], np.int16),
    "rows": np.arange(6, dtype=np.uint8).reshape(2, 3),
    "dynamic": np.arange(6, dtype=np.float32).reshape(2, 3),
    "list": [1, 2, 3],
    "nested": {"a": [1.0, 2.0, 3.0], "b": [4, 5]},
    "ragged": [[1, 2], [], [3]],
    **({"image": np.arange(48, dtype=np.uint8).reshape(4, 4, 3)} if _png() is not None else {}),
}
SEQUENCE_FEATURES = FeaturesDict(
    {"steps": Sequence({"x": Tensor(shape=(2,), dtype=np.int64), "t": Text()}), "id": Scalar(np.int64)}
)
_SEQUENCE_VALUES = {"steps": {"x": [[1, 2], [3, 4]], "t": ["a", "b"]}, "id": 3}


def _features_seeds() -> list[list[bytes]]:
    return [
        [FEATURES.serialize_example(_FEATURE_VALUES)],
        [SEQUENCE_FEATURES.serialize_example(_SEQUENCE_VALUES, sequence_example=True)],
    ]


def run_features_dict(variant: int, data: bytes) -> str:
    features, sequence = (FEATURES, False) if variant == 0 else (SEQUENCE_FEATURES, True)
    good = _features_seeds()[variant][0]
    labels = [
        _outcome(lambda: features.deserialize_example(data, sequence_example=sequence))[0],
        _outcome(lambda: features.deserialize_batch([good, data], sequence_example=sequence))[0],
    ]
    return "+".join(sorted(set(labels)))


# -- features.json, infer_features ---------------------------------------------------------------


def _json_seeds() -> list[list[bytes]]:
    return [[json.dumps(FEATURES.to_json(), sort_keys=True).encode()]]


def run_features_json(variant: int, data: bytes) -> str:
    directory = os.path.join(SCRATCH, f"json-{os.getpid()}")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "features.json"), "wb") as file:
        file.write(data)
    label, loaded = _outcome(lambda: FeaturesDict.load(directory))
    if loaded is not None:  # what loads must describe itself again
        again = FeaturesDict.from_json(loaded.to_json())
        assert again.to_json() == loaded.to_json()
    return label


def run_infer(variant: int, data: bytes) -> str:
    records = [_GOOD_EXAMPLE, data, tfrec.encode_example(EXAMPLES[1])]
    label, inferred = _outcome(lambda: infer_features(records))
    if inferred is not None:  # a proposal must at least load the records it was inferred from
        label = _outcome(lambda: inferred.deserialize_batch(records))[0]
    return label


from fuzz_data import _PATTERN_SEEDS, _index_seeds, _state_seeds, run_index, run_pattern, run_state  # noqa: E402

TARGETS = {
    target.name: target
    for target in [
        Target(
            "framing",
            _framing_seeds(),
            run_framing,
            ["plain", "gzip", "zlib", "gzip of mutated frames", "zlib of mutated frames"],
        ),
        Target("example", [[tfrec.encode_example(e) for e in EXAMPLES]], run_example),
        Target("sequence_example", [_SEQUENCES], run_sequence_example),
        Target("features_dict", _features_seeds(), run_features_dict, ["example", "sequence_example"]),
        Target("features_json", _json_seeds(), run_features_json),
        Target("infer_features", [[tfrec.encode_example(e) for e in EXAMPLES]], run_infer),
        Target("dataset_state", _state_seeds(), run_state, ["edited", "json"]),
        Target("index_file", _index_seeds(), run_index),
        Target("path_pattern", [_PATTERN_SEEDS], run_pattern),
    ]
}
