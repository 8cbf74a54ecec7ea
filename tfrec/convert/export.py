"""Out of TFRecord: records -> JSON Lines, and -> Parquet with the features' types as Arrow types
(convert layer).

Both stream: JSON Lines line by line, Parquet one row group per ``batch_size`` records.
Parquet needs ``pyarrow`` (``pip install 'tfrec[parquet]'``). Its columns are the stored (flat)
keys, ``meta/id``, typed by the integrations' one Arrow mapping
(:func:`tfrec.integrations.arrow.stored_column_types`): int64 -> ``int64``, float32 -> ``float32``,
Text -> ``string``, other bytes (images, encoded tensors) -> ``binary``; a fixed shape ``(n,)`` ->
``fixed_size_list<n>``, any other -> ``list``; a key missing from a record is null.

Example:
    >>> records_to_jsonl(["train.tfrecord"], "train.jsonl")
    >>> records_to_parquet(["train.tfrecord"], "train.parquet", features=features)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any

from ..errors import DecodeError, OptionalDependencyError
from ..example import decode_example
from ..features import FeaturesDict
from .jsonable import record_to_json

if TYPE_CHECKING:
    from ..integrations.arrow import ColumnType

__all__ = ["arrow_schema", "records_to_jsonl", "records_to_parquet"]


def records_to_jsonl(
    records: Iterable[tuple[str, int, bytes]],
    out: IO[str],
    *,
    features: FeaturesDict | None = None,
    sequence: bool = False,
) -> int:
    """Write each ``(path, index, record)`` as one JSON line to ``out``; returns the count.

    Raises:
        DecodeError: a record is not an Example (names the file and record).
    """
    count = 0
    for path, index, record in records:
        try:
            row = record_to_json(record, features, sequence=sequence)
        except DecodeError as exc:
            raise DecodeError(f"{path}, record {index}: {exc}") from None
        out.write(json.dumps(row, ensure_ascii=False))
        out.write("\n")
        count += 1
    return count


def _pyarrow() -> Any:
    # Imported here, not at the top: tfrec.convert (JSON Lines, CSV, the CLI) works without pyarrow,
    # and a missing pyarrow names the parquet extra.
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise OptionalDependencyError("pyarrow", "parquet", "Writing Parquet") from None
    return pyarrow


def arrow_schema(features: FeaturesDict) -> Any:
    """The Arrow schema of the stored keys of ``features`` (see the module for the mapping).

    Example:
        >>> arrow_schema(FeaturesDict({"label": np.int64, "text": Text()}))
        label: int64
        text: string
    """
    _pyarrow()
    from ..integrations.arrow import schema_of, stored_column_types  # needs pyarrow: see _pyarrow

    return schema_of(stored_column_types(features))


def _column_value(values: Any, column: ColumnType) -> Any:
    if values is None:
        return None
    items = values if isinstance(values, list) else values.tolist()
    if column.text:
        items = [v.decode("utf-8", "replace") for v in items]
    if column.shape:
        return items
    return items[0] if items else None


def records_to_parquet(
    records: Iterable[tuple[str, int, bytes]],
    out: str | os.PathLike[str] | IO[bytes],
    features: FeaturesDict,
    *,
    batch_size: int = 4096,
) -> int:
    """Write ``(path, index, record)`` rows to a Parquet file, ``batch_size`` rows per row group.

    Returns:
        The number of rows.
    """
    pa = _pyarrow()
    from ..integrations.arrow import schema_of, stored_column_types  # needs pyarrow: see _pyarrow

    types = stored_column_types(features)
    names = list(types)
    schema = schema_of(types)
    count = 0
    with pa.parquet.ParquetWriter(out, schema) as writer:
        columns: list[list[Any]] = [[] for _ in names]
        for path, index, record in records:
            try:
                decoded = decode_example(record)
            except DecodeError as exc:
                raise DecodeError(f"{path}, record {index}: {exc}") from None
            for column, name in zip(columns, names, strict=True):
                column.append(_column_value(decoded.get(name), types[name]))
            count += 1
            if len(columns[0]) >= batch_size:
                writer.write_table(pa.table(columns, schema=schema))
                columns = [[] for _ in names]
        if columns and columns[0]:
            writer.write_table(pa.table(columns, schema=schema))
    return count
