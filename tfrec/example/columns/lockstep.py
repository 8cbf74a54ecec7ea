"""Decode a batch of Examples that share one layout, all at once in numpy (example layer).

Records written by one writer list the same keys in the same order with the
same kinds; only lengths and values differ. One record's layout (the longest
of the first few, or the layout that served the previous batch) becomes a
template, and every record is walked through it together. Where every row's
entry starts like the template's (tags, key, widths of the lengths), the entry
is one window compare per batch; otherwise it is walked field by field, each
step (a tag, a varint length, a key) one numpy operation over the whole batch.
A row that lacks a template key (an optional feature) reads it as missing.
Records that stray from the template otherwise are marked odd and left to
another template or the per-record decoder, so one unusual record never slows
the others down. Values are then gathered per key: scalar strings straight
from the header's lengths, packed lists of alike lengths as one block per row.

Example:
    >>> columns, odd = lockstep_columns(records, {b"label": INT64})
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from ...cache import BoundedCache
from ...errors import WireError
from .. import wire
from .column import SHORT_BYTES, Column, PackedStrings, empty_values, record_spans
from .template import Entry, template

__all__ = ["lockstep_columns"]

_MIN_BATCH = 4  # below this the per-record decoder is as fast
_TEMPLATE_CANDIDATES = 16  # records looked at to pick the template
_MAX_ROUNDS = 64  # bytes values per row walked together before long lists go to the per-record decoder
_FEW_ROWS = 8  # ... when at most one row in this many still has values
_PAD = 16  # zero bytes after the batch, so fixed-width gathers stay in bounds
_SHORT_VARIED = 128  # bytes values of varied lengths up to this size come from numpy rows (longer: sliced)


class _Header(NamedTuple):
    """The bytes of one template entry from its tag up to its values, as every row should have them."""

    size: int  # bytes compared
    pattern: np.ndarray  # the template's bytes, masked by ``check``, as one void scalar
    check: np.ndarray  # per byte, the bits a row must share: all, or a length's continuation bit
    # The lengths (entry, then Feature, list, packed run or value), where the header has them:
    columns: np.ndarray  # their bytes, each one as wide as the widest
    weights: np.ndarray | None  # per byte, as a column, 128 ** its place, or 0 past its end (None: 1 byte)
    ends: np.ndarray  # where each one's varint ends (so its field starts), as a column
    # A BytesList that holds one value in the template (scalar strings): the header through that
    # value's length too, so a batch of single values needs no walk. None otherwise.
    one_value: _Header | None = None


_MAX_HEADER_VARINT = 5  # wider lengths (padded varints) are read field by field


def _headers(data: bytes, template: list[Entry]) -> list[_Header | None]:
    """Each template entry's header, or None where the entry is read field by field.

    A wanted key's header reaches its values: the BytesList's contents, or a
    numeric list's packed run. Entries with an empty Feature or an empty numeric
    list, and any other form than the canonical one (one-byte tags, one packed
    run), are left to the field-by-field walk, which checks every row there.
    """
    try:
        headers = []
        for start, entry in _entry_starts(data, template):
            header = _header(data, start, entry)
            if header and entry.wanted and entry.kind == wire.BYTES:
                header = header._replace(one_value=_header(data, start, entry, one_value=True))
            headers.append(header)
        return headers
    except (IndexError, WireError):  # a form _template accepts but headers do not describe
        return [None] * len(template)


def _features_length(data: bytes) -> tuple[int, int]:
    """Where the Example's Features length starts (after its tag, padded or not), and where it ends."""
    _, column = wire.read_varint(data, 0)
    _, end = wire.read_varint(data, column)
    return column, end


def _entry_starts(data: bytes, template: list[Entry]) -> Iterator[tuple[int, Entry]]:
    _, pos = _features_length(data)  # past the Features tag and length (_template checked them)
    for entry in template:
        yield pos, entry
        length, end = wire.read_varint(data, pos + 1)
        pos = end + length


