"""Compression of whole TFRecord streams: none, gzip or zlib (record layer).

TensorFlow compresses the stream of frames, not each record. Reading gzip goes
through concatenated members (as TensorFlow does); zlib is one stream.

Example:
    >>> resolve_compression("auto", "train.tfrecord.gz")
    'gzip'
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
from typing import IO, Literal

from ..errors import InvalidArgumentError

__all__ = ["Compression", "DeflateWriter", "InflateReader", "resolve_compression"]

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


def open_decompressed(raw: IO[bytes], compression: Compression) -> IO[bytes]:
    """Wrap ``raw`` so that reads return the decompressed frames."""
    if compression is None:
        return raw
    return InflateReader(raw, compression)  # type: ignore[return-value]


def open_compressed(raw: IO[bytes], compression: Compression, level: int | None) -> IO[bytes]:
    """Wrap ``raw`` so that writes are compressed; closing the wrapper finishes the stream."""
    if compression is None:
        return raw
    check_level(level)
    return DeflateWriter(raw, compression, zlib.Z_DEFAULT_COMPRESSION if level is None else level)  # type: ignore[return-value]


def check_level(level: int | None) -> None:
    """Reject a compression level zlib would not accept (``None`` is zlib's default, as in TF)."""
    if level is not None and not -1 <= level <= 9:
        raise InvalidArgumentError(
            f"compression_level must be between 0 and 9 (or -1 for the default), not {level}"
        )
