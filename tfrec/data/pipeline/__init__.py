"""The reading pipeline: a dataset, the recipe that assembles it, and one module per step (data layer).

``dataset`` is the public face and ``iterator`` runs it; ``stage`` the vocabulary
(ops, stages, the recipe); ``assemble`` decides where each op runs and builds the
stages; ``interleave`` reads the files (its ``ReadOptions`` say how);
``shuffle``, ``elements`` (map, filter), ``batch``, ``take``, ``repeat`` and
``prefetch`` are the steps; ``global_order`` is the source of a global shuffle;
``decode`` turns records into values; ``state_check``
checks a saved state field by field (each step checks its own fields).

Example:
    >>> ds = tfrec.data.TFRecordDataset("train-*.tfrecord", features=features).shuffle(10_000).batch(1024)
"""
