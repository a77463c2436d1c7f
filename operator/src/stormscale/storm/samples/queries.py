"""Which PromQL query gives each metric of the sample schema, and which labels fill which column.

Every query aggregates ``by`` exactly the schema's labels, so series that differ only in scrape labels
(``job``, ``instance``, a second exporter replica) collapse into one and rows stay unique.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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


#: The kubelet's cAdvisor series of a container's CPU (what a kubelet's ``/metrics/cadvisor`` serves).
CPU_USAGE = "container_cpu_usage_seconds_total"
CPU_QUOTA = "container_spec_cpu_quota"
CPU_PERIOD = "container_spec_cpu_period"
POD_LABELS = ("namespace", "pod", "container")


def pod_selector(namespace: str, pods: Sequence[str], container: str) -> str:
    """``{namespace="…", pod=~"a|b", container="…"}``: the worker container of the named pods only
    (not the pod-level cgroup, ``container=""``, nor the pause container, ``POD``)."""
    names = "|".join(re.escape(p) for p in sorted(pods))
    return f'{{namespace="{escape(namespace)}", pod=~"{escape(names)}", container="{escape(container)}"}}'


def cpu_usage_query(namespace: str, pods: Sequence[str], container: str) -> str:
    """CPU seconds used per pod. ``max``, not ``sum``: a restarted container has a new series (a new
    cgroup ``id``) beside the old one until that goes stale, and adding them would count twice."""
    return f"max by ({', '.join(POD_LABELS)}) ({CPU_USAGE}{pod_selector(namespace, pods, container)})"


def cpu_limit_query(namespace: str, pods: Sequence[str], container: str) -> str:
    """The CPU limit in cores per pod: the CFS quota over its period (absent where no limit is set)."""
    selector = pod_selector(namespace, pods, container)
    by = f"max by ({', '.join(POD_LABELS)})"
    return f"{by} ({CPU_QUOTA}{selector}) / {by} ({CPU_PERIOD}{selector})"
