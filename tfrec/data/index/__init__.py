"""Index files (data layer): DALI's ``tfrecord2idx`` format (:mod:`.format`) and building one by
scanning a file's headers (:mod:`.scan`); an index is trusted only where it follows the file's
chain of frames (:mod:`.chain`). Gzip files written as a series of members have a gzip index, an
extension of the format (:mod:`.members`). Frames are read at their offsets by the record layer
(:mod:`tfrec.record.positioned`).

Example:
    >>> tfrec.build_index("train-00000-of-00004.tfrecord")   # writes train-00000-of-00004.tfrecord.idx
    >>> offsets, lengths = tfrec.read_index("train-00000-of-00004.tfrecord.idx")
"""
