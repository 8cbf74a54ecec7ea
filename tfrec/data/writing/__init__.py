"""Writing datasets: sets of shards published whole, with their index files (data layer).

Example:
    >>> tfrec.write_dataset(samples, "out/train", features, num_shards=4)
"""
