"""One policy for the memos kept between calls: bounded, thread-safe, never changing a result (base layer).

Parsing and framing remember what costs as much as a small batch to recompute: validated parse
plans, a batch's template layout, frame headers by length. Each memo is a :class:`BoundedCache`:

- **bounded**: at most ``size`` entries; when full, it is emptied before the next one goes in (the
  working set is a few entries per writer or schema, so starting over costs one recomputation each);
- **thread-safe**: reads take no lock (a dict lookup is atomic), inserts and evictions take one;
- **never affects results**: a value depends on its key alone, so a race or an eviction can only
  make tfrec compute the value again.

Example:
    >>> squares = BoundedCache(2, compute=lambda n: n * n)
    >>> squares[3]
    9
    >>> clear_all()  # every cache of the process, e.g. between tests
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from .forking import renew_in_child

__all__ = ["BoundedCache", "clear_all"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_ALL: weakref.WeakValueDictionary[int, BoundedCache[Hashable, object]] = weakref.WeakValueDictionary()


class BoundedCache(dict[K, V], Generic[K, V]):
    """A dict of at most ``size`` entries; ``cache[key]`` computes a missing value when ``compute``
    is given (a hit stays a plain dict lookup: this sits on per-record paths).

    Example:
        >>> plans = BoundedCache(64)
        >>> plans.get("spec") is None
        True
        >>> plans.put("spec", "plan")
        'plan'
    """

    def __init__(self, size: int, compute: Callable[[K], V] | None = None) -> None:
        super().__init__()
        self.size = size
        self._compute = compute
        self._lock = threading.Lock()
        renew_in_child(self, "_lock")
        _ALL[id(self)] = self  # type: ignore[assignment]

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` for ``key`` (emptying the cache first when it is full); return it."""
        with self._lock:
            if len(self) >= self.size and key not in self:
                super().clear()
            self[key] = value
        return value

    def __missing__(self, key: K) -> V:
        if self._compute is None:
            raise KeyError(key)
        return self.put(key, self._compute(key))

    def clear(self) -> None:
        with self._lock:
            super().clear()

    def __reduce__(self) -> tuple[object, ...]:  # a memo is not state: a copy starts empty
        return (type(self), (self.size, self._compute))


def clear_all() -> None:
    """Empty every cache of the process (results never depend on them; tests use this to start cold)."""
    for cache in list(_ALL.values()):
        cache.clear()
