"""``tfrec head`` on records of any size: large records are streamed and shown cut short (cli layer).

A record up to :data:`WHOLE_BYTES` (1 MiB) is read and shown whole, as ``tfrec cat`` shows it. A
larger one is never held: its frame is read in 1 MiB pieces, each piece goes through the data CRC,
and its Example (or SequenceExample) is walked on the wire as the pieces pass. A value is shown up to
:data:`SHOWN_BYTES` bytes and a list up to :data:`SHOWN_VALUES` values; what was cut short shows as
``{"truncated": <what is shown>, "bytes": <its size on the wire>}``. The record is printed only
once its CRC has matched, so damage is never shown as data. After any other damage the rest of the
file is read by the reader that skips damage (:func:`~tfrec.cli.reading.walk`), which reports it.

Example:
    >>> damage = []
    >>> for row in head_rows(["big.tfrecord"], damage, limit=1):
    ...     print(row)
    {'image': [{'truncated': {'b64': 'iVBORw0KGgo...'}, 'bytes': 2147483648}]}
"""

from __future__ import annotations

import contextlib
import io
import struct
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import IO, Any

import numpy as np

from ..convert import jsonable, record_to_json
from ..errors import DecodeError
from ..features import FeaturesDict
from ..record import masked_crc, resolve_compression
from ..record.compression import open_decompressed
from ..record.crc import crc_extender, mask
from ..record.frame import FRAMING, data_error
from .reading import Damage, Place, bare_message, walk

__all__ = ["SHOWN_BYTES", "SHOWN_VALUES", "WHOLE_BYTES", "first_is_example", "head_rows"]

WHOLE_BYTES = 1 << 20  # records up to this size are shown whole
SHOWN_BYTES = 1024  # of a longer bytes value, the first bytes shown
SHOWN_VALUES = 100  # of a longer list (values, or steps of a feature list), the first shown
_PIECE = 1 << 20  # bytes read at once from a large record
_KEY_BYTES = 4096  # of a longer feature key, the first bytes shown


class _Damaged(Exception):
    """Internal: the frame being read is damaged; the reader that skips damage takes over."""


