"""Converters end to end (through `tfrec convert` and as functions): values, errors, nothing half-written."""

from __future__ import annotations

import io
import json
import sys
import tarfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tfrec
from tfrec.cli import main
from tfrec.convert import (
    drop_empty,
    keep,
    load_features,
    parse_layout,
    read_csv,
    read_fixed_records,
    read_jsonl,
    read_webdataset,
    rename,
    write_samples,
)
from tfrec.errors import ConvertError, InvalidArgumentError


def _png() -> bytes:
    pil = pytest.importorskip("PIL.Image")
    buffer = io.BytesIO()
    pil.fromarray(np.arange(4, dtype=np.uint8).reshape(2, 2), mode="L").save(buffer, format="PNG")
    return buffer.getvalue()


PNG = _png()


def _decoded(directory: Path, pattern: str = "*.tfrecord") -> list[dict]:
    features = load_features(directory / "features.json")
    return [
        features.deserialize_example(r)
        for p in sorted(directory.glob(pattern))
        for r in tfrec.read_records(p)
    ]


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# -- CSV --------------------------------------------------------------------------------------------


def test_csv_types_inferred_and_defaults(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text("id,score,name,n\n1,0.5,ann,\n2,3,bob,4\n")
    assert main(["convert", str(src), str(tmp_path / "out" / "t"), "--defaults", "n=-1", "-q"]) == 0
    rows = _decoded(tmp_path / "out")
    assert [(r["id"], r["score"], r["name"], r["n"]) for r in rows] == [
        (1, 0.5, "ann", -1),
        (2, 3.0, "bob", 4),
    ]
    assert rows[0]["score"].dtype == np.float32 and rows[0]["id"].dtype == np.int64


def test_csv_bad_cell_names_row_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "t.csv"
    src.write_text("id,age\n" + "".join(f"{i},{i}\n" for i in range(3000)) + "3000,forty\n")
    out = tmp_path / "out"
    assert main(["convert", str(src), str(out / "t"), "--types", "age=int64", "--num-shards", "3"]) == 1
    err = capsys.readouterr().err
    assert f"{src}, row 3002, column 'age': 'forty' is not an integer (int64)" in err
    assert _leftovers(out) == []


def test_csv_empty_number_without_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "t.csv"
    src.write_text("a,b\n1,2\n3,\n")
    assert main(["convert", str(src), str(tmp_path / "o.tfrecord")]) == 1
    assert "row 3, column 'b': empty cell and no default" in capsys.readouterr().err
    assert _leftovers(tmp_path) == ["t.csv"]


def test_csv_without_header_and_from_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"1;x\n2;y\n")))
    args = ["convert", "--from", "csv", "-", str(tmp_path / "o"), "--no-header", "--columns", "k,v"]
    assert main([*args, "--delimiter", ";", "-q"]) == 0
    assert [(r["k"], r["v"]) for r in _decoded(tmp_path)] == [(1, "x"), (2, "y")]


def test_unknown_type_name_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "t.csv"
    src.write_text("a\n1\n")
    assert main(["convert", str(src), str(tmp_path / "o"), "--types", "a=int23"]) == 2
    assert (
        "unknown type 'int23' for 'a'; known types: int64, float32, text, bytes, image"
        in capsys.readouterr().err
    )
    assert _leftovers(tmp_path) == ["t.csv"]


# -- tar / webdataset ------------------------------------------------------------------------------


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_tar_groups_by_basename_and_types(tmp_path: Path) -> None:
    src = _tar(
        tmp_path / "d.tar",
        {"a.png": PNG, "a.cls": b"3", "a.txt": b"hi", "b.png": PNG, "b.cls": b"5", "b.txt": b"yo"},
    )
    assert main(["convert", str(src), str(tmp_path / "out" / "d"), "--key-as", "key", "-q"]) == 0
    rows = _decoded(tmp_path / "out")
    assert [(r["key"], r["cls"], r["txt"]) for r in rows] == [("a", 3, "hi"), ("b", 5, "yo")]
    features = load_features(tmp_path / "out" / "features.json")
    assert features["png"].shape == (None, None, 1)


def test_tar_member_without_partner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _tar(tmp_path / "d.tar", {"a.png": PNG, "a.cls": b"3", "b.png": PNG, "c.png": PNG, "c.cls": b"1"})
    out = tmp_path / "out"
    assert main(["convert", str(src), str(out / "d"), "--num-shards", "2"]) == 1
    err = capsys.readouterr().err
    assert "sample 'b': has no 'cls' (a member without a partner: found only png)" in err
    assert _leftovers(out) == []


