"""Decode a batch of Examples that share one layout, all at once in numpy (example layer).

Records written by one writer list the same keys in the same order with the
same kinds; only lengths and values differ. The first record's layout becomes
a template, and every record is walked through it together: each step (a tag,
a varint length, a key) is one numpy operation over the whole batch. Records
that stray from the template at any step are marked odd and left to the
per-record decoder, so one unusual record never slows the others down.

Example:
    >>> columns, odd = lockstep_columns(records, {b"label": INT64})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from . import wire

if TYPE_CHECKING:
    from .columns import Column

__all__ = ["lockstep_columns"]

_MIN_BATCH = 4  # below this the per-record decoder is as fast
_PAD = 16  # zero bytes after the batch, so fixed-width gathers stay in bounds
_TEN = np.arange(10)
_TAG_OF_KIND = {wire.BYTES: 0x0A, wire.FLOAT: 0x12, wire.INT64: 0x1A}


class _Entry(NamedTuple):
    key: bytes
    kind: int  # wire kind of the template record's value (NONE when its Feature is empty)
    wanted: bool


def _template(data: bytes, wanted: Mapping[bytes, int]) -> list[_Entry] | None:
    """The layout of one Example in canonical form, or None when it has another form."""
    try:
        fields = list(wire._fields(data, 0, len(data)))
        if len(fields) != 1 or fields[0][:2] != (1, 2):
            return None
        entries = []
        for number, wire_type, span in wire._fields(data, *fields[0][2]):
            if (number, wire_type) != (1, 2):
                return None
            parts = list(wire._fields(data, *span))
            if [p[:2] for p in parts] != [(1, 2), (2, 2)]:
                return None
            key = data[parts[0][2][0] : parts[0][2][1]]
            inner = list(wire._fields(data, *parts[1][2]))
            if len(inner) > 1 or (inner and (inner[0][1] != 2 or inner[0][0] not in _TAG_OF_KIND)):
                return None
            entries.append(_Entry(key, inner[0][0] if inner else wire.NONE, key in wanted))
    except wire.WireError:
        return None
    if len({e.key for e in entries}) != len(entries):
        return None
    return entries


class _Found(NamedTuple):
    """Where a wanted key's values are in every row."""

    kind: int  # the template's kind
    present: np.ndarray  # rows whose Feature has that kind set (the others have none)
    starts: np.ndarray  # packed payload start per row (numeric kinds)
    lengths: np.ndarray  # packed payload length per row (numeric kinds)
    rounds: list[tuple[np.ndarray, ...]]  # bytes values walked round by round (bytes kind)


