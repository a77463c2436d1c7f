"""Spark schemas of the sample contract and of the aggregates, derived from their Arrow/dataclass twins.

The only module besides the job and its estimators that imports PySpark, so that the single-process
engine (:mod:`stormscale.aggregation.local`) and everything it uses run without it.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from stormscale.aggregation.aggregates import ComponentStats, EdgeStats, WindowStats
from stormscale.samples.schema import SERIES

SAMPLE_SCHEMA = StructType(
    [
        StructField("ts", TimestampType(), nullable=False),
        *(StructField(name, StringType(), nullable=False) for name in SERIES),
        StructField("value", DoubleType(), nullable=False),
    ]
)


def _spark_type(annotation: str) -> DataType:
    return {
        "str": StringType(),
        "int": LongType(),
        "bool": BooleanType(),
        "float | None": DoubleType(),
        "float": DoubleType(),
    }[annotation]


def spark_schema(cls: type[Any]) -> StructType:
    """The explicit output schema of an aggregate, derived from its dataclass fields."""
    return StructType(
        [StructField(f.name, _spark_type(str(f.type)), "None" in str(f.type)) for f in fields(cls)]
    )


WINDOW_SCHEMA = spark_schema(WindowStats)
COMPONENT_SCHEMA = spark_schema(ComponentStats)
EDGE_SCHEMA = spark_schema(EdgeStats)
