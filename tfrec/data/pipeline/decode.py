"""Turning records into values, one record or a whole batch at a time (data layer).

A :class:`Decoder` decodes either one record or a whole batch of records at
once (the fast path: one call into the batched parser per batch).

Example:
    >>> decoder = Decoder(features=None, spec={"label": FixedLenFeature([], int64)})
    >>> decoder.decode_batch([record0, record1])["label"]
    array([3, 7])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import SchemaChoiceError, SchemaError
from ...example import parse_example, parse_example_packed, parse_single_example
from ...features import FeaturesDict


def check_features_or_spec(features: Any, spec: Any, owner: str) -> None:
    """Records decode through ``features=`` or through ``spec=`` (or stay bytes): never both.

    The one place that rule is checked, for datasets and random-access sources alike.
    """
    if features is not None and spec is not None:
        raise SchemaChoiceError(f"{owner}: give features= or spec=, not both")


class Decoder:
    """Decodes records with a FeaturesDict, a tf.io-style parse spec, or not at all (raw bytes).

    Picklable: worker processes receive a copy.
    """

    def __init__(
        self,
        features: FeaturesDict | Mapping[str, Any] | None,
        spec: Mapping[str, Any] | None,
        owner: str = "TFRecordDataset",
    ):
        check_features_or_spec(features, spec, owner)
        if features is not None and not isinstance(features, FeaturesDict):
            features = FeaturesDict(dict(features))
        self.features = features
        self.spec = dict(spec) if spec is not None else None
        if self.spec is not None and not self.spec:
            raise SchemaError("spec= must name at least one feature")

    @property
    def raw(self) -> bool:
        """True when records stay bytes."""
        return self.features is None and self.spec is None

    def decode_one(self, record: bytes) -> Any:
        if self.features is not None:
            return self.features.deserialize_example(record)
        if self.spec is not None:
            return parse_single_example(record, self.spec)
        return record

    def decode_batch(self, records: Sequence[bytes], packed: bool = False) -> Any:
        """The batch's values; ``packed``: a spec's strings of one length may stay packed, for a
        reading process to hand over (:func:`~tfrec.example.parse_example_packed`)."""
        if self.features is not None:
            return self.features.deserialize_batch(records)
        if self.spec is not None:
            parse = parse_example_packed if packed else parse_example
            return parse(records, self.spec)  # a list or a RecordBatch, as it is
        return list(records)

    def __repr__(self) -> str:
        kind = "features" if self.features is not None else "spec" if self.spec is not None else "raw"
        return f"Decoder({kind})"
