"""tfds' other connector families without TensorFlow: Audio, Video, BBoxFeature, Translation,
TranslationVariableLanguages, Dataset, LabeledImage, float32 / colormap Images and the JPEG rule.
(tests/conformance/test_connectors_tfds.py compares them with tensorflow_datasets itself.)"""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec import RaggedArray
from tfrec.features import (
    Audio,
    BBox,
    BBoxFeature,
    Dataset,
    Documentation,
    FeatureConnector,
    FeaturesDict,
    Image,
    LabeledImage,
    Scalar,
    Text,
    Translation,
    TranslationVariableLanguages,
    Video,
)
from tfrec.features import jpeg as jpeg_module
from tfrec.features.wav import read_wav


def round_trip(feature: FeatureConnector, value: Any) -> Any:
    features = FeaturesDict({"k": feature})
    return features.deserialize_example(features.serialize_example({"k": value}))["k"]


def wav_bytes(samples: np.ndarray, width: int, channels: int = 1) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(channels)
        file.setsampwidth(width)
        file.setframerate(8000)
        file.writeframes(samples.tobytes())
    return out.getvalue()


# -- Audio ---------------------------------------------------------------------------------------------


def test_audio_samples_round_trip() -> None:
    samples = np.array([0, 5, -3, 2**40], np.int64)
    assert np.array_equal(round_trip(Audio(sample_rate=16000), samples), samples)
    stereo = np.arange(8, dtype=np.int16).reshape(4, 2)
    back = round_trip(Audio(shape=(None, 2), dtype=np.int16, encoding="zlib"), stereo)
    assert back.dtype == np.int16 and np.array_equal(back, stereo)


def test_audio_wav_files_read_as_pydub_reads_them(tmp_path: Path) -> None:
    pcm16 = np.array([1, -2, 300, -32768], "<i2")
    path = tmp_path / "a.wav"
    path.write_bytes(wav_bytes(pcm16, 2))
    assert round_trip(Audio(dtype=np.int16), path).tolist() == pcm16.tolist()
    assert round_trip(Audio(file_format="wav"), path.read_bytes()).tolist() == pcm16.tolist()
    assert round_trip(Audio(), io.BytesIO(path.read_bytes())).dtype == np.int64
    unsigned = np.array([0, 128, 255], np.uint8)  # 8-bit WAV is unsigned: shifted to signed
    assert read_wav(wav_bytes(unsigned, 1), 1).tolist() == [-128, 0, 127]
    triples = bytes([0x01, 0x00, 0x00, 0xFF, 0xFF, 0xFF])  # 24-bit 1 and -1: widened, low byte padded
    assert read_wav(wav_bytes(np.frombuffer(triples, np.uint8), 3), 1).tolist() == [256, -1]
    stereo = np.array([[1, 4], [-3, 0]], "<i2")
    assert read_wav(wav_bytes(stereo, 2, 2), 1).tolist() == [2, -2]  # averaged, rounded down
    assert read_wav(wav_bytes(np.array([7], "<i2"), 2), 2).tolist() == [[7, 7]]


def test_audio_lazy_decode_stores_the_file() -> None:
    data = wav_bytes(np.array([3, -4], "<i2"), 2)
    feature = Audio(file_format="wav", dtype=np.int16, lazy_decode=True)
    assert feature.encode_flat(data, "a") == {"": data}
    assert round_trip(feature, data).tolist() == [3, -4]
    features = FeaturesDict({"k": feature})
    other = wav_bytes(np.array([1, 2, 3], "<i2"), 2)
    batch = features.deserialize_batch([features.serialize_example({"k": d}) for d in (data, other)])
    assert isinstance(batch["k"], RaggedArray) and batch["k"].to_list() == [[3, -4], [1, 2, 3]]
    with pytest.raises(tfrec.EncodeError, match="lazy_decode"):
        features.serialize_example({"k": np.zeros(3)})


def test_audio_refuses_formats_it_cannot_decode() -> None:
    with pytest.raises(tfrec.EncodeError, match="only WAV"):
        round_trip(Audio(file_format="mp3"), b"ID3....")


def test_audio_json() -> None:
    feature = Audio(shape=(None, 2), dtype=np.int16, file_format="wav", sample_rate=8000, encoding="zlib")
    assert feature.to_json()["audio"] == {
        "shape": {"dimensions": ["-1", "2"]},
        "dtype": "int16",
        "fileFormat": "wav",
        "sampleRate": "8000",
        "encoding": "ZLIB",
    }
    assert FeatureConnector.from_json(feature.to_json()) == feature
    assert feature.channels == 2 and feature.sample_rate == 8000


# -- Video ---------------------------------------------------------------------------------------------