class _Batch:
    """The batch as one array, and the vectorised reading steps over it."""

    def __init__(self, records: Sequence[bytes]) -> None:
        self.joined = b"".join([*records, bytes(_PAD)])  # one copy, padding included
        self.u8 = np.frombuffer(self.joined, np.uint8)
        self.limit = len(self.joined) - _PAD  # last valid position + 1
        lengths = np.fromiter(map(len, records), np.int64, len(records))
        self.ends = np.cumsum(lengths)
        self.starts = self.ends - lengths
        self.ok = np.ones(len(records), bool)

    def _clip(self, pos: np.ndarray) -> np.ndarray:
        # Rows that strayed may hold any position past the end (never a negative one: lengths
        # are checked): keep every gather in bounds. np.minimum is much cheaper than np.clip.
        return np.minimum(pos, self.limit)

    def expect(self, pos: np.ndarray, byte: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Check for ``byte`` at ``pos`` (in ``rows`` only, if given); return ``pos + 1``."""
        match = self.u8[self._clip(pos)] == byte
        if rows is not None:
            match |= ~rows
        self.ok &= match
        return pos + 1 if rows is None else pos + rows

    def varint(self, pos: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Read a varint at ``pos`` (in ``rows`` only, if given); return ``(value, next pos)``."""
        first = self.u8[self._clip(pos)].astype(np.int64)
        if (first < 0x80).all():  # the common case: every length fits in one byte
            value, size = first, np.ones_like(first)
        else:  # byte by byte, only as far as the longest varint of the batch goes
            value, size = first & 0x7F, np.ones_like(first)
            going = first >= 0x80
            for shift in range(7, 70, 7):
                if not going.any():
                    break
                byte = self.u8[self._clip(pos + size)].astype(np.int64)
                value = np.where(going, value | ((byte & 0x7F) << shift), value)
                size += going
                going &= byte >= 0x80
            valid = ~going & (value >= 0) & (value <= self.limit)  # no length exceeds the batch
            self.ok &= valid if rows is None else valid | ~rows
            value = np.where(valid, value, 0)
        if rows is not None:
            value = np.where(rows, value, 0)
            size = np.where(rows, size, 0)
        return value, pos + size

    def key(self, pos: np.ndarray, key: bytes) -> np.ndarray:
        """Check that the bytes at ``pos`` are ``key``; return the position after it."""
        if key:
            found = self.u8[np.minimum(pos[:, None] + np.arange(len(key)), len(self.u8) - 1)]
            self.ok &= (found == np.frombuffer(key, np.uint8)).all(axis=1)
        return pos + len(key)


def lockstep_columns(
    records: Sequence[bytes], wanted: Mapping[bytes, int]
) -> tuple[dict[bytes, Column], list[int]] | None:
    """Columns of the records that follow the first record's layout, and the rows that do not.

    Returns ``None`` when the batch is too small or the first record has no
    canonical layout (then every record goes through the per-record decoder).
    """

    if len(records) < _MIN_BATCH:
        return None
    template = _template(records[0], wanted)
    if template is None:
        return None
    batch = _Batch(records)
    pos = batch.expect(batch.starts, 0x0A)
    length, pos = batch.varint(pos)
    batch.ok &= pos + length == batch.ends
    found: dict[bytes, _Found] = {}
    for entry in template:
        pos = batch.expect(pos, 0x0A)
        length, pos = batch.varint(pos)
        entry_end = pos + length
        # Every key is checked, wanted or not: a wanted key (or a repeat of one) standing
        # where the first record had another key must make its row odd, not go unseen.
        pos = batch.expect(pos, 0x0A)
        length, pos = batch.varint(pos)
        batch.ok &= length == len(entry.key)
        pos = batch.key(pos, entry.key)
        if not entry.wanted:
            pos = entry_end
            continue
        pos = batch.expect(pos, 0x12)
        length, pos = batch.varint(pos)
        batch.ok &= pos + length == entry_end
        present = length > 0  # an empty Feature has no kind: the key counts as missing there
        if entry.kind == wire.NONE:
            batch.ok &= ~present
            found[entry.key] = _Found(wire.NONE, present, pos, length, [])
            pos = entry_end
            continue
        pos = batch.expect(pos, _TAG_OF_KIND[entry.kind], present)
        length, pos = batch.varint(pos, present)
        batch.ok &= ~present | (pos + length == entry_end)
        if entry.kind == wire.BYTES:
            found[entry.key] = _Found(wire.BYTES, present, pos, length, _bytes_values(batch, pos, entry_end))
        else:
            nonempty = length > 0
            pos = batch.expect(pos, 0x0A, nonempty)  # one packed run, as TF and protobuf write it
            length, pos = batch.varint(pos, nonempty)
            batch.ok &= ~nonempty | (pos + length == entry_end)
            found[entry.key] = _Found(entry.kind, present, pos, length, [])
        pos = entry_end
    batch.ok &= pos == batch.ends
    try:
        columns = _columns(batch, found, wanted)
    except wire.WireError:
        return None  # a malformed payload: the per-record decoder reports it with its record
    odd = np.flatnonzero(~batch.ok).tolist()
    return columns, odd


def _bytes_values(batch: _Batch, pos: np.ndarray, end: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Walk the repeated bytes values of a BytesList in every row; return (round, rows, starts, lengths)."""
    rounds: list[tuple[np.ndarray, ...]] = []
    active = batch.ok & (pos < end)
    step = 0
    while active.any():
        rows = np.flatnonzero(active)
        at = batch.expect(pos, 0x0A, active)
        length, at = batch.varint(at, active)
        rounds.append((np.full(rows.size, step), rows, at[rows], length[rows]))
        pos = np.where(active, at + length, pos)
        batch.ok &= ~active | (pos <= end)
        active = batch.ok & (pos < end)
        step += 1
    batch.ok &= pos == end
    return rounds


def _columns(
    batch: _Batch, found: Mapping[bytes, _Found], wanted: Mapping[bytes, int]
) -> dict[bytes, Column]:
    from .columns import Column, empty_values

    # First the payload checks that can still make a row odd, then gather the rows left.
    for key, kind in wanted.items():
        entry = found.get(key)
        if entry is None or entry.kind != kind or kind == wire.BYTES:
            continue
        if kind == wire.FLOAT:
            batch.ok &= entry.lengths % 4 == 0
        else:  # each packed run must end on the last byte of a varint
            end = batch._clip(entry.starts + entry.lengths - 1)
            batch.ok &= (entry.lengths == 0) | (batch.u8[end] < 0x80)
    rows = np.flatnonzero(batch.ok)
    columns = {}
    for key, kind in wanted.items():
        kinds = np.zeros(rows.size, np.int8)
        counts = np.zeros(rows.size, np.int64)
        values: np.ndarray | list[bytes] = empty_values(kind)
        entry = found.get(key)
        if entry is not None:
            kinds = np.where(entry.present[rows], entry.kind, wire.NONE).astype(np.int8)
            if entry.kind == kind == wire.BYTES:
                counts, values = _gather_bytes(batch, entry.rounds, batch.ok)
            elif entry.kind == kind:
                counts, values = _gather_numeric(batch.u8, kind, entry.starts[rows], entry.lengths[rows])
        columns[key] = Column(kinds, counts, values)
    return columns


def _ragged_gather(u8: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenate ``u8[s : s + n]`` for every start ``s`` and length ``n``."""
    total = int(lengths.sum())
    if not total:
        return np.empty(0, np.uint8)
    if (lengths == lengths[0]).all():
        # Whole rows of a sliding window: numpy copies each row as one block.
        rows = np.lib.stride_tricks.sliding_window_view(u8, int(lengths[0]))
        return rows[starts].reshape(-1)
    offsets = np.cumsum(lengths) - lengths
    return u8[np.repeat(starts - offsets, lengths) + np.arange(total)]


def _gather_numeric(
    u8: np.ndarray, kind: int, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Counts and values of the packed float or varint payloads at ``starts``."""
    payload = _ragged_gather(u8, starts, lengths)
    if kind == wire.FLOAT:
        return lengths // 4, payload.view("<f4").astype(np.float32)
    terminal = payload < 0x80
    ends = np.cumsum(lengths)
    total = np.zeros(payload.size + 1, np.int64)
    np.cumsum(terminal, out=total[1:])
    counts = total[ends] - total[ends - lengths]
    if terminal.all():  # every value below 128: one byte each
        return counts, payload.astype(np.int64)
    return counts, wire.decode_varints(payload.tobytes(), 0, payload.size).view(np.int64)


def _gather_bytes(
    batch: _Batch, rounds: list[tuple[np.ndarray, ...]], ok: np.ndarray
) -> tuple[np.ndarray, list[bytes]]:
    """Counts and values of the bytes lists walked in ``rounds``, for the ``ok`` rows, in row order."""
    rows = np.flatnonzero(ok)
    position = np.full(ok.size, -1)
    position[rows] = np.arange(rows.size)
    counts = np.zeros(rows.size, np.int64)
    if not rounds:
        return counts, []
    step, row, start, length = (np.concatenate([r[i] for r in rounds]) for i in range(4))
    keep = ok[row]
    step, row, start, length = step[keep], position[row[keep]], start[keep], length[keep]
    order = np.lexsort((step, row))
    np.add.at(counts, row, 1)
    joined = batch.joined
    return counts, [
        joined[s : s + n] for s, n in zip(start[order].tolist(), length[order].tolist(), strict=True)
    ]
