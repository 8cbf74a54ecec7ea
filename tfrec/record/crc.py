"""Masked CRC32C, the checksum of TFRecord framing (record layer).

The backend is chosen once, at first use: ``google-crc32c`` when its C
extension is installed (the ``fast`` extra), else ``crcmod`` (a runtime
dependency; fast when its C extension was built, ~30x slower in pure Python,
which warns once). ``TFREC_CRC_BACKEND=google-crc32c|crcmod`` forces one.

Both C backends hold the GIL while they sum. The ``crc32c`` package (also in the
``fast`` extra) lets go of it from 32 KiB on: :func:`releasing_crc_function` hands
it to the readers of large records, whose CRCs then run on one core while another
thread copies or sums on the other (it is not the backend: google-crc32c's calls on
small records cost less, and a forced backend is used alone).

Example:
    >>> from tfrec.record import crc_backend
    >>> crc_backend()
    'google-crc32c'
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from collections.abc import Callable
from functools import lru_cache
from typing import cast

import numpy as np

from ..errors import InvalidArgumentError, TfrecError

__all__ = [
    "BACKENDS",
    "BYTE_TABLE",
    "crc32c",
    "crc_backend",
    "crc_extender",
    "crc_function",
    "mask",
    "mask_array",
    "masked_crc",
    "masked_crc_rows",
    "releasing_crc_function",
    "unmask_array",
]

BACKENDS = ("google-crc32c", "crcmod")
_ENV_VAR = "TFREC_CRC_BACKEND"
_MASK_DELTA = 0xA282EAD8

# Both backends take bytes or a contiguous uint8 array (never a memoryview: google-crc32c refuses it).
CrcFunction = Callable[[bytes | np.ndarray], int]


def _google_crc32c() -> tuple[CrcFunction, str]:
    import google_crc32c

    if google_crc32c.implementation != "c":
        raise ImportError("google-crc32c is installed without its C extension")
    return google_crc32c.value, "google-crc32c"


def _crcmod() -> tuple[CrcFunction, str]:
    import crcmod.predefined

    # Not `crcmod.crcmod`: the package rebinds that attribute to itself.
    implementation = importlib.import_module("crcmod.crcmod")
    function = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
    return function, "crcmod" if implementation._usingExtension else "crcmod-python"


_LOADERS = {"google-crc32c": _google_crc32c, "crcmod": _crcmod}


@lru_cache(maxsize=1)
def _backend() -> tuple[CrcFunction, str]:
    forced = os.environ.get(_ENV_VAR, "").strip()
    if forced:
        if forced not in _LOADERS:
            raise InvalidArgumentError(
                f"{_ENV_VAR}={forced!r} is not a CRC backend: expected one of {', '.join(BACKENDS)}"
            )
        try:
            function, name = _LOADERS[forced]()
        except ImportError as exc:
            raise TfrecError(f"{_ENV_VAR}={forced!r} cannot be used: {exc}") from exc
    else:
        function, name = _default_backend()
    if name == "crcmod-python":
        warnings.warn(
            "tfrec is computing CRC32C with crcmod's pure-Python code, about 30x slower than "
            "a C backend: install the fast extra (pip install 'tfrec[fast]')",
            RuntimeWarning,
            stacklevel=3,
        )
    return function, name


def _default_backend() -> tuple[CrcFunction, str]:
    if importlib.util.find_spec("google_crc32c") is not None:
        try:
            return _google_crc32c()
        except ImportError:
            pass
    return _crcmod()


def crc_backend() -> str:
    """Name the CRC32C backend in use.

    Returns:
        ``"google-crc32c"``, ``"crcmod"`` (C extension) or ``"crcmod-python"``.

    Example:
        >>> tfrec.record.crc_backend() in ("google-crc32c", "crcmod", "crcmod-python")
        True
    """
    return _backend()[1]


def crc32c(data: bytes | np.ndarray) -> int:
    """Plain (unmasked) CRC32C of ``data`` (bytes or a contiguous uint8 array) with the selected backend."""
    return _backend()[0](data)


def mask(crc: int) -> int:
    """Mask a CRC32C the way TFRecord stores it (rotate right by 15, add a constant)."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def mask_array(crcs: np.ndarray) -> np.ndarray:
    """Vectorised :func:`mask` over a ``uint32`` array."""
    crcs = crcs.astype(np.uint32, copy=False)
    return ((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) + np.uint32(_MASK_DELTA)


def unmask_array(masked: np.ndarray) -> np.ndarray:
    """The CRCs whose masked values are ``masked`` (:func:`mask_array` undone)."""
    rotated = (masked.astype(np.uint32) - np.uint32(_MASK_DELTA)).astype(np.uint32)
    return (rotated << np.uint32(15)) | (rotated >> np.uint32(17))


def masked_crc(data: bytes) -> int:
    """Masked CRC32C of ``data``, as written in a TFRecord frame."""
    return mask(_backend()[0](data))


def crc_function() -> CrcFunction:
    """The raw backend function, for hot loops that call it once per record."""
    return _backend()[0]


def crc_extender() -> Callable[[int, bytes], int]:
    """``extend(crc, data)``: the plain CRC32C of what ``crc`` was taken of followed by ``data``,
    with the backend in use, for data summed piece by piece (a record too large to hold).

    Example:
        >>> extend = crc_extender()
        >>> extend(extend(0, b"1234"), b"56789") == crc32c(b"123456789")
        True
    """
    if _backend()[1] == "google-crc32c":
        import google_crc32c

        return cast(Callable[[int, bytes], int], google_crc32c.extend)
    import crcmod.predefined

    function = crcmod.predefined.mkPredefinedCrcFun("crc-32c")  # (its second argument continues a CRC)
    return lambda crc, data: function(data, crc)


@lru_cache(maxsize=1)
def releasing_crc_function() -> CrcFunction | None:
    """A CRC32C that lets go of the GIL while it sums 32 KiB or more (the ``crc32c`` package, when
    it computes in hardware), for threads that sum large records side by side; ``None`` when it is
    not installed or ``TFREC_CRC_BACKEND`` forces a backend.

    Its results are the backend's; it takes any contiguous buffer (a memoryview too).

    Example:
        >>> function = releasing_crc_function() or crc_function()
        >>> function(b"123456789") == 0xE3069283
        True
    """
    if os.environ.get(_ENV_VAR, "").strip() or importlib.util.find_spec("crc32c") is None:
        return None
    try:
        import crc32c
    except ImportError:
        return None
    if not getattr(crc32c, "hardware_based", False):  # its table-driven code is slower than the backend's
        return None
    return cast(CrcFunction, crc32c.crc32c)  # (its stub lists its optional arguments as required)


def _crc32c_table() -> np.ndarray:
    # Byte-at-a-time table of the reflected CRC32C polynomial.
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> np.uint32(1)) ^ np.uint32(0x82F63B78), table >> np.uint32(1))
    return table.astype(np.uint32)


BYTE_TABLE = _crc32c_table()  # reflected CRC32C, a byte at a time


def masked_crc_rows(rows: np.ndarray) -> np.ndarray:
    """Masked CRC32C of every row of a 2-D ``uint8`` array, vectorised over rows.

    Slow per byte but free of Python loops over rows: used to scan damaged
    regions for 8-byte length fields whose CRC validates.
    """
    crc = np.full(rows.shape[0], 0xFFFFFFFF, np.uint32)
    for column in range(rows.shape[1]):
        crc = BYTE_TABLE[(crc ^ rows[:, column]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
    return mask_array(crc ^ np.uint32(0xFFFFFFFF))
