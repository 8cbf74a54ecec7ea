"""Reading processes: the consumer's pool, each process's worker loop, shared-memory slots (data layer).

Example:
    >>> tfrec.data.TFRecordDataset(paths, features=features, num_workers=2)   # uses this package
"""
