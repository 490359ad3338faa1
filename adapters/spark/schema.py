"""The data source's fixed schema (``docs/spark.rst`` has the table), as Spark and Arrow
types, and what this pyspark offers Python sources (admission control: 4.2 and later)."""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.ipc
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .rows import FIELDS

__all__ = [
    "ADMISSION_CONTROL",
    "SCHEMA",
    "ReadAllAvailable",
    "ReadLimit",
    "ReadMaxBytes",
    "ReadMaxRows",
    "SupportsTriggerAvailableNow",
    "arrow_schema",
]

try:  # pyspark 4.2 and later: admission control, Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - pyspark 4.0 and 4.1
    ReadLimit = object  # type: ignore[assignment,misc]
    ReadAllAvailable = ReadMaxRows = ReadMaxBytes = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Absent before pyspark 4.2: nothing calls it there."""


#: Whether this pyspark gives Python sources admission control (read limits, and
#: ``Trigger.AvailableNow`` in as many batches as the limit makes): 4.2 and later. Before,
#: Spark asks a source for its end once for ``Trigger.AvailableNow`` and runs one batch.
ADMISSION_CONTROL = ReadMaxRows is not None

_TYPES: dict[str, DataType] = {
    "binary": BinaryType(),
    "string": StringType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "timestamp": TimestampType(),
    "map<string,string>": MapType(StringType(), StringType()),
}
#: The fixed schema of what the reader produces and the writer takes (docs/spark.rst).
SCHEMA = StructType([StructField(name, _TYPES[kind], True) for name, kind in FIELDS])


@functools.cache
def arrow_schema() -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(SCHEMA, timezone="UTC")
    except TypeError:  # pragma: no cover - pyspark 4.0/4.1 take no timezone (and check less)
        return to_arrow_schema(SCHEMA)
