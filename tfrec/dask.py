"""``tfrec.dask``: the Dask integration (its home is :mod:`tfrec.integrations.dask`)."""

from __future__ import annotations

from .integrations.dask import read_tfrecords, to_tfrecords

__all__ = ["read_tfrecords", "to_tfrecords"]
