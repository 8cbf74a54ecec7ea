"""Checking a saved iterator state field by field before anything is built from it (data layer).

A state is plain data that may have been edited, truncated or made up: every
field is checked for its type, its range and its agreement with the dataset
before a pipeline resumes from it, and the first that does not fit raises a
:class:`~tfrec.DatasetStateError` naming the field (``pipeline.up.items``)
and the step it belongs to. Each step checks its own fields (``Op.check``);
:class:`StateField` is what they check with.

Example:
    >>> field = StateField({"left": -1, "up": None}, "pipeline", "take(5)")
    >>> field.keys("up", "left")["left"].integer(0, 5)
    DatasetStateError: the state's field pipeline.left (take(5)): expected an integer from 0 to 5, found -1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from ...errors import DatasetStateError

__all__ = ["StateField"]

_PCG64_KEYS = {"bit_generator", "state", "has_uint32", "uinteger"}


def _found(value: Any) -> str:
    if isinstance(value, (list, tuple, dict)):
        return f"a {type(value).__name__} of {len(value)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class StateField:
    """A value found in a saved state, where it lies (``pipeline.up.slots[0]``) and whose it is."""

    def __init__(self, value: Any, where: str, owner: str = "") -> None:
        self.value, self.where, self.owner = value, where, owner

    def fail(self, expected: str, found: str | None = None) -> NoReturn:
        owner = f" ({self.owner})" if self.owner else ""
        raise DatasetStateError(
            f"the state's field {self.where}{owner}: expected {expected}, found "
            f"{found if found is not None else _found(self.value)}"
        )

    def owned(self, owner: str) -> StateField:
        return StateField(self.value, self.where, owner)

    def keys(self, *names: str) -> StateField:
        """This field as a dict holding exactly ``names``."""
        if not isinstance(self.value, Mapping):
            self.fail(f"a dict of {', '.join(names)}")
        missing = [n for n in names if n not in self.value]
        extra = [str(k) for k in self.value if k not in names]
        if missing or extra:
            self.fail(
                f"the fields {', '.join(names)}",
                f"{'missing ' + ', '.join(missing) if missing else ''}"
                f"{'; ' if missing and extra else ''}{'unknown ' + ', '.join(extra[:5]) if extra else ''}",
            )
        return self

    def __getitem__(self, key: str | int) -> StateField:
        where = f"{self.where}[{key}]" if isinstance(key, int) else f"{self.where}.{key}"
        return StateField(self.value[key], where, self.owner)

    @property
    def missing(self) -> bool:
        """Whether the field holds ``None`` (an absent upstream, a finished step)."""
        return self.value is None

    def integer(self, low: int = 0, high: int | None = None) -> int:
        value = self.value
        if type(value) is not int or value < low or (high is not None and value > high):
            self.fail(f"an integer from {low}" + (f" to {high}" if high is not None else ""))
        return value

    def boolean(self) -> bool:
        if type(self.value) is not bool:
            self.fail("True or False")
        return bool(self.value)

    def items(self, length: int | None = None, *, most: int | None = None) -> list[StateField]:
        """This field as a list (or tuple) of ``length`` (or at most ``most``) fields."""
        value = self.value
        if not isinstance(value, (list, tuple)):
            self.fail("a list")
        if length is not None and len(value) != length:
            self.fail(f"a list of {length}")
        if most is not None and len(value) > most:
            self.fail(f"a list of at most {most}")
        return [self[i] for i in range(len(value))]

    def elements(self, raw: bool, *, most: int | None = None) -> list[Any]:
        """This field as a list of pipeline elements: record bytes when they are still raw."""
        fields = self.items(most=most)
        if raw:
            for field in fields:
                if type(field.value) is not bytes:
                    field.fail("a record (bytes)")
        return [field.value for field in fields]

    def generator(self) -> dict[str, Any]:
        """This field as the state of a PCG64 generator (what every step's Generator is)."""
        value = self.value
        if not isinstance(value, Mapping) or set(value) != _PCG64_KEYS or value["bit_generator"] != "PCG64":
            self.fail("the state of a PCG64 bit generator")
        self["state"].keys("state", "inc")
        self["state"]["state"].integer(0, 2**128 - 1)
        self["state"]["inc"].integer(0, 2**128 - 1)
        self["has_uint32"].integer(0, 1)
        self["uinteger"].integer(0, 2**32 - 1)
        return {**value, "state": dict(value["state"])}
