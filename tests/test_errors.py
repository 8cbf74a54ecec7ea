"""The exception hierarchy: builtin bases, messages, attributes, pickling."""

from __future__ import annotations

import io
import pickle
import struct
from pathlib import Path

import pytest

import tfrec
import tfrec.errors

# id, exception, message, attributes
INSTANCES: list[tuple[str, Exception, str, dict[str, object]]] = [
    ("TfrecError", tfrec.TfrecError("something failed"), "something failed", {}),
    (
        "RecordError",
        tfrec.RecordError("bad frame", path="data.tfrecord", index=3, offset=120),
        "data.tfrecord, record 3, offset 120: bad frame",
        {"path": "data.tfrecord", "index": 3, "offset": 120, "problem": "bad frame"},
    ),
    (
        "RecordError_anonymous_stream",
        tfrec.RecordError("bad frame"),
        "<stream>: bad frame",
        {"path": None, "index": None, "offset": None},
    ),
    (
        "RecordError_pathlib",
        tfrec.RecordError("bad frame", path=Path("dir") / "x.tfrecord", offset=0),
        f"{Path('dir') / 'x.tfrecord'}, offset 0: bad frame",
        {"path": str(Path("dir") / "x.tfrecord"), "index": None, "offset": 0},
    ),
    (
        "ChecksumError",
        tfrec.ChecksumError(
            "data CRC mismatch", part="data", stored=0x1234, computed=0xABCD, path="x", index=0, offset=0
        ),
        "x, record 0, offset 0: data CRC mismatch",
        {"part": "data", "stored": 0x1234, "computed": 0xABCD, "path": "x", "index": 0, "offset": 0},
    ),
    (
        "TruncatedRecordError",
        tfrec.TruncatedRecordError("the file is truncated", index=7, offset=99),
        "<stream>, record 7, offset 99: the file is truncated",
        {"path": None, "index": 7, "offset": 99},
    ),
    ("DecodeError", tfrec.DecodeError("not an Example", key="label"), "not an Example", {"key": "label"}),
    ("DecodeError_no_key", tfrec.DecodeError("not an Example"), "not an Example", {"key": None}),
    ("SchemaError", tfrec.SchemaError("bad spec"), "bad spec", {}),
    ("EncodeError", tfrec.EncodeError("too big for int64", key="id"), "too big for int64", {"key": "id"}),
    ("RecordTypeError", tfrec.RecordTypeError("not bytes-like: int"), "not bytes-like: int", {}),
    (
        "MissingFeatureError",
        tfrec.MissingFeatureError("no 'label'", key="label"),
        "no 'label'",
        {"key": "label"},
    ),
    (
        "OptionalDependencyError",
        tfrec.OptionalDependencyError("google-crc32c", "fast", "fast CRC32C"),
        "fast CRC32C needs the optional package 'google-crc32c': install it with: pip install 'tfrec[fast]'",
        {"package": "google-crc32c", "extra": "fast"},
    ),
    (
        "MissingFileError",
        tfrec.MissingFileError("data/*.tfrecord: matched no file", path="data/*.tfrecord"),
        "data/*.tfrecord: matched no file",
        {"path": "data/*.tfrecord"},
    ),
    ("InvalidArgumentError", tfrec.InvalidArgumentError("give one of a, b"), "give one of a, b", {}),
    ("OutOfRangeError", tfrec.OutOfRangeError("record 9 of 3"), "record 9 of 3", {}),
    ("ShardingError", tfrec.ShardingError("2 files for 4 readers"), "2 files for 4 readers", {}),
    ("DatasetStateError", tfrec.DatasetStateError("other files"), "other files", {}),
    (
        "WorkerError",
        tfrec.WorkerError("reading process 1 failed", worker=1, details="Traceback ..."),
        "reading process 1 failed",
        {"worker": 1, "details": "Traceback ..."},
    ),
    (
        "ConvertError",
        tfrec.ConvertError("not a number: 'x'", path="iris.csv", where="row 3, column 'sepal_length'"),
        "iris.csv, row 3, column 'sepal_length': not a number: 'x'",
        {"path": "iris.csv", "where": "row 3, column 'sepal_length'", "problem": "not a number: 'x'"},
    ),
    (
        "OutputExistsError",
        tfrec.OutputExistsError(
            "out/train: found out/train-00000-of-00002.tfrecord; pass overwrite=True",
            paths=["out/train-00000-of-00002.tfrecord"],
            option="overwrite=True",
        ),
        "out/train: found out/train-00000-of-00002.tfrecord; pass overwrite=True",
        {"paths": ["out/train-00000-of-00002.tfrecord"], "option": "overwrite=True"},
    ),
]


