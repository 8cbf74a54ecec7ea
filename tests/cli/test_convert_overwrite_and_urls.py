"""``tfrec convert`` over an earlier run (refused unless --overwrite, then replaced whole) and into URLs,
on scikit-learn's wine and diabetes tables (data this project did not make). Issue #22, items 11 and 12.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

import tfrec
from tfrec.cli import main
from tfrec.convert import read_csv, write_samples
from tfrec.errors import OutputExistsError

datasets = pytest.importorskip("sklearn.datasets")
fsspec = pytest.importorskip("fsspec")


def _run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def wine_csv(tmp_path: Path) -> Path:
    path = tmp_path / "wine.csv"
    datasets.load_wine(as_frame=True).frame.to_csv(path, index=False)
    return path


def _count(capsys: Any, pattern: str) -> int:
    code, out, _ = _run(capsys, "count", pattern)
    assert code == 0
    return int(out.splitlines()[-1].split()[0])  # the total


def test_converting_again_is_refused_then_replaced_whole_with_overwrite(
    tmp_path: Path, wine_csv: Path, capsys: Any
) -> None:
    out = tmp_path / "out" / "wine"
    assert _run(capsys, "convert", str(wine_csv), str(out), "--num-shards", "2")[0] == 0
    code, _, err = _run(capsys, "convert", str(wine_csv), str(out), "--num-shards", "4")
    assert code == 2
    assert "wine-00000-of-00002.tfrecord" in err and "--overwrite" in err
    assert sorted(os.listdir(out.parent)) == [
        "features.json",
        "wine-00000-of-00002.tfrecord",
        "wine-00001-of-00002.tfrecord",
    ]
    code, _, err = _run(capsys, "convert", str(wine_csv), str(out), "--num-shards", "4", "--overwrite")
    assert code == 0, err
    assert sorted(os.listdir(out.parent)) == ["features.json"] + [
        f"wine-0000{i}-of-00004.tfrecord" for i in range(4)
    ]
    assert _count(capsys, f"{out}-*") == 178  # not 356: the stale set is gone


def test_a_features_json_of_other_features_is_refused_the_same_one_is_not(
    tmp_path: Path, wine_csv: Path, capsys: Any
) -> None:
    diabetes = tmp_path / "diabetes.csv"
    datasets.load_diabetes(as_frame=True).frame.to_csv(diabetes, index=False)
    wine = datasets.load_wine(as_frame=True).frame
    wine.iloc[:100].to_csv(tmp_path / "train.csv", index=False)
    wine.iloc[100:].to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "out"
    assert _run(capsys, "convert", str(tmp_path / "train.csv"), f"{out}/")[0] == 0
    assert _run(capsys, "convert", str(tmp_path / "test.csv"), f"{out}/")[0] == 0  # same features: fine
    code, _, err = _run(capsys, "convert", str(diabetes), f"{out}/")
    assert code == 2 and "features.json" in err and "--overwrite" in err
    assert not [name for name in os.listdir(out) if name.startswith("diabetes")]
    assert _run(capsys, "convert", str(diabetes), f"{out}/", "--overwrite")[0] == 0
    assert "bmi" in (out / "features.json").read_text()


def test_single_file_and_tfrecord_outputs_are_refused_too(
    tmp_path: Path, wine_csv: Path, capsys: Any
) -> None:
    one = tmp_path / "wine.tfrecord"
    assert _run(capsys, "convert", str(wine_csv), str(one))[0] == 0
    code, _, err = _run(capsys, "convert", str(wine_csv), str(one))
    assert code == 2 and str(one) in err and "--overwrite" in err
    assert _run(capsys, "convert", str(wine_csv), str(one), "--overwrite")[0] == 0
    jsonl = tmp_path / "wine.jsonl"
    assert _run(capsys, "convert", str(one), str(jsonl))[0] == 0
    code, _, err = _run(capsys, "convert", str(one), str(jsonl))
    assert code == 2 and "wine.jsonl" in err and "--overwrite" in err
    assert _run(capsys, "convert", str(one), str(jsonl), "--overwrite")[0] == 0
    assert len(jsonl.read_text().splitlines()) == 178
    assert _run(capsys, "convert", str(one), str(tmp_path / "re" / "wine"), "--num-shards", "3")[0] == 0
    assert _run(capsys, "convert", str(one), str(tmp_path / "re" / "wine"))[0] == 2
    assert _run(capsys, "convert", str(one), str(tmp_path / "re" / "wine"), "--overwrite")[0] == 0
    assert os.listdir(tmp_path / "re") == ["wine-00000-of-00001.tfrecord"]


def test_write_samples_refuses_before_reading_the_input(tmp_path: Path, wine_csv: Path) -> None:
    write_samples(read_csv(str(wine_csv)), tmp_path / "wine", num_shards=2)

    def untouched() -> Any:
        raise AssertionError("the input was read")
        yield

    samples = read_csv(str(wine_csv))
    samples.samples = untouched()
    with pytest.raises(OutputExistsError, match="overwrite=True"):
        write_samples(samples, tmp_path / "wine", num_shards=3)


def test_convert_into_a_memory_url_and_read_it_back(wine_csv: Path, capsys: Any) -> None:
    out = f"memory://tfrec-cli/{uuid.uuid4().hex}/wine"
    code, stdout, err = _run(capsys, "convert", str(wine_csv), out, "--num-shards", "2")
    assert code == 0, err
    assert f"{out}-00000-of-00002.tfrecord" in stdout
    fs, inner = fsspec.core.url_to_fs(out.rsplit("/", 1)[0])
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls(inner, detail=False)) == [
        "features.json",
        "wine-00000-of-00002.tfrecord",
        "wine-00001-of-00002.tfrecord",
    ]
    features = tfrec.features.FeaturesDict.from_json(json.loads(fs.cat_file(f"{inner}/features.json")))
    rows = list(tfrec.TFRecordDataset(f"{out}-*", features=features))
    assert len(rows) == 178 and float(rows[0]["alcohol"]) == pytest.approx(14.23)
    assert _run(capsys, "convert", str(wine_csv), out)[0] == 2
    assert _run(capsys, "convert", str(wine_csv), out, "--overwrite")[0] == 0
    assert sum(1 for _ in tfrec.TFRecordDataset(f"{out}-*")) == 178


def test_convert_into_a_file_url(tmp_path: Path, wine_csv: Path, capsys: Any) -> None:
    code, _, err = _run(capsys, "convert", str(wine_csv), f"file://{tmp_path}/out/wine.tfrecord")
    assert code == 0, err
    assert sorted(os.listdir(tmp_path / "out")) == ["features.json", "wine.tfrecord"]
    assert sum(1 for _ in tfrec.read_records(tmp_path / "out" / "wine.tfrecord")) == 178
