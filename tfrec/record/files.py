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
"""

from __future__ import annotations

import errno
import os
import stat

from ..errors import InvalidArgumentError, MissingFileError

__all__ = ["describe_kind", "open_regular"]

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
