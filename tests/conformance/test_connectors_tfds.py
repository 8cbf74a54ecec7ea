"""Conformance of tfds' other connector families with real tensorflow_datasets (skipped without TF or tfds).

Audio (samples, WAV files read eagerly and lazily), Video (PNG and JPEG frames),
BBoxFeature, Translation, TranslationVariableLanguages, Dataset, float32 and
colormap Images, LabeledImage, and JPEG images whose pixels must equal TF's
``decode_jpeg`` (simplejpeg installed). One schema ``schema(F)`` is built with
``tfds.features`` and ``tfrec.features``.

1. tfds prepares a dataset; tfrec reads it through ``FeaturesDict.load``,
   ``deserialize_example`` / ``deserialize_batch``, the split loader
   (``load_tfds``), ``RecordFileSource`` and a batched ``TFRecordDataset``:
   every example equals ``tfds.as_numpy(builder.as_dataset(...))``.
2. tfrec writes the same values (``write_tfds_dir``); tfds reads them back equal.
3. features.json: byte for byte as tfds writes it, and read back.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
import wave
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec import RaggedArray
from tfrec.data import RecordFileSource, TFRecordDataset
from tfrec.data.tfds import load_tfds, write_tfds_dir
from tfrec.features import FeatureConnector, FeaturesDict

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")
pytest.importorskip("PIL")
pytest.importorskip("simplejpeg")  # TF's JPEG pixels
pytest.importorskip("pydub")  # tfds reads audio files with it

pytestmark = pytest.mark.conformance

F_TFDS = tfds.features
F_TFREC = tfrec.features
SPLITS = {"train": range(0, 5), "test": range(5, 8)}
LANGUAGES = ["fr", "en", "de"]
WAV_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / f"tfrec-conformance-wav-{os.getpid()}"


def schema(F: ModuleType) -> dict[str, Any]:
    return {
        "id": np.int64,
        "audio": F.Audio(sample_rate=16000),
        "audio_st": F.Audio(
            shape=(None, 2), dtype=np.int16, sample_rate=8000
        ),  # tfds fails on encoding="zlib"
        "audio_wav": F.Audio(file_format="wav", dtype=np.int32, sample_rate=8000),
        "audio_lazy": F.Audio(file_format="wav", dtype=np.int16, lazy_decode=True),
        "video": F.Video(shape=(None, 4, 5, 3)),
        "video_jpeg": F.Video(shape=(2, None, None, 3), encoding_format="jpeg"),
        "bbox": F.BBoxFeature(),
        "bboxes": F.Sequence(F.BBoxFeature()),
        "bbox_xywh": F.BBoxFeature(bbox_format="XYWH"),
        "tr": F.Translation(languages=LANGUAGES),
        "tvl": F.TranslationVariableLanguages(languages=LANGUAGES),
        "ds": F.Dataset({"x": np.int64, "s": F.Text(), "img": F.Image(shape=(2, 2, 1))}),
        "img_f32": F.Image(shape=(None, None, 1), dtype=np.float32),
        "img_jpeg": F.Image(shape=(None, None, 3), encoding_format="jpeg"),
        "img_jpeg_gray": F.Image(shape=(None, None, 1), encoding_format="jpeg"),
        "mask": F.LabeledImage(labels=["bg", "car", "person"]),
        "cmap": F.Image(shape=(None, None, 1), use_colormap=True),
    }


def wav_file(i: int, channels: int, width: int) -> Path:
    """A WAV file of ``channels`` and ``width``-byte samples (written once per record)."""
    WAV_DIR.mkdir(exist_ok=True)
    path = WAV_DIR / f"r{i}-{channels}-{width}.wav"
    if not path.exists():
        rng = np.random.default_rng(100 + i)
        samples = rng.integers(-(2 ** (8 * width - 1)), 2 ** (8 * width - 1), (7 + i, channels))
        if width == 3:  # 24-bit: the low 3 bytes of each little-endian int32
            raw = samples.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
        else:
            dtype = {1: "u1", 2: "<i2", 4: "<i4"}[width]
            raw = (samples + 128 if width == 1 else samples).astype(dtype).tobytes()
        with wave.open(str(path), "wb") as out:
            out.setnchannels(channels)
            out.setsampwidth(width)
            out.setframerate(8000)
            out.writeframes(raw)
    return path


@pytest.fixture(scope="module", autouse=True)
def _remove_wav_files() -> Iterator[None]:
    yield
    shutil.rmtree(WAV_DIR, ignore_errors=True)


def photo(rng: np.random.Generator, h: int, w: int, c: int) -> np.ndarray:
    """A gradient with noise: JPEG's DCT differences show on it."""
    ramp = np.linspace(0, 200, w)[None, :, None] + np.linspace(0, 40, h)[:, None, None]
    return np.clip(ramp + rng.integers(0, 56, (h, w, c)), 0, 255).astype(np.uint8)


