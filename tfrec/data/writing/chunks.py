"""Records and samples in chunks bounded by count and by bytes: a writer holds one chunk (data layer).

Example:
    >>> [len(chunk) for chunk in record_chunks(bytes(10 << 20) for _ in range(3))]
    [2, 1]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ...record.framing_batch import Frames

__all__ = ["CHUNK_BYTES", "CHUNK_RECORDS", "SAMPLE_BATCH", "SAMPLE_BYTES", "record_chunks", "sample_batches"]

# write_many serializes records and writes them together in chunks of at most this many records, and
# of at most CHUNK_BYTES (or one record, when a record is larger): a count alone held 1024 samples
# whatever their size (6 GiB for 6 MiB images).
CHUNK_RECORDS = 1024
CHUNK_BYTES = 16 << 20
# Samples are encoded column by column in numpy: a batch costs a few hundred numpy calls whatever its
# size, so small samples go in batches of up to this many, and large ones in batches of about
# SAMPLE_BYTES of records: small enough that a batch's frames are joined, checksummed and written
# while they are in the CPU's cache (16 MiB batches went to memory and back three times, and wrote
# image-like samples ~30% slower), large enough that the numpy calls stay a small share.
SAMPLE_BATCH = 8192
SAMPLE_BYTES = 2 << 20


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
    samples: Iterable[Any], serialize_batch: Callable[[list[Any]], Sequence[bytes]]
) -> Iterator[Sequence[bytes]]:
    """The records of ``samples``, serialized by ``serialize_batch`` (a FeaturesDict's, as a list or
    as :class:`~tfrec.record.framing_batch.Frames`) in batches
    of up to :data:`SAMPLE_BATCH` samples and about :data:`SAMPLE_BYTES` of records: a batch's size
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
        size_of = int(records.lengths.sum()) if isinstance(records, Frames) else sum(map(len, records))
        mean = max(1, size_of // len(records))
        size = max(1, min(SAMPLE_BATCH, SAMPLE_BYTES // mean))


_FIRST_BATCH = 16  # samples in the first batch, before their records' size is known
