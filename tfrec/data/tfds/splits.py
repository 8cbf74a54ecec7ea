"""tensorflow_datasets' split syntax, as record ranges (data layer).

``"train"``, ``"train[:10%]"``, ``"train[100:200]"``, ``"train[-5:]"``,
``"train[2shard]"``, ``"train[:4shard]"``, ``"train+test[50%:]"`` and
``"all"`` select the same records as ``tfds.load(split=...)``: percent
boundaries round to the closest record (Python's ``round``, as tfds) or, with
``rounding="pct1_dropremainder"``, count in whole 1% blocks.

Example:
    >>> select("train[:10%]+test", {"train": 1000, "test": 50})
    [SplitRange(split='train', start=0, stop=100), SplitRange(split='test', start=0, stop=50)]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ...errors import InvalidArgumentError

__all__ = ["ROUNDINGS", "SplitRange", "select"]

ROUNDINGS = ("closest", "pct1_dropremainder")
_PART = re.compile(r"(?P<name>[\w.-]+)(\[(?P<selector>[\w%:.-]+)\])?")
_BOUND = re.compile(r"(?P<value>-?[\d_.]+)(?P<unit>%|shard)?")


class SplitRange(NamedTuple):
    """Records ``start:stop`` of one split (in the order of its shards).

    Example:
        >>> SplitRange("train", 0, 100).stop
        100
    """

    split: str
    start: int
    stop: int


def select(
    spec: str, shard_lengths: Mapping[str, Sequence[int] | int], rounding: str = "closest"
) -> list[SplitRange]:
    """The record ranges ``spec`` names, one per ``+``-separated part.

    Args:
        spec: tfds' split syntax.
        shard_lengths: split name -> its records per shard (or its record count).
        rounding: ``"closest"`` (tfds' default) or ``"pct1_dropremainder"``.

    Raises:
        InvalidArgumentError: a malformed spec, an unknown split, or a slice beyond the split.
    """
    if rounding not in ROUNDINGS:
        raise InvalidArgumentError(f"rounding must be one of {ROUNDINGS}, not {rounding!r}")
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgumentError(f"split must be a non-empty str such as 'train[:10%]', not {spec!r}")
    ranges = []
    for part in re.split(r"\s*\+\s*", spec.strip()):
        if part == "all":
            ranges += [SplitRange(name, 0, _count(lengths)) for name, lengths in shard_lengths.items()]
            continue
        ranges.append(_range(part, spec, shard_lengths, rounding))
    return ranges


def _count(lengths: Sequence[int] | int) -> int:
    return lengths if isinstance(lengths, int) else sum(lengths)


def _range(
    part: str, spec: str, shard_lengths: Mapping[str, Sequence[int] | int], rounding: str
) -> SplitRange:
    match = _PART.fullmatch(part)
    if match is None:
        raise InvalidArgumentError(f"split {spec!r}: {part!r} is not of the form name[start:stop]")
    name, selector = match["name"], match["selector"]
    if name not in shard_lengths:
        raise InvalidArgumentError(
            f"split {spec!r}: no split {name!r}; the dataset has {sorted(shard_lengths)}"
        )
    lengths = shard_lengths[name]
    total = _count(lengths)
    if selector is None:
        return SplitRange(name, 0, total)
    bounds = [_BOUND.fullmatch(b) if b else None for b in selector.split(":")]
    if len(bounds) > 2 or any(b is None for b, text in zip(bounds, selector.split(":"), strict=True) if text):
        raise InvalidArgumentError(f"split {spec!r}: {selector!r} is not a slice such as ':10%' or '100:200'")
    if not any(bounds):
        raise InvalidArgumentError(f"split {spec!r}: an empty slice")
    # As tfds: the unit of either bound applies to both ("10:20%" is a percent slice).
    unit = next((b["unit"] for b in bounds if b is not None and b["unit"]), None) or "abs"
    if len(bounds) == 1:  # train[2shard]: one shard
        if unit != "shard":
            raise InvalidArgumentError(
                f"split {spec!r}: only shards can be selected one at a time ('2shard')"
            )
        index = int(_value(bounds[0], unit, spec))  # type: ignore[arg-type]
        return SplitRange(name, *_shards(lengths, index, index + 1, spec))
    low = None if bounds[0] is None else _value(bounds[0], unit, spec)
    high = None if bounds[1] is None else _value(bounds[1], unit, spec)
    if unit == "%":
        start = 0 if low is None else _percent(low, total, rounding, spec)
        stop = total if high is None else _percent(high, total, rounding, spec)
    elif unit == "shard":
        start, stop = _shards(
            lengths, None if low is None else int(low), None if high is None else int(high), spec
        )
    else:
        start, stop = int(low or 0), total if high is None else int(high)
    if abs(start) > total or abs(stop) > total:
        raise InvalidArgumentError(
            f"split {spec!r}: slice [{start}:{stop}] is beyond {name}'s {total} records"
        )
    start, stop = start + total if start < 0 else start, stop + total if stop < 0 else stop
    return SplitRange(name, start, max(start, stop))


def _value(bound: re.Match[str], unit: str, spec: str) -> float:
    try:
        value = float(bound["value"]) if unit == "%" else int(bound["value"])
    except ValueError:
        raise InvalidArgumentError(f"split {spec!r}: {bound['value']!r} is not a number") from None
    if unit == "%" and abs(value) > 100:
        raise InvalidArgumentError(f"split {spec!r}: percent boundaries are within [-100, 100]")
    return value


def _percent(value: float, total: int, rounding: str, spec: str) -> int:
    if rounding == "closest":
        return round(value * total / 100.0)  # Python rounds halves to even, as tfds does
    if total < 100:
        raise InvalidArgumentError(
            f"split {spec!r}: pct1_dropremainder rounding of a split of fewer than 100 records selects none"
        )
    return int(value * math.trunc(total / 100.0))


def _shards(lengths: Sequence[int] | int, low: int | None, high: int | None, spec: str) -> tuple[int, int]:
    if isinstance(lengths, int):
        raise InvalidArgumentError(f"split {spec!r}: shard slices need the split's shard lengths")
    if high is not None and high <= 0:
        high += len(lengths)
    start = 0 if low is None else sum(lengths[:low])
    stop = sum(lengths) if high is None else sum(lengths[:high])
    return start, stop