def jpeg(image: np.ndarray) -> bytes:
    return tf.io.encode_jpeg(image).numpy()  # TF's own encoder, as tfds encodes arrays


def example(i: int) -> dict[str, Any]:
    rng = np.random.default_rng(i)
    n = i % 3
    return {
        "id": i,
        "audio": rng.integers(-(2**40), 2**40, 5 + i),
        "audio_st": rng.integers(-(2**15), 2**15, (3 + n, 2)).astype(np.int16),
        "audio_wav": str(wav_file(i, 1, (1, 2, 3, 4)[i % 4])),
        "audio_lazy": str(wav_file(i, 1, 2)),
        "video": rng.integers(0, 256, (n + 1, 4, 5, 3), dtype=np.uint8),
        "video_jpeg": [jpeg(photo(rng, 8 + i, 16, 3)) for _ in range(2)],
        "bbox": np.array([0.1, 0.2 * (i % 4), 0.5, 0.9]),
        "bboxes": [np.array([0.0, 0.1, 0.25 * k, 0.5]) for k in range(n)],
        "bbox_xywh": np.array([3.0, 4.0, -1.5, 100.0 + i]),
        "tr": {"fr": f"chat {i}", "en": f"cat {i}", "de": "Katze é"},
        "tvl": {"en": f"cat {i}", "fr": ["le chat", f"la chatte {i}"][: n + 1]},
        "ds": [
            {"x": k * i, "s": f"step {k}", "img": rng.integers(0, 9, (2, 2, 1), dtype=np.uint8)}
            for k in range(n)
        ]
        if n
        else {"x": [], "s": [], "img": []},
        "img_f32": rng.standard_normal((3 + n, 2, 1)).astype(np.float32),
        "img_jpeg": jpeg(photo(rng, 16 + i, 24 - i, 3)),
        "img_jpeg_gray": jpeg(photo(rng, 9, 10 + i, 1)),
        "mask": rng.integers(0, 3, (4, 3 + n, 1), dtype=np.uint8),
        "cmap": rng.integers(0, 256, (2, 2, 1), dtype=np.uint8),
    }


# -- comparing values --------------------------------------------------------------------------------


def canon(x: Any) -> Any:
    """dtype, shape and exact values (floats by bit pattern); str as UTF-8; nested datasets as lists."""
    if isinstance(x, dict):
        return {k: canon(v) for k, v in x.items()}
    if isinstance(x, tf.data.Dataset):
        return ("elements", [canon(v) for v in tfds.as_numpy(x)])
    if isinstance(x, (list, tuple)) or (
        hasattr(x, "__iter__") and not isinstance(x, (np.ndarray, str, bytes))
    ):
        return ("elements", [canon(v) for v in x])  # a Dataset's elements (tfds: an iterable of them)
    if isinstance(x, RaggedArray):
        return ("ragged", canon_lists(x.to_list()))
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, bytes):
        return x
    array = np.asarray(x)
    if array.dtype.kind == "O":
        return ("array", "object", array.shape, [canon(v) for v in array.ravel().tolist()])
    if array.dtype.kind == "f":
        bits = array.view(np.dtype(f"u{array.dtype.itemsize}"))
        return ("array", array.dtype.name, array.shape, bits.ravel().tolist())
    return ("array", array.dtype.name, array.shape, array.ravel().tolist())


def canon_lists(x: Any) -> Any:
    if isinstance(x, list):
        return [canon_lists(v) for v in x]
    return x.encode("utf-8") if isinstance(x, str) else x


def assert_same(ours: Any, theirs: Any, where: str) -> None:
    a, b = canon(ours), canon(theirs)
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) == set(b), f"{where}: keys {sorted(a)} vs {sorted(b)}"
        for key in a:
            assert_same(ours[key], theirs[key], f"{where}/{key}")
    assert a == b, f"{where}: tfrec {a} != tfds {b}"


def row(x: Any, i: int) -> Any:
    """Record ``i`` of a deserialize_batch result."""
    if isinstance(x, dict):
        return {k: row(v, i) for k, v in x.items()}
    if isinstance(x, RaggedArray):
        splits = x.row_splits
        return take(x.values, int(splits[i]), int(splits[i + 1]))
    return x[i]


def take(x: Any, start: int, stop: int) -> Any:
    if isinstance(x, RaggedArray):
        splits = x.row_splits[start : stop + 1]
        return RaggedArray(take(x.values, int(splits[0]), int(splits[-1])), splits - splits[0])
    return x[start:stop]


# -- 1. tfds prepares, tfrec reads -------------------------------------------------------------------


