"""Which PromQL query gives each metric of the sample schema, and which labels fill which column.

Every query aggregates ``by`` exactly the schema's labels, so series that differ only in scrape labels
(``job``, ``instance``, a second exporter replica) collapse into one and rows stay unique.
"""

from __future__ import annotations

from dataclasses import dataclass

from stormscale.samples import names as m
from stormscale.storm.exporter import names as n

COUNTER_BY_STREAM = ("topology", "component", "executor", "stream")
PER_EXECUTOR = ("topology", "component", "executor")
PER_COMPONENT = ("topology", "component")


@dataclass(frozen=True)
class SeriesQuery:
    """A schema metric, the exporter series it comes from, and how they are aggregated."""

    metric: str
    series: str
    by: tuple[str, ...]
    aggregation: str = "max"

    def promql(self, topology: str) -> str:
        """The query for one topology."""
        selector = f'{self.series}{{topology="{escape(topology)}"}}'
        return f"{self.aggregation} by ({', '.join(self.by)}) ({selector})"


def escape(value: str) -> str:
    """A PromQL string literal's content."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


QUERIES = (
    SeriesQuery(m.EMITTED, n.EMITTED, COUNTER_BY_STREAM),
    SeriesQuery(m.TRANSFERRED, n.TRANSFERRED, COUNTER_BY_STREAM),
    SeriesQuery(m.EXECUTED, n.EXECUTED, (*PER_EXECUTOR, "source", "stream")),
    SeriesQuery(m.ACKED, n.ACKED, PER_EXECUTOR),
    SeriesQuery(m.FAILED, n.FAILED, PER_EXECUTOR),
    SeriesQuery(m.BUSY, n.BUSY, PER_EXECUTOR),
    SeriesQuery(m.OFFERED, n.SPOUT_OFFERED, PER_COMPONENT, aggregation="sum"),
    SeriesQuery(m.CAPACITY, n.CAPACITY, PER_EXECUTOR),
    SeriesQuery(m.EXECUTE_LATENCY, n.EXECUTE_LATENCY, PER_EXECUTOR),
    SeriesQuery(m.PROCESS_LATENCY, n.PROCESS_LATENCY, PER_EXECUTOR),
    SeriesQuery(m.EXECUTORS, n.EXECUTORS, PER_COMPONENT),
    SeriesQuery(m.TASKS, n.TASKS, PER_COMPONENT),
    SeriesQuery(m.WORKERS, n.WORKERS, ("topology",)),
)