def _header(data: bytes, start: int, entry: Entry, one_value: bool = False) -> _Header | None:
    # (tag, whether a length follows it) from the entry's tag on: the entry, its key, the Feature;
    # for a wanted key, the list (after its kind's tag) and for numbers the packed run (or with
    # ``one_value``, a bytes value: None unless the template's list is exactly one value).
    fields = [(wire.FIELD_1, True), (wire.FIELD_1, False), (wire.FIELD_2, True)]
    if entry.wanted:
        if entry.kind == wire.NONE:
            return None
        fields.append((wire.KIND_TAG[entry.kind], True))
        if entry.kind != wire.BYTES or one_value:
            fields.append((wire.FIELD_1, True))
    varints = []
    pos = start
    for number, (tag, is_length) in enumerate(fields):
        if pos >= len(data) or data[pos] != tag:
            return None  # another form (a wider tag, an unpacked list): walked field by field
        value, end = wire.read_varint(data, pos + 1)
        if not is_length:  # the key: its length, then its bytes
            pos = end + value
            continue
        if number == 3 and value == 0 and entry.kind != wire.BYTES:
            return None  # an empty numeric list: no packed run to describe
        varints.append((pos + 1 - start, end - pos - 1))
        pos = end
        if number == 0:
            entry_end = end + value
    if one_value and pos + value != entry_end:
        return None  # not exactly one value: the list is walked value by value
    return _make_header(data, start, pos, varints)


def _features_header(data: bytes) -> _Header | None:
    """The Example's first bytes, its Features tag and length, as every row should have them."""
    column, end = _features_length(data)
    return _make_header(data, 0, end, [(column, end - column)])


def _make_header(data: bytes, start: int, pos: int, varints: list[tuple[int, int]]) -> _Header | None:
    """The header of ``data[start:pos]``, whose lengths are the varints at (column, width)."""
    if any(width > _MAX_HEADER_VARINT for _, width in varints):
        return None
    check = np.full(pos - start, 0xFF, np.uint8)
    for column, width in varints:
        check[column : column + width] = 0x80
    pattern = np.frombuffer(data, np.uint8, pos - start, start) & check
    widest = max(width for _, width in varints)
    columns = np.array([column + min(i, width - 1) for column, width in varints for i in range(widest)])
    weights = np.array([128**i if i < width else 0 for _, width in varints for i in range(widest)])
    ends = np.array([column + width for column, width in varints])[:, None]
    return _Header(
        pos - start,
        pattern.view(f"V{pos - start}"),
        check,
        columns,
        weights[:, None] if widest > 1 else None,
        ends,
    )


_TEMPLATES: BoundedCache[
    tuple[tuple[bytes, int], ...], tuple[list[Entry], _Header | None, list[_Header | None]]
] = BoundedCache(64)  # layouts kept between batches


class _Found(NamedTuple):
    """Where a wanted key's values are in every row."""

    kind: int  # the template's kind
    present: np.ndarray  # rows whose Feature has that kind set (the others have none)
    starts: np.ndarray  # packed payload start per row (numeric kinds)
    lengths: np.ndarray  # packed payload length per row (numeric kinds)
    rounds: list[tuple[np.ndarray, ...]]  # bytes values walked round by round (bytes kind)


