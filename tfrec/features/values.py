"""User values as the arrays a feature stores, and stored arrays back in their declared dtype
(features layer).

:func:`to_array` checks and converts what a user gives (refusing lossy conversions, except floats
rounded to float32 as TensorFlow stores them); :func:`cast_stored` turns parsed int64 / float32 /
bytes values back into a connector's dtype.

Example:
    >>> to_array([1, 2], np.dtype(np.int32), (None,), "x", "Tensor")
    array([1, 2], dtype=int32)
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import numpy as np

from ..errors import DecodeError, EncodeError

__all__ = ["EXACT_FLOATS", "cast_stored", "fits", "to_array"]

# Whether floats stored as float32 must be exact (FeaturesDict(exact_floats=True) sets it while it
# serializes); otherwise they are rounded to the nearest float32, as TensorFlow and tfds store them.
EXACT_FLOATS: ContextVar[bool] = ContextVar("EXACT_FLOATS", default=False)


def fits(shape: tuple[int | None, ...], found: tuple[int, ...]) -> bool:
    """Whether an array of shape ``found`` fits ``shape`` (``None`` matches any size)."""
    return len(found) == len(shape) and all(s is None or s == d for s, d in zip(shape, found, strict=True))


def to_array(
    value: Any,
    dtype: np.dtype,
    shape: tuple[int | None, ...],
    path: str,
    connector: str,
    as_list: bool = True,
) -> np.ndarray:
    """``value`` as an array of ``dtype`` whose shape fits ``shape``; refuse lossy conversions.

    Floats stored as float32 (a float32 dtype, or float64 ``as_list``) are the exception: they round
    to the nearest float32, as TensorFlow stores them, unless :data:`EXACT_FLOATS` is set; a finite
    value beyond float32's range is refused either way.

    Raises:
        EncodeError: naming ``path`` and ``connector``, with expected vs found.
    """
    fast = isinstance(value, np.ndarray) and value.dtype == dtype and dtype.kind != "O"
    if fast and not (dtype == np.float64 and as_list) and fits(shape, value.shape):
        return value  # the common case: already the right dtype and shape, nothing to convert
    where = f"{path} ({connector})"
    if dtype.kind == "O":
        raw = np.asarray(value, dtype=object)
        items = raw.ravel().tolist()
        if not all(isinstance(v, (str, bytes)) for v in items):
            kinds = sorted({type(v).__name__ for v in items if not isinstance(v, (str, bytes))})
            raise EncodeError(f"{where}: expected str or bytes values, found {', '.join(kinds)}", key=path)
        array = np.empty(raw.shape, object)
        try:
            array.ravel()[:] = [v.encode("utf-8") if isinstance(v, str) else v for v in items]
        except UnicodeEncodeError as exc:  # a lone surrogate
            raise EncodeError(f"{where}: a str not encodable as UTF-8 ({exc.reason})", key=path) from None
    else:
        raw = np.asarray(value)
        if raw.dtype.kind not in "biuf":
            raise EncodeError(f"{where}: expected {dtype} values, found {raw.dtype}", key=path)
        if raw.dtype.kind == "f" and dtype.kind in "biu" and raw.size:
            raise EncodeError(f"{where}: expected {dtype} values, found floats ({raw.dtype})", key=path)
        with np.errstate(invalid="ignore", over="ignore"):
            array = raw.astype(dtype)
            back = array.astype(raw.dtype)
        stored_f32 = dtype == np.float32 or (dtype == np.float64 and as_list)  # an Example keeps float32
        if stored_f32 and raw.dtype.kind == "f" and not EXACT_FLOATS.get():
            _check_float32_range(raw, where, path)  # rounding is what TF stores: only overflow is lost
            return _fitting(array, shape, where, path)
        same = (back == raw) | (np.isnan(raw) if raw.dtype.kind == "f" else False)
        if raw.dtype.kind in "biu" and dtype.kind in "iu":  # same width, other sign: compare signs too
            same &= (array < 0) == (raw < 0)
        if dtype.kind == "b" and raw.dtype.kind != "b":
            same = (raw == 0) | (raw == 1)
        if dtype == np.float64 and as_list:  # exact_floats: float32 must hold the values exactly
            with np.errstate(over="ignore"):
                same &= (array.astype(np.float32) == array) | np.isnan(array)
        if not np.all(same):
            bad = raw.ravel()[np.flatnonzero(~np.asarray(same).ravel())[0]]
            stored = " (stored as float32)" if dtype == np.float64 and as_list else ""
            raise EncodeError(f"{where}: {bad!r} does not fit dtype {dtype}{stored} without loss", key=path)
    return _fitting(array, shape, where, path)


def _fitting(array: np.ndarray, shape: tuple[int | None, ...], where: str, path: str) -> np.ndarray:
    if not fits(shape, array.shape):
        raise EncodeError(f"{where}: expected shape {_shape_text(shape)}, found {array.shape}", key=path)
    return array


def _check_float32_range(raw: np.ndarray, where: str, path: str) -> None:
    """Refuse a finite value that float32 would store as inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        infinite = np.isinf(raw.astype(np.float32))
    if infinite.any():
        lost = infinite & np.isfinite(raw)
        if lost.any():
            bad = raw.ravel()[np.flatnonzero(np.asarray(lost).ravel())[0]]
            raise EncodeError(
                f"{where}: {bad!r} is beyond float32's range (an Example stores float32: it would be inf)",
                key=path,
            )


def _shape_text(shape: tuple[int | None, ...]) -> str:
    return str(tuple("None" if d is None else d for d in shape)).replace("'", "")


def cast_stored(values: Any, dtype: np.dtype, path: str) -> Any:
    """Values parsed in their stored dtype (int64/float32/bytes) back in the declared ``dtype``."""
    array = np.asarray(values)
    if dtype.kind == "O" or array.dtype == dtype:
        return values
    if dtype.kind == "b":
        return np.asarray(array != 0)  # a 0-d comparison is a scalar otherwise
    if dtype.kind in "iu":
        if array.dtype.kind in "iu" and dtype == np.uint64:
            return array.astype(np.int64).view(np.uint64)  # stored bit-cast, as tfds does
        info = np.iinfo(dtype)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise DecodeError(f"{path}: stored values do not fit dtype {dtype}", key=path)
    return array.astype(dtype)
