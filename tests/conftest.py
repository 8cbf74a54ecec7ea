"""Shared fixtures: the golden-file generator module and an independent TFRecord framer.

The framer uses its own pure-Python CRC32C, so tests that compare tfrec's bytes
with it do not trust tfrec's checksum code.
"""

from __future__ import annotations

import contextlib
import importlib.util
import struct
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

import tfrec.record.crc as crc_module
from tfrec import TfrecError
from tfrec.record import crc_backend

GOLDEN_DIR = Path(__file__).parent / "golden"

_MASK_DELTA = 0xA282EAD8


def _crc32c_table() -> list[int]:
    # Reflected Castagnoli polynomial 0x1EDC6F41 -> 0x82F63B78.
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def reference_crc32c(data: bytes) -> int:
    """CRC32C computed byte by byte in plain Python (slow: use on small inputs only)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def reference_mask(crc: int) -> int:
    """TFRecord's mask: rotate right by 15 bits, add a constant, modulo 2**32."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def reference_masked_crc(data: bytes) -> int:
    return reference_mask(reference_crc32c(data))


def reference_header(length: int) -> bytes:
    """The 12-byte header of a record of ``length`` bytes (any length, even absurd ones)."""
    length_bytes = struct.pack("<Q", length)
    return length_bytes + struct.pack("<I", reference_masked_crc(length_bytes))


def reference_frame(record: bytes) -> bytes:
    """One whole TFRecord frame for ``record``."""
    return reference_header(len(record)) + record + struct.pack("<I", reference_masked_crc(record))


def reference_frames(records: Iterable[bytes]) -> bytes:
    return b"".join(map(reference_frame, records))


def choose_crc_backend_quietly() -> None:
    """Make tfrec choose its CRC backend now, accepting the one-time slow-backend warning.

    Without a C backend tfrec warns once (RuntimeWarning); with filterwarnings=error
    that would fail whichever test came first. tests/record/test_crc.py checks the warning.
    """
    with warnings.catch_warnings(), contextlib.suppress(TfrecError):
        warnings.simplefilter("ignore", RuntimeWarning)
        crc_backend()  # an invalid TFREC_CRC_BACKEND raises: the tests that need CRCs will say so


@pytest.fixture(scope="session", autouse=True)
def _crc_backend_chosen() -> None:
    choose_crc_backend_quietly()


@pytest.fixture
def fresh_crc_backend() -> Iterator[pytest.MonkeyPatch]:
    """tfrec forgets its CRC backend and chooses again on next use, under this monkeypatch.

    Afterwards the patches are undone and the real backend is chosen again.
    """
    crc_module._backend.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.delenv("TFREC_CRC_BACKEND", raising=False)
            yield patch
    finally:
        crc_module._backend.cache_clear()
        choose_crc_backend_quietly()


@pytest.fixture(scope="session")
def make_golden() -> ModuleType:
    """tests/golden/make_golden.py (no __init__.py there), imported without TensorFlow."""
    name = "make_golden"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, GOLDEN_DIR / "make_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    return GOLDEN_DIR


@pytest.fixture(scope="session")
def ref() -> SimpleNamespace:
    """Independent TFRecord framing.

    ``crc32c``, ``mask``, ``masked_crc``, ``header(length)``, ``frame(record)``, ``frames(records)``.
    """
    return SimpleNamespace(
        crc32c=reference_crc32c,
        mask=reference_mask,
        masked_crc=reference_masked_crc,
        header=reference_header,
        frame=reference_frame,
        frames=reference_frames,
    )
