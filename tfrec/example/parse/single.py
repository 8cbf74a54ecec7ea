"""The direct one-record path of ``parse_single_example`` (example layer).

A record in the usual form needs none of a batch's machinery. The usual form:
every key the specs read is present (or absent with a default to give), of its
kind, with the number of values its spec asks for, and the record is laid out as
writers lay it out (one Features field; map entries of a key, then a Feature of
one list; packed numbers).
:func:`parse_one` reads such a record in one pass and gives up (returns None) on
anything else, which the batch path then parses: so results and errors are
those of the batch path by construction.

Each plan is compiled once into a decoder (cached by plan, and plans are cached
by spec): the wanted keys map to slots, and each slot has a list decoder
(:mod:`.single_values`). Records of one writer repeat their layout: the bytes of
a map entry before its values (entry tag and length, key, Feature tag and
length, list tag and length, and for a list of one packed field, its tag and
length) are the same from record to record whenever the entry's length is. The
decoder remembers these *heads* per place of an entry in its record: one dict
lookup by the head's bytes then stands for reading and checking up to six
fields, and only a head never seen there is read field by field. A whole layout
(the keys in order, the lengths of their heads) seen twice is compiled, with the
other layouts that came back (a key missing is another layout), into one
straight-line function (:mod:`.single_layout`) that is tried first; on any
surprise the walk reads the record.

Example:
    >>> parse_one(plan_of({"label": FixedLenFeature([], int64)}), data)
    {'label': array(3)}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError as ProtobufDecodeError

from ...cache import BoundedCache
from ...errors import WireError
from .. import wire
from .plan import Plan
from .single_layout import Entry, Layout, inline_expression, layout_decoder
from .single_values import ListDecoder, list_decoder
from .specs import FixedLenFeature, FixedLenSequenceFeature, raw_key

__all__ = ["one_record_decoder", "parse_one"]

_FIELD_1, _FIELD_2 = wire.FIELD_1, wire.FIELD_2
_read_varint = wire.read_varint

_Decoder = Callable[[bytes], "dict[Any, Any] | None"]
# A slot: (its key in the plan, the tag of its list kind, its list decoder, its bit, whether the
# decoder takes the payload of the list's one field rather than the list body).
_Slot = tuple[Any, int, ListDecoder, int, bool]
# What a head says: the entry's size from its tag to its end, the slot's key, list decoder and bit
# (None, None, 0 for a key not asked for).
_Head = tuple[int, Any, "ListDecoder | None", int]
_HEADS = 64  # heads remembered per place (entry lengths vary): bounded
_PLACES = 1024  # places remembered: a record of more entries is left to the batch path
_LAYOUTS = 16  # layouts remembered per decoder (compiled when seen twice): bounded
_TRIED = 4  # layouts compiled into one decoder (the last to come back): bounded


def parse_one(plan: Plan, data: bytes) -> dict[str, Any] | None:
    """``data`` parsed by ``plan`` as ``parse_single_example`` parses it, or None when the record is
    not in the usual form (a key missing, another kind, another count, another layout, malformed)."""
    decode = _DECODERS[plan, False]
    return None if decode is None else decode(data)


def one_record_decoder(plan: Plan, *, bytes_scalars: bool = False) -> _Decoder | None:
    """:func:`parse_one` of ``plan`` as a function of the record alone (None: every record of the
    plan is left to the batch path), for callers that keep it: no lookup per record.
    ``bytes_scalars``: the value of a FixedLenFeature of shape ``()`` and dtype string is the
    ``bytes`` itself rather than a 0-d object array holding it (what a schema gives)."""
    return _DECODERS[plan, bytes_scalars]


def _compile(wanted: tuple[Plan, bool]) -> _Decoder | None:
    """The one-record decoder of a plan (and form of bytes scalars, as :func:`one_record_decoder`
    takes it), or None when the plan holds a spec left to the batch path."""
    plan, bytes_scalars = wanted
    slots: dict[bytes, _Slot] = {}  # raw key -> its slot
    absent: dict[Any, Callable[[], Any] | None] = {}  # each key's value when absent
    entries: dict[Any, Entry] = {}  # each key's list decoder, and it as an expression (or None)
    for key, spec in plan.specs.items():  # the plan's order, which is the batch path's
        if not isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
            return None
        raw = raw_key(key)
        if raw in slots:
            return None
        kind = wire.kind_of_dtype(spec.dtype)
        shape = tuple(spec.shape)
        steps = isinstance(spec, FixedLenSequenceFeature)
        decoder, payload = list_decoder(kind, shape, steps, bytes_scalars)
        slots[raw] = (key, wire.KIND_TAG[kind], decoder, 1 << len(absent), payload)
        entries[key] = (decoder, inline_expression(decoder, kind, shape, steps))
        absent[key] = _absent_value(spec, shape, steps, bytes_scalars and kind == wire.BYTES)
    keys = list(absent)
    every = (1 << len(keys)) - 1
    # Per place of an entry in its record, in order: [the length of the heads last seen there, the
    # heads seen there (bytes -> what they say)]; a lookup by the bytes compares them in full. The
    # last place is always one not seen yet (no heads): reading a record adds the next.
    places: list[list[Any]] = [[0, {}]]

    def learn(place: list[Any], known: bytes, head: _Head) -> None:
        """Remember ``head``, read field by field, at its place (at most ``_HEADS`` there). Threads
        may race here: whatever they leave holds only true heads, so at worst one is read again."""
        heads = place[1]
        place[1] = {**heads, known: head} if len(heads) < _HEADS else {known: head}
        place[0] = len(known)
        if place is places[-1] and len(places) < _PLACES:
            places.append([0, {}])

    def walk(data: bytes, layout: list[tuple[int, Any]]) -> dict[Any, Any] | None:
        """Each wanted key's output in the plan's order (``_ABSENT`` for a key not in the record);
        None for a layout other than writers', a wanted Feature empty or of another kind, or a
        list its slot's decoder finds unusual (the batch path then decides). The record's layout
        is appended to ``layout``."""
        size = len(data)
        if data[0] != _FIELD_1:
            return None
        length, pos = _read_varint(data, 1)
        if pos + length != size:
            return None
        out = dict.fromkeys(keys, _ABSENT)
        seen = 0  # the bits of the wanted keys found
        for place in places:  # places appended meanwhile are visited too
            if pos >= size:
                break
            length, heads = place
            head = heads.get(data[pos : pos + length])
            if head is None:
                read = _read_head(data, pos, size, slots)
                if read is None:
                    return None
                length, head = read
                learn(place, data[pos : pos + length], head)
            entry_size, key, finish, bit = head
            layout.append((length, key))
            if finish is not None:
                value = finish(data, pos + length, pos + entry_size)
                if value is None:
                    return None
                out[key] = value  # a key's last entry wins, as in protobuf
                seen |= bit
            pos += entry_size
        if pos != size:
            return None  # the last entry ran past the record, or more entries than _PLACES
        if seen == every:
            return out
        for key, value in out.items():
            if value is _ABSENT:
                fill = absent[key]
                if fill is None:
                    return None  # a required key is missing: the batch path reports it
                out[key] = fill()
        return out

    # The straight-line decoder of the layouts that came back (``tried``, in the order they did: a
    # record lacking an optional key is just another layout); the layouts seen (True: in the decoder).
    chosen: list[_Decoder | None] = [None]
    layouts: dict[Layout, bool] = {}
    tried: list[Layout] = []

    def adopt(layout: Layout) -> None:
        """Note ``layout`` (of a record the walk has read); compile the decoder anew, with it, when
        it comes back. Threads may race here: every decoder remembered is a true one."""
        compiled = layouts.get(layout)
        if compiled:
            return  # in the decoder already (which found a head new at its place, or a value unusual)
        if compiled is None:  # seen once: it may never come back
            if len(layouts) >= _LAYOUTS:
                layouts.clear()
            layouts[layout] = False
            return
        layouts[layout] = True
        tried[:] = [*[known for known in tried if known != layout][1 - _TRIED :], layout]
        chosen[0] = layout_decoder(tuple(tried), places, entries, keys, absent)

    def decode(data: bytes) -> dict[Any, Any] | None:
        fast = chosen[0]
        if fast is not None:
            try:
                out = fast(data)
            except (WireError, IndexError, ValueError, ProtobufDecodeError):  # malformed: the walk decides
                out = None
            if out is not None:
                return out
        layout: list[tuple[int, Any]] = []
        try:
            out = walk(data, layout)
        except (WireError, IndexError, ValueError):  # malformed (or cut: numpy finds the buffer short)
            return None
        if out is not None:
            adopt(tuple(layout))
        return out

    return decode


_ABSENT: Any = object()  # a key the record does not hold (None: one it holds in an unusual form)


def _absent_value(spec: Any, shape: tuple[int, ...], steps: bool, as_is: bool) -> Callable[[], Any] | None:
    """What the batch path gives for the spec's key absent from a record: a FixedLenFeature's default
    (a fresh copy: outputs are the caller's; ``as_is``: a scalar bytes default as the bytes), a
    FixedLenSequenceFeature's zero steps; None when the key is required (an error to report)."""
    if steps:
        return lambda: np.empty((0, *shape), spec.dtype)
    default = spec.default_value
    if default is None:
        return None
    if as_is and shape == ():
        value = default[()]  # bytes: immutable, so one object serves every record
        return lambda: value
    return default.copy


# Compiled per plan and form of bytes scalars, keyed by the plan object (plans are cached, so the
# same few come back).
_DECODERS: BoundedCache[tuple[Plan, bool], _Decoder | None] = BoundedCache(64, compute=_compile)


def _read_head(data: bytes, pos: int, size: int, slots: dict[bytes, _Slot]) -> tuple[int, _Head] | None:
    """The head of the map entry at ``pos``, read field by field, and its length: up to what its
    slot's decoder takes (the list body, or the payload of its one field) when its key is wanted,
    up to its Feature's body when not (never looked into); None for a layout other than writers',
    or a wanted Feature empty or of another kind (the batch path then decides).
    Lengths of one or two bytes are read inline: a call costs more than the rest."""
    start = pos
    if data[pos] != _FIELD_1:  # a map entry
        return None
    end = data[pos + 1]
    if end < 0x80:
        pos += 2
    elif data[pos + 2] < 0x80:
        end = (end & 0x7F) | data[pos + 2] << 7
        pos += 3
    else:
        end, pos = _read_varint(data, pos + 1)
    end += pos
    if data[pos] != _FIELD_1:  # its key
        return None
    length = data[pos + 1]
    if length >= 0x80:
        return None  # a key of 128 bytes or more: rare, left to the batch path
    pos += 2 + length
    if data[pos] != _FIELD_2:  # its value, a Feature
        return None
    slot = slots.get(data[pos - length : pos])
    length = data[pos + 1]
    if length < 0x80:
        pos += 2
    elif data[pos + 2] < 0x80:
        length = (length & 0x7F) | data[pos + 2] << 7
        pos += 3
    else:
        length, pos = _read_varint(data, pos + 1)
    if pos + length != end or end > size:
        return None
    if slot is None:
        return pos - start, (end - start, None, None, 0)
    key, wanted, finish, bit, payload = slot
    if not length or data[pos] != wanted:
        return None  # an empty Feature, or a list of another kind: the batch path decides
    length = data[pos + 1]
    if length < 0x80:
        pos += 2
    elif data[pos + 2] < 0x80:
        length = (length & 0x7F) | data[pos + 2] << 7
        pos += 3
    else:
        length, pos = _read_varint(data, pos + 1)
    if pos + length != end:
        return None
    if payload:  # the list body must be one field 1: the head reaches its payload
        if not length or data[pos] != _FIELD_1:
            return None  # an empty list, or loose values
        length = data[pos + 1]
        if length < 0x80:
            pos += 2
        elif data[pos + 2] < 0x80:
            length = (length & 0x7F) | data[pos + 2] << 7
            pos += 3
        else:
            length, pos = _read_varint(data, pos + 1)
        if pos + length != end:
            return None
    return pos - start, (end - start, key, finish, bit)