def test_tar_selections_renames_and_map(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "userfns.py").write_text(
        "def double(sample):\n"
        "    if sample['label'] == b'0':\n        return None\n"
        "    sample['twice'] = 2 * int(sample['label'])\n    return sample\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    members = {"a.png": PNG, "a.cls": b"0", "a.seg.png": PNG, "b.png": PNG, "b.cls": b"4", "b.seg.png": PNG}
    src = _tar(tmp_path / "d.tar", members)
    args = ["convert", str(src), str(tmp_path / "out" / "d"), "--keep", "png,cls", "--rename", "cls=label"]
    assert main([*args, "--types", "label=int64", "--map", "userfns:double", "-q"]) == 0
    rows = _decoded(tmp_path / "out")
    assert [(sorted(r), r["label"], r["twice"]) for r in rows] == [(["label", "png", "twice"], 4, 8)]


def test_transforms_as_functions() -> None:
    sample = {"__key__": "k", "seg.png": b"", "jpg": b"x", "cls": b"1"}
    assert keep(suffixes=["png"])(sample) == {"__key__": "k", "seg.png": b""}
    assert keep(substrings=["l"], prefixes=["j"])(sample) == {"__key__": "k", "jpg": b"x", "cls": b"1"}
    assert rename({"jpg": "image"})(sample)["image"] == b"x"
    assert drop_empty()({"__key__": "k", "seg.png": b""}) is None
    with pytest.raises(InvalidArgumentError, match="same name"):
        rename({"a": "x", "b": "x"})


def test_tar_long_names_gzip_and_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = "d" * 120 + "/sample"
    for fmt in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        path = tmp_path / f"long{fmt}.tar.gz"
        with tarfile.open(path, "w:gz", format=fmt) as archive:
            for name, data in ((f"{deep}.cls", b"7"), (f"{deep}.txt", b"hi")):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        assert [(s["__key__"], s["cls"], s["txt"]) for s in read_webdataset(path, key_name="__key__")] == [
            (deep, 7, "hi")
        ]
    broken = tmp_path / "broken.tar"
    broken.write_bytes(_tar(tmp_path / "ok.tar", {"a.cls": b"1" * 100}).read_bytes()[:560])
    assert main(["convert", str(broken), str(tmp_path / "out" / "b")]) == 1
    assert "truncated tar member at byte 0" in capsys.readouterr().err
    assert _leftovers(tmp_path / "out") == []


def test_tar_from_directory(tmp_path: Path) -> None:
    root = tmp_path / "shards"
    root.mkdir()
    for key, label in (("x1", b"1"), ("x0", b"0")):
        (root / f"{key}.cls").write_bytes(label)
        (root / f"{key}.bin").write_bytes(b"\x00\xff")
    samples = read_webdataset(root)
    assert [(s["cls"], s["bin"]) for s in samples] == [(0, b"\x00\xff"), (1, b"\x00\xff")]


# -- JSON Lines --------------------------------------------------------------------------------------


def test_jsonl_nested_objects_become_nested_features(tmp_path: Path) -> None:
    src = tmp_path / "d.jsonl"
    lines = [
        {"id": 1, "meta": {"lang": "en", "score": 1}, "tags": [1, 2]},
        {"id": 2, "meta": {"lang": "fr", "score": 0.5}, "tags": [3]},
    ]
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["convert", str(src), str(tmp_path / "out" / "d"), "-q"]) == 0
    rows = _decoded(tmp_path / "out")
    assert [(r["id"], r["meta"]["lang"], float(r["meta"]["score"]), r["tags"].tolist()) for r in rows] == [
        (1, "en", 1.0, [1, 2]),
        (2, "fr", 0.5, [3]),
    ]
    assert "meta/lang" in load_features(tmp_path / "out" / "features.json").flat_infos()


def test_jsonl_missing_key_names_the_line(tmp_path: Path) -> None:
    src = tmp_path / "d.jsonl"
    src.write_text('{"a": 1, "b": 2}\n' * 3 + '{"a": 1}\n')
    samples = read_jsonl(src, sample=2)
    with pytest.raises(ConvertError, match=r"d.jsonl, line 4: missing 'b'"):
        list(samples)


# -- fixed-length binary -------------------------------------------------------------------------------


def test_fixed_length_records_cifar_layout(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (3, 3, 32, 32), np.uint8)  # stored channels first
    src = tmp_path / "batch.bin"
    src.write_bytes(b"".join(bytes([i]) + images[i].tobytes() for i in range(3)))
    layout = "label:uint8,image:uint8:3x32x32:hwc"
    assert parse_layout(layout).record_bytes == 3073
    assert main(["convert", str(src), str(tmp_path / "out" / "c"), "--layout", layout, "-q"]) == 0
    rows = _decoded(tmp_path / "out")
    assert [r["label"] for r in rows] == [0, 1, 2]
    assert all(np.array_equal(r["image"], images[i].transpose(1, 2, 0)) for i, r in enumerate(rows))


def test_fixed_length_partial_record_and_bad_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "b.bin"
    src.write_bytes(bytes(2 * 5 + 3))
    assert main(["convert", str(src), str(tmp_path / "o"), "--layout", "a:uint8,b:>int32"]) == 1
    assert "ends with 3 bytes that do not make a whole record of 5 bytes" in capsys.readouterr().err
    assert main(["convert", str(src), str(tmp_path / "o"), "--layout", "a:uint9"]) == 2
    assert "unknown dtype 'uint9'" in capsys.readouterr().err
    assert _leftovers(tmp_path) == ["b.bin"]
    big = read_fixed_records(io.BytesIO(b"\x00\x00\x01\x02"), "x:>int16")
    assert [int(s["x"]) for s in big] == [0, 258]


