"""Column and key names as real tables have them -> feature names (convert layer).

The rule, for CSV headers, JSON Lines keys and Parquet columns alike:

* a leading UTF-8 byte order mark (``\\ufeff``) and the spaces around a CSV header are dropped;
* spaces, dots and any other characters are kept as they are (``sepal length (cm)``);
* a ``/`` nests, as in tensorflow_datasets: ``od280/od315_of_diluted_wines`` becomes the feature
  ``od280`` holding ``od315_of_diluted_wines``, whose stored key is the name as written;
* an empty name (or an empty part between ``/``), a name given twice, and a name that is both a
  value and a group (``a`` and ``a/b``) are a :class:`~tfrec.ConvertError` naming the column:
  rename it (``--columns`` for CSV).

Example:
    >>> nest({"od280/od315": 3.1, "alcohol": 14.2})
    {'od280': {'od315': 3.1}, 'alcohol': 14.2}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConvertError

__all__ = ["check_names", "clean_name", "nest"]


def clean_name(name: str) -> str:
    """``name`` without a byte order mark and surrounding spaces.

    Example:
        >>> clean_name("\\ufeffid ")
        'id'
    """
    return name.lstrip("\ufeff").strip()


def check_names(names: Sequence[str], *, path: str | None = None, where: str | None = None) -> bool:
    """Check ``names`` against the rule above; returns whether any nests (holds a ``/``).

    Example:
        >>> check_names(["alcohol", "od280/od315"])
        True
    """
    seen: set[str] = set()
    for number, name in enumerate(names, 1):
        if not name or any(not part for part in name.split("/")):
            raise ConvertError(
                f"column {number} has an empty name{f' ({name!r})' if name else ''}; "
                "name every column (--columns A,B,... replaces a CSV header)",
                path=path,
                where=where,
            )
        if name in seen:
            raise ConvertError(
                f"column name {name!r} is given twice; names must be unique "
                "(--columns A,B,... replaces a CSV header)",
                path=path,
                where=where,
            )
        seen.add(name)
    for name in names:
        parts = name.split("/")
        for end in range(1, len(parts)):
            if "/".join(parts[:end]) in seen:
                raise ConvertError(
                    f"column {'/'.join(parts[:end])!r} is a value and also a group of {name!r} "
                    "('/' nests, as in tensorflow_datasets); rename one of them",
                    path=path,
                    where=where,
                )
    return any("/" in name for name in names)


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a/b": 1}`` -> ``{"a": {"b": 1}}`` (names checked by :func:`check_names`).

    Example:
        >>> nest({"a/b": 1, "c": 2})
        {'a': {'b': 1}, 'c': 2}
    """
    out: dict[str, Any] = {}
    for name, value in flat.items():
        node = out
        *groups, last = name.split("/")
        for group in groups:
            node = node.setdefault(group, {})
        node[last] = value
    return out
