"""Integrations with other engines: the Arrow mapping, PyTorch, Ray Data and Dask.

Each imports its engine lazily; ``tfrec.torch``, ``tfrec.ray`` and ``tfrec.dask`` name them.

Example:
    >>> import tfrec.torch
    >>> loader = torch.utils.data.DataLoader(tfrec.torch.TFRecordIterableDataset(ds), batch_size=None)
"""
