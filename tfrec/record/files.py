"""Opening a path that must be a regular file, without ever blocking (record layer).

Reading records by path, indexing, random access and index files all need a
file with a size: a FIFO's ``open()`` waits for a writer that may never come,
and a character device (``/dev/zero``, ``/dev/urandom``) never ends. So a path
is opened with ``O_NONBLOCK`` (which makes opening a FIFO return at once and
changes nothing for a regular file) and checked with ``fstat`` on the open
descriptor, so a file swapped for a FIFO between a check and the open is
refused too. A pipe or device is still read when given as a stream object
(``read_records(sys.stdin.buffer)``): the caller chose to wait on it.

Example:
    >>> fd = open_regular("train.tfrecord", purpose="an index")
    >>> os.close(fd)
    >>> open_regular("/dev/zero", purpose="an index")
    Traceback (most recent call last):
    InvalidArgumentError: /dev/zero: an index needs a regular file, and this is a character device ...

Writers name their output by a path or a URL: :func:`local_file` tells them apart
(``file://`` URLs are local paths), and :func:`url_filesystem` opens any other URL's
filesystem through fsspec (the optional ``fsspec`` extra, imported only then).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import IO, Any

from ..errors import InvalidArgumentError, MissingFileError, OptionalDependencyError

__all__ = [
    "describe_kind",
    "exists",
    "local_file",
    "move_file",
    "open_new",
    "open_regular",
    "remove_file",
    "url_filesystem",
]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_O_BINARY = getattr(os, "O_BINARY", 0)

_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def describe_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (for messages)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def open_regular(path: str, *, purpose: str, hint: str = "") -> int:
    """Open ``path`` for reading and return its descriptor; refuse anything but a regular file.

    Never blocks (a FIFO is opened non-blocking, seen to be a FIFO, and closed).

    Args:
        path: the file.
        purpose: what needs it, for the message (``"random access"``).
        hint: appended to the message when the path is not a regular file.

    Raises:
        MissingFileError: no such file.
        InvalidArgumentError: the path is a FIFO, a device, a socket, a directory
            or a symbolic link loop.
    """
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise MissingFileError(f"{path}: no such file", path=path) from None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise InvalidArgumentError(f"{path}: a loop of symbolic links, not a file") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InvalidArgumentError(
                f"{path}: {purpose} needs a regular file, and this is {describe_kind(mode)}{hint}"
            )
        if _FLAGS & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)  # as an ordinary open would leave it
    except BaseException:
        os.close(fd)
        raise
    return fd


def local_file(path: str) -> str | None:
    """The local path of a plain path or a ``file://`` URL; ``None`` for any other URL.

    Example:
        >>> local_file("file:///tmp/x.tfrecord"), local_file("memory://x.tfrecord")
        ('/tmp/x.tfrecord', None)
    """
    if path.startswith("file://"):
        return path[len("file://") :]
    return None if _URL.match(path) else path


def url_filesystem(url: str, purpose: str) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path within it; fsspec is imported only here.

    Raises:
        OptionalDependencyError: fsspec is not installed (names the ``fsspec`` extra).

    Example:
        >>> fs, path = url_filesystem("memory://out/x.tfrecord", "Writing memory://out/x.tfrecord")
    """
    try:
        import fsspec  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise OptionalDependencyError("fsspec", "fsspec", purpose) from None
    fs, inner = fsspec.core.url_to_fs(url)
    return fs, inner


def open_new(path: str) -> IO[bytes]:
    """Create ``path`` (a local path or a URL) and open it for writing bytes; the caller closes it.

    A local file must not exist yet (it gets the usual ``0o666 & ~umask`` mode); a URL's object
    is uploaded by fsspec when the file is closed.
    """
    local = local_file(path)
    if local is None:
        fs, inner = url_filesystem(path, f"Writing {path}")
        stream: IO[bytes] = fs.open(inner, "wb")
        return stream
    fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o666)
    return os.fdopen(fd, "wb")


def move_file(source: str, target: str) -> None:
    """Rename ``source`` to ``target`` (both local, or both URLs of one filesystem), replacing it.

    Locally an atomic ``os.replace``; on an object store fsspec copies and deletes, so ``target``
    appears only once whole.
    """
    local = local_file(source)
    if local is not None:
        os.replace(local, local_file(target) or target)
        return
    fs, inner = url_filesystem(source, f"Writing {target}")
    fs.mv(inner, url_filesystem(target, f"Writing {target}")[1])


def remove_file(path: str) -> None:
    """Remove ``path`` (a local path or a URL); one that is not there is no error."""
    local = local_file(path)
    try:
        if local is not None:
            os.remove(local)
        else:
            fs, inner = url_filesystem(path, f"Writing {path}")
            fs.rm_file(inner)
    except FileNotFoundError:
        pass


def exists(path: str) -> bool:
    """Whether anything (file, directory, link) is at ``path`` (a local path or a URL)."""
    local = local_file(path)
    if local is not None:
        return os.path.lexists(local)
    fs, inner = url_filesystem(path, f"Writing {path}")
    return bool(fs.exists(inner))
