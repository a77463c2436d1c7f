"""``ports.Profiler`` in the operator's process: Prometheus → samples → the aggregation → a profile.

The samples are the exporter's series read by :class:`~stormscale.storm.samples.SampleReader` (the
same rows ``stormscale-samples`` writes to Parquet); the profile is built by the aggregation's
single-process engine (:func:`stormscale.aggregation.typed_profile_table`, the same estimators and formulas
as the Spark job, without PySpark). The topology's graph comes from Nimbus (``getUserTopology``), its
tasks from the running topology. Nothing is guessed: no samples, too few steady intervals, an
unsteady window or a profile through which nothing flows (e.g. a spout whose stats froze while a bolt
works off a backlog) raise :class:`~stormscale.operator.ports.StaleMetricsError`, which reconcile
turns into ``Degraded`` and no action.

Busy time from the unit's CPU (:class:`WorkerCpu`): the worker Deployment's pods from the API server
(``Pods``, :class:`~stormscale.operator.adapters.kube.KubePods`), the executors' worker hosts from
Nimbus (``Hosts``) and the pods' cAdvisor series from Prometheus (``PodCpuSeries``) are joined by
:func:`~stormscale.storm.samples.cpu_samples` into ``cpu_seconds_total``/``cpu_limit_cores`` rows,
which the aggregation prefers to Storm's busy time (source ``pod-cpu``). Failures of any of the three
are the ports' two errors like every other; what the join cannot place (no cAdvisor series, a host
that matches no pod, a pod shared by components) is not an error: those executors keep Storm's busy
time, the profile says which source each component used, and the operator logs why.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from math import floor
from typing import Protocol

from stormscale.aggregation import (
    Aggregates,
    AggregationError,
    ComponentSpec,
    Params,
    Structure,
    UnsettledWindowError,
    typed_profile_table,
)
from stormscale.operator.adapters.errors import mapped
from stormscale.operator.ports import (
    MeasuredProfile,
    PodLoad,
    RefusedError,
    SettlingError,
    StaleMetricsError,
)
from stormscale.operator.profiles import check_usable
from stormscale.planner import DemandCheck, Profile, ProfileError
from stormscale.samples import Sample, table
from stormscale.storm import NimbusClient
from stormscale.storm.model import Executor, Kind, TopologyStructure
from stormscale.storm.samples import Pod, PodCpu, SampleReader, Window, cpu_samples, pod_busy
from stormscale.storm.samples.demand import Demand, DemandRows, with_demand
from stormscale.storm.samples.fetch import Auth
from stormscale.storm.stats import tasks_per_component

LOG = logging.getLogger("stormscale.operator")
#: Kafka's cross-check: the append rate against the spout's emitted rate plus the lag's growth; a
#: larger relative difference is flagged (the topic has other writers' records the spout skips, a
#: translator emits other than one tuple per record, or the exporter lags).
DEMAND_DISAGREEMENT = 0.10


class Samples(Protocol):
    def read(self, topology: str, window: Window) -> list[Sample]: ...

    def demand(self, topology: str, component: str, source: Demand, window: Window) -> DemandRows:
        """A spout's offered tuples from outside Storm (:mod:`stormscale.storm.samples.demand`)."""

    def newest(self, topology: str) -> float | None:
        """Unix time of the newest scraped sample of the topology (None: there is none)."""


class Graphs(Protocol):
    def structure(self, topology: str) -> Structure:
        """The topology's components, their children and task counts."""


class Hosts(Protocol):
    def executors(self, topology: str) -> Sequence[Executor]:
        """The running executors, each with the worker host Nimbus reports for it."""


class Pods(Protocol):
    def worker_pods(self, namespace: str, deployment: str) -> Sequence[Pod]:
        """The Deployment's pods: name, IP, worker container and its CPU limit."""


class PodCpuSeries(Protocol):
    def pod_cpu(self, namespace: str, pods: Sequence[Pod], window: Window) -> Mapping[str, PodCpu]:
        """The pods' CPU usage and limit series over the window, by pod name."""


@dataclass(frozen=True)
class NimbusGraphs:
    """Structures from Nimbus: the submitted graph (``getUserTopology``) and the running tasks; and
    the executors' hosts (``Hosts``)."""

    client: NimbusClient

    def executors(self, topology: str) -> Sequence[Executor]:
        return mapped(lambda: self.client.topology_info(topology)).executors

    def structure(self, topology: str) -> Structure:
        summary = mapped(lambda: self.client.topology(topology))
        if summary is None:
            raise RefusedError(f"topology {topology!r} is not running on Nimbus")
        graph = mapped(lambda: self.client.structure(summary.id))
        info = mapped(lambda: self.client.topology_info(topology))
        return structure_of(topology, graph, tasks_per_component(info))


