"""The ``tfrec`` command and the converters on data this project did not make: scikit-learn's bundled
datasets (wine, breast_cancer, diabetes, digits, iris and its sample images) written out as CSV, JSON
Lines, Parquet and tar, and grain's file of plain text records (read from the installed package).

Each test names the item of the brief it covers: real headers, nulls, encodings, Parquet in, raw
records, nested and sequence features in inspect, images without Pillow, large files, where output
goes, output formats, the command's manners.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrec
from tfrec.cli import main
from tfrec.convert import read_csv, read_jsonl
from tfrec.errors import ConvertError
from tfrec.features import FeaturesDict, Sequence, Tensor

datasets = pytest.importorskip("sklearn.datasets")

REPO = Path(__file__).resolve().parents[2]


def _run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _frame(name: str) -> Any:
    return getattr(datasets, f"load_{name}")(as_frame=True).frame


def _records(pattern: str) -> list[dict[str, Any]]:
    return [tfrec.decode_example(r) for r in tfrec.read_records(sorted(Path().glob(pattern)) or pattern)]


# -- 1. column names as real tables have them ------------------------------------------------------


def test_wine_csv_converts_and_a_slash_in_a_header_nests(tmp_path: Path, capsys: Any) -> None:
    wine = _frame("wine")
    assert "od280/od315_of_diluted_wines" in wine.columns
    wine.to_csv(tmp_path / "wine.csv", index=False)
    code, _, err = _run(capsys, "convert", str(tmp_path / "wine.csv"), str(tmp_path / "out" / "wine"))
    assert code == 0, err
    features = FeaturesDict.load(tmp_path / "out")
    assert isinstance(features["od280"], FeaturesDict)  # '/' nests, as in tfds
    first = tfrec.decode_example(
        next(iter(tfrec.read_records(tmp_path / "out/wine-00000-of-00001.tfrecord")))
    )
    assert first["od280/od315_of_diluted_wines"] == pytest.approx(
        [wine.iloc[0]["od280/od315_of_diluted_wines"]]
    )
    decoded = features.deserialize_example(
        next(iter(tfrec.read_records(tmp_path / "out/wine-00000-of-00001.tfrecord")))
    )
    assert float(decoded["od280"]["od315_of_diluted_wines"]) == pytest.approx(3.92)


def test_headers_with_spaces_dots_and_a_byte_order_mark(tmp_path: Path) -> None:
    iris = _frame("iris")  # 'sepal length (cm)', ...
    iris.columns = [c.replace("length", "len.") for c in iris.columns]
    path = tmp_path / "iris.csv"
    iris.to_csv(path, index=False, encoding="utf-8-sig")  # as Excel writes it
    samples = read_csv(path)
    names = list(samples.features.features)
    assert names[0] == "sepal len. (cm)"  # no '\ufeff'
    assert next(iter(samples))["petal len. (cm)"] == pytest.approx(1.4)


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ("a,b,a", "given twice"),
        ("a,,b", "empty name"),
        ("a,a/b", "value and also a group"),
        ("a,/b", "empty"),
    ],
)
def test_duplicate_and_empty_names_are_clear_errors(
    tmp_path: Path, capsys: Any, header: str, problem: str
) -> None:
    diabetes = _frame("diabetes").iloc[:5, :3]
    path = tmp_path / "t.csv"
    path.write_text(header + "\n" + diabetes.to_csv(index=False, header=False))
    code, _, err = _run(capsys, "convert", str(path), str(tmp_path / "out" / "t"))
    assert code == 1
    assert problem in err and "t.csv" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.tfrecord"))


# -- 2. nulls and absent keys -------------------------------------------------------------------------


def test_jsonl_nulls_and_absent_keys_read_back_as_missing(tmp_path: Path, capsys: Any) -> None:
    cancer = _frame("breast_cancer").iloc[:50]
    path = tmp_path / "cancer.jsonl"
    with open(path, "w") as file:
        for i, row in enumerate(cancer.to_dict("records")):
            if i % 3 == 0:
                row["mean radius"] = None
            if i % 4 == 0:
                del row["mean texture"]
            row["name"] = None if i % 5 == 0 else f"patient {i}"
            file.write(json.dumps(row) + "\n")
    code, _, err = _run(capsys, "convert", str(path), str(tmp_path / "out" / "c.tfrecord"))
    assert code == 0, err
    features = FeaturesDict.load(tmp_path / "out")
    assert features["mean radius"] == Tensor(shape=(None,), dtype=np.float32)
    assert features["name"] == Sequence(tfrec.features.Text())
    records = list(tfrec.read_records(tmp_path / "out/c.tfrecord"))
    assert len(records) == 50
    raw0, raw1 = tfrec.decode_example(records[0]), tfrec.decode_example(records[1])
    assert raw0.get("mean radius") is None or len(raw0["mean radius"]) == 0  # absent from the record
    assert raw1["mean radius"] == pytest.approx([cancer.iloc[1]["mean radius"]])
    decoded = features.deserialize_example(records[0])
    assert decoded["mean radius"].shape == (0,) and decoded["name"].shape == (0,)
    assert list(features.deserialize_example(records[1])["name"]) == ["patient 1"]


def test_a_key_missing_only_after_the_sample_names_the_line(tmp_path: Path) -> None:
    rows = _frame("diabetes").iloc[:20].to_dict("records")
    del rows[-1]["bmi"]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    samples = read_jsonl(path, sample=5)
    with pytest.raises(ConvertError, match=r"d.jsonl, line 20: missing 'bmi'"):
        list(samples)


# -- 3. encodings -----------------------------------------------------------------------------------


def test_encoding_option_and_undecodable_bytes(tmp_path: Path, capsys: Any) -> None:
    wine = _frame("wine").iloc[:30, :3].copy()
    wine["origin"] = ["Côte-Rôtie", "Mâcon", "Jerez"] * 10
    path = tmp_path / "wine.csv"
    wine.to_csv(path, index=False, encoding="latin-1")
    code, _, err = _run(capsys, "convert", str(path), str(tmp_path / "bad" / "w"))
    assert code == 1 and "wine.csv" in err and "row 2" in err and "not utf-8 text" in err
    code, _, err = _run(capsys, "convert", "--encoding", "latin-1", str(path), str(tmp_path / "ok" / "w"))
    assert code == 0, err
    first = tfrec.decode_example(next(iter(tfrec.read_records(tmp_path / "ok/w-00000-of-00001.tfrecord"))))
    assert first["origin"] == ["Côte-Rôtie".encode()]
    jsonl = tmp_path / "w.jsonl"
    jsonl.write_bytes(
        b"".join(json.dumps(r, ensure_ascii=False).encode("latin-1") + b"\n" for r in wine.to_dict("records"))
    )
    code, _, err = _run(capsys, "convert", str(jsonl), str(tmp_path / "j" / "w"))
    assert code == 1 and "w.jsonl, line 1" in err
    assert _run(capsys, "convert", "--encoding", "latin-1", str(jsonl), str(tmp_path / "j" / "w"))[0] == 0


# -- 4. Parquet in; 13. text lists out as strings ------------------------------------------------------


def test_parquet_in_and_text_lists_out_as_strings(tmp_path: Path, capsys: Any) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    wine = _frame("wine")
    wine.to_parquet(tmp_path / "wine.parquet")
    code, _, err = _run(capsys, "convert", str(tmp_path / "wine.parquet"), str(tmp_path / "out" / "wine"))
    assert code == 0, err
    records = list(tfrec.read_records(tmp_path / "out/wine-00000-of-00001.tfrecord"))
    assert len(records) == len(wine)
    assert tfrec.decode_example(records[0])["alcohol"] == pytest.approx([14.23])
    # a JSON list of strings -> Text -> Arrow strings
    names = datasets.load_wine().target_names.tolist()
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps({"id": i, "classes": names}) + "\n" for i in range(3)))
    assert _run(capsys, "convert", str(src), str(tmp_path / "t" / "t.tfrecord"))[0] == 0
    assert _run(capsys, "convert", str(tmp_path / "t/t.tfrecord"), str(tmp_path / "t.parquet"))[0] == 0
    table = pq.read_table(tmp_path / "t.parquet")
    assert str(table.schema.field("classes").type.value_type) == "string"
    assert table.column("classes").to_pylist()[0] == names


# -- 5. records that are not Examples ----------------------------------------------------------------


@pytest.fixture
def morris() -> Path:
    """grain's morris_sequence_first_5.tfrecord (Apache-2.0), read from the installed package."""
    spec = importlib.util.find_spec("grain")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("grain is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(root.rglob("morris_sequence_first_5.tfrecord"))
    if not found:
        pytest.skip("this grain ships no morris_sequence_first_5.tfrecord")
    return found[0]


def test_raw_records_verify_inspect_head_cat(morris: Path, capsys: Any) -> None:
    code, out, _ = _run(capsys, "verify", str(morris))
    assert code == 0 and "5 records (raw records" in out and "OK" in out
    code, out, _ = _run(capsys, "verify", "--json", str(morris))
    assert code == 0 and json.loads(out)["files"][0] == {
        "path": str(morris),
        "records": 5,
        "problems": 0,
        "examples": False,
    }
    code, out, _ = _run(capsys, "inspect", str(morris))
    assert (
        code == 0
        and "5 raw" in out
        and "damaged" not in out
        and "raw records (not tf.train.Example): 5" in out
    )
    code, out, _ = _run(capsys, "head", "-n", "3", str(morris))
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == ["1", "1 1", "2 1"]
    code, out, _ = _run(capsys, "cat", str(morris))
    assert code == 0 and len(out.splitlines()) == 5


def test_raw_option_forces_it_and_binary_records_are_base64(tmp_path: Path, capsys: Any) -> None:
    images = datasets.load_sample_images().images
    path = tmp_path / "pixels.tfrecord"
    tfrec.write_records(path, [img[:2, :2].tobytes() for img in images])
    code, out, _ = _run(capsys, "head", "--raw", str(path))
    assert code == 0 and all(
        "b64" in json.loads(line) or isinstance(json.loads(line), str) for line in out.splitlines()
    )
    digits = tmp_path / "digits.tfrecord"
    tfrec.write_records(
        digits, [tfrec.encode_example({"label": int(t)}) for t in datasets.load_digits().target[:4]]
    )
    code, out, _ = _run(capsys, "verify", "--raw", str(digits))
    assert code == 0 and "raw records" in out


# -- 6. nested sequences and SequenceExamples in inspect -----------------------------------------------


def test_inspect_nested_sequences_and_sequence_examples(tmp_path: Path, capsys: Any) -> None:
    digits = datasets.load_digits()
    features = FeaturesDict({"rows": Sequence(Sequence(Tensor(shape=(), dtype=np.int64))), "label": np.int64})
    path = tmp_path / "nested.tfrecord"
    tfrec.write_records(
        path,
        [
            features.serialize_example(
                {"rows": [[int(v) for v in row if v] for row in image.reshape(8, 8)], "label": int(label)}
            )
            for image, label in zip(digits.data[:20], digits.target[:20], strict=True)
        ],
    )
    code, out, _ = _run(capsys, "inspect", str(path))
    assert code == 0 and "Sequence(" in out
    seq = tmp_path / "seq.tfrecord"
    tfrec.write_records(
        seq,
        [
            tfrec.encode_sequence_example(
                {"label": [int(label)]}, {"row": [list(r) for r in image.reshape(8, 8)]}
            )
            for image, label in zip(digits.data[:10].astype(np.int64), digits.target[:10], strict=True)
        ],
    )
    code, out, _ = _run(capsys, "inspect", str(seq))
    assert code == 0
    row_line = next(line for line in out.splitlines() if line.startswith("row "))
    assert "Sequence(" in row_line
    code, out, _ = _run(capsys, "inspect", "--json", "-", str(seq))
    proposal = FeaturesDict.from_json(json.loads(out)) if hasattr(FeaturesDict, "from_json") else None
    assert code == 0 and proposal is not None


# -- 7. images without Pillow ------------------------------------------------------------------------


def test_inspect_reads_image_channels_from_headers_without_pillow(tmp_path: Path) -> None:
    PIL = pytest.importorskip("PIL.Image")
    digits = datasets.load_digits()
    with tarfile.open(tmp_path / "digits.tar", "w") as tar:
        for i in range(5):
            buffer = io.BytesIO()
            PIL.fromarray((digits.images[i] * 15).astype(np.uint8)).save(buffer, format="PNG")
            for ext, data in (("png", buffer.getvalue()), ("cls", str(digits.target[i]).encode())):
                info = tarfile.TarInfo(f"{i:05d}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    script = (
        "import sys; sys.modules['PIL'] = None\n"
        "from tfrec.cli import main\n"
        f"src, out = {str(tmp_path / 'digits.tar')!r}, {str(tmp_path / 'out' / 'd')!r}\n"
        "assert main(['convert', src, out, '-q']) == 0\n"
        f"sys.exit(main(['inspect', {str(tmp_path / 'out' / 'd-00000-of-00001.tfrecord')!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr
    written = json.loads((tmp_path / "out" / "features.json").read_text())
    assert "1" in json.dumps(written)  # convert: 1 channel
    png_line = next(line for line in result.stdout.splitlines() if line.startswith("png "))
    assert "shape=(None, None, 1)" in png_line


# -- 8. large files: a sample decoded, the rest counted --------------------------------------------------


def test_inspect_sample_decodes_a_sample_and_counts_the_rest(tmp_path: Path, capsys: Any) -> None:
    cancer = _frame("breast_cancer")
    cancer.to_csv(tmp_path / "cancer.csv", index=False)
    assert (
        _run(capsys, "convert", str(tmp_path / "cancer.csv"), str(tmp_path / "o" / "c"), "--num-shards", "2")[
            0
        ]
        == 0
    )
    shards = sorted(str(p) for p in (tmp_path / "o").glob("*.tfrecord"))
    code, out, _ = _run(capsys, "inspect", "--sample", "10", *shards)
    assert code == 0
    assert "the first 10 of 569" in out
    assert "total  569" in " ".join(out.split("  ")) or "569" in out.split("total")[1]
    for bad in ("0", "-3", "lots"):
        assert _run(capsys, "inspect", "--sample", bad, *shards)[0] == 2


# -- 9. where files go; 10. formats by suffix -------------------------------------------------------------


def test_a_directory_out_holds_the_shards_and_features_json(tmp_path: Path, capsys: Any) -> None:
    _frame("wine").to_csv(tmp_path / "wine.csv", index=False)
    code, _, err = _run(capsys, "convert", str(tmp_path / "wine.csv"), str(tmp_path / "d") + "/")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "features.json",
        "wine-00000-of-00001.tfrecord",
    ]
    assert f"features: {tmp_path / 'd' / 'features.json'}" in err  # 18: says where it went
    (tmp_path / "e").mkdir()
    assert _run(capsys, "convert", str(tmp_path / "wine.csv"), str(tmp_path / "e"))[0] == 0
    assert (tmp_path / "e" / "wine-00000-of-00001.tfrecord").exists() and (
        tmp_path / "e/features.json"
    ).exists()
    assert not (tmp_path / "features.json").exists()


def test_out_suffixes_never_hide_a_tfrecord_under_another_format(tmp_path: Path, capsys: Any) -> None:
    _frame("diabetes").to_csv(tmp_path / "diabetes.csv", index=False)
    assert _run(capsys, "convert", str(tmp_path / "diabetes.csv"), str(tmp_path / "x.tfrecord"))[0] == 0
    for out in ("back/x.csv", "back/x.tar", "back/x.txt"):
        code, _, err = _run(capsys, "convert", str(tmp_path / "x.tfrecord"), str(tmp_path / out))
        assert code == 2 and "does not write" in err
    assert not (tmp_path / "back").exists()
    for out in ("d.ndjson", "d.json", "d.pq", "d.parquet", "-"):
        code, _, err = _run(
            capsys, "convert", str(tmp_path / "diabetes.csv"), out if out == "-" else str(tmp_path / out)
        )
        assert code == 2, out
    code, out, _ = _run(capsys, "convert", str(tmp_path / "x.tfrecord"), str(tmp_path / "x.ndjson"))
    assert code == 0 and len((tmp_path / "x.ndjson").read_text().splitlines()) == 442


# -- 14-18. the command's manners --------------------------------------------------------------------


def _digits_tar(tmp_path: Path) -> Path:
    digits = datasets.load_digits()
    path = tmp_path / "d.tar"
    with tarfile.open(path, "w") as tar:
        for i in range(6):
            for ext, data in (
                ("cls", str(digits.target[i]).encode()),
                ("pix", digits.images[i].astype(np.uint8).tobytes()),
            ):
                info = tarfile.TarInfo(f"{i:05d}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    "options",
    [["--num-shards", "0"], ["--max-records", "0"], ["--keep", "jpg,cls"], ["--rename", "png=image"]],
)
def test_options_that_select_nothing_are_usage_errors(
    tmp_path: Path, capsys: Any, options: list[str]
) -> None:
    code, _, err = _run(capsys, "convert", str(_digits_tar(tmp_path)), str(tmp_path / "out" / "d"), *options)
    assert code == 2, err
    assert not list((tmp_path).glob("out/*.tfrecord"))


def test_head_minus_one_and_version(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "x.tfrecord"
    tfrec.write_records(path, [tfrec.encode_example({"a": 1})])
    assert _run(capsys, "head", "-n", "-1", str(path))[0] == 2
    code, out, _ = _run(capsys, "--version")
    assert code == 0 and out.strip() == f"tfrec {tfrec.__version__}"


def test_a_crc_error_is_said_once(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "damaged.tfrecord"
    tfrec.write_records(
        path, [tfrec.encode_example({"target": float(t)}) for t in _frame("diabetes")["target"][:10]]
    )
    data = bytearray(path.read_bytes())
    data[5 * 32 + 20] ^= 1  # in record 5's data: 10 frames of 32 bytes
    path.write_bytes(bytes(data))
    code, out, _ = _run(capsys, "verify", str(path))
    assert code == 1
    line = next(line for line in out.splitlines() if "CRC" in line)
    assert len(re.findall(r"record \d", line)) == 1 and line.count(str(path)) == 1


def test_floats_print_as_the_shortest_float32_decimal(tmp_path: Path, capsys: Any) -> None:
    _frame("breast_cancer").to_csv(tmp_path / "cancer.csv", index=False)
    assert _run(capsys, "convert", str(tmp_path / "cancer.csv"), str(tmp_path / "c.tfrecord"))[0] == 0
    for command in ("head", "cat"):
        code, out, _ = _run(capsys, command, "-n", "1", str(tmp_path / "c.tfrecord"))
        assert code == 0 and json.loads(out)["mean radius"] == [17.99] and "17.989" not in out
    code, out, _ = _run(capsys, "head", "-n", "1", "--features", str(tmp_path), str(tmp_path / "c.tfrecord"))
    assert json.loads(out)["mean radius"] == 17.99


def test_inspect_says_its_proposal_is_from_the_first_records(tmp_path: Path, capsys: Any) -> None:
    digits = _frame("digits")  # 1797 rows
    digits.to_csv(tmp_path / "digits.csv", index=False)
    assert _run(capsys, "convert", str(tmp_path / "digits.csv"), str(tmp_path / "d.tfrecord"))[0] == 0
    code, out, _ = _run(capsys, "inspect", str(tmp_path / "d.tfrecord"))
    assert code == 0 and "inferred from the first 1000 records" in out


def test_every_example_in_the_help_runs_as_shown(tmp_path: Path) -> None:
    from tfrec.cli import build_parser

    (tmp_path / "examples").mkdir()
    for name in ("digits.tar.gz", "iris.csv"):
        (tmp_path / "examples" / name).write_bytes((REPO / "examples" / name).read_bytes())
    parser = build_parser()
    texts = [parser.epilog or ""]
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in ("convert", "inspect", "head", "cat", "count", "verify", "index", "salvage"):
        texts.append(sub.choices[name].epilog)  # type: ignore[attr-defined]
    commands = [
        line.strip()
        for text in texts
        for line in text.splitlines()
        if line.strip().startswith(("tfrec ", "cat "))
    ]
    assert len(commands) >= 20 and not any("digits.tar " in c for c in commands)
    tfrec_cmd = f"{sys.executable} -m tfrec"
    for command in commands:
        shell = command.split("  #")[0].replace("tfrec ", f"{tfrec_cmd} ")
        result = subprocess.run(
            shell, shell=True, cwd=tmp_path, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert result.returncode == 0, (command, result.stderr)
