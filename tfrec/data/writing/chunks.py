"""Records and samples in chunks bounded by count and by bytes: a writer holds one chunk (data layer).

Example:
    >>> [len(chunk) for chunk in record_chunks(bytes(10 << 20) for _ in range(3))]
    [2, 1]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["CHUNK_BYTES", "CHUNK_RECORDS", "record_chunks", "sample_batches"]

# write_many serializes records and writes them together in chunks of at most this many records, and
# of at most CHUNK_BYTES (or one record, when a record is larger): a count alone held 1024 samples
# whatever their size (6 GiB for 6 MiB images).
CHUNK_RECORDS = 1024
CHUNK_BYTES = 16 << 20


def record_chunks(records: Iterable[bytes]) -> Iterator[list[bytes]]:
    """``records`` in lists of at most :data:`CHUNK_RECORDS` records and :data:`CHUNK_BYTES` bytes
    (a larger record alone), taken one record at a time: memory holds one chunk.

    Example:
        >>> [len(chunk) for chunk in record_chunks(bytes(10 << 20) for _ in range(3))]
        [2, 1]
    """
    chunk: list[bytes] = []
    size = 0
    for record in records:
        chunk.append(record)
        size += len(record)
        if size >= CHUNK_BYTES or len(chunk) == CHUNK_RECORDS:
            yield chunk
            chunk = []
            size = 0
    if chunk:
        yield chunk


def sample_batches(
    samples: Iterable[Any], serialize_batch: Callable[[list[Any]], list[bytes]]
) -> Iterator[list[bytes]]:
    """The records of ``samples``, serialized by ``serialize_batch`` (a FeaturesDict's) in batches
    of up to :data:`CHUNK_RECORDS` samples and about :data:`CHUNK_BYTES` of records: a batch's size
    follows the records' mean size, starting small, so that memory holds about one chunk however
    large the samples.

    Example:
        >>> [len(b) for b in sample_batches(range(40), lambda xs: [bytes(x) for x in xs])]
        [16, 24]
    """
    size = _FIRST_BATCH
    iterator = iter(samples)
    while True:
        batch = list(itertools.islice(iterator, size))
        if not batch:
            return
        records = serialize_batch(batch)
        yield records
        mean = max(1, sum(map(len, records)) // len(records))
        size = max(1, min(CHUNK_RECORDS, CHUNK_BYTES // mean))


_FIRST_BATCH = 16  # samples in the first batch, before their records' size is known
