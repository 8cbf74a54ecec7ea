"""Straight-line decoders of the record layouts :mod:`.single` has learned (example layer).

Records of one writer repeat their layout: the same keys in the same order, each entry's head (the
bytes before its values) of the same length. The walk of :mod:`.single` reads a record entry by
entry, in a loop that asks at each entry which key it holds; once layouts have come back,
:func:`layout_decoder` compiles one function for them that reads the record in one go, with the
value of each wanted key built inline where that is one expression. Layouts share their common
start and part where they differ (a record lacking an optional key is another layout: where the
usual one goes on, it ends, one comparison). Per entry it still looks the head's bytes up among
the heads seen at that place (lengths inside a head vary between records: 32 varints take 64 to 96
bytes), so it checks every byte the walk checks; any surprise (another head, another key, a value
in an unusual form) returns None, and the walk then decides.

Example:
    >>> decode = layout_decoder([((19, "image"),)], places, entries, ["image"], {})
    >>> decode(record)
    {'image': b'...'}
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...proto import feature_pb2
from .. import wire
from .single_values import (
    C_PROTOBUF,
    FEW_VARINT_BYTES,
    ListDecoder,
    scalar_bytes,
    scalar_bytes_as_is,
)

__all__ = ["Entry", "Layout", "inline_expression", "layout_decoder"]

# Per entry of a record, in its order: the length of its head, and its key (None: not asked for).
Layout = tuple[tuple[int, Any], ...]
# What the walk knows of a wanted key: its list decoder, and that decoder as one expression of
# ``data``, ``start`` and ``pos`` (the end of the entry), or None (then it is called).
Entry = tuple[ListDecoder, "str | None"]

_FLOATS_AS_IS = sys.byteorder == "little"  # packed floats are little-endian float32


def inline_expression(decoder: ListDecoder, kind: int, shape: tuple[int, ...], steps: bool) -> str | None:
    """``decoder`` (of a spec of ``kind`` and ``shape``) as one expression of ``data``, ``start`` and
    ``pos`` that gives what it gives, when the usual values make one: ``{call}`` stands for the
    decoder, called for the rest. None: the decoder is called."""
    if steps:
        return None
    if decoder is scalar_bytes_as_is:
        return "data[start:pos]"
    if decoder is scalar_bytes:
        return "array(data[start:pos], OBJECT)"
    size = 1
    for dim in shape:
        size *= dim
    if kind == wire.FLOAT and _FLOATS_AS_IS:
        array = f"frombuffer(data, F4, {size}, start).copy()"  # a copy: writable, as the batch's
        return f"None if pos - start != {4 * size} else {array}{_reshape(shape, size)}"
    if kind == wire.INT64 and shape == ():  # one varint of one or two bytes (labels), as scalar_int
        return (
            "(array(data[start], INT64) if data[start] < 0x80 else None) if pos - start == 1"
            " else array(data[start] & 0x7F | data[start + 1] << 7, INT64)"
            " if pos - start == 2 and data[start] >= 0x80 and data[start + 1] < 0x80"
            " else {call}(data, start, pos)"
        )
    if kind == wire.INT64 and size > 1 and C_PROTOBUF:  # packed varints read by protobuf, as fixed_ints
        # (numpy reads a slice of protobuf's container, a list, faster than the container)
        return (
            f"fromiter(listed[:], INT64, {size}){_reshape(shape, size)}"
            f" if data[start] == {wire.FIELD_1} and {FEW_VARINT_BYTES} < data[start + 1] < 0x80"
            " and start + 2 + data[start + 1] == pos"
            f" and len(listed := Int64List(data[start:pos]).value) == {size}"
            " else {call}(data, start, pos)"
        )
    return None


def _reshape(shape: tuple[int, ...], size: int) -> str:
    return "" if shape == (size,) else f".reshape({shape!r})"


def layout_decoder(
    layouts: Sequence[Layout],
    places: Sequence[list[Any]],
    entries: Mapping[Any, Entry],
    keys: Sequence[Any],
    absent: Mapping[Any, Callable[[], Any] | None],
) -> Callable[[bytes], dict[Any, Any] | None]:
    """The decoder of records laid out as one of ``layouts`` (tried in their order where they part):
    the wanted ``keys`` (in the output's order) of ``entries``, each entry's head looked up among
    those seen at its place (``places[i][1]``, kept up to date by the walk), ``absent`` giving a
    key's value when the layout lacks it; None for a record laid out otherwise or holding a value in
    an unusual form. Layouts share their common start: a record lacking an optional key at its end
    costs one comparison more than the usual layout, not a second decoder."""
    trie: dict[Any, Any] = {}  # (length, key) -> the trie of what follows; _END: a layout ends here
    for layout in layouts:
        node = trie
        for entry in layout:
            node = node.setdefault(entry, {})
        node[_END] = None
    names: dict[str, Any] = {
        "array": np.array,
        "frombuffer": np.frombuffer,
        "read_varint": wire.read_varint,
        "fromiter": np.fromiter,
        "Int64List": feature_pb2.Int64List.FromString,
        "INT64": np.dtype(np.int64),
        "OBJECT": np.dtype(object),
        "F4": np.dtype("<f4"),
    }
    lines = [
        "def decode(data):",
        "    size = len(data)",
        f"    if data[0] != {wire.FIELD_1}:",
        "        return None",
        "    length = data[1]",
        "    if length < 0x80:",
        "        pos = 2",
        "    else:",
        "        length, pos = read_varint(data, 1)",
        "    if pos + length != size:",
        "        return None",
    ]
    index = {key: n for n, key in enumerate(keys)}
    for n, key in enumerate(keys):
        names[f"K{n}"] = key
        if absent[key] is not None:
            names[f"fill{n}"] = absent[key]
    _Emitter(places, entries, keys, absent, index, names, lines).node(trie, 0, "    ", frozenset())
    exec(compile("\n".join(lines), f"<tfrec layouts of {len(layouts)} records>", "exec"), names)
    decode: Callable[[bytes], dict[Any, Any] | None] = names["decode"]
    return decode


_END: Any = object()  # in a trie of layouts: a layout ends at this node


class _Emitter:
    """Writes the lines of a trie of layouts: straight lines while one layout goes on, a test per
    layout where several part (each such block ends in a return, so the next test follows)."""

    def __init__(
        self,
        places: Sequence[list[Any]],
        entries: Mapping[Any, Entry],
        keys: Sequence[Any],
        absent: Mapping[Any, Callable[[], Any] | None],
        index: Mapping[Any, int],
        names: dict[str, Any],
        lines: list[str],
    ) -> None:
        self.places, self.entries, self.keys, self.absent = places, entries, keys, absent
        self.index, self.names, self.lines = index, names, lines

    def node(self, trie: dict[Any, Any], place: int, indent: str, present: frozenset[Any]) -> None:
        """The lines of the layouts of ``trie`` from ``place`` on, with ``present`` keys read."""
        lines = self.lines
        self.names[f"P{place}"] = self.places[place] if place < len(self.places) else None
        following = [entry for entry in trie if entry is not _END]
        if _END in trie:
            if not following:
                lines += [f"{indent}if pos != size:", f"{indent}    return None"]
                lines.append(self._result(indent, present))
                return
            lines += [f"{indent}if pos == size:", self._result(indent + "    ", present)]
        if len(following) == 1:  # one way on: straight lines, a mismatch returns None
            ((length, key),) = following
            heads = _head_lines(place, length, key, self.index.get(key), self.places[place][1], self.names)
            lines += [indent + line[4:] for line in heads]  # (written for the body's first level)
            self._value(trie[length, key], place, indent, present, key)
            return
        for length, key in following:  # layouts part here: each its test, then its own lines
            n = self.index.get(key)
            lines += [
                f"{indent}head = P{place}[1].get(data[pos : pos + {length}])",
                f"{indent}if head is not None and head[1] is {'None' if n is None else f'K{n}'}:",
                *([] if n is None else [f"{indent}    start = pos + {length}"]),
                f"{indent}    pos += head[0]",
            ]
            self._value(trie[length, key], place, indent + "    ", present, key)
        lines.append(f"{indent}return None")

    def _value(
        self, trie: dict[Any, Any], place: int, indent: str, present: frozenset[Any], key: Any
    ) -> None:
        """The value of the entry at ``place`` (``key``; None: not asked for), then what follows it."""
        if key is not None:
            n = self.index[key]
            finish, expression = self.entries[key]
            self.names[f"call{n}"] = finish
            call = f"call{n}"
            if expression is None:
                expression = f"{call}(data, start, pos)"
            expression = expression.replace("{call}", call)
            self.lines.append(f"{indent}v{n} = {expression}")
            # bytes (as they are or in an array) are never None; the rest may be
            if not expression.startswith(("data[", "array(")):
                self.lines += [f"{indent}if v{n} is None:", f"{indent}    return None"]
            present = present | {key}
        self.node(trie, place + 1, indent, present)

    def _result(self, indent: str, present: frozenset[Any]) -> str:
        """The return of the output of a layout holding the ``present`` keys (the others absent)."""
        values = []
        for n, key in enumerate(self.keys):
            if key in present:
                values.append(f"K{n}: v{n}")
            elif self.absent[key] is None:
                return f"{indent}return None"  # a required key missing: the walk never learns such a layout
            else:
                values.append(f"K{n}: fill{n}()")
        return f"{indent}return {{{', '.join(values)}}}"


def _head_lines(
    place: int, length: int, key: Any, n: int | None, heads: Mapping[bytes, Any], names: dict[str, Any]
) -> list[str]:
    """The lines that find the entry at ``place``: its head among those seen there (by the dict the
    walk keeps there), leaving ``pos`` at the entry's end and, for a wanted key, ``start`` at its
    values. When one head is all the place has seen (an entry whose lengths never vary: fixed counts
    of floats, bytes of one size), a comparison with it comes first: cheaper than a lookup."""
    want = "None" if n is None else f"K{n}"
    lookup = [
        f"    head = P{place}[1].get(data[pos : pos + {length}])",
        f"    if head is None or head[1] is not {want}:",
        "        return None",
        *([] if n is None else [f"    start = pos + {length}"]),
        "    pos += head[0]",
    ]
    if len(heads) != 1:
        return lookup
    ((known, head),) = heads.items()
    if len(known) != length or head[1] is not key:
        return lookup
    names[f"H{place}"] = known
    return [
        f"    if data.startswith(H{place}, pos):",
        *([] if n is None else [f"        start = pos + {length}"]),
        f"        pos += {head[0]}",
        "    else:",
        *("    " + line for line in lookup),
    ]
