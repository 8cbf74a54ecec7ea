"""Records before a damaged one come out first, through batch and shuffle too, then the error."""

from __future__ import annotations

from typing import Any

import pytest

import tfrec
from tfrec.data import TFRecordDataset

RECORDS = [f"record {i:04d}".encode() for i in range(1500)]
DAMAGED = 1000


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("damaged") / "x.tfrecord"
    tfrec.write_records(path, RECORDS)
    data = bytearray(path.read_bytes())
    data[DAMAGED * (len(RECORDS[0]) + 16) + 14] ^= 1  # a data byte of record 1000
    path.write_bytes(bytes(data))
    return str(path)


def _until_error(iterator: Any) -> tuple[list[Any], BaseException | None]:
    got = []
    try:
        for item in iterator:
            got.append(item)
    except tfrec.TfrecError as exc:
        return got, exc
    return got, None


@pytest.mark.parametrize("num_workers", [0, 1])
def test_batch_hands_out_the_records_before_the_damage_as_a_short_batch(
    damaged: str, num_workers: int
) -> None:
    batches, error = _until_error(TFRecordDataset(damaged, num_workers=num_workers).batch(64))
    assert isinstance(error, tfrec.ChecksumError) and error.index == DAMAGED
    assert [len(b) for b in batches] == [64] * 15 + [40]  # records 960-999 were lost
    assert [r for b in batches for r in b] == RECORDS[:DAMAGED]


def test_shuffle_hands_out_its_buffer_before_the_damage(damaged: str) -> None:
    records, error = _until_error(TFRecordDataset(damaged, seed=0).shuffle(5000))
    assert isinstance(error, tfrec.ChecksumError) and error.index == DAMAGED
    assert sorted(records) == RECORDS[:DAMAGED]


def test_a_state_saved_after_the_short_batch_resumes_into_the_error(damaged: str) -> None:
    ds = TFRecordDataset(damaged, seed=0).shuffle(100).batch(64)
    it = iter(ds)
    head = [next(it) for _ in range(15)]
    state = it.state()
    rest, error = _until_error(ds.resume(state))
    assert isinstance(error, tfrec.ChecksumError) and error.index == DAMAGED
    assert sorted(r for b in head + rest for r in b) == RECORDS[:DAMAGED]
