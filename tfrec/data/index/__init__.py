"""Index files: DALI's ``tfrecord2idx`` format, building one by scanning a file, reading one (data layer).

Example:
    >>> tfrec.build_index("train-00000-of-00004.tfrecord")   # writes train-00000-of-00004.tfrecord.idx
"""
