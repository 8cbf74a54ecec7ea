"""Compression of whole TFRecord streams: none, gzip or zlib (record layer).

TensorFlow compresses the stream of frames, not each record. Reading gzip goes
through concatenated members (as TensorFlow does); zlib is one stream.

Example:
    >>> resolve_compression("auto", "train.tfrecord.gz")
    'gzip'
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable
from typing import IO, Any, Literal

from ..errors import InvalidArgumentError

__all__ = [
    "GZIP_MEMBER_BYTES",
    "GZIP_MEMBER_MARK",
    "MEMBER_HEADER",
    "Compression",
    "DeflateWriter",
    "GzipMembersWriter",
    "InflateReader",
    "member_marked",
    "resolve_compression",
]

Compression = Literal["gzip", "zlib"] | None

_SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".zz": "zlib", ".zlib": "zlib"}
_NAMES: dict[str, Compression] = {"": None, "none": None, "gzip": "gzip", "zlib": "zlib"}
_CHUNK = 256 * 1024
_FEED = 32 * 1024  # compressed bytes given to the inflater at once: bounds the copies it makes

# Leading bytes that identify a compressed stream, for hints in error messages.
GZIP_MAGIC = b"\x1f\x8b"


def looks_like(head: bytes) -> Compression:
    """Guess the compression of a stream from its first bytes (for hints only)."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        return "zlib"
    return None


def resolve_compression(compression: str | None, path: str | os.PathLike[str] | None) -> Compression:
    """Normalise a ``compression`` argument to ``None``, ``"gzip"`` or ``"zlib"``.

    ``"auto"`` infers it from the file suffix (``.gz``/``.gzip`` -> gzip,
    ``.zz``/``.zlib`` -> zlib, anything else -> none); TensorFlow's spellings
    ``"GZIP"``, ``"ZLIB"`` and ``""`` are accepted.

    Example:
        >>> resolve_compression("GZIP", None)
        'gzip'
    """
    if compression is None:
        return None
    if not isinstance(compression, str):
        raise InvalidArgumentError(f"compression must be a string or None, not {type(compression).__name__}")
    name = compression.strip().lower()
    if name == "auto":
        if path is None:
            return None
        suffix = os.path.splitext(os.fspath(path))[1].lower()
        return _SUFFIXES.get(suffix)  # type: ignore[return-value]
    if name not in _NAMES:
        raise InvalidArgumentError(
            f"unknown compression {compression!r}: expected None, 'gzip', 'zlib' or 'auto'"
        )
    return _NAMES[name]


class InflateReader:
    """Read-only file-like view of the decompressed bytes of a gzip or zlib stream.

    gzip: concatenated members are read through, as TensorFlow does; zlib: one
    stream. Anything else after the end is an error. When the stream is
    damaged, every byte that decompresses before the damage is returned first;
    the error is raised by the next :meth:`read`.

    Inflation is bounded: a :meth:`read` of ``size`` bytes inflates at most
    ``max(size, 256 KiB)`` bytes and feeds the inflater at most 32 KiB of input
    at a time, so memory stays a small multiple of ``size`` whatever the
    compression ratio, and the work is linear in the decompressed size.
    """

    def __init__(self, raw: IO[bytes], compression: Literal["gzip", "zlib"]) -> None:
        self._raw = raw
        self._compression = compression
        self._wbits = zlib.MAX_WBITS + 16 if compression == "gzip" else zlib.MAX_WBITS
        self._inflate = zlib.decompressobj(self._wbits)
        self._input = b""  # compressed bytes read from raw, given to the inflater from _input_at on
        self._input_at = 0
        self._output = b""  # inflated bytes not yet returned, from _output_at on
        self._output_at = 0
        self._started = False  # the current member/stream has received input
        self._salvaging = False  # after damage: feed one byte at a time up to the damaged one
        self._error: Exception | None = None

    def read(self, size: int) -> bytes:
        """Return ``size`` bytes, fewer only at the end of the stream or before an error."""
        at = self._output_at
        have = len(self._output) - at
        if have >= size:
            self._output_at = at + size
            return self._output[at : at + size]
        parts = [self._output[at:]] if have else []
        self._output, self._output_at = b"", 0
        while have < size and self._error is None:
            try:
                piece = self._inflate_more(max(size - have, _CHUNK))
            except (zlib.error, EOFError) as exc:
                self._error = exc
                break
            if piece is None:
                break
            if have + len(piece) > size:  # keep the rest for the next read
                take = size - have
                parts.append(piece[:take])
                self._output, self._output_at = piece, take
                have = size
            elif piece:
                parts.append(piece)
                have += len(piece)
        if not have and self._error is not None:
            error, self._error = self._error, None
            raise error
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _inflate_more(self, limit: int) -> bytes | None:
        """Inflate at most ``limit`` more bytes (maybe none yet); None at the clean end of the stream."""
        if self._inflate.eof:
            if len(self._input) - self._input_at < len(GZIP_MAGIC):  # the next member's magic may be cut
                self._input, self._input_at = self._input[self._input_at :], 0
                while len(self._input) < len(GZIP_MAGIC) and (more := self._raw.read(_CHUNK)):
                    self._input += more
                if not self._input:
                    return None
            if self._compression == "zlib" or not self._input.startswith(GZIP_MAGIC, self._input_at):
                raise zlib.error(f"unexpected data after the end of the {self._compression} stream")
            self._inflate = zlib.decompressobj(self._wbits)  # the next gzip member
            self._salvaging = False
        if self._input_at == len(self._input):
            self._input, self._input_at = self._raw.read(_CHUNK), 0
            if not self._input:
                if not self._started:
                    return None
                pending = self._inflate.decompress(b"", limit)  # output the inflater still holds
                if pending or self._inflate.eof:
                    return pending
                raise EOFError(f"the {self._compression} stream ends before its end-of-stream marker")
        self._started = True
        at = self._input_at
        if self._salvaging:
            # One byte gives at most a few KiB, and the damaged byte raises again.
            self._input_at = at + 1
            return self._inflate.decompress(self._input[at : at + 1])
        piece = memoryview(self._input)[at : at + _FEED]
        saved = self._inflate.copy()
        try:
            out = self._inflate.decompress(piece, limit)
        except zlib.error:
            # Salvage what decompresses before the damage, then fail.
            self._inflate = saved
            self._salvaging = True
            return b""
        left = self._inflate.unused_data if self._inflate.eof else self._inflate.unconsumed_tail
        self._input_at = at + len(piece) - len(left)
        return out

    def close(self) -> None:
        """Drop buffers; the raw stream is closed by whoever opened it."""
        self._input = self._output = b""
        self._input_at = self._output_at = 0


