"""Checking the arguments users pass: every bad one is an :class:`~tfrec.InvalidArgumentError` naming it.

Example:
    >>> check_count("num_workers", 2, allow_zero=True)
    2
    >>> check_choice("on_error", "skip", ON_ERROR)
    'skip'
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

import numpy as np

from .errors import InvalidArgumentError

ON_ERROR = ("raise", "skip", "warn")  # what readers do with a damaged record

T = TypeVar("T")


def check_count(name: str, value: Any, *, allow_zero: bool = False) -> int:
    """``value`` as an int of at least 1 (or 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{name} must be an integer, not {type(value).__name__}")
    if value < 0 or (value == 0 and not allow_zero):
        raise InvalidArgumentError(f"{name} must be {'>= 0' if allow_zero else '>= 1'}, not {value}")
    return int(value)


def check_choice(name: str, value: T, choices: Collection[T]) -> T:
    """``value`` if it is one of ``choices``."""
    if value not in choices:
        names = [repr(choice) for choice in choices]
        listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
        raise InvalidArgumentError(f"{name} must be {listed}, not {value!r}")
    return value
