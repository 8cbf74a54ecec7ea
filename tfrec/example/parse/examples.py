"""TF-compatible parsing of Examples into numpy (example layer).

``parse_example`` and ``parse_single_example`` take the same arguments as
``tf.io``'s and return the same values, as numpy arrays, :class:`SparseArray`
and :class:`RaggedArray` (SequenceExamples: :mod:`tfrec.example.sequence_parsing`).
The specs are validated once into a plan (:mod:`.plan`); one record in the usual
form takes a direct path (:mod:`.single`); a batch is
decoded into columns (:mod:`tfrec.example.columns`); each spec then turns its
column into output with vectorised numpy (:mod:`.outputs`), and
the data error TensorFlow would report is raised (:mod:`.checks`).

Where TensorFlow's parser and protobuf read odd wire forms differently (a
Feature with two kinds, a list split over several packed chunks, unknown
fields in a map entry), tfrec follows protobuf: see the README.

Example:
    >>> spec = {"label": FixedLenFeature([], int64, default_value=0), "tags": VarLenFeature(string)}
    >>> parse_example([data0, data1], spec)["label"]
    array([3, 0])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...cache import BoundedCache
from ...errors import DecodeError, SchemaError, WireError
from .. import wire
from ..columns import Column, columns_from_features, gather_columns
from .checks import Checks
from .inputs import as_records, decode_error, record_names
from .outputs import spec_output
from .plan import Plan, Spec, plan_of
from .single import one_record_decoder
from .specs import FixedLenFeature

__all__ = ["parse_example", "parse_example_packed", "parse_single_example", "single_example_parser"]


def _build(
    plan: Plan,
    columns: Mapping[bytes, Column],
    names: Sequence[str] | None,
    batched: bool,
    records: Sequence[bytes],
) -> dict[str, Any]:
    checks = Checks(names, batched, records)
    out = {key: spec_output(key, spec, columns, checks) for key, spec in plan.specs.items()}
    checks.raise_first()  # the problem TF reports, whichever key it is in
    return out


def parse_example(
    serialized: Any, features: Mapping[str, Spec], example_names: Any = None, name: str | None = None
) -> dict[str, Any]:
    """Parse a batch of serialized Examples like ``tf.io.parse_example``, into numpy.

    Args:
        serialized: a list (or 1-D array) of serialized Examples; a single
            ``bytes`` parses like :func:`parse_single_example`.
        features: key -> FixedLenFeature, VarLenFeature,
            FixedLenSequenceFeature (``allow_missing=True``), SparseFeature or
            RaggedFeature.
        example_names: optional names of the records, used in error messages.
        name: accepted for compatibility with ``tf.io``; unused.

    Returns:
        key -> dense array with a leading batch dimension, SparseArray or RaggedArray.

    Raises:
        SchemaError: an invalid spec. DecodeError, MissingFeatureError: data
            that does not fit it, naming the key and the example index.

    Example:
        >>> tfrec.parse_example([data], {"label": tfrec.FixedLenFeature([], tfrec.int64)})
        {'label': array([3])}
    """
    if not features:
        raise SchemaError(f"Argument `features` cannot be None or falsy. Got {features}")
    records, single = as_records(serialized)
    if single:
        return parse_single_example(records[0], features, example_names)
    return _parse_batch(records, features, example_names)


def parse_example_packed(serialized: Any, features: Mapping[str, Spec]) -> dict[str, Any]:
    """:func:`parse_example` of a batch, for a reading process to hand over: the values of a
    FixedLenFeature string that share one length (images of one size) come as one
    :class:`~tfrec.example.columns.PackedStrings` array, not as ``bytes`` objects made here and copied
    again to be sent; pickled, it becomes the object array of ``bytes`` parse_example gives.

    Example:
        >>> spec = {"image": FixedLenFeature([], string)}
        >>> packed = parse_example_packed(records, spec)["image"]
        >>> pickle.loads(pickle.dumps(packed)).tolist() == parse_example(records, spec)["image"].tolist()
        True
    """
    if not features:
        raise SchemaError(f"Argument `features` cannot be None or falsy. Got {features}")
    records, single = as_records(serialized)
    if single:
        return parse_single_example(records[0], features)
    return _parse_batch(records, features, None, packed=True)


def _parse_batch(
    records: Sequence[bytes], features: Mapping[str, Spec], example_names: Any, packed: bool = False
) -> dict[str, Any]:
    plan = plan_of(features)
    names = record_names(example_names, len(records))
    try:
        columns = gather_columns(records, plan.reads, packed=plan.packable if packed else frozenset())
    except WireError as exc:
        raise decode_error(exc, names) from None
    return _build(plan, columns, names, True, records)


def parse_single_example(
    serialized: Any, features: Mapping[str, Spec], example_names: Any = None, name: str | None = None
) -> dict[str, Any]:
    """Parse one serialized Example like ``tf.io.parse_single_example``, into numpy.

    Example:
        >>> tfrec.parse_single_example(data, {"tags": tfrec.VarLenFeature(tfrec.string)})["tags"].values
        array([b'a', b'b'], dtype=object)
    """
    if type(serialized) is bytes:  # the usual call: nothing to convert
        held = _SINGLE.get(id(features))  # (a copy of the specs of an earlier call, plan, decoder)
        try:
            # Specs compare by identity first: the usual call compares no spec's fields.
            if held is None or features != held[0]:
                held = _single_of(features)
        except (TypeError, ValueError):  # a spec replaced by one holding an array: another spec
            held = _single_of(features)
        parsed = held[2](serialized)  # the direct path; None leaves the record to the batch path
        return parsed if parsed is not None else _parse_by_batch(held[1], [serialized])
    records, single = as_records(serialized)
    if not single:
        raise SchemaError("Input serialized must be a scalar")
    _, plan, direct = _single_of(features)
    parsed = direct(records[0])
    if parsed is not None:
        return parsed
    return _parse_by_batch(plan, records)


def _single_of(features: Mapping[str, Spec]) -> tuple[dict[str, Spec], Plan, Callable[[bytes], Any]]:
    """A copy of ``features``, their plan and its one-record decoder (:func:`one_record_decoder`, or
    one that leaves every record to the batch path), remembered for the next call when no spec can
    change in place (all are hashable): comparing the copy with the specs of a call costs less than
    :func:`plan_of`'s check, which also follows shapes given as lists; and the call then finds its
    decoder in the same lookup."""
    if features is None:
        raise SchemaError("Invalid argument: features cannot be None.")
    if not features:
        raise SchemaError("Invalid argument: features cannot be empty.")
    plan = plan_of(features)
    held = (dict(features), plan, one_record_decoder(plan) or _batch_only)
    try:
        hash(tuple(features.values()))
    except TypeError:
        return held
    return _SINGLE.put(id(features), held)


def _batch_only(serialized: bytes) -> None:
    """The one-record decoder of a plan with a spec the direct path leaves to the batch path."""
    return None


# parse_single_example's specs by the id of the mapping: a copy of the specs (compared with the
# specs of a call: an id can be reused), their plan and its one-record decoder.
_SINGLE: BoundedCache[int, tuple[dict[str, Spec], Plan, Callable[[bytes], Any]]] = BoundedCache(64)


def _parse_by_batch(plan: Plan, records: Sequence[bytes]) -> dict[str, Any]:
    """The one record of ``records`` parsed by the batch path (any form; the errors TF reports)."""
    try:
        columns = columns_from_features(
            records, [wire.scan_example(records[0], frozenset(plan.reads))], plan.reads
        )
    except WireError as exc:
        raise DecodeError(f"Could not parse example input: {exc}") from None
    return _build(plan, columns, None, False, records)


def single_example_parser(
    features: Mapping[str, Spec], *, bytes_scalars: bool = False
) -> Callable[[bytes], dict[str, Any]]:
    """``parse_single_example(data, features)`` as a function of ``data`` alone, for the many records
    of one spec: the spec is validated once, here (a copy is kept: later changes do not reach it).

    Args:
        features: the spec, as for :func:`parse_single_example`.
        bytes_scalars: give the value of a FixedLenFeature of shape ``()`` and dtype string as
            its ``bytes`` rather than a 0-d object array holding them (what a schema returns).

    Example:
        >>> parse = single_example_parser({"label": tfrec.FixedLenFeature([], tfrec.int64)})
        >>> parse(data)
        {'label': array(3)}
    """
    if not features:  # the error parse_single_example raises, when called
        return lambda serialized: parse_single_example(serialized, features)
    features = dict(features)
    plan = plan_of(features)
    direct = one_record_decoder(plan, bytes_scalars=bytes_scalars) or (lambda serialized: None)
    scalars = [  # the keys whose batch-path value (a 0-d object array) is given as its bytes
        key
        for key, spec in plan.specs.items()
        if bytes_scalars
        and isinstance(spec, FixedLenFeature)
        and tuple(spec.shape) == ()
        and wire.kind_of_dtype(spec.dtype) == wire.BYTES
    ]

    def parse(serialized: bytes) -> dict[str, Any]:
        if type(serialized) is bytes:
            parsed = direct(serialized)
            if parsed is not None:
                return parsed
            parsed = _parse_by_batch(plan, [serialized])
        else:
            parsed = parse_single_example(serialized, features)
        for key in scalars:
            parsed[key] = parsed[key][()]
        return parsed

    return parse
