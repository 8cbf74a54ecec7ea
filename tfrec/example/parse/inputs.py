"""The arguments of the tf.io parse functions as TensorFlow takes them (example layer).

Example:
    >>> as_records([b"a", bytearray(b"b")])
    ([b'a', b'b'], False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DecodeError, SchemaError, WireError
from ..columns import is_span_batch

__all__ = ["as_records", "decode_error", "record_names"]


def as_records(serialized: Any) -> tuple[Sequence[bytes], bool]:
    """The records as a sequence of bytes, and whether the input was a single record."""
    if isinstance(serialized, (bytes, bytearray, memoryview)):
        return [bytes(serialized)], True
    if isinstance(serialized, np.ndarray) and serialized.ndim == 0:
        return [bytes(serialized.item())], True
    if isinstance(serialized, np.ndarray) and serialized.ndim > 1:
        raise SchemaError(
            f"Expected serialized to be a scalar or vector, got shape: {list(serialized.shape)}"
        )
    if is_span_batch(serialized):
        return serialized, False  # spans of one buffer (tfrec.RecordBatch): its records are bytes
    records = serialized if type(serialized) is list else list(serialized)
    if set(map(type, records)) - {bytes}:  # bytes already: no copy
        records = [bytes(r) for r in records]
    return records, False


def record_names(names: Any, count: int) -> list[str] | None:
    if names is None:
        return None
    out = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    if not out:  # as in TF: no names, whatever the batch's size
        return None
    if len(out) != count:
        raise SchemaError(f"example_names has {len(out)} names for {count} records")
    return out


def decode_error(exc: WireError, names: Sequence[str] | None) -> DecodeError:
    """A DecodeError for a malformed record of a batch, named as TensorFlow names it."""
    row = exc.index
    name = names[row] if names is not None and row is not None else "<unknown>"
    where = f"Name: {name}, Index: {row}.  " if row is not None else ""
    return DecodeError(f"{where}Could not parse example input: {exc}")
