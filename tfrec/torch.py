"""``tfrec.torch``: the PyTorch integration (its home is :mod:`tfrec.integrations.torch`)."""

from __future__ import annotations

from .integrations.torch import TFRecordIterableDataset, to_torch

__all__ = ["TFRecordIterableDataset", "to_torch"]