class DeflateWriter:
    """Write-only file-like object that deflates everything into one gzip or zlib stream.

    Uses the parameters of TensorFlow's writer (memLevel 9, one gzip member with
    mtime 0, partial flushes), so the same records give the same bytes as
    ``tf.io.TFRecordWriter``.
    """

    def __init__(self, raw: IO[bytes], compression: Literal["gzip", "zlib"], level: int) -> None:
        self._raw = raw
        window = zlib.MAX_WBITS + 16 if compression == "gzip" else zlib.MAX_WBITS
        self._deflate = zlib.compressobj(level, zlib.DEFLATED, window, memLevel=9)

    def write(self, data: bytes) -> int:
        self._raw.write(self._deflate.compress(data))
        return len(data)

    def writelines(self, parts: Iterable[bytes]) -> None:
        for part in parts:
            self.write(part)

    def flush(self) -> None:
        """Push everything written so far to ``raw``: all of it decompresses from the file."""
        self._raw.write(self._deflate.flush(zlib.Z_PARTIAL_FLUSH))
        self._raw.flush()

    def close(self) -> None:
        """Finish the stream; the raw stream is closed by whoever opened it."""
        self._raw.write(self._deflate.flush(zlib.Z_FINISH))
        self._raw.flush()


# Uncompressed bytes of records per gzip member when members are asked for (ShardedWriter with an
# index): reading one record at random inflates its member, ~3 ms for 1 MiB; smaller members compress a
# little worse (each restarts the dictionary) and make the index's member column longer.
GZIP_MEMBER_BYTES = 1 << 20


# Every member tfrec writes in a series carries this gzip header: FEXTRA (RFC 1952 2.3.1.1) with one
# empty subfield "TR", which says "this member ends on a record boundary". Readers skip extra fields;
# build_index needs the mark to index a stream of one member (a stream of one member written by
# anything else, TensorFlow included, is one block of compression that can only be read from its start).
GZIP_MEMBER_MARK = b"TR"
MEMBER_HEADER = (
    GZIP_MAGIC
    + b"\x08\x04"
    + b"\x00" * 4
    + b"\x00\xff"
    + struct.pack("<H", 4)
    + GZIP_MEMBER_MARK
    + b"\x00\x00"
)


def member_marked(head: bytes) -> bool:
    """Whether the gzip member starting ``head`` (at least its first 16 bytes) carries the mark."""
    return head.startswith(MEMBER_HEADER[:4]) and head[10:16] == MEMBER_HEADER[10:16]


