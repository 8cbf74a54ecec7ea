"""tfds-style custom connectors port to tfrec with an import change (skipped without TF or tfds).

tests/features/custom_connectors.py holds three custom connectors written the
way tfds' guide writes them (a FeatureConnector with a dict of serialized
infos, a Tensor subclass, a FeaturesDict subclass), importing
``tfrec.features``. Its tfds version is the same file with that one import
line replaced. tfds prepares a dataset with the tfds version; tfrec loads its
features.json (importing the tfrec version under the same module name) and
reads every record as ``tfds.as_numpy`` gives it; tfds reads back what tfrec
writes with the tfrec version.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tfrec.data.tfds import load_tfds, write_tfds_dir
from tfrec.features import FeaturesDict

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # must be set before TF loads its C++ core
tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")

pytestmark = pytest.mark.conformance

MODULE = "custom_connectors"
SOURCE = Path(__file__).parent.parent / "features" / f"{MODULE}.py"
PORT_LINE = "from tfrec import features  # PORT: the only line that differs from the tfds version"


def load_module(directory: Path) -> Any:
    """Import ``custom_connectors`` from ``directory`` (in place of any other module of that name)."""
    sys.modules.pop(MODULE, None)
    sys.path.insert(0, str(directory))
    try:
        return importlib.import_module(MODULE)
    finally:
        sys.path.remove(str(directory))


def schema(module: Any) -> dict[str, Any]:
    F = module.features
    return {
        "t": module.Temperature(doc=F.Documentation(desc="air", value_range="0-400")),
        "t_k": module.Temperature(unit="K"),
        "p": module.Point(scale=2.0),
        "pair": module.Pair(),
        "points": F.Sequence(module.Point()),
    }


def value(i: int) -> dict[str, Any]:
    return {
        "t": 300.5 + i,
        "t_k": 10.0 * i,
        "p": {"x": i, "y": -1.5},
        "pair": (f"n{i}", i),
        "points": [{"x": k, "y": k + 0.5} for k in range(i % 3)],
    }


def canon(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: canon(v) for k, v in x.items()}
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, bytes):
        return x
    array = np.asarray(x)
    if array.dtype.kind == "O":
        return ("object", array.shape, [canon(v) for v in array.ravel().tolist()])
    return (array.dtype.name, array.shape, array.ravel().tolist())


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    source = SOURCE.read_text(encoding="utf-8")
    assert PORT_LINE in source
    ported = tmp_path_factory.mktemp("tfds_version")
    (ported / f"{MODULE}.py").write_text(
        source.replace(PORT_LINE, "from tensorflow_datasets import features"), encoding="utf-8"
    )
    theirs = load_module(ported)
    ours = load_module(SOURCE.parent)  # what FeaturesDict.load imports from now on
    return {"tfds": theirs, "tfrec": ours}


@pytest.fixture(scope="module")
def prepared(modules: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("custom_tfds")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = tfds.dataset_builders.store_as_tfds_dataset(
            name="custom_toy",
            version="1.0.0",
            features=tfds.features.FeaturesDict(schema(modules["tfds"])),
            split_datasets={"train": [(i, value(i)) for i in range(6)]},
            data_dir=str(root),
            disable_shuffling=True,
        )
        builder.download_and_prepare()
        expected = [canon(v) for v in tfds.as_numpy(builder.as_dataset(split="train", shuffle_files=False))]
    return root, expected


def test_tfrec_reads_a_dataset_tfds_prepared_with_custom_connectors(
    modules: dict[str, Any], prepared: Any
) -> None:
    root, expected = prepared
    loaded = load_tfds("custom_toy", split="train", data_dir=root)
    assert loaded.features == FeaturesDict(schema(modules["tfrec"]))
    assert isinstance(loaded.features["t"], modules["tfrec"].Temperature)
    assert (loaded.features["t"].doc, loaded.features["t"].value_range) == ("air", "0-400")
    values = [loaded.features.deserialize_example(record) for record in loaded.records()]
    assert [canon(v) for v in values] == expected
    batch = loaded.features.deserialize_batch(list(loaded.records()))
    assert canon(batch["t"]) == canon(np.stack([e["t"] for e in values]))
    assert canon(batch["pair"]["count"]) == canon(np.stack([e["pair"]["count"] for e in values]))


def test_tfds_reads_what_tfrec_writes_with_the_port(
    modules: dict[str, Any], prepared: Any, tmp_path: Path
) -> None:
    _, expected = prepared
    directory = tmp_path / "custom_written" / "1.0.0"
    features = FeaturesDict(schema(modules["tfrec"]))
    write_tfds_dir(directory, {"train": [value(i) for i in range(6)]}, features, name="custom_written")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = tfds.builder_from_directory(str(directory))  # tfds finds its own classes by that name
        theirs = [canon(v) for v in tfds.as_numpy(builder.as_dataset(split="train", shuffle_files=False))]
    assert theirs == expected