def structure_of(topology: str, graph: TopologyStructure, tasks: Mapping[str, int]) -> Structure:
    """Storm's graph as the aggregation's structure (components sorted by id, children sorted)."""
    return Structure(
        topology,
        tuple(
            ComponentSpec(
                cid,
                "spout" if spec.kind is Kind.SPOUT else "bolt",
                graph.children(cid),
                tasks.get(cid),
            )
            for cid, spec in sorted(graph.components.items())
        ),
    )


def sink_throughput(structure: Structure, aggregates: Aggregates) -> float:
    """Observed throughput: Σ over sinks (components without children) of their executed tuples/s."""
    stats = aggregates.components.get(structure.topology, {})
    sinks = [c.id for c in structure.components if not c.children]
    return sum((stats[s].executed_rate or 0.0) if s in stats else 0.0 for s in sinks)


@dataclass(frozen=True)
class WorkerCpu:
    """Where the worker pods' CPU comes from: the spec's worker Deployment (``namespace``/``deployment``),
    its pods from the API server, the executors' hosts from Nimbus, the series from Prometheus."""

    namespace: str
    deployment: str
    pods: Pods
    hosts: Hosts
    series: PodCpuSeries
    #: The spec's ``workers.podOverheadCPU`` in cores (see :func:`~stormscale.storm.samples.cpu_samples`).
    overhead_cores: float = 0.0
    #: The spec's ``workers.slotsPerPod``: a unit is a slot's share of a pod's CPU.
    slots_per_pod: int = 1

    def rows(self, topology: str, window: Window) -> list[Sample]:
        """Per-executor CPU rows of the sample contract (none where the join cannot place them)."""
        return self.measure(topology, window)[0]

    def measure(self, topology: str, window: Window) -> tuple[list[Sample], tuple[PodLoad, ...]]:
        """:meth:`rows`, and every worker pod's CPU over its limit across the window (its overhead
        included: multi-level elasticity's ``totalCPU_T``; ``None`` where cAdvisor has no series)."""
        pods = self.pods.worker_pods(self.namespace, self.deployment)
        if not pods:
            return [], ()
        executors = self.hosts.executors(topology)
        series = mapped(lambda: self.series.pod_cpu(self.namespace, pods, window))
        loads = tuple(
            PodLoad(p.name, p.ip, pod_busy(series[p.name], p.cpu_limit_cores) if p.name in series else None)
            for p in pods
        )
        joined = cpu_samples(
            topology, executors, pods, series, self.overhead_cores, slots_per_pod=self.slots_per_pod
        )
        where = f"[{self.namespace}/{self.deployment}] {topology}"
        if joined.unmatched:
            LOG.info(
                "%s: worker hosts %s match no pod's IP or name (set storm.local.hostname to the pod IP): "
                "their executors keep Storm's busy time",
                where,
                ", ".join(joined.unmatched),
            )
        for pod, components in joined.shared.items():
            LOG.info("%s: pod %s runs %s: its CPU is nobody's alone", where, pod, ", ".join(components))
        if joined.no_limit:
            LOG.info("%s: pods without a CPU limit: %s", where, ", ".join(joined.no_limit))
        return joined.rows, loads


