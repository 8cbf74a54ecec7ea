"""Masked CRC32C and the choice of its backend (google-crc32c, crcmod, crcmod in pure Python)."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import tfrec
import tfrec.record.crc as crc_module
from tfrec.record import crc_backend, masked_crc

ROOT = Path(tfrec.__file__).resolve().parents[1]  # where the tfrec under test lives

# CRC32C check values: "123456789" is the catalogue's check value; the 32-byte ones are RFC 3720, B.4.
VECTORS: list[tuple[bytes, int]] = [
    (b"", 0x00000000),
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
]


def expected_default_backend() -> str:
    forced = os.environ.get("TFREC_CRC_BACKEND", "").strip()
    if forced:
        return forced
    if importlib.util.find_spec("google_crc32c") is not None:
        import google_crc32c

        if google_crc32c.implementation == "c":
            return "google-crc32c"
    return "crcmod" if importlib.util.find_spec("crcmod._crcfunext") is not None else "crcmod-python"


def test_crc_backend_names_the_backend_in_use() -> None:
    assert crc_backend() == expected_default_backend()
    assert tfrec.record.crc_backend is crc_backend


@pytest.mark.parametrize(("data", "crc"), VECTORS, ids=[f"vector{i}" for i in range(len(VECTORS))])
def test_crc32c_matches_known_vectors(ref: SimpleNamespace, data: bytes, crc: int) -> None:
    assert ref.crc32c(data) == crc  # the test's own implementation agrees with the standard
    assert crc_module.crc32c(data) == crc
    assert crc_module.crc_function()(data) == crc


@pytest.mark.parametrize(("data", "crc"), VECTORS, ids=[f"vector{i}" for i in range(len(VECTORS))])
def test_masked_crc_is_rotated_right_by_15_plus_a_constant(data: bytes, crc: int) -> None:
    rotated = ((crc >> 15) | (crc << 17)) & 0xFFFFFFFF
    assert masked_crc(data) == (rotated + 0xA282EAD8) % 2**32
    assert crc_module.mask(crc) == masked_crc(data)


def test_masked_crc_of_the_check_string() -> None:
    assert masked_crc(b"123456789") == 0xC78AB0E5


def test_mask_array_matches_mask(ref: SimpleNamespace) -> None:
    rng = np.random.default_rng(7)
    crcs = np.concatenate([rng.integers(0, 2**32, 1000, dtype=np.uint64), [0, 1, 2**32 - 1, 0x7FFF, 0x8000]])
    masked = crc_module.mask_array(crcs.astype(np.uint32))
    assert masked.dtype == np.uint32
    assert masked.tolist() == [ref.mask(int(c)) for c in crcs]


def test_masked_crc_rows_matches_masked_crc(ref: SimpleNamespace) -> None:
    rng = np.random.default_rng(8)
    rows = rng.integers(0, 256, (200, 8), dtype=np.uint8)
    rows[0] = 0
    rows[1] = 0xFF
    assert crc_module.masked_crc_rows(rows).tolist() == [ref.masked_crc(row.tobytes()) for row in rows]


def test_masked_crc_agrees_with_the_reference_on_random_data(ref: SimpleNamespace) -> None:
    rng = np.random.default_rng(9)
    for size in (1, 3, 7, 8, 15, 16, 63, 64, 1000, 4099):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        assert masked_crc(data) == ref.masked_crc(data)


def test_backend_is_chosen_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    before = crc_backend()
    monkeypatch.setenv("TFREC_CRC_BACKEND", "not-a-backend")
    assert crc_backend() == before


# -- every backend gives the same results (one subprocess each: the choice is made once) ----------

_PROBE = """
import json, sys, warnings
for blocked in sys.argv[1:]:
    sys.modules[blocked] = None  # as if it were not installed
