"""Sharding: which files or record ranges each reader reads (ranks x loader workers x processes) (data layer).

Example:
    >>> sharding = tfrec.ShardOptions(shard=(rank, world_size), shard_by="records")
    >>> tfrec.data.TFRecordDataset(paths, shard_options=sharding)   # uses this package
"""
