"""ValueRowIds implying more than max(2**24, 16 x values) rows are a DecodeError on every path (finding 8),
whatever the row splits' dtype: ids are bounded as stored, before int32 row splits narrow them (item 5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import tfrec


def _spec(splits_dtype: str = "int64") -> dict[str, tfrec.RaggedFeature]:
    partition = tfrec.RaggedFeature.ValueRowIds("ids")
    return {
        "r": tfrec.RaggedFeature(
            tfrec.int64, value_key="v", partitions=[partition], row_splits_dtype=splits_dtype
        )
    }


def _sequence_record(ids: list[int]) -> bytes:
    return tfrec.encode_sequence_example({"v": [1] * len(ids), "ids": ids}, {})


PATHS: dict[str, Callable[..., Any]] = {
    "parse_single_example": lambda ids, dtype="int64": tfrec.parse_single_example(
        tfrec.encode_example({"v": [1] * len(ids), "ids": ids}), _spec(dtype)
    ),
    "parse_example": lambda ids, dtype="int64": tfrec.parse_example(
        [tfrec.encode_example({"v": [1] * len(ids), "ids": ids})] * 3, _spec(dtype)
    ),
    "parse_single_sequence_example": lambda ids, dtype="int64": tfrec.parse_single_sequence_example(
        _sequence_record(ids), context_features=_spec(dtype)
    ),
    "parse_sequence_example": lambda ids, dtype="int64": tfrec.parse_sequence_example(
        [_sequence_record(ids)] * 3, context_features=_spec(dtype)
    ),
}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("ids", [[1 << 40], [0, 1 << 40], [1 << 62], [(1 << 63) - 1], [(1 << 62)] * 2])
def test_row_ids_implying_too_many_rows_are_a_decode_error(path: str, ids: list[int]) -> None:
    with pytest.raises(tfrec.DecodeError, match="value_rowids imply"):
        PATHS[path](ids)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_row_ids_within_the_bound_still_parse(path: str) -> None:
    PATHS[path]([0, 0, 5])
    if "single" in path:  # the bound is on the whole batch: three such records would pass it
        PATHS[path]([(1 << 24) - 1])  # 2**24 rows for one value: within max(2**24, 16 x values)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(
    "ids", [[1 << 40], [0, 1 << 40], [(1 << 32) + 1], [1 << 62, 0], [-(1 << 32), 1 << 40]]
)
def test_row_ids_are_bounded_before_int32_row_splits_narrow_them(path: str, ids: list[int]) -> None:
    # In int32, 2**40 wraps to 0 and 2**32 + 1 to 1: TensorFlow then parses a row that was never
    # written. The ids as stored imply 2**40 rows, and the bound says so.
    with pytest.raises(tfrec.DecodeError, match="value_rowids imply") as caught:
        PATHS[path](ids, "int32")
    assert caught.value.key == "r"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_row_ids_within_the_bound_still_parse_with_int32_row_splits(path: str) -> None:
    PATHS[path]([0, 0, 5], "int32")
