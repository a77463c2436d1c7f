"""The metric-sample contract (``docs/formats/samples.md``) as an Arrow schema, and its checks.

The Spark twin of the schema is in :mod:`stormscale.spark.spark_types` (this module needs no PySpark).

Both implementations (the Spark job and :mod:`stormscale.spark.local`) read the same columns and
reject the same malformed inputs with the same one-line messages.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa


class AggregationError(ValueError):
    """Malformed or insufficient input; the message is one line naming the problem."""


#: Columns that identify one time series (everything but ``ts`` and ``value``).
SERIES = ("topology", "component", "executor", "metric", "stream", "source")

_ARROW_FIELDS: list[pa.Field[Any]] = [pa.field("ts", pa.timestamp("ms", tz="UTC"), nullable=False)]
_ARROW_FIELDS += [pa.field(name, pa.string(), nullable=False) for name in SERIES]
_ARROW_FIELDS += [pa.field("value", pa.float64(), nullable=False)]
ARROW_SAMPLE_SCHEMA = pa.schema(_ARROW_FIELDS)

# Metric names (samples.md, "Metrics").
EMITTED = "emitted_total"
TRANSFERRED = "transferred_total"
EXECUTED = "executed_total"
ACKED = "acked_total"
FAILED = "failed_total"
BUSY = "busy_seconds_total"
OFFERED = "offered_total"
CAPACITY = "capacity"
EXECUTE_LATENCY = "execute_latency_ms"
PROCESS_LATENCY = "process_latency_ms"
EXECUTORS = "executors"
TASKS = "tasks"
WORKERS = "workers"

COUNTERS = (EMITTED, TRANSFERRED, EXECUTED, ACKED, FAILED, OFFERED, BUSY)
#: Metrics the estimators read; the others are ignored.
USED = (EMITTED, EXECUTED, OFFERED, BUSY, CAPACITY, EXECUTE_LATENCY, EXECUTORS, TASKS, WORKERS)
#: Gauges whose change marks a rebalance (the steady window starts after the last one).
TOPOLOGY_GAUGES = (EXECUTORS, WORKERS)

#: Spark's type names for the Arrow types of the contract (what ``DataFrame.schema`` reports).
_SPARK_TYPES = {"ts": "timestamp", "value": "double", **dict.fromkeys(SERIES, "string")}
_ARROW_STRING_LIKE = {"string", "large_string", "dictionary<values=string, indices=int32, ordered=0>"}


def check_columns(found: Iterable[tuple[str, str]], *, arrow: bool) -> None:
    """Raise :class:`AggregationError` unless every contract column is present with its type.

    ``found`` is (name, type) as Spark (``df.dtypes``) or Arrow (``str(field.type)``) prints it.
    Extra columns are allowed and ignored.
    """
    types = dict(found)
    for name, expected in _SPARK_TYPES.items():
        if name not in types:
            raise AggregationError(f"samples: missing column {name!r} (see docs/formats/samples.md)")
        got = types[name]
        if _type_ok(name, expected, got, arrow=arrow):
            continue
        raise AggregationError(f"samples: column {name!r} must be {expected}, got {got}")


def _type_ok(name: str, expected: str, got: str, *, arrow: bool) -> bool:
    if not arrow:
        return got == expected or (name == "ts" and got == "timestamp_ntz")
    if name == "ts":
        return got.startswith("timestamp[")
    if name == "value":
        return got == "double"
    return got in _ARROW_STRING_LIKE or (got.startswith("dictionary<values=string") and "ordered" in got)
