"""``tfrec.ray``: the Ray Data integration (its home is :mod:`tfrec.integrations.ray`)."""

from __future__ import annotations

from .integrations.ray import TFRecordDatasink, TFRecordDatasource, read_tfrecords, write_tfrecords

__all__ = ["TFRecordDatasink", "TFRecordDatasource", "read_tfrecords", "write_tfrecords"]
