"""The tidy sample table: columns, Arrow types, one row as a value, and Parquet output.

One row per timestamp × topology × component × executor × metric (× stream and source where the
metric has them); rows are unique on every column but ``value`` (:data:`KEY`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

#: Columns that identify one time series (everything but ``ts`` and ``value``).
SERIES = ("topology", "component", "executor", "metric", "stream", "source")

_FIELDS: list[pa.Field[Any]] = [pa.field("ts", pa.timestamp("ms", tz="UTC"), nullable=False)]
_FIELDS += [pa.field(name, pa.string(), nullable=False) for name in SERIES]
_FIELDS += [pa.field("value", pa.float64(), nullable=False)]
SCHEMA = pa.schema(_FIELDS)
#: The attributes of :class:`Sample` rows are unique on.
KEY = ("ts_ms", *SERIES)


@dataclass(frozen=True, order=True)
class Sample:
    """One row of the table (``ts_ms``: Unix milliseconds, UTC)."""

    ts_ms: int
    topology: str
    component: str
    executor: str
    metric: str
    stream: str
    source: str
    value: float

    @property
    def key(self) -> tuple[object, ...]:
        """The columns rows are unique on."""
        return astuple(self)[:-1]


def table(rows: Sequence[Sample]) -> pa.Table:
    """Rows as an Arrow table in the schema's column order and types."""
    columns: dict[str, list[Any]] = {f.name: [] for f in SCHEMA}
    for row in rows:
        columns["ts"].append(row.ts_ms)
        for name in (*SERIES, "value"):
            columns[name].append(getattr(row, name))
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def write_parquet(rows: Sequence[Sample], out: Path) -> Path:
    """Write rows to ``out`` (Parquet), creating its folder."""
    out.parent.mkdir(parents=True, exist_ok=True)
    import pyarrow.parquet as pq  # noqa: PLC0415 (the operator never writes Parquet: not at import)

    pq.write_table(table(rows), out)
    return out