class _Data:
    """The data bytes of one large frame, read in pieces through the CRC; never more than a piece
    is held."""

    def __init__(self, stream: IO[bytes], length: int) -> None:
        self.stream = stream
        self.left = length  # bytes of the frame not yet read from the stream
        self.buffer = b""
        self.pos = 0
        self.crc = 0
        self.extend = crc_extender()

    def _fill(self, need: int) -> None:
        while len(self.buffer) - self.pos < need:
            if self.left == 0:
                raise DecodeError("a field runs past the end of the record")
            try:
                piece = self.stream.read(min(_PIECE, self.left))
            except (OSError, EOFError, zlib.error):
                raise _Damaged from None
            if not piece:
                raise _Damaged  # truncated
            self.left -= len(piece)
            self.crc = self.extend(self.crc, piece)
            self.buffer = self.buffer[self.pos :] + piece
            self.pos = 0

    def at_end(self) -> bool:
        return self.left == 0 and self.pos == len(self.buffer)

    def read(self, size: int) -> bytes:
        """The next ``size`` bytes (a small size: the caller bounds it)."""
        self._fill(size)
        data = self.buffer[self.pos : self.pos + size]
        self.pos += size
        return data

    def skip(self, size: int) -> None:
        """Pass over ``size`` bytes, reading them through the CRC a piece at a time."""
        while size:
            if self.pos == len(self.buffer):
                self._fill(1)
            step = min(size, len(self.buffer) - self.pos)
            self.pos += step
            size -= step

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.read(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise DecodeError("a varint longer than 10 bytes")

    def field(self) -> tuple[int, int]:
        """The next field's number and wire type."""
        tag = self.varint()
        return tag >> 3, tag & 7

    def skip_value(self, wire: int) -> None:
        if wire == 0:
            self.varint()
        elif wire == 1:
            self.skip(8)
        elif wire == 2:
            self.skip(self.varint())
        elif wire == 5:
            self.skip(4)
        else:
            raise DecodeError(f"wire type {wire} has no place in an Example")

    def message(self, size: int, field: Callable[[int, int, int], None]) -> None:
        """Walk ``size`` bytes of a message, calling ``field(number, wire, end)`` for each field
        (which consumes its value); ``end`` is where the message ends (a count of bytes left)."""
        end = self.remaining() - size
        while self.remaining() > end:
            number, wire = self.field()
            field(number, wire, end)
        if self.remaining() != end:
            raise DecodeError("a field runs past the end of its message")

    def remaining(self) -> int:
        return self.left + len(self.buffer) - self.pos


def _cut(shown: Any, size: int, whole: bool) -> Any:
    return shown if whole else {"truncated": shown, "bytes": size}


def _bytes_value(data: _Data) -> Any:
    size = data.varint()
    head = data.read(min(size, SHOWN_BYTES))
    data.skip(size - len(head))
    return _cut(jsonable(head), size, len(head) == size)


def _feature(data: _Data, size: int) -> Any:
    """One Feature: its values, cut short past SHOWN_VALUES values or SHOWN_BYTES bytes."""
    found: Any = []

    def kind(number: int, wire: int, end: int) -> None:
        nonlocal found
        if number in (1, 2, 3) and wire == 2:
            found = _values(data, number, data.varint())
        else:
            data.skip_value(wire)

    data.message(size, kind)
    return found


def _values(data: _Data, kind: int, size: int) -> Any:
    """A BytesList (1), FloatList (2) or Int64List (3) of ``size`` bytes."""
    values: list[Any] = []
    end = data.remaining() - size
    while data.remaining() > end:
        if len(values) >= SHOWN_VALUES:
            data.skip(data.remaining() - end)
            return {"truncated": values, "bytes": size}
        number, wire = data.field()
        if number != 1:
            data.skip_value(wire)
        elif kind == 1 and wire == 2:
            values.append(_bytes_value(data))
        elif kind == 2 and wire == 5:
            values.append(jsonable(np.float32(struct.unpack("<f", data.read(4))[0])))
        elif kind == 3 and wire == 0:
            values.append(_int64(data.varint()))
        elif kind in (2, 3) and wire == 2:  # packed
            packed = data.varint()
            stop = data.remaining() - packed
            while data.remaining() > stop and len(values) < SHOWN_VALUES:
                if kind == 2:
                    values.append(jsonable(np.float32(struct.unpack("<f", data.read(4))[0])))
                else:
                    values.append(_int64(data.varint()))
            if data.remaining() > stop:
                data.skip(data.remaining() - stop)
                data.skip(data.remaining() - end)
                return {"truncated": values, "bytes": size}
        else:
            raise DecodeError(
                f"a value of wire type {wire} in a {('', 'bytes', 'float', 'int64')[kind]} list"
            )
    return values


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _key(data: _Data) -> str:
    size = data.varint()
    head = data.read(min(size, _KEY_BYTES))
    data.skip(size - len(head))
    text = head.decode("utf-8", "replace")
    return text if len(head) == size else f"{text}... ({size} bytes)"


def _entries(data: _Data, size: int, value: Callable[[int], Any]) -> dict[str, Any]:
    """A map<string, V> field's entries within ``size`` bytes of its container."""
    out: dict[str, Any] = {}

    def entry(number: int, wire: int, end: int) -> None:
        if number != 1 or wire != 2:
            data.skip_value(wire)
            return
        key, found = "", None

        def part(number: int, wire: int, end: int) -> None:
            nonlocal key, found
            if number == 1 and wire == 2:
                key = _key(data)
            elif number == 2 and wire == 2:
                found = value(data.varint())
            else:
                data.skip_value(wire)

        data.message(data.varint(), part)
        out[key] = [] if found is None else found

    data.message(size, entry)
    return out


def _steps(data: _Data, size: int) -> Any:
    """A FeatureList: its Features, one per step, cut short past SHOWN_VALUES steps."""
    steps: list[Any] = []
    end = data.remaining() - size
    while data.remaining() > end:
        if len(steps) >= SHOWN_VALUES:
            data.skip(data.remaining() - end)
            return {"truncated": steps, "bytes": size}
        number, wire = data.field()
        if number == 1 and wire == 2:
            steps.append(_feature(data, data.varint()))
        else:
            data.skip_value(wire)
    return steps


def _example(data: _Data, length: int) -> dict[str, Any]:
    """A large record as record_to_json shows a record without features, values cut short."""
    context: dict[str, Any] = {}
    lists: dict[str, Any] = {}

    def top(number: int, wire: int, end: int) -> None:
        if number == 1 and wire == 2:
            context.update(_entries(data, data.varint(), lambda size: _feature(data, size)))
        elif number == 2 and wire == 2:
            lists.update(_entries(data, data.varint(), lambda size: _steps(data, size)))
        else:
            data.skip_value(wire)

    data.message(length, top)
    return {"context": context, "feature_lists": lists} if lists else context


def _frames(
    path: str, damage: list[Damage]
) -> Generator[tuple[int, int, bytes | dict[str, Any]], None, None]:
    """``(index, offset, record or its view)`` of ``path``; at damage, hands over to walk()."""
    index = offset = 0
    with open(path, "rb") as raw:
        stream = open_decompressed(raw, resolve_compression("auto", path))
        try:
            while True:
                try:
                    header = stream.read(12)
                    if not header:
                        return
                    if len(header) < 12:
                        raise _Damaged
                    length, stored = struct.unpack("<QI", header)
                    if masked_crc(header[:8]) != stored:
                        raise _Damaged
                    if length <= WHOLE_BYTES:
                        frame = stream.read(length + 4)
                        if len(frame) < length + 4:
                            raise _Damaged
                        record = frame[:length]
                        if masked_crc(record) != struct.unpack("<I", frame[length:])[0]:
                            raise _Damaged
                        yield index, offset, record
                    else:
                        data = _Data(stream, length)
                        problem = None
                        try:
                            view = _example(data, length)
                        except DecodeError as exc:  # damage, unless the CRC matches
                            problem = exc
                            data.skip(data.remaining())
                        footer = stream.read(4)
                        if len(footer) < 4:
                            raise _Damaged
                        stored, computed = struct.unpack("<I", footer)[0], mask(data.crc)
                        if stored != computed:  # reported here: the reader would hold the record whole
                            error = data_error(
                                length, stored, computed, path=path, index=index, offset=offset
                            )
                            damage.append(Damage(path, index, offset, bare_message(str(error), path)))
                        elif problem is not None:
                            raise DecodeError(f"{path}, record {index}: {problem}") from None
                        else:
                            yield index, offset, view
                    index += 1
                    offset += length + FRAMING
                except (_Damaged, OSError, EOFError, zlib.error):
                    break
        finally:
            if stream is not raw:
                stream.close()
    # Damage: the reader that skips it reports it and carries on from there.
    for place in walk(path, damage, start_offset=offset, start_index=index):
        yield place.index, place.offset, _large_or_whole(place)


def _large_or_whole(place: Place) -> bytes | dict[str, Any]:
    if len(place.record) <= WHOLE_BYTES:
        return place.record
    try:
        return _example(_Data(io.BytesIO(place.record), len(place.record)), len(place.record))
    except DecodeError as exc:
        raise DecodeError(f"{place.path}, record {place.index}: {exc}") from None


def head_rows(
    paths: list[str],
    damage: list[Damage],
    limit: int | None,
    features: FeaturesDict | None = None,
    *,
    sequence: bool = False,
) -> Iterator[dict[str, Any]]:
    """The first ``limit`` records of ``paths`` as JSON-ready dicts; large ones cut short (shown
    without ``features``, which decode whole records only). Damage is added to ``damage``."""
    shown = 0
    if limit is not None and limit <= 0:
        return
    for path in paths:
        with contextlib.closing(_frames(path, damage)) as frames:
            for index, _, record in frames:
                if isinstance(record, dict):
                    yield record
                else:
                    try:
                        yield record_to_json(record, features, sequence=sequence)
                    except DecodeError as exc:
                        raise DecodeError(f"{path}, record {index}: {exc}") from None
                shown += 1
                if limit is not None and shown >= limit:
                    return  # before the next record is read: it may be large


def first_is_example(path: str) -> bool:
    """Whether the first intact record of ``path`` is an Example or SequenceExample (``True`` for a
    file without one); a large first record is walked on the wire, never held."""
    with contextlib.closing(_frames(path, [])) as frames:
        try:
            first = next(frames, None)
        except DecodeError:
            return False
    if first is None or isinstance(first[2], dict):
        return True
    try:
        record_to_json(first[2])
    except DecodeError:
        return False
    return True