def test_video_frames_round_trip() -> None:
    pytest.importorskip("PIL")
    rng = np.random.default_rng(0)
    video = rng.integers(0, 256, (3, 4, 5, 3), dtype=np.uint8)
    feature = Video(shape=(None, 4, 5, 3))
    assert np.array_equal(round_trip(feature, video), video)
    assert np.array_equal(round_trip(feature, list(video)), video)  # a list of frames
    features = FeaturesDict({"v": feature})
    batch = features.deserialize_batch([features.serialize_example({"v": v}) for v in (video, video[:1])])
    assert isinstance(batch["v"], RaggedArray) and batch["v"].values.shape == (4, 4, 5, 3)


def test_video_of_different_frame_sizes_in_a_batch() -> None:
    pytest.importorskip("PIL")
    feature = FeaturesDict({"v": Video()})
    small, large = np.zeros((2, 2, 2, 3), np.uint8), np.ones((2, 3, 3, 3), np.uint8)
    batch = feature.deserialize_batch([feature.serialize_example({"v": v}) for v in (small, large)])
    assert batch["v"].dtype == object and batch["v"][1].shape == (2, 3, 3, 3)


def test_video_files_are_refused_with_a_hint() -> None:
    with pytest.raises(tfrec.EncodeError, match="frames"):
        Video().encode_flat("clip.mp4", "v")


def test_video_json() -> None:
    video = Video(shape=(2, None, None, 3), encoding_format="jpeg", ffmpeg_extra_args=["-r", "1"])
    assert video.to_json()["video"] == {
        "shape": {"dimensions": ["2", "-1", "-1", "3"]},
        "dtype": "uint8",
        "encodingFormat": "jpeg",
        "ffmpegExtraArgs": ["-r", "1"],
    }
    assert FeatureConnector.from_json(video.to_json()) == video
    assert Video().shape == (None, None, None, 3)


# -- BBoxFeature ---------------------------------------------------------------------------------------


def test_bbox_values_and_checks() -> None:
    box = BBox(ymin=0.1, xmin=0.2, ymax=0.5, xmax=0.75)
    assert round_trip(BBoxFeature(), box).tolist() == pytest.approx([0.1, 0.2, 0.5, 0.75])
    assert round_trip(BBoxFeature(), np.array([0.0, 0.0, 1.0, 1.0])).dtype == np.float32
    for bad in (BBox(0.5, 0.2, 0.1, 0.75), BBox(0.1, 0.2, 0.5, 1.5), BBox(0, 0, 1, 1), [0.1, 0.2]):
        with pytest.raises(tfrec.EncodeError):
            round_trip(BBoxFeature(), bad)
    assert round_trip(BBoxFeature(bbox_format="XYWH"), [3.0, 4.0, -1.0, 100.0]).tolist() == [3, 4, -1, 100]
    assert round_trip(BBoxFeature(bbox_format=None), BBox(9, 8, 7, 6)).tolist() == [9, 8, 7, 6]
    with pytest.raises(tfrec.SchemaError):
        BBoxFeature(bbox_format="ZZZZ")


def test_bbox_json() -> None:
    assert BBoxFeature().to_json()["boundingBox"] == {
        "shape": {"dimensions": ["4"]},
        "dtype": "float32",
        "bboxFormat": "REL_YXYX",
    }
    assert "bboxFormat" not in BBoxFeature(bbox_format=None).to_json()["boundingBox"]
    for feature in (BBoxFeature(), BBoxFeature(bbox_format="XYXY"), BBoxFeature(bbox_format=None)):
        assert FeatureConnector.from_json(feature.to_json()) == feature


# -- Translation ---------------------------------------------------------------------------------------


def test_translation() -> None:
    feature = Translation(languages=["fr", "en"])
    assert round_trip(feature, {"en": "cat", "fr": "chat é"}) == {"fr": "chat é", "en": "cat"}
    assert feature.languages == ["en", "fr"]
    assert feature.to_json()["translation"] == {"languages": ["en", "fr"]}
    assert FeatureConnector.from_json(feature.to_json()) == feature


def test_translation_variable_languages() -> None:
    feature = TranslationVariableLanguages(languages=["fr", "en", "de"])
    out = round_trip(feature, {"fr": ["le chat", "la chatte"], "en": "cat"})
    assert out["language"].tolist() == ["en", "fr", "fr"]
    assert out["translation"].tolist() == ["cat", "la chatte", "le chat"]
    with pytest.raises(tfrec.EncodeError, match="not among"):
        round_trip(feature, {"es": "gato"})
    assert round_trip(TranslationVariableLanguages(), {})["language"].tolist() == []
    assert feature.to_json()["translation"] == {
        "languages": ["de", "en", "fr"],
        "variableLanguagesPerExample": True,
    }
    assert FeatureConnector.from_json(feature.to_json()) == feature
    assert FeatureConnector.from_json(TranslationVariableLanguages().to_json()).languages is None


# -- Dataset -------------------------------------------------------------------------------------------