# -- image folders -----------------------------------------------------------------------------------


def test_image_folder_labels_from_directories(tmp_path: Path) -> None:
    for name in ("cat", "dog"):
        (tmp_path / "root" / name).mkdir(parents=True)
        (tmp_path / "root" / name / f"{name}1.png").write_bytes(PNG)
    assert main(["convert", str(tmp_path / "root"), str(tmp_path / "out" / "pets"), "-q"]) == 0
    rows = _decoded(tmp_path / "out")
    assert [(r["label"], r["filename"]) for r in rows] == [(0, "cat/cat1.png"), (1, "dog/dog1.png")]
    assert load_features(tmp_path / "out" / "features.json")["label"].names == ["cat", "dog"]


# -- out of TFRecord ------------------------------------------------------------------------------------


def _plain(tmp_path: Path) -> Path:
    path = tmp_path / "p.tfrecord"
    tfrec.write_records(
        path, [tfrec.encode_example({"id": i, "v": [0.5] * i, "t": f"x{i}"}) for i in range(3)]
    )
    return path


def test_tfrecord_to_jsonl(tmp_path: Path) -> None:
    assert main(["convert", str(_plain(tmp_path)), str(tmp_path / "p.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert rows[2] == {"id": [2], "v": [0.5, 0.5], "t": ["x2"]}


def test_tfrecord_to_parquet_with_arrow_types(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    assert main(["convert", str(_plain(tmp_path)), str(tmp_path / "p.parquet")]) == 0
    table = pq.read_table(tmp_path / "p.parquet")
    assert str(table.schema.field("id").type) == "int64"
    assert str(table.schema.field("t").type) == "string"
    # An empty list is stored as a Feature with no kind: missing, so null.
    assert table.column("v").to_pylist() == [None, [0.5], [0.5, 0.5]]


def test_tfrecord_to_parquet_samples_every_input_for_its_columns(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    tfrec.write_records(tmp_path / "a.tfrecord", [tfrec.encode_example({"id": 0})])
    tfrec.write_records(tmp_path / "b.tfrecord", [tfrec.encode_example({"id": 1, "score": 0.5})])
    assert main(["convert", str(tmp_path / "*.tfrecord"), str(tmp_path / "p.parquet")]) == 0
    table = pq.read_table(tmp_path / "p.parquet")
    assert table.column("id").to_pylist() == [0, 1]
    assert table.column("score").to_pylist() == [None, [0.5]]  # a key the first file lacks


def test_tfrecord_reshard_with_gzip(tmp_path: Path) -> None:
    assert (
        main(
            [
                "convert",
                str(_plain(tmp_path)),
                str(tmp_path / "r"),
                "--num-shards",
                "2",
                "--compression",
                "gzip",
            ]
        )
        == 0
    )
    shards = sorted(tmp_path.glob("r-*.tfrecord.gz"))
    assert len(shards) == 2 and sum(1 for s in shards for _ in tfrec.read_records(s)) == 3


# -- streaming ----------------------------------------------------------------------------------------


def _peak_csv(tmp_path: Path, rows: int) -> int:
    src = tmp_path / f"big{rows}.csv"
    pad = "x" * 200  # ~250-byte records: the writer's 1 MiB flush buffer fills every ~4000 rows
    with open(src, "w") as file:
        file.write("a,b,c\n")
        for i in range(rows):
            file.write(f"{i},{i * 0.5},{pad}{i}\n")
    tracemalloc.start()
    try:
        write_samples(read_csv(src), tmp_path / f"out{rows}" / "t", num_shards=1, progress=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_csv_conversion_memory_stays_flat(tmp_path: Path) -> None:
    """5x the rows, both far past every buffer: the 1000-row inference sample, the 1024-record
    write chunks and the writer's 1 MiB flush buffer (~4000 rows here)."""
    small = _peak_csv(tmp_path, 12_000)
    large = _peak_csv(tmp_path, 60_000)
    assert large < small * 1.5 + 256 * 1024, (small, large)


def test_types_follow_a_member_through_renames(tmp_path: Path) -> None:
    # --types and the extension defaults name members as the tar does, whatever they are renamed to.
    samples = read_webdataset(
        _tar(tmp_path / "r.tar", {"a.cls": b"3", "a.png": _png(), "a.txt": b"hi"}),
        types={"txt": "bytes"},
        transforms=[rename({"cls": "label", "png": "image", "txt": "raw"})],
    )
    (sample,) = list(samples)
    assert sample["label"] == 3 and sample["raw"] == b"hi"
    assert samples.features["label"].flat_infos()[""].dtype == np.int64
    assert type(samples.features["image"]).__name__ == "Image"
