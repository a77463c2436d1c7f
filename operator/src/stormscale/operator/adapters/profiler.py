"""``ports.Profiler`` in the operator's process: Prometheus → samples → the aggregation → a profile.

The samples are the exporter's series read by :class:`~stormscale.storm.samples.SampleReader` (the
same rows ``stormscale-samples`` writes to Parquet); the profile is built by the aggregation's
single-process engine (:func:`stormscale.aggregation.profile_table`, the same estimators and formulas
as the Spark job, without PySpark). The topology's graph comes from Nimbus (``getUserTopology``), its
tasks from the running topology. Nothing is guessed: no samples, too few steady intervals, an
unsteady window or a profile through which nothing flows (e.g. a spout whose stats froze while a bolt
works off a backlog) raise :class:`~stormscale.operator.ports.StaleMetricsError`, which reconcile
turns into ``Degraded`` and no action.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from math import floor
from typing import Any, Protocol

from stormscale.aggregation import (
    Aggregates,
    AggregationError,
    ComponentSpec,
    Params,
    Structure,
    profile_table,
)
from stormscale.operator.adapters.errors import mapped
from stormscale.operator.ports import MeasuredProfile, RefusedError, StaleMetricsError
from stormscale.planner import FlowModel, ProfileError, parse_profile, throughput
from stormscale.samples import Sample, table
from stormscale.storm import NimbusClient
from stormscale.storm.model import Kind, TopologyStructure
from stormscale.storm.samples import SampleReader, Window
from stormscale.storm.stats import tasks_per_component


class Samples(Protocol):
    def read(self, topology: str, window: Window) -> list[Sample]: ...

    def newest(self, topology: str) -> float | None:
        """Unix time of the newest scraped sample of the topology (None: there is none)."""


class Graphs(Protocol):
    def structure(self, topology: str) -> Structure:
        """The topology's components, their children and task counts."""


@dataclass(frozen=True)
class NimbusGraphs:
    """Structures from Nimbus: the submitted graph (``getUserTopology``) and the running tasks."""

    client: NimbusClient

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
class PrometheusProfiler:
    """Measure one topology over the last ``window_s`` seconds at ``step_s`` resolution."""

    samples: Samples
    graphs: Graphs
    step_s: float = 10.0
    settle_s: float = 120.0
    clock: Callable[[], float] = time.time

    def profile(self, topology: str, window_s: float) -> MeasuredProfile:
        now = self.clock()
        step = max(1, floor(self.step_s))
        end = floor(now / step) * step
        rows = mapped(lambda: self.samples.read(topology, Window(end - floor(window_s), end, step)))
        if not rows:
            message = f"no samples of topology {topology!r} in Prometheus for the last {window_s:g}s"
            raise StaleMetricsError(message)
        structure = self.graphs.structure(topology)
        document, aggregates = self._aggregate(topology, rows, structure)
        if not document["confidence"]["steady"]:
            unstable = ", ".join(document["confidence"]["unstable"])
            message = f"rates of {unstable} are not steady over the window; not planning on them"
            raise StaleMetricsError(message)
        try:
            model = parse_profile(document)
        except ProfileError as err:  # the builder validates already; kept as a guard
            raise StaleMetricsError(f"measured profile is invalid: {err}") from None
        if throughput(model, model.units, FlowModel.BACKPRESSURE) <= 0:
            idle = ", ".join(c.id for c in model.components if c.is_spout and not c.output_per_unit)
            message = f"the measured profile carries no flow (spouts without output: {idle or 'none'})"
            raise StaleMetricsError(message)
        newest = mapped(lambda: self.samples.newest(topology))
        age = window_s if newest is None else max(0.0, now - newest)
        return MeasuredProfile(model, sink_throughput(structure, aggregates), age)

    def _aggregate(
        self, topology: str, rows: list[Sample], structure: Structure
    ) -> tuple[dict[str, Any], Aggregates]:
        params = Params(settle_s=self.settle_s)
        try:
            (document,), aggregates = profile_table(table(rows), [structure], params)
        except AggregationError as err:
            raise StaleMetricsError(f"topology {topology!r}: {err}") from None
        return document, aggregates


def prometheus_profiler(url: str, nimbus: NimbusClient, step_s: float, settle_s: float) -> PrometheusProfiler:
    """The production wiring: the sample reader on ``url`` and Nimbus for the graph."""
    return PrometheusProfiler(SampleReader(url), NimbusGraphs(nimbus), step_s, settle_s)