class GzipMembersWriter:
    """Write-only file-like object that deflates frames into a series of gzip members.

    Concatenated members are one valid gzip stream (RFC 1952): TensorFlow,
    ``zcat`` and every gzip reader read them through. A member is ended before
    the frame that follows ``member_bytes`` of uncompressed frames, so members
    end on record boundaries and a record can be read by inflating its member
    alone. Each member's header carries :data:`GZIP_MEMBER_MARK`.
    :attr:`members` lists ``(compressed offset, first record)`` of each.

    Args:
        raw: the binary stream to write to, at its start (offsets count from there).
        level: zlib level.
        member_bytes: uncompressed bytes of frames after which a member ends.

    Example:
        >>> stream = GzipMembersWriter(file, 6, 1 << 20)
        >>> stream.write_frames([header, data, footer])   # one frame: header, data, footer
        >>> stream.close(); stream.members
        [(0, 0)]
    """

    def __init__(self, raw: IO[bytes], level: int, member_bytes: int) -> None:
        self._raw = raw
        self._level = level
        self._member_bytes = member_bytes
        self._deflate: Any = None  # the open member's raw deflate, None between members
        self._crc = 0  # CRC-32 of the open member's uncompressed bytes, for its trailer
        self._filled = 0  # uncompressed bytes in the open member
        self._written = 0  # compressed bytes written to raw
        self._records = 0  # frames written
        self.members: list[tuple[int, int]] = []

    def write_frames(self, parts: list[bytes]) -> None:
        """Write whole frames, given as ``header, data, footer`` triplets."""
        run: list[bytes] = []
        for i in range(0, len(parts), 3):
            if self._deflate is None or self._filled >= self._member_bytes:
                self._output(run)
                run = []
                self._end_member()
                self._start_member()
            frame = parts[i : i + 3]
            run += frame
            self._filled += len(frame[0]) + len(frame[1]) + len(frame[2])
            self._records += 1
        self._output(run)

    def _start_member(self) -> None:
        self.members.append((self._written, self._records))
        self._deflate = zlib.compressobj(self._level, zlib.DEFLATED, -zlib.MAX_WBITS, memLevel=9)
        self._crc = self._filled = 0
        self._put(MEMBER_HEADER)

    def _output(self, parts: list[bytes]) -> None:
        if parts:
            data = b"".join(parts)
            self._crc = zlib.crc32(data, self._crc)
            self._put(self._deflate.compress(data))

    def _put(self, data: bytes) -> None:
        if data:
            self._raw.write(data)
            self._written += len(data)

    def _end_member(self) -> None:
        if self._deflate is not None:
            self._put(
                self._deflate.flush(zlib.Z_FINISH) + struct.pack("<II", self._crc, self._filled & 0xFFFFFFFF)
            )
            self._deflate = None

    def write(self, data: bytes) -> int:
        raise InvalidArgumentError("GzipMembersWriter writes whole frames only (write_frames)")

    def flush(self) -> None:
        """Push everything written so far to ``raw`` (the open member stays open)."""
        if self._deflate is not None:
            self._put(self._deflate.flush(zlib.Z_PARTIAL_FLUSH))
        self._raw.flush()

    def close(self) -> None:
        """End the last member; with no record at all, write one empty member (a valid gzip file, as
        TensorFlow writes); the raw stream is closed by whoever opened it."""
        if self._deflate is None and not self.members:
            self._start_member()
            self.members.clear()  # a member with no record: nothing for an index
        self._end_member()
        self._raw.flush()


def open_decompressed(raw: IO[bytes], compression: Compression) -> IO[bytes]:
    """Wrap ``raw`` so that reads return the decompressed frames."""
    if compression is None:
        return raw
    return InflateReader(raw, compression)  # type: ignore[return-value]


def open_compressed(
    raw: IO[bytes], compression: Compression, level: int | None, member_bytes: int | None = None
) -> IO[bytes]:
    """Wrap ``raw`` so that writes are compressed; closing the wrapper finishes the stream.

    With ``member_bytes`` (gzip only), a :class:`GzipMembersWriter`.
    """
    if compression is None:
        return raw
    check_level(level)
    zlib_level = zlib.Z_DEFAULT_COMPRESSION if level is None else level
    if member_bytes is not None and compression == "gzip":
        return GzipMembersWriter(raw, zlib_level, member_bytes)  # type: ignore[return-value]
    return DeflateWriter(raw, compression, zlib_level)  # type: ignore[return-value]


def check_level(level: int | None) -> None:
    """Reject a compression level zlib would not accept (``None`` is zlib's default, as in TF)."""
    if level is not None and not -1 <= level <= 9:
        raise InvalidArgumentError(
            f"compression_level must be between 0 and 9 (or -1 for the default), not {level}"
        )