import numpy as np
from tfrec.record import crc
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    name = crc.crc_backend()
vectors = [b"", b"123456789", bytes(32), b"\\xff" * 32, bytes(range(256)) * 40]
print(json.dumps({
    "backend": name,
    "masked": [crc.masked_crc(v) for v in vectors],
    "rows": crc.masked_crc_rows(np.arange(64, dtype=np.uint8).reshape(8, 8)).tolist(),
    "pieces": [
        crc.mask(crc.crc_extender()(crc.crc_extender()(0, v[: len(v) // 3]), v[len(v) // 3 :]))
        for v in vectors
    ],
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
}))
"""


def probe(env_backend: str | None, blocked: list[str]) -> dict[str, object]:
    env = {key: value for key, value in os.environ.items() if key != "TFREC_CRC_BACKEND"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if env_backend is not None:
        env["TFREC_CRC_BACKEND"] = env_backend
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *blocked], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def expected_probe(ref: SimpleNamespace) -> tuple[list[int], list[int]]:
    vectors = [b"", b"123456789", bytes(32), b"\xff" * 32, bytes(range(256)) * 40]
    rows = np.arange(64, dtype=np.uint8).reshape(8, 8)
    return [ref.masked_crc(v) for v in vectors], [ref.masked_crc(row.tobytes()) for row in rows]


@pytest.mark.parametrize(
    ("env_backend", "blocked", "backend", "package"),
    [
        pytest.param("google-crc32c", [], "google-crc32c", "google_crc32c", id="forced-google-crc32c"),
        pytest.param(
            "crcmod",
            [],
            "crcmod",
            "crcmod",
            id="forced-crcmod",
        ),
        pytest.param(
            None,
            ["google_crc32c"],
            "crcmod",
            "crcmod",
            id="default-without-google-crc32c",
        ),
        pytest.param(
            None,
            ["google_crc32c", "crcmod._crcfunext"],
            "crcmod-python",
            "crcmod",
            id="default-pure-python",
        ),
    ],
)
def test_every_backend_gives_the_same_crcs(
    ref: SimpleNamespace, env_backend: str | None, blocked: list[str], backend: str, package: str
) -> None:
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed")
    if backend == "crcmod" and importlib.util.find_spec("crcmod._crcfunext") is None:
        pytest.skip("crcmod has no C extension here")
    result = probe(env_backend, blocked)
    masked, rows = expected_probe(ref)
    assert result["backend"] == backend
    assert result["masked"] == masked
    assert result["rows"] == rows
    assert result["pieces"] == masked  # summed in two pieces, as the whole
    slow = [w for w in result["warnings"] if "pure-Python" in str(w)]  # type: ignore[union-attr]
    assert len(slow) == (1 if backend == "crcmod-python" else 0)


# -- backend selection inside this process (fixture fresh_crc_backend in conftest.py) -----------------


def _unavailable() -> tuple[object, str]:
    raise ImportError("simulated: not installed")


@pytest.mark.parametrize("value", ["bogus", "crc32c", "GOOGLE"])
def test_invalid_backend_variable_raises_a_clear_error(
    fresh_crc_backend: pytest.MonkeyPatch, value: str
) -> None:
    fresh_crc_backend.setenv("TFREC_CRC_BACKEND", value)
    with pytest.raises(tfrec.TfrecError) as info:
        crc_backend()
    assert str(info.value) == (
        f"TFREC_CRC_BACKEND={value!r} is not a CRC backend: expected one of google-crc32c, crcmod"
    )
    with pytest.raises(tfrec.TfrecError, match="is not a CRC backend"):
        tfrec.RecordReader(Path("anything.tfrecord"))


def test_an_unknown_backend_name_is_an_invalid_argument(fresh_crc_backend: pytest.MonkeyPatch) -> None:
    fresh_crc_backend.setenv("TFREC_CRC_BACKEND", "bogus")
    with pytest.raises(tfrec.InvalidArgumentError, match="is not a CRC backend"):
        crc_backend()


def test_forced_backend_that_cannot_load_raises_a_clear_error(fresh_crc_backend: pytest.MonkeyPatch) -> None:
    fresh_crc_backend.setenv("TFREC_CRC_BACKEND", "google-crc32c")
    fresh_crc_backend.setitem(crc_module._LOADERS, "google-crc32c", _unavailable)
    with pytest.raises(tfrec.TfrecError) as info:
        crc_backend()
    assert str(info.value) == "TFREC_CRC_BACKEND='google-crc32c' cannot be used: simulated: not installed"
    assert isinstance(info.value.__cause__, ImportError)


def test_writer_with_an_unusable_backend_leaves_no_temp_file(
    fresh_crc_backend: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fresh_crc_backend.setenv("TFREC_CRC_BACKEND", "bogus")
    with warnings.catch_warnings():
        # A leaked handle is freed as soon as the error is dropped: keep its ResourceWarning here.
        warnings.simplefilter("ignore", ResourceWarning)
        with pytest.raises(tfrec.TfrecError, match="is not a CRC backend"):
            tfrec.RecordWriter(tmp_path / "data.tfrecord")
        gc.collect()
    assert os.listdir(tmp_path) == []


def test_forced_backend_variable_is_stripped(fresh_crc_backend: pytest.MonkeyPatch) -> None:
    fresh_crc_backend.setenv("TFREC_CRC_BACKEND", " google-crc32c ")
    if importlib.util.find_spec("google_crc32c") is None:
        pytest.skip("google-crc32c is not installed")
    assert crc_backend() == "google-crc32c"


def test_pure_python_backend_warns_once(fresh_crc_backend: pytest.MonkeyPatch, ref: SimpleNamespace) -> None:
    # Simulate an install with neither google-crc32c nor crcmod's C extension.
    fresh_crc_backend.setattr(crc_module, "_google_crc32c", _unavailable)
    fresh_crc_backend.setattr(crc_module, "_crcmod", lambda: (ref.crc32c, "crcmod-python"))
    with pytest.warns(RuntimeWarning, match=r"pure-Python code, about 30x.*'tfrec\[fast\]'"):
        assert crc_backend() == "crcmod-python"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second warning would fail here
        assert crc_backend() == "crcmod-python"
        assert masked_crc(b"123456789") == 0xC78AB0E5


@pytest.fixture
def crcmod_without_extension(fresh_crc_backend: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Make crcmod behave as if its C extension had not been built."""
    import crcmod._crcfunpy as python_functions
    import crcmod.crcmod  # noqa: F401  (registers the submodule)

    module = sys.modules["crcmod.crcmod"]  # the package rebinds its .crcmod attribute to itself
    fresh_crc_backend.setattr(module, "_usingExtension", False)
    fresh_crc_backend.setitem(module._sizeMap, 32, [python_functions._crc32, python_functions._crc32r])
    fresh_crc_backend.setattr(crc_module, "_google_crc32c", _unavailable)
    return fresh_crc_backend


def test_crcmod_without_its_extension_is_detected_and_warns(
    crcmod_without_extension: pytest.MonkeyPatch,
) -> None:
    with pytest.warns(RuntimeWarning, match="pure-Python"):
        assert crc_backend() == "crcmod-python"
    assert masked_crc(b"123456789") == 0xC78AB0E5


def test_forced_pure_python_crcmod_still_warns(
    fresh_crc_backend: pytest.MonkeyPatch, ref: SimpleNamespace
) -> None:
    fresh_crc_backend.setenv("TFREC_CRC_BACKEND", "crcmod")
    fresh_crc_backend.setitem(crc_module._LOADERS, "crcmod", lambda: (ref.crc32c, "crcmod-python"))
    with pytest.warns(RuntimeWarning, match="pure-Python"):
        assert crc_backend() == "crcmod-python"


# -- the CRC that lets go of the GIL (crc32c, for the CRCs of large records) -------------------------


def _releasing() -> object:
    """releasing_crc_function chosen afresh (it is chosen once per process, like the backend)."""
    return crc_module.releasing_crc_function.__wrapped__()


def test_the_releasing_crc_gives_the_backends_crcs(ref: SimpleNamespace) -> None:
    function = crc_module.releasing_crc_function()
    if function is None:
        pytest.skip("crc32c is not installed (or not in hardware) here")
    rng = np.random.default_rng(10)
    large = rng.integers(0, 256, 300_000, dtype=np.uint8)
    for data, crc in VECTORS:
        assert function(data) == crc
    for size in (0, 1, 4099, 32 * 1024 - 1, 32 * 1024, 102_400, 300_000):  # either side of its GIL threshold
        piece = large[size // 7 : size // 7 + size]  # a slice not at the buffer's start
        assert function(piece) == crc_module.crc32c(piece.tobytes()) == ref.crc32c(piece.tobytes())
        assert function(memoryview(piece)) == function(piece)  # views are taken too


def test_no_releasing_crc_without_crc32c(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "crc32c", None)  # as if it were not installed
    assert _releasing() is None


def test_no_releasing_crc_when_a_backend_is_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFREC_CRC_BACKEND", "crcmod")  # the forced backend alone sums
    assert _releasing() is None


def test_no_releasing_crc_when_crc32c_has_no_hardware_instruction(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SimpleNamespace(hardware_based=False, crc32c=lambda data: 0)
    monkeypatch.setitem(sys.modules, "crc32c", fake)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: object())
    assert _releasing() is None
    fake.hardware_based = True
    assert _releasing() is fake.crc32c
