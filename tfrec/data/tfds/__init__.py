"""tensorflow_datasets directories: reading and writing them without TensorFlow (data layer).

Example:
    >>> paths, features = tfrec.data.from_tfds_dir("~/tensorflow_datasets/mnist/3.0.1", split="test")
"""
