"""Random access to the records of indexed files (data layer).

Example:
    >>> source = tfrec.RecordFileSource("train-*.tfrecord", features=features)
    >>> source[12345]
"""