@pytest.mark.parametrize(
    ("exc", "message", "attributes"), [case[1:] for case in INSTANCES], ids=[case[0] for case in INSTANCES]
)
def test_error_message_and_attributes(exc: Exception, message: str, attributes: dict[str, object]) -> None:
    assert str(exc) == message
    for name, value in attributes.items():
        assert getattr(exc, name) == value


@pytest.mark.parametrize(
    ("exc", "message", "attributes"), [case[1:] for case in INSTANCES], ids=[case[0] for case in INSTANCES]
)
def test_error_survives_pickling(exc: Exception, message: str, attributes: dict[str, object]) -> None:
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(exc, protocol))
        assert type(copy) is type(exc)
        assert str(copy) == message
        assert copy.args == exc.args
        assert copy.__dict__ == exc.__dict__
        for name, value in attributes.items():
            assert getattr(copy, name) == value


def test_error_notes_survive_pickling() -> None:
    exc = tfrec.ChecksumError("bad", part="length", stored=1, computed=2)
    exc.add_note("while reading shard 3")
    copy = pickle.loads(pickle.dumps(exc))
    assert copy.__notes__ == ["while reading shard 3"]


def test_error_raised_by_the_reader_survives_pickling(tmp_path: Path) -> None:
    path = tmp_path / "damaged.tfrecord"
    tfrec.write_records(path, [b"first", b"second"])
    data = bytearray(path.read_bytes())
    data[21 + 12] ^= 0xFF  # a data byte of record 1
    path.write_bytes(bytes(data))
    with pytest.raises(tfrec.ChecksumError) as info:
        list(tfrec.read_records(path))
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.path, copy.index, copy.offset, copy.part) == (str(path), 1, 21, "data")
    assert (copy.stored, copy.computed) == (info.value.stored, info.value.computed)
    assert str(copy) == str(info.value)


def test_truncation_raised_by_the_reader_survives_pickling() -> None:
    with pytest.raises(tfrec.TruncatedRecordError) as info:
        list(tfrec.read_records(io.BytesIO(struct.pack("<Q", 5)), None))
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.path, copy.index, copy.offset) == (None, 0, 0)
    assert (
        str(copy)
        == str(info.value)
        == (
            "<stream>, record 0, offset 0: the stream ends 8 bytes into a 12-byte record header: "
            "the file is truncated or has trailing garbage"
        )
    )


# class, the classes it must be an instance of (besides itself)
HIERARCHY: list[tuple[type[Exception], tuple[type[BaseException], ...]]] = [
    (tfrec.TfrecError, (Exception,)),
    (tfrec.RecordError, (tfrec.TfrecError, ValueError)),
    (tfrec.ChecksumError, (tfrec.RecordError, tfrec.TfrecError, ValueError)),
    (tfrec.TruncatedRecordError, (tfrec.RecordError, tfrec.TfrecError, ValueError, EOFError)),
    (tfrec.DecodeError, (tfrec.TfrecError, ValueError)),
    (tfrec.SchemaError, (tfrec.TfrecError, ValueError)),
    (tfrec.EncodeError, (tfrec.TfrecError, ValueError)),
    (tfrec.RecordTypeError, (tfrec.TfrecError, TypeError)),
    (tfrec.MissingFeatureError, (tfrec.TfrecError, LookupError)),
    (tfrec.OptionalDependencyError, (tfrec.TfrecError, ImportError)),
    (tfrec.MissingFileError, (tfrec.TfrecError, FileNotFoundError)),
    (tfrec.InvalidArgumentError, (tfrec.TfrecError, ValueError)),
    (tfrec.OutOfRangeError, (tfrec.TfrecError, IndexError)),
    (tfrec.ShardingError, (tfrec.TfrecError, ValueError)),
    (tfrec.DatasetStateError, (tfrec.TfrecError, ValueError)),
    (tfrec.WorkerError, (tfrec.TfrecError, RuntimeError)),
    (tfrec.ConvertError, (tfrec.TfrecError, ValueError)),
    (tfrec.OutputExistsError, (tfrec.InvalidArgumentError, tfrec.TfrecError, ValueError, FileExistsError)),
]


@pytest.mark.parametrize(("cls", "bases"), HIERARCHY, ids=[cls.__name__ for cls, _ in HIERARCHY])
def test_error_hierarchy(cls: type[Exception], bases: tuple[type[BaseException], ...]) -> None:
    instance = next(exc for _, exc, _, _ in INSTANCES if type(exc) is cls)
    for base in bases:
        assert issubclass(cls, base)
        assert isinstance(instance, base)
    caught_as = bases[-1]
    with pytest.raises(caught_as):
        raise instance


