"""Pure: one Nimbus snapshot to Prometheus metric families (user components and streams only)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from stormscale.storm.exporter import names as n
from stormscale.storm.model import ALL_TIME, Executor, Kind, TopologyInfo, TopologySummary, is_system
from stormscale.storm.stats import (
    execute_latency_ms,
    executor_busy_seconds,
    executor_capacity,
    executors_per_component,
    process_latency_ms,
    tasks_per_component,
)


@dataclass(frozen=True)
class TopologyReport:
    """What one scrape learnt about one topology."""

    summary: TopologySummary
    info: TopologyInfo


@dataclass
class Families:
    """The Storm metric families of one scrape, filled per executor and per component."""

    emitted: CounterMetricFamily
    transferred: CounterMetricFamily
    executed: CounterMetricFamily
    acked: CounterMetricFamily
    failed: CounterMetricFamily
    busy: CounterMetricFamily
    capacity: GaugeMetricFamily
    execute_latency: GaugeMetricFamily
    process_latency: GaugeMetricFamily
    executors: GaugeMetricFamily
    tasks: GaugeMetricFamily
    workers: GaugeMetricFamily

    @classmethod
    def empty(cls) -> Families:
        """Families with their help texts and label names, no samples yet."""
        per_stream = [*n.EXECUTOR_LABELS, n.STREAM]
        per_input = [*n.EXECUTOR_LABELS, n.SOURCE, n.STREAM]
        return cls(
            emitted=CounterMetricFamily(n.EMITTED, "Tuples emitted on an output stream", labels=per_stream),
            transferred=CounterMetricFamily(
                n.TRANSFERRED, "Tuples transferred to other executors", labels=per_stream
            ),
            executed=CounterMetricFamily(
                n.EXECUTED,
                "Tuples executed, by input stream",
                labels=per_input,
            ),
            acked=CounterMetricFamily(n.ACKED, "Tuples acked", labels=n.EXECUTOR_LABELS),
            failed=CounterMetricFamily(n.FAILED, "Tuples failed", labels=n.EXECUTOR_LABELS),
            busy=CounterMetricFamily(
                n.BUSY,
                "Seconds spent executing tuples (all-time executed × mean execute latency)",
                labels=n.EXECUTOR_LABELS,
            ),
            capacity=GaugeMetricFamily(n.CAPACITY, "Busy fraction over 10 minutes", labels=n.EXECUTOR_LABELS),
            execute_latency=GaugeMetricFamily(
                n.EXECUTE_LATENCY, "Mean execute latency over 10 minutes", labels=n.EXECUTOR_LABELS
            ),
            process_latency=GaugeMetricFamily(
                n.PROCESS_LATENCY, "Mean process latency over 10 minutes", labels=n.EXECUTOR_LABELS
            ),
            executors=GaugeMetricFamily(n.EXECUTORS, "Executors of the component", labels=n.COMPONENT_LABELS),
            tasks=GaugeMetricFamily(n.TASKS, "Tasks of the component", labels=n.COMPONENT_LABELS),
            workers=GaugeMetricFamily(n.WORKERS, "Worker processes of the topology", labels=[n.TOPOLOGY]),
        )

    def add_executor(self, topology: str, e: Executor) -> None:
        """Counters of every executor; busy seconds, capacity and latencies of bolt executors."""
        ids = [topology, e.component, e.id]
        stats = e.window(ALL_TIME)
        for stream, count in sorted(stats.emitted.items()):
            if not is_system(stream):
                self.emitted.add_metric([*ids, stream], count)
        for stream, count in sorted(stats.transferred.items()):
            if not is_system(stream):
                self.transferred.add_metric([*ids, stream], count)
        for sid, count in sorted(stats.executed.items()):
            if not (is_system(sid.component) or is_system(sid.stream)):
                self.executed.add_metric([*ids, sid.component, sid.stream], count)
        if e.kind is None:
            return
        self.acked.add_metric(ids, stats.acked)
        self.failed.add_metric(ids, stats.failed)
        if e.kind is Kind.BOLT:
            self.busy.add_metric(ids, executor_busy_seconds(e))
            self.capacity.add_metric(ids, executor_capacity(e))
            self.execute_latency.add_metric(ids, execute_latency_ms(e))
            self.process_latency.add_metric(ids, process_latency_ms(e))

    def add_topology(self, report: TopologyReport) -> None:
        """Every executor, component and the worker count of one topology."""
        name = report.summary.name
        for e in report.info.user_executors():
            self.add_executor(name, e)
        tasks = tasks_per_component(report.info)
        for component, count in sorted(executors_per_component(report.info).items()):
            self.executors.add_metric([name, component], count)
            self.tasks.add_metric([name, component], tasks[component])
        self.workers.add_metric([name], report.summary.workers)

    def __iter__(self) -> Iterator[Metric]:
        return iter(vars(self).values())


def storm_families(reports: tuple[TopologyReport, ...]) -> list[Metric]:
    """The Storm metric families for ``reports``."""
    families = Families.empty()
    for report in reports:
        families.add_topology(report)
    return list(families)
