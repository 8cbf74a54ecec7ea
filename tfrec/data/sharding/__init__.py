"""Sharding: which files or record ranges each reader reads (ranks x loader workers x processes) (data layer).

Example:
    >>> tfrec.data.TFRecordDataset(paths, shard=(rank, world_size), shard_by="records")   # uses this package
"""
