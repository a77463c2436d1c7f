"""Range queries to tidy samples, and samples to Parquet in the schema of docs/formats/samples.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException

from stormscale.operator.exporter import names as n
from stormscale.operator.metrics.queries import QUERIES, SeriesQuery, escape
from stormscale.operator.ports import RefusedError, UnavailableError

MAX_POINTS = 11_000  # Prometheus refuses range queries with more points per series
_FIELDS: list[pa.Field[Any]] = [
    pa.field("ts", pa.timestamp("ms", tz="UTC"), nullable=False),
    pa.field("topology", pa.string(), nullable=False),
    pa.field("component", pa.string(), nullable=False),
    pa.field("executor", pa.string(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),
    pa.field("stream", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("value", pa.float64(), nullable=False),
]
SCHEMA = pa.schema(_FIELDS)
KEY = ("ts_ms", "topology", "component", "executor", "metric", "stream", "source")


@dataclass(frozen=True, order=True)
class Sample:
    """One row of the sample schema (``ts_ms``: Unix milliseconds, UTC)."""

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


@dataclass(frozen=True)
class Window:
    """A range query's whole-second start and end (Unix seconds) and step (seconds)."""

    start: int
    end: int
    step_s: int

    def __post_init__(self) -> None:
        if self.step_s < 1 or self.end < self.start:
            raise ValueError(f"bad window {self}: need step >= 1 s and end >= start")
        if (self.end - self.start) // self.step_s + 1 > MAX_POINTS:
            raise ValueError(f"window {self} has more than {MAX_POINTS} points per series; raise the step")


def samples_from_result(query: SeriesQuery, result: Iterable[Mapping[str, Any]]) -> list[Sample]:
    """Prometheus's matrix result for ``query`` as schema rows (absent labels become "")."""
    rows = []
    for series in result:
        labels = series["metric"]
        for ts, value in series["values"]:
            rows.append(
                Sample(
                    ts_ms=round(float(ts) * 1000),
                    topology=labels.get("topology", ""),
                    component=labels.get("component", ""),
                    executor=labels.get("executor", ""),
                    metric=query.metric,
                    stream=labels.get("stream", ""),
                    source=labels.get("source", ""),
                    value=float(value),
                )
            )
    return rows


def check_unique(rows: Sequence[Sample]) -> None:
    """Raise ValueError naming a duplicated key, if any."""
    seen: set[tuple[object, ...]] = set()
    for row in rows:
        if row.key in seen:
            raise ValueError(f"duplicate sample {dict(zip(KEY, row.key, strict=True))}")
        seen.add(row.key)


class SampleReader:
    """Reads every schema metric of one topology from Prometheus."""

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self.url = url
        self.prometheus = PrometheusConnect(url=url, disable_ssl=True, timeout=timeout_s)

    def _range(self, promql: str, window: Window) -> list[Mapping[str, Any]]:
        start = datetime.fromtimestamp(window.start, UTC)
        end = datetime.fromtimestamp(window.end, UTC)
        try:
            result: list[Mapping[str, Any]] = self.prometheus.custom_query_range(
                promql, start_time=start, end_time=end, step=str(window.step_s)
            )
        except requests.RequestException as err:
            raise UnavailableError(f"Prometheus {self.url}: {type(err).__name__}: {err}") from None
        except PrometheusApiClientException as err:
            raise RefusedError(f"Prometheus {self.url} refused {promql!r}: {err}") from None
        return result

    def newest(self, topology: str) -> float | None:
        """Unix time of the newest scraped executed-count sample of ``topology`` (None: none in
        Prometheus's lookback). Range queries repeat a series' last value for up to five minutes, so
        freshness is read from the samples' own timestamps."""
        promql = f'max(timestamp({n.EXECUTED}{{topology="{escape(topology)}"}}))'
        try:
            result: list[Mapping[str, Any]] = self.prometheus.custom_query(promql)
        except requests.RequestException as err:
            raise UnavailableError(f"Prometheus {self.url}: {type(err).__name__}: {err}") from None
        except PrometheusApiClientException as err:
            raise RefusedError(f"Prometheus {self.url} refused {promql!r}: {err}") from None
        return float(result[0]["value"][1]) if result else None

    def read(self, topology: str, window: Window) -> list[Sample]:
        """Every sample of ``topology`` in ``window``, sorted, unique on the schema's key."""
        rows: list[Sample] = []
        for query in QUERIES:
            rows += samples_from_result(query, self._range(query.promql(topology), window))
        rows.sort()
        check_unique(rows)
        return rows


def table(rows: Sequence[Sample]) -> pa.Table:
    """Rows as an Arrow table in the schema's column order and types."""
    columns: dict[str, list[Any]] = {f.name: [] for f in SCHEMA}
    for row in rows:
        columns["ts"].append(row.ts_ms)
        for name in ("topology", "component", "executor", "metric", "stream", "source", "value"):
            columns[name].append(getattr(row, name))
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def write_parquet(rows: Sequence[Sample], out: Path) -> Path:
    """Write rows to ``out`` (Parquet), creating its folder."""
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table(rows), out)
    return out