@pytest.mark.parametrize(
    ("cls", "not_a"),
    [
        (tfrec.ChecksumError, EOFError),
        (tfrec.MissingFeatureError, ValueError),
        (tfrec.OptionalDependencyError, ValueError),
        (tfrec.SchemaError, tfrec.RecordError),
    ],
)
def test_error_is_not_an_unrelated_builtin(cls: type[Exception], not_a: type[BaseException]) -> None:
    assert not issubclass(cls, not_a)


def test_warning_class_is_a_user_warning_and_not_an_error() -> None:
    assert issubclass(tfrec.TfrecWarning, UserWarning)
    assert not issubclass(tfrec.TfrecWarning, tfrec.TfrecError)
    warning = tfrec.TfrecWarning("skipped damaged data: x, record 1, offset 2: bad")
    copy = pickle.loads(pickle.dumps(warning))
    assert type(copy) is tfrec.TfrecWarning
    assert str(copy) == str(warning)


def test_every_error_is_exported_from_tfrec() -> None:
    for name in tfrec.errors.__all__:
        assert getattr(tfrec, name) is getattr(tfrec.errors, name)
        assert name in tfrec.__all__
    assert {cls for cls, _ in HIERARCHY} | {tfrec.TfrecWarning} == {
        getattr(tfrec.errors, name) for name in tfrec.errors.__all__
    }


# -- rebuilt from the message alone (torch's DataLoader does `type(exc)(msg)`) ---------------------


def _subclasses(cls: type[Exception]) -> list[type[Exception]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


# One instance of every subclass, the internal ones too.
EVERY_CLASS: dict[type[Exception], Exception] = {
    **{type(exc): exc for _, exc, _, _ in reversed(INSTANCES)},
    tfrec.errors.WireError: tfrec.errors.WireError("truncated varint at byte 3", index=2),
    tfrec.errors.SchemaChoiceError: tfrec.errors.SchemaChoiceError(
        "TFRecordDataset: pass features= or spec=, not both"
    ),
}


def test_every_subclass_has_an_instance_in_the_table() -> None:
    assert set(_subclasses(tfrec.TfrecError)) <= set(EVERY_CLASS)


@pytest.mark.parametrize(
    "exc", [exc for _, exc, _, _ in INSTANCES] + [EVERY_CLASS[tfrec.errors.WireError]],
    ids=[case[0] for case in INSTANCES] + ["WireError"],
)  # fmt: skip
def test_error_rebuilt_from_its_message_keeps_it(exc: Exception) -> None:
    copy = type(exc)(str(exc))
    assert type(copy) is type(exc)
    assert str(copy) == str(exc)
    again = pickle.loads(pickle.dumps(copy))
    assert str(again) == str(exc) and again.__dict__ == copy.__dict__


def test_record_error_rebuilt_from_its_message_keeps_its_location(tmp_path: Path) -> None:
    path = tmp_path / "damaged.tfrecord"
    tfrec.write_records(path, [b"first", b"second"])
    data = bytearray(path.read_bytes())
    data[21 + 12] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(tfrec.ChecksumError) as info:
        list(tfrec.read_records(path))
    copy = tfrec.ChecksumError(str(info.value))
    assert str(copy) == str(info.value)
    assert (copy.path, copy.index, copy.offset, copy.part) == (str(path), 1, 21, "data")
    assert (copy.stored, copy.computed) == (info.value.stored, info.value.computed)


def test_record_error_rebuilt_from_a_worker_traceback_keeps_the_text_and_finds_the_location() -> None:
    original = tfrec.TruncatedRecordError("the file is truncated", path="a/x.tfrecord", index=7, offset=99)
    message = (
        "Caught TruncatedRecordError in DataLoader worker process 1.\nOriginal Traceback (most recent "
        f'call last):\n  File "reader.py", line 1, in read\ntfrec.errors.TruncatedRecordError: {original}\n'
        "tfrec: out/train: the ShardedWriter was aborted; no shard was kept\n"  # a note
    )
    copy = tfrec.TruncatedRecordError(message)
    assert str(copy) == message
    assert (copy.path, copy.index, copy.offset) == ("a/x.tfrecord", 7, 99)
    assert isinstance(copy, EOFError)


def test_one_string_without_a_location_is_still_a_problem_on_a_stream() -> None:
    assert str(tfrec.RecordError("bad frame: the length is 0")) == "<stream>: bad frame: the length is 0"
    assert tfrec.ChecksumError("bad").part is None