with tfds.core.registered.skip_registration():

    class TfrecConnectors(tfds.core.GeneratorBasedBuilder):  # type: ignore[misc,name-defined]
        """Every connector family of ``schema``, data made in code."""

        VERSION = tfds.core.Version("1.0.0")
        RELEASE_NOTES = {"1.0.0": "Initial."}  # noqa: RUF012 (tfds reads a class attribute)

        def _info(self) -> Any:
            return tfds.core.DatasetInfo(
                builder=self,
                features=F_TFDS.FeaturesDict(schema(F_TFDS)),
                description="tfrec connector conformance",
                disable_shuffling=True,
            )

        def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
            return {split: self._generate_examples(ids) for split, ids in SPLITS.items()}

        def _generate_examples(self, ids: range) -> Iterator[tuple[int, dict[str, Any]]]:
            for i in ids:
                yield i, example(i)


def tfds_values(builder: Any, split: str) -> list[dict[str, Any]]:
    dataset = builder.as_dataset(split=split, shuffle_files=False)
    return [canon(value) for value in tfds.as_numpy(dataset)]  # nested datasets read while they exist


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = TfrecConnectors(data_dir=str(tmp_path_factory.mktemp("tfds_connectors")))
        builder.download_and_prepare()
    return builder


@pytest.fixture(scope="module")
def expected(built: Any) -> dict[str, list[Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {split: tfds_values(built, split) for split in SPLITS}


def records(directory: Path, split: str) -> list[bytes]:
    paths = sorted(directory.glob(f"*-{split}.tfrecord-*"))
    assert paths
    return [record for path in paths for record in tfrec.read_records(path)]


def check(ours: Any, theirs_canon: Any, where: str) -> None:
    mine = canon(ours)
    if mine == theirs_canon:
        return
    for key in theirs_canon:
        assert mine[key] == theirs_canon[key], f"{where}/{key}: tfrec {mine[key]} != tfds {theirs_canon[key]}"
    raise AssertionError(f"{where}: keys {sorted(mine)} vs {sorted(theirs_canon)}")


def test_load_reads_tfds_features_json(built: Any) -> None:
    loaded: Any = FeaturesDict.load(built.data_dir)
    assert loaded == FeaturesDict(schema(F_TFREC))
    assert loaded["mask"].names == ["bg", "car", "person"]
    assert loaded["audio"].sample_rate == 16000 and loaded["audio_st"].sample_rate == 8000
    assert loaded["tvl"].languages == sorted(LANGUAGES) and loaded["tr"].languages == sorted(LANGUAGES)
    assert loaded["bbox_xywh"].bbox_format == "XYWH"


@pytest.mark.parametrize("split", list(SPLITS))
def test_records_read_as_tfds_reads_them(built: Any, expected: dict[str, list[Any]], split: str) -> None:
    features = FeaturesDict.load(built.data_dir)
    data = records(Path(built.data_dir), split)
    assert len(data) == len(expected[split])
    for index, (record, theirs) in enumerate(zip(data, expected[split], strict=True)):
        check(features.deserialize_example(record), theirs, f"{split}[{index}]")


@pytest.mark.parametrize("split", list(SPLITS))
def test_batches_read_as_tfds_reads_them(built: Any, expected: dict[str, list[Any]], split: str) -> None:
    features = FeaturesDict.load(built.data_dir)
    batch = features.deserialize_batch(records(Path(built.data_dir), split))
    for index, theirs in enumerate(expected[split]):
        check(row(batch, index), theirs, f"{split} batch row {index}")


def test_split_loader_and_sources_read_as_tfds(built: Any, expected: dict[str, list[Any]]) -> None:
    loaded = load_tfds("tfrec_connectors", split="train+test", data_dir=Path(built.data_dir).parent.parent)
    assert loaded.features == FeaturesDict(schema(F_TFREC))
    wanted = expected["train"] + expected["test"]
    values = [loaded.features.deserialize_example(r) for r in loaded.records()]
    assert len(values) == len(wanted)
    for index, (ours, theirs) in enumerate(zip(values, wanted, strict=True)):
        check(ours, theirs, f"load_tfds[{index}]")
    source = RecordFileSource(loaded.paths, features=loaded.features)
    for index, theirs in enumerate(wanted):
        check(source[index], theirs, f"RecordFileSource[{index}]")
    dataset = TFRecordDataset(loaded.paths, features=loaded.features).batch(3)
    count = 0
    for batch in dataset:
        for i in range(len(batch["id"])):
            check(row(batch, i), wanted[count], f"TFRecordDataset row {count}")
            count += 1
    assert count == len(wanted)


def test_jpeg_pixels_equal_tensorflow() -> None:
    rng = np.random.default_rng(7)
    feature = F_TFREC.Image(shape=(None, None, 3), encoding_format="jpeg")
    gray = F_TFREC.Image(shape=(None, None, 1), encoding_format="jpeg")
    for k in range(24):
        size = int(rng.integers(5, 60)), int(rng.integers(5, 60))
        data, grey = jpeg(photo(rng, *size, 3)), jpeg(photo(rng, *size, 1))
        blob = FeaturesDict({"a": feature, "g": gray}).serialize_example({"a": data, "g": grey})
        ours = FeaturesDict({"a": feature, "g": gray}).deserialize_example(blob)
        assert np.array_equal(ours["a"], tf.io.decode_jpeg(data, channels=3).numpy()), k
        assert np.array_equal(ours["g"], tf.io.decode_jpeg(grey, channels=1).numpy()), k


# -- 2. tfrec writes, tfds reads ---------------------------------------------------------------------


def tfrec_example(i: int) -> dict[str, Any]:
    value = example(i)
    value["bbox"] = F_TFREC.BBox(*value["bbox"].tolist())  # tfrec's BBox, as tfds' BBox
    return value


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tfrec_connectors") / "tfrec_written" / "1.0.0"
    splits = {split: (tfrec_example(i) for i in ids) for split, ids in SPLITS.items()}
    write_tfds_dir(directory, splits, FeaturesDict(schema(F_TFREC)), name="tfrec_written", max_records=2)
    return directory


@pytest.mark.parametrize("split", list(SPLITS))
def test_tfds_reads_what_tfrec_writes(written: Path, expected: dict[str, list[Any]], split: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = tfds.builder_from_directory(str(written))
        theirs = tfds_values(builder, split)
    assert len(theirs) == len(expected[split])
    for index, (mine, reference) in enumerate(zip(theirs, expected[split], strict=True)):
        for key in reference:
            assert mine[key] == reference[key], f"{split}[{index}]/{key}"
    assert builder.info.features["mask"].names == ["bg", "car", "person"]
    assert builder.info.features["audio"].sample_rate == 16000


# -- 3. features.json --------------------------------------------------------------------------------


def test_features_json_is_byte_identical(tmp_path: Path) -> None:
    theirs, ours = tmp_path / "tfds", tmp_path / "tfrec"
    theirs.mkdir()
    F_TFDS.FeaturesDict(schema(F_TFDS)).save_config(str(theirs))
    FeaturesDict(schema(F_TFREC)).save(ours)
    assert sorted(p.name for p in ours.iterdir()) == sorted(p.name for p in theirs.iterdir())
    for path in theirs.iterdir():
        assert (ours / path.name).read_bytes() == path.read_bytes(), path.name


ZOO = {
    "audio_lazy_none": lambda F: F.Audio(lazy_decode=True),
    "audio_bytes": lambda F: F.Audio(shape=(None,), dtype=np.float32, encoding="bytes"),
    "audio_zlib": lambda F: F.Audio(shape=(None, 2), dtype=np.int16, sample_rate=8000, encoding="zlib"),
    "video_none": lambda F: F.Video(),
    "video_args": lambda F: F.Video(shape=(3, 8, 8, 1), ffmpeg_extra_args=["-r", "1"]),
    "video_u16": lambda F: F.Video(shape=(None, 2, 2, 1), dtype=np.uint16),
    "bbox_none": lambda F: F.BBoxFeature(bbox_format=None),
    "tvl_any": lambda F: F.TranslationVariableLanguages(),
    "ds_scalar": lambda F: F.Dataset(np.float32),
    "mask_n": lambda F: F.LabeledImage(labels=5, shape=(3, 4, 1)),
    "mask_u16": lambda F: F.LabeledImage(labels=2, dtype=np.uint16),
}


@pytest.mark.parametrize("key", sorted(ZOO))
def test_connector_json_matches_tfds(key: str) -> None:
    from google.protobuf import json_format

    theirs = dict(json_format.MessageToDict(ZOO[key](F_TFDS).to_proto()))
    mine = ZOO[key](F_TFREC)
    assert mine.to_json() == theirs
    loaded = FeatureConnector.from_json(theirs)
    assert type(loaded) is type(mine) and loaded.to_json() == theirs
    legacy = ZOO[key](F_TFDS).to_json()  # tfds' {"type", "content", "proto_cls"} layout
    assert FeatureConnector.from_json(legacy).to_json() == theirs


def test_documentation_round_trips() -> None:
    from google.protobuf import json_format

    theirs = F_TFDS.BBoxFeature(doc=F_TFDS.Documentation(desc="a box", value_range="[0, 1]"))
    mine = F_TFREC.BBoxFeature(doc=F_TFREC.Documentation(desc="a box", value_range="[0, 1]"))
    assert mine.to_json() == json_format.MessageToDict(theirs.to_proto())
    assert json.dumps(FeatureConnector.from_json(mine.to_json()).to_json()) == json.dumps(mine.to_json())