class _Batch:
    """The batch as one array, and the vectorised reading steps over it."""

    def __init__(self, records: Sequence[bytes], pad: int = _PAD) -> None:
        self.joined, self.starts, self.ends = record_spans(records, pad)  # one copy at most
        self.u8 = np.frombuffer(self.joined, np.uint8)
        self.limit = int(self.ends[-1]) if self.ends.size else 0  # last valid position + 1
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
        value, size, valid = self.read_varint(pos)
        if valid is not None:
            self.ok &= valid if rows is None else valid | ~rows
        if rows is not None:
            value = np.where(rows, value, 0)
            size = np.where(rows, size, 0)
        return value, pos + size

    def read_varint(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The varints at ``pos``: values (0 where invalid), sizes, and which are valid (None: all)."""
        first = self.u8[self._clip(pos)].astype(np.int64)
        if (first < 0x80).all():  # the common case: every length fits in one byte
            return first, np.ones_like(first), None
        # Byte by byte, only as far as the longest varint of the batch goes.
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
        return np.where(valid, value, 0), size, valid

    def blocks(self, at: np.ndarray, size: int) -> np.ndarray:
        """Row ``i`` is the ``size`` bytes from position ``at[i]`` (each in bounds), in a new array."""
        # Each block is one void item of an overlapping view, so the gather copies whole blocks:
        # several times faster than gathering the rows of a 2-D window view byte by byte.
        items = np.ndarray((self.u8.size - size + 1,), f"V{size}", self.joined, 0, (1,))
        return items[at].view(np.uint8).reshape(-1, size)

    def key(self, pos: np.ndarray, key: bytes) -> np.ndarray:
        """Check that the bytes at ``pos`` are ``key``; return the position after it."""
        size = len(key)
        if size > self.u8.size:
            self.ok[:] = False
        elif size:
            # Each row's bytes there as one block, compared as a void scalar (one memcmp each).
            found = self.blocks(np.minimum(pos, self.u8.size - size), size)
            self.ok &= found.view(f"V{size}").reshape(-1) == np.frombuffer(key, f"V{size}")
        return pos + size


def lockstep_columns(
    records: Sequence[bytes],
    wanted: Mapping[bytes, int],
    reuse: bool = True,
    packed: frozenset[bytes] = frozenset(),
) -> tuple[dict[bytes, Column], list[int]] | None:
    """Columns of the records that follow a template record's layout, and the rows that do not.

    With ``reuse``, the layout of an earlier batch is tried before one of these
    records. Bytes values of the ``packed`` keys come as :class:`~.column.PackedStrings` when
    they share one length. Returns ``None`` when the batch is too small or the template has no
    canonical layout (then every record goes through the per-record decoder).
    """

    if len(records) < _MIN_BATCH:
        return None
    # Rows may lack optional keys of the template but not have others: the longest of the
    # first few records most likely has every key.
    # Walking a template costs as much as a fair part of a batch: a layout that served the
    # previous batch is tried first (any layout is safe: every row is checked against it).
    cache_key = tuple(wanted.items())
    cached = _TEMPLATES.get(cache_key) if reuse else None
    if cached is None:
        first = max(records[:_TEMPLATE_CANDIDATES], key=len)
        layout = template(first, wanted)
        if layout is None:
            return None
        cached = (layout, _features_header(first), _headers(first, layout))
        if reuse:
            _TEMPLATES.put(cache_key, cached)
    layout, features, headers = cached
    batch = _Batch(records, _PAD + max([SHORT_BYTES] + [h.size for h in headers if h]))
    read = _read_header(batch, batch.starts, features) if features else None
    if read is not None:
        end, pos, _ = read
        batch.ok &= end == batch.ends
    else:
        pos = batch.expect(batch.starts, wire.FIELD_1)
        length, pos = batch.varint(pos)
        batch.ok &= pos + length == batch.ends
    found: dict[bytes, _Found] = {}
    for entry, header in zip(layout, headers, strict=True):
        step = _entry_by_header(batch, pos, entry, header) if header else None
        if step is None:
            step = _entry_by_steps(batch, pos, entry)
        pos, found_entry = step
        if found_entry is not None:
            found[entry.key] = found_entry
    batch.ok &= pos == batch.ends
    try:
        columns = _columns(batch, found, wanted, packed)
    except WireError:
        return None  # a malformed payload: the per-record decoder reports it with its record
    odd = np.flatnonzero(~batch.ok).tolist()
    if reuse and len(odd) * 2 > len(records):
        _TEMPLATES.pop(cache_key, None)  # a poor fit: the next batch picks its own
    return columns, odd


def _entry_by_steps(batch: _Batch, pos: np.ndarray, entry: Entry) -> tuple[np.ndarray, _Found | None]:
    """Walk one map entry of every row, field by field; return the entry ends and a wanted key's values.

    A row whose next entry is not this key (an optional feature it lacks, or
    anything else) keeps its place and counts as missing the key: if something
    else stands there, no later entry matches either, and the row ends odd.
    """
    before = batch.ok.copy()
    at = batch.expect(pos, wire.FIELD_1)
    length, at = batch.varint(at)
    entry_end = at + length
    # Every key is checked, wanted or not: a wanted key (or a repeat of one) standing
    # where the template had another key must make its row odd, not go unseen. So is
    # the entry's form, a key then a value and nothing else: a second key would override the first.
    at = batch.expect(at, wire.FIELD_1)
    length, at = batch.varint(at)
    batch.ok &= length == len(entry.key)
    at = batch.key(at, entry.key)
    at = batch.expect(at, wire.FIELD_2)
    length, at = batch.varint(at)
    batch.ok &= at + length == entry_end
    here = batch.ok & (entry_end <= batch.ends)
    batch.ok = before
    entry_end = np.where(here, entry_end, pos)
    if not entry.wanted:
        return entry_end, None
    at = np.where(here, at, pos)
    present = here & (length > 0)  # an empty Feature has no kind: the key counts as missing there
    if entry.kind == wire.NONE:
        batch.ok &= ~present
        return entry_end, _Found(wire.NONE, present, at, length, [])
    at = batch.expect(at, wire.KIND_TAG[entry.kind], present)
    length, at = batch.varint(at, present)
    batch.ok &= ~present | (at + length == entry_end)
    if entry.kind == wire.BYTES:
        return entry_end, _Found(wire.BYTES, present, at, length, _bytes_values(batch, at, entry_end))
    nonempty = length > 0
    at = batch.expect(at, wire.FIELD_1, nonempty)  # one packed run, as TF and protobuf write it
    length, at = batch.varint(at, nonempty)
    batch.ok &= ~nonempty | (at + length == entry_end)
    return entry_end, _Found(entry.kind, present, at, length, [])


def _entry_by_header(
    batch: _Batch, pos: np.ndarray, entry: Entry, header: _Header
) -> tuple[np.ndarray, _Found | None] | None:
    """Read one map entry of every row at once, when every row's entry starts like the template's.

    Returns ``None`` (and changes nothing) when any row still in play differs:
    the caller then walks the entry field by field.
    """
    present = np.ones(pos.size, bool)
    if header.one_value is not None:  # first try: every row holds one bytes value, as the template
        read = _read_header(batch, pos, header.one_value)
        if read is not None:
            entry_end, start, length = read
            single = (np.zeros(pos.size, np.int64), np.arange(pos.size), start, length)
            return entry_end, _Found(wire.BYTES, present, start, length, [single])
    read = _read_header(batch, pos, header)
    if read is None:
        return None
    entry_end, start, length = read
    if not entry.wanted:
        return entry_end, None
    if entry.kind == wire.BYTES:
        return entry_end, _Found(wire.BYTES, present, start, length, _bytes_values(batch, start, entry_end))
    return entry_end, _Found(entry.kind, present, start, length, [])


def _read_header(
    batch: _Batch, pos: np.ndarray, header: _Header
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every row's entry end, and where its header's last length starts and how long it is.

    All bytes up to the values are gathered as one window per row and
    compared with the template's, lengths by their continuation bits only; the
    lengths are then read from fixed columns of the window, and each must end
    where the entry ends. ``None`` when a row still in play differs.
    """
    window = batch.blocks(np.minimum(pos, batch.limit), header.size)
    # One row per length byte, with the batch along it: numpy's loops run long along the batch.
    lengths = window.T[header.columns].astype(np.int64)
    if header.weights is not None:  # lengths of several bytes: their 7-bit groups added up
        lengths &= 0x7F
        lengths *= header.weights
        lengths = lengths.reshape(len(header.ends), -1, lengths.shape[-1]).sum(axis=1)
    # Each nested field must end where the entry ends: the same end for every length of a row.
    ends = lengths + header.ends  # relative to the row's position
    # Rows compared as void scalars: one memcmp each, much faster than .all(axis=1). The window
    # is a copy, masked in place once the lengths are read.
    masked = np.bitwise_and(window, header.check, out=window)
    same = masked.view(f"V{header.size}").reshape(-1) == header.pattern
    if len(ends) > 1:
        same &= (ends[1:] == ends[0]).all(axis=0)
    if not same.all() and not (same | ~batch.ok).all():  # rows already odd may differ
        return None
    return ends[0] + pos, pos + int(header.ends[-1, 0]), lengths[-1]


def _bytes_values(batch: _Batch, pos: np.ndarray, end: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Walk the repeated bytes values of a BytesList in every row; return (round, rows, starts, lengths).

    Each round reads one more value of the rows that have more, so a round costs
    what those rows cost. A few rows with very long lists are left to the
    per-record decoder rather than walked value by value.
    """
    rounds: list[tuple[np.ndarray, ...]] = []
    batch.ok &= pos <= end
    rows = np.flatnonzero(batch.ok & (pos < end))
    at, stop = pos[rows], end[rows]
    step = 0
    while rows.size:
        if step >= _MAX_ROUNDS and rows.size * _FEW_ROWS < batch.ok.size:
            batch.ok[rows] = False
            break
        good = batch.u8[batch._clip(at)] == wire.FIELD_1
        length, size, valid = batch.read_varint(at + 1)
        if valid is not None:
            good &= valid
        start = at + 1 + size
        rounds.append((np.full(rows.size, step), rows, start, length))
        at = start + length
        good &= at <= stop
        batch.ok[rows[~good]] = False
        more = good & (at < stop)
        rows, at, stop = rows[more], at[more], stop[more]
        step += 1
    return rounds


def _columns(
    batch: _Batch, found: Mapping[bytes, _Found], wanted: Mapping[bytes, int], packed: frozenset[bytes]
) -> dict[bytes, Column]:
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
    everyone = bool(batch.ok.all())  # the usual case: no rows to pick
    picked = np.flatnonzero(batch.ok)
    rows: slice | np.ndarray = slice(None) if everyone else picked
    columns = {}
    for key, kind in wanted.items():
        kinds = np.zeros(picked.size, np.int8)
        counts = np.zeros(picked.size, np.int64)
        values: np.ndarray | list[bytes] = empty_values(kind)
        width = None  # known when every row holds as many values: the gathers see it for free
        entry = found.get(key)
        if entry is not None:
            kinds = entry.present[rows].astype(np.int8) * np.int8(entry.kind)  # NONE is 0
            if entry.kind == kind == wire.BYTES:
                counts, values, width = _gather_bytes(batch, entry.rounds, batch.ok, everyone, key in packed)
            elif entry.kind == kind:
                counts, values, width = _gather_numeric(batch, kind, entry.starts[rows], entry.lengths[rows])
        columns[key] = Column(kinds, counts, values, width)
    return columns


def _alike(batch: _Batch, starts: np.ndarray, lengths: np.ndarray) -> int:
    """The longest length, when blocks that long from every start are cheaper to copy than the
    bytes one by one (lengths alike) and stay in the batch; else 0."""
    width = int(lengths.max()) if lengths.size else 0
    if (
        width
        and width * lengths.size <= 2 * int(lengths.sum())
        and int(starts.max()) + width <= batch.u8.size
    ):
        return width
    return 0


def _gather_numeric(
    batch: _Batch, kind: int, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Counts, values and (when every row holds as many) width of the packed float or varint
    payloads at ``starts``."""
    width = _alike(batch, starts, lengths)
    if width and kind == wire.INT64:
        counts, values = _block_varints(batch.blocks(starts, width), lengths)
        return counts, values, _width(counts)
    payload = _ragged_gather(batch, starts, lengths, width)
    if kind == wire.FLOAT:
        counts = lengths // 4
        return counts, payload.view("<f4").astype(np.float32, copy=False), _width(counts)  # payload: a copy
    last = np.flatnonzero(payload < 0x80)  # each varint's final byte
    if last.size == payload.size:  # every value below 128: one byte each
        return lengths.copy(), payload.astype(np.int64), None
    ends = np.cumsum(lengths)
    # A row's values: the final bytes within it (each row's payload ends with one: checked).
    counts = np.diff(np.searchsorted(last, ends), prepend=0)
    return counts, wire.varints_of(payload, last).view(np.int64), None


def _width(counts: np.ndarray) -> int | None:
    """The count of every row, when they are all the same and not 0."""
    return int(counts[0]) if counts.size and counts[0] and (counts == counts[0]).all() else None


def _ragged_gather(batch: _Batch, starts: np.ndarray, lengths: np.ndarray, width: int) -> np.ndarray:
    """Concatenate ``u8[s : s + n]`` for every start ``s`` and length ``n``; ``width``: as ``_alike``."""
    if width:  # each row's block up to the longest, then cut to its length
        if (lengths == width).all():
            return batch.blocks(starts, width).reshape(-1)  # whole rows: the values
        return batch.blocks(starts, width)[_within(lengths, width)]
    total = int(lengths.sum())
    if not total:
        return np.empty(0, np.uint8)
    offsets = np.cumsum(lengths) - lengths
    return batch.u8[np.repeat(starts - offsets, lengths) + np.arange(total)]


def _within(lengths: np.ndarray, width: int) -> np.ndarray:
    """Per row of ``width`` bytes, which lie within its first ``lengths[row]``."""
    if width < 1 << 15:  # narrow ints compare several times faster
        return np.arange(width, dtype=np.int16) < lengths.astype(np.int16)[:, None]
    return np.arange(width) < lengths[:, None]


def _block_varints(rows: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts and values of packed varint payloads, each at the start of a row of ``rows``
    (what follows a payload in its row is ignored)."""
    width = rows.shape[1]
    final = rows < 0x80  # each varint's final byte (each payload ends with one: checked)
    if not (lengths == width).all():
        final &= _within(lengths, width)
    last = np.flatnonzero(final)
    if last.size == lengths.size and lengths.all():  # one value in every row (scalars)
        return np.ones(lengths.size, np.int64), _row_varints(rows, lengths)
    counts = np.diff(np.searchsorted(last, np.arange(0, final.size + 1, width)))  # final bytes per row
    first = np.empty_like(last)
    first[0] = 0
    first[1:] = last[:-1] + 1
    # A row's first varint starts at its row, not after the previous row's last.
    heads = np.cumsum(counts) - counts
    nonempty = counts > 0
    first[heads[nonempty]] = np.flatnonzero(nonempty) * width
    return counts, wire.varints_between(rows.reshape(-1), first, last).view(np.int64)


def _row_varints(rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The one varint that starts each row, ``lengths`` bytes long, decoded column by column."""
    width = rows.shape[1]
    if width > 10:
        raise WireError("a varint is longer than 10 bytes")
    word = np.uint32 if width <= 4 else np.uint64  # up to 4 bytes (28 bits) fit in 32
    low = np.bitwise_and(rows, 0x7F, dtype=np.uint8)
    values = low[:, 0].astype(word)
    for i in range(1, width):
        byte = low[:, i] * (lengths > i)  # past a shorter varint's end: masked out
        values |= byte.astype(word) << word(7 * i)
    return values.astype(np.uint64, copy=False).view(np.int64)


def _gather_bytes(
    batch: _Batch, rounds: list[tuple[np.ndarray, ...]], ok: np.ndarray, everyone: bool, packed: bool
) -> tuple[np.ndarray, list[bytes] | np.ndarray, int | None]:
    """Counts and values of the bytes lists walked in ``rounds``, for the ``ok`` rows (``everyone``:
    all of them), in row order; their width when every row holds one value. ``packed``: values of
    one length as :class:`~.column.PackedStrings`."""
    if everyone and len(rounds) == 1 and rounds[0][1].size == ok.size:  # one value in every row
        _, _, start, length = rounds[0]
        return np.ones(ok.size, np.int64), _slices(batch, start, length, packed), 1
    rows = np.flatnonzero(ok)
    position = np.full(ok.size, -1)
    position[rows] = np.arange(rows.size)
    counts = np.zeros(rows.size, np.int64)
    if not rounds:
        return counts, [], None
    if len(rounds) == 1:  # at most one value per row (scalar strings): already in row order
        _, row, start, length = rounds[0]
        keep = ok[row]
        counts[position[row[keep]]] = 1
        return counts, _slices(batch, start[keep], length[keep], packed), None
    step, row, start, length = (np.concatenate([r[i] for r in rounds]) for i in range(4))
    keep = ok[row]
    step, row, start, length = step[keep], position[row[keep]], start[keep], length[keep]
    order = np.lexsort((step, row))
    np.add.at(counts, row, 1)
    return counts, _slices(batch, start[order], length[order], packed), None


def _slices(
    batch: _Batch, starts: np.ndarray, lengths: np.ndarray, packed: bool = False
) -> list[bytes] | np.ndarray:
    """``joined[s : s + n]`` for every start ``s`` and length ``n``, in order (``packed``: as
    :class:`~.column.PackedStrings` when they share one length)."""
    joined = batch.joined
    count = lengths.size
    size = int(lengths.max()) if count > 1 else 0
    # (A block from any start stays in the batch, padded for it; checked all the same.)
    fits = size > 0 and int(starts.max()) + size <= batch.u8.size
    if fits and packed and (lengths == size).all():  # one gather; the consumer makes the bytes
        return batch.blocks(starts, size).view(f"V{size}").reshape(-1).view(PackedStrings)
    if fits and size <= SHORT_BYTES:
        # Short values: the rows of a numpy array make their bytes objects in one C loop, much
        # faster than slicing.
        if (lengths == size).all():  # one length: "V" rows are the values exactly
            return batch.blocks(starts, size).view(f"V{size}").reshape(-1).tolist()
        # Else "S" rows, each value then NULs, while they are not mostly NULs. "S" drops trailing
        # NULs, so a value that ends in a NUL itself is cut again: worth it while few do.
        if size <= _SHORT_VARIED and size * count <= 4 * int(lengths.sum()) + 64 * count:
            nul_ended = np.flatnonzero((lengths > 0) & (batch.u8[starts + lengths - 1] == 0)).tolist()
            if len(nul_ended) * 4 <= count:
                rows = batch.blocks(starts, size)
                rows *= _within(lengths, size)
                values = rows.view(f"S{size}").reshape(-1).tolist()
                for row in nul_ended:
                    start = int(starts[row])
                    values[row] = joined[start : start + int(lengths[row])]
                return values
    return [joined[s : s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
