"""Locks that a forked child finds unlocked (base layer).

A fork copies the process with only the thread that forked. A lock that another thread held at
that moment stays held in the child for ever, and the child's first use of it hangs: a
``DataLoader`` or a ``multiprocessing`` pool that forks while a read-ahead thread opens a file
would get workers that never read. Each lock that tfrec's threads share is registered here
(:func:`renew_in_child`), and a forked child replaces every registered lock with a new one
before it runs anything else. Whatever such a lock guards is changed by single assignments
(a descriptor, a map, a memo entry), so the child finds it as the parent's thread left it
between two of them: at worst it opens a file or computes a memo again.

Example:
    >>> self._lock = threading.Lock()
    >>> renew_in_child(self, "_lock")   # a forked child finds a new, unlocked lock there
"""

from __future__ import annotations

import os
import threading
import weakref

__all__ = ["renew_in_child"]

# id(owner) -> (a weak reference to the owner, the names of its locks); an entry leaves with its owner.
_OWNERS: dict[int, tuple[weakref.ref[object], tuple[str, ...]]] = {}


def renew_in_child(owner: object, *names: str) -> None:
    """Give ``owner`` new ``threading.Lock`` objects as the attributes ``names`` in every forked
    child (``owner`` may be a module, for its global locks). Kept for as long as ``owner`` lives.

    Example:
        >>> _sources_lock = threading.Lock()
        >>> renew_in_child(sys.modules[__name__], "_sources_lock")
    """
    key = id(owner)
    known = _OWNERS.get(key)
    if known is not None and known[0]() is owner:  # registered before: its locks, and these
        names = known[1] + names

    def forget(_: weakref.ref[object]) -> None:
        _OWNERS.pop(key, None)

    _OWNERS[key] = (weakref.ref(owner, forget), names)


def _renew() -> None:
    for ref, names in list(_OWNERS.values()):
        owner = ref()
        if owner is not None:
            for name in names:
                setattr(owner, name, threading.Lock())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew)