def test_dataset_elements() -> None:
    feature = Dataset({"x": np.int64, "s": Text()})
    steps = [{"x": 1, "s": "a"}, {"x": 2, "s": "b"}]
    out = round_trip(feature, iter(steps))  # any iterable of elements, as tfds takes it
    assert [(int(e["x"]), e["s"]) for e in out] == [(1, "a"), (2, "b")]
    assert round_trip(feature, {"x": [], "s": []}) == []
    features = FeaturesDict({"d": feature})
    batch = features.deserialize_batch([features.serialize_example({"d": s}) for s in (steps, steps[:1])])
    assert [len(elements) for elements in batch["d"]] == [2, 1]
    assert feature.to_json()["pythonClassName"].endswith("dataset_feature.Dataset")
    assert FeatureConnector.from_json(feature.to_json()) == feature
    assert [float(v) for v in round_trip(Dataset(np.float32), [0.5, 1.5])] == [0.5, 1.5]


# -- Image: float32, colormap, LabeledImage, JPEG ------------------------------------------------------


def test_float32_image_is_stored_bit_for_bit() -> None:
    pytest.importorskip("PIL")
    image = np.array([[[np.nan], [-0.0]], [[1e-38], [np.inf]]], np.float32)
    feature = Image(shape=(None, None, 1), dtype=np.float32)
    stored = feature.encode_flat(image, "k")[""]
    assert stored.startswith(b"\x89PNG")
    back = round_trip(feature, image)
    assert back.dtype == np.float32 and back.view(np.uint32).tolist() == image.view(np.uint32).tolist()
    with pytest.raises(tfrec.SchemaError):
        Image(shape=(None, None, 3), dtype=np.float32)
    with pytest.raises(tfrec.EncodeError, match="arrays"):
        feature.encode_flat(stored, "k")


def test_colormap_and_labeled_image(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    assert Image(shape=(None, None, 1), use_colormap=True).to_json()["image"]["useColormap"] is True
    with pytest.raises(tfrec.SchemaError):
        Image(use_colormap=True)  # three channels
    mask = LabeledImage(labels=["bg", "car"], doc=Documentation(desc="segmentation"))
    assert mask.shape == (None, None, 1) and mask.num_classes == 2 and mask.doc == "segmentation"
    assert mask.to_json()["image"]["label"] == {"numClasses": "2"}
    pixels = np.array([[[0], [1]], [[1], [0]]], np.uint8)
    assert np.array_equal(round_trip(mask, pixels), pixels)
    features = FeaturesDict(
        {"seg": {"mask": mask}, "n": LabeledImage(labels=3), "none": LabeledImage(labels=None)}
    )
    features.save(tmp_path)
    assert (tmp_path / "seg-mask.labels.txt").read_text(encoding="utf-8") == "bg\ncar\n"
    loaded: Any = FeaturesDict.load(tmp_path)
    assert loaded == features and loaded["seg"]["mask"].names == ["bg", "car"]
    assert loaded["none"].names is None and loaded["n"].num_classes == 3
    assert (
        json.loads((tmp_path / "features.json").read_text())["featuresDict"]["features"]["none"]["image"][
            "label"
        ]
        == {}
    )


def test_jpeg_decoding_without_simplejpeg_falls_back_to_pillow(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("PIL")
    ramp = np.broadcast_to(np.arange(0, 256, 16, dtype=np.uint8)[None, :, None], (16, 16, 3)).copy()
    feature = Image(shape=(None, None, 3), encoding_format="jpeg")
    data = feature.encode_flat(ramp, "k")[""]
    monkeypatch.setattr(jpeg_module, "simplejpeg_module", lambda: None)
    assert jpeg_module.decode_jpeg(data, 3) is None
    pillow = round_trip(feature, ramp)  # Pillow's accurate DCT: close, not TF's pixels
    assert np.abs(pillow.astype(int) - ramp.astype(int)).max() <= 8


def test_jpeg_decoding_with_simplejpeg_uses_tf_settings() -> None:
    simplejpeg = pytest.importorskip("simplejpeg")
    pytest.importorskip("PIL")
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (9, 13, 3), dtype=np.uint8)
    data = Image(encoding_format="jpeg").encode_flat(image, "k")[""]
    expected = simplejpeg.decode_jpeg(data, colorspace="RGB", fastdct=True, fastupsample=False)
    assert np.array_equal(round_trip(Image(encoding_format="jpeg"), data), expected)


def test_documentation_is_accepted_by_every_connector() -> None:
    doc = Documentation(desc="age", value_range="0-150")
    for feature in (Scalar(np.int32, doc=doc), Text(doc=doc), BBoxFeature(doc=doc), Audio(doc=doc)):
        assert (feature.doc, feature.value_range) == ("age", "0-150")
        assert feature.to_json()["description"] == "age" and feature.to_json()["valueRange"] == "0-150"


def test_image_from_a_file_object_or_a_pillow_image() -> None:
    pil = pytest.importorskip("PIL.Image")
    pixels = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    png = Image().encode_flat(pixels, "k")[""]
    assert np.array_equal(round_trip(Image(), io.BytesIO(png)), pixels)
    assert np.array_equal(round_trip(Image(), pil.fromarray(pixels)), pixels)