@dataclass(frozen=True)
class PrometheusProfiler:
    """Measure one topology over the last ``window_s`` seconds at ``step_s`` resolution; with
    ``cpu``, busy time from the worker pods' CPU where one component runs per pod."""

    samples: Samples
    graphs: Graphs
    step_s: float = 10.0
    settle_s: float = 120.0
    clock: Callable[[], float] = time.time
    cpu: WorkerCpu | None = None
    #: Spout id → where its demand comes from (the spec's ``demandQuery`` or ``kafka``).
    demand: Mapping[str, Demand] = field(default_factory=dict)

    def profile(self, topology: str, window_s: float) -> MeasuredProfile:
        now = self.clock()
        step = max(1, floor(self.step_s))
        end = floor(now / step) * step
        window = mapped(lambda: Window(end - floor(window_s), end, step))
        rows = mapped(lambda: self.samples.read(topology, window))
        if not rows:
            message = f"no samples of topology {topology!r} in Prometheus for the last {window_s:g}s"
            raise StaleMetricsError(message)
        loads: tuple[PodLoad, ...] = ()
        if self.cpu is not None:
            cpu_rows, loads = self.cpu.measure(topology, window)
            rows += cpu_rows
        structure = self.graphs.structure(topology)
        rows, lag_growth = self._with_demand(topology, rows, structure, window)
        age = self._age(topology, now, window_s)
        measured, aggregates = self._aggregate(topology, rows, structure, age)
        marked = mark_demand(measured, self.demand, lag_growth)
        check_usable(marked)
        throughput = sink_throughput(structure, aggregates)
        return MeasuredProfile(
            marked.topology, throughput, age, marked.confidence, pods=loads, demand=marked.demand
        )

    def _with_demand(
        self, topology: str, rows: list[Sample], structure: Structure, window: Window
    ) -> tuple[list[Sample], dict[str, float | None]]:
        """``rows`` with each demand source's ``offered_total`` rows in place of the spout's own; and
        the Kafka sources' lag growth by spout."""
        kinds = {c.id: c.kind for c in structure.components}
        lag_growth: dict[str, float | None] = {}
        for spout, source in sorted(self.demand.items()):
            if kinds.get(spout) != "spout":
                what = "a bolt" if spout in kinds else "not a component of the topology"
                raise RefusedError(f"components[{spout}]: {source.describe()} names {spout!r}, {what}")
            found = mapped(lambda: self.samples.demand(topology, spout, source, window))  # noqa: B023
            if not found.rows:
                raise StaleMetricsError(f"spout {spout}: no samples of its {source.describe()} in the window")
            rows = with_demand(rows, spout, found)
            lag_growth[spout] = found.lag_growth
        return rows, lag_growth

    def _age(self, topology: str, now: float, window_s: float) -> float:
        """Seconds since the topology's newest scraped sample (``window_s``: none)."""
        newest = mapped(lambda: self.samples.newest(topology))
        return window_s if newest is None else max(0.0, now - newest)

    def _aggregate(
        self, topology: str, rows: list[Sample], structure: Structure, age_s: float
    ) -> tuple[Profile, Aggregates]:
        """The typed profile and the aggregates; too few steady intervals after a change the samples
        show is :class:`~stormscale.operator.ports.SettlingError` with the newest sample's age."""
        params = Params(settle_s=self.settle_s)
        try:
            (profile,), aggregates = typed_profile_table(table(rows), [structure], params)
        except UnsettledWindowError as err:
            raise SettlingError(naming(topology, err), age_s) from None
        except AggregationError as err:
            raise StaleMetricsError(naming(topology, err)) from None
        except ProfileError as err:  # the builder validates already; kept as a guard
            raise StaleMetricsError(f"measured profile is invalid: {err}") from None
        return profile, aggregates


def naming(topology: str, err: Exception) -> str:
    """``err``'s message led by the topology's name, once (the aggregation names it in some)."""
    text, name = str(err), f"topology {topology!r}"
    return text if text.startswith(name) else f"{name}: {text}"


def mark_demand(
    profile: Profile, sources: Mapping[str, Demand], lag_growth: Mapping[str, float | None]
) -> Profile:
    """``profile`` with each spout's demand source named in its confidence's ``output_source``
    (``kafka``, ``demand-query``; the aggregation said ``offered``) and, for Kafka, the cross-check
    :class:`~stormscale.planner.DemandCheck` (a note where it disagrees), the append rate being the
    spout's output with its fan-out folded back out::

        append = outputPerUnit · units / fanout
        disagreement ⇔ |append − (emitted + dL/dt)| > DEMAND_DISAGREEMENT · append
    """
    components = dict(profile.confidence.components)
    notes = list(profile.confidence.notes)
    for component in profile.topology.components:
        source = sources.get(component.id)
        if source is None:
            continue
        marked = replace(profile.confidence.of(component.id), output_source=source.source)
        growth, emitted = lag_growth.get(component.id), marked.emitted_rate
        if growth is not None and emitted is not None:
            append = component.output_per_unit * component.units / marked.fanout
            disagrees = abs(append - (emitted + growth)) > DEMAND_DISAGREEMENT * max(append, 1e-9)
            marked = replace(marked, demand=DemandCheck(append, growth, emitted, disagrees))
            if disagrees:
                notes.append(
                    f"{component.id}: {source.describe()} appends {append:.3g}/s, but the spout emits "
                    f"{emitted:.3g}/s and the lag grows {growth:.3g}/s"
                )
        components[component.id] = marked
    confidence = replace(profile.confidence, components=components, notes=tuple(notes))
    return replace(profile, confidence=confidence)


def prometheus_profiler(
    url: str,
    nimbus: NimbusClient,
    step_s: float,
    settle_s: float,
    workers: tuple[Pods, str, str] | None = None,
    *,
    pod_overhead_cores: float = 0.0,
    slots_per_pod: int = 1,
    demand: Mapping[str, Demand] | None = None,
    auth: Auth | None = None,
) -> PrometheusProfiler:
    """The production wiring: the sample reader on ``url`` (with ``auth``'s credentials) and Nimbus
    for the graph; with ``workers`` (the API server's pods, the namespace and the worker Deployment),
    busy time from the worker pods' CPU less ``pod_overhead_cores`` per pod, a unit being one of its
    ``slots_per_pod``."""
    reader, graphs = SampleReader(url, auth=auth), NimbusGraphs(nimbus)
    cpu = (
        None
        if workers is None
        else WorkerCpu(workers[1], workers[2], workers[0], graphs, reader, pod_overhead_cores, slots_per_pod)
    )
    return PrometheusProfiler(reader, graphs, step_s, settle_s, cpu=cpu, demand=dict(demand or {}))
