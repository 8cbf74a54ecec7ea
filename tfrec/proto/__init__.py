"""Generated protobuf modules (from ``protos/``); regenerate with ``python protos/generate.py``.

The messages mirror TensorFlow's ``tf.train.Example`` family under the proto
package ``tfrec``, so their bytes are identical to TensorFlow's while both can
live in one process.
"""
