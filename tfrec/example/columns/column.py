"""Columns: the values of one feature across a batch of Examples (example layer).

Parsing is batch-oriented: a list of serialized Examples goes in, and for each
requested key comes out a :class:`Column`, the kind found in each record, the
number of values in each, and all values concatenated. Spec semantics (shapes,
defaults, padding, sparse and ragged layouts) are applied to columns by
:mod:`tfrec.example.parse.outputs`, so every decoder of :mod:`.gather` shares them.

Example:
    >>> columns = columns_from_features([data], [wire.scan_example(data)], {b"label": wire.INT64})
    >>> columns[b"label"].counts
    array([1])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import WireError
from .. import wire

__all__ = [
    "SHORT_BYTES",
    "Column",
    "PackedStrings",
    "as_array",
    "columns_from_features",
    "concat_values",
    "empty_values",
    "is_span_batch",
    "record_lengths",
    "record_spans",
]

SHORT_BYTES = 512  # up to this size, bytes values of one length are made from numpy rows, not sliced


class PackedStrings(np.ndarray):
    """Bytes values of one length, packed: the rows of a ``V<length>`` array, no ``bytes`` made yet.

    What the batched decoders give for a key asked for packed (``gather_columns(..., packed=)``),
    where all its values share one length: a reading process hands them over as one buffer, and
    only the consumer makes the ``bytes`` objects (:meth:`strings`). Pickled, it becomes the object
    array of ``bytes`` it stands for.

    Example:
        >>> packed = np.frombuffer(b"abcd", "V2").view(PackedStrings)
        >>> packed.strings().tolist()
        [b'ab', b'cd']
    """

    def strings(self) -> np.ndarray:
        """The values as an object array of ``bytes``, in this array's shape."""
        return strings_of_rows(self.view(np.ndarray))

    def __reduce__(self) -> tuple[object, tuple[np.ndarray]]:
        return strings_of_rows, (np.ascontiguousarray(self.view(np.ndarray)),)


def strings_of_rows(rows: np.ndarray) -> np.ndarray:
    """An object array of the ``bytes`` of ``rows``' "V" items, in their shape ("V" keeps NULs)."""
    out = np.empty(rows.shape, object)
    if rows.size:
        out.reshape(-1)[:] = rows.reshape(-1).tolist()
    return out


@dataclass
class Column:
    """One feature across a batch.

    Attributes:
        kinds: per record, the kind found (``wire.NONE`` when the key is
            missing or its Feature has no kind set).
        counts: per record, how many values it holds (0 unless its kind is the
            wanted kind).
        values: the values of the records whose kind is the wanted kind,
            concatenated in record order: int64 or float32 array, or a list of
            bytes (or :class:`PackedStrings`, for a key asked for packed).
        width: when known, that every record holds the wanted kind with this
            many values (so nothing needs checking or filling); else None.
    """

    kinds: np.ndarray
    counts: np.ndarray
    values: np.ndarray | list[bytes]  # (PackedStrings is an np.ndarray)
    width: int | None = None

    def offsets(self) -> np.ndarray:
        """Start of each record's values in :attr:`values` (length ``B + 1``)."""
        out = np.zeros(len(self.counts) + 1, np.int64)
        np.cumsum(self.counts, out=out[1:])
        return out


def empty_values(kind: int) -> np.ndarray | list[bytes]:
    if kind == wire.BYTES:
        return []
    return np.empty(0, np.float32 if kind == wire.FLOAT else np.int64)


def concat_values(kind: int, pieces: Sequence[np.ndarray | list[bytes]]) -> np.ndarray | list[bytes]:
    if kind == wire.BYTES:
        out: list[bytes] = []
        for piece in pieces:
            out += piece.strings().tolist() if isinstance(piece, PackedStrings) else piece
        return out
    arrays = [p for p in pieces if len(p)]
    if not arrays:
        return empty_values(kind)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def columns_from_features(
    records: Sequence[bytes],
    scanned: Sequence[Mapping[bytes, wire.Feature]],
    wanted: Mapping[bytes, int],
    numbers: Sequence[int] | None = None,
) -> dict[bytes, Column]:
    """Build columns from per-record scans (``scanned[i]`` belongs to ``records[i]``).

    ``numbers`` are the records' indices in the caller's batch, for errors.
    """
    columns = {}
    for key, kind in wanted.items():
        kinds = np.zeros(len(records), np.int8)
        counts = np.zeros(len(records), np.int64)
        pieces = []
        for row, (data, features) in enumerate(zip(records, scanned, strict=True)):
            feature = features.get(key)
            if feature is None or feature.kind == wire.NONE:
                continue
            kinds[row] = feature.kind
            if feature.kind == kind:
                try:
                    values = wire.decode_values(data, feature)
                except WireError as exc:
                    exc.index = numbers[row] if numbers is not None else row
                    raise
                counts[row] = len(values)
                pieces.append(values)
        columns[key] = Column(kinds, counts, concat_values(kind, pieces))
    return columns


def as_array(values: np.ndarray | list[bytes], packed: bool = False) -> np.ndarray:
    """Values as an array: bytes as an object array, never through numpy's "S" dtype (it drops
    trailing NULs); :class:`PackedStrings` stay packed only when ``packed``."""
    if isinstance(values, PackedStrings):
        return values if packed else values.strings()
    if not isinstance(values, list):
        return values
    return np.fromiter(values, object, len(values))


def record_lengths(records: Sequence[bytes]) -> np.ndarray:
    """The records' lengths, as int64."""
    if is_span_batch(records):
        lengths: np.ndarray = records.ends - records.starts  # type: ignore[attr-defined]
        return lengths
    return np.fromiter(map(len, records), np.int64, len(records))


def record_spans(records: Sequence[bytes], pad: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    """A buffer holding the records, with at least ``pad`` bytes after the last, and each record's
    ``(starts, ends)`` in it.

    A batch that already is spans of one buffer (``tfrec.record.RecordBatch``) is used as it is
    when the buffer has the room; otherwise its span of the buffer is copied once, with ``pad``
    zero bytes after it. Other records are joined once.
    """
    if is_span_batch(records):
        buffer: bytes = records.buffer  # type: ignore[attr-defined]
        starts: np.ndarray = records.starts  # type: ignore[attr-defined]
        ends: np.ndarray = records.ends  # type: ignore[attr-defined]
        if not ends.size or len(buffer) - int(ends[-1]) >= pad:
            return buffer, starts, ends
        first = int(starts[0])  # spans come in order: one copy from the first to the last
        return b"".join([memoryview(buffer)[first : int(ends[-1])], bytes(pad)]), starts - first, ends - first
    lengths = np.fromiter(map(len, records), np.int64, len(records))
    ends = np.cumsum(lengths)
    return b"".join([*records, bytes(pad)]), ends - lengths, ends


def is_span_batch(records: object) -> bool:
    """Whether ``records`` are spans of one buffer (``buffer``, ``starts``, ``ends``: a RecordBatch)."""
    return hasattr(records, "buffer") and hasattr(records, "starts") and hasattr(records, "ends")
