"""The operator's own metrics, in Prometheus's text format (docs/operator/reference.md, "The
operator's metrics").

Two kinds:

* **Per pass** (counters and histograms of this process): passes by handler and how they ended,
  Degraded passes by reason, timer passes skipped, each pass's duration and the planning time.
* **Per StormTopology** (gauges of the last pass's status, one series set per resource, gone with
  the resource): the applied budget, units per component, the plan's predicted throughput, the
  observed throughput, readiness and the Degraded reason.

:class:`OperatorMetrics` keeps both and serves them through its own registry (not the process-wide
default: tests make as many as they like); :func:`serve` exposes it on ``host:port`` when
``STORMSCALE_METRICS_LISTEN`` is set (the chart sets the pod's IP and port 8081).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from stormscale.operator.status import DEGRADED, READY, StormTopologyStatus

RESOURCE = ("namespace", "stormtopology")
#: Pass durations: from a few milliseconds (nothing to do) to a silent endpoint's timeouts.
PASS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
PLAN_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class Snapshot:
    """What the gauges say of one StormTopology: read from its status after a pass."""

    applied_budget: int | None
    units: Mapping[str, int]
    predicted: float | None
    observed: float | None
    ready: bool
    degraded_reason: str | None

    @classmethod
    def of(cls, status: StormTopologyStatus) -> Snapshot:
        ready, degraded = status.condition(READY), status.condition(DEGRADED)
        plan, observed = status.last_plan, status.observed
        return cls(
            applied_budget=status.applied_budget,
            units=dict(status.units or {}),
            predicted=plan.predicted.after if plan is not None else None,
            observed=observed.throughput if observed is not None else None,
            ready=ready is not None and ready.status == "True",
            degraded_reason=degraded.reason if degraded is not None and degraded.status == "True" else None,
        )


@dataclass(eq=False)  # the registry keeps collectors in a dict: hashed by identity
class _Resources(Collector):
    """The per-StormTopology gauges, from the last snapshot of each resource."""

    snapshots: dict[tuple[str, str], Snapshot] = field(default_factory=dict)
    guard: threading.Lock = field(default_factory=threading.Lock)

    def collect(self) -> Iterator[Metric]:
        with self.guard:
            items = sorted(self.snapshots.items())
        budget = _gauge("applied_budget", "Budget applied (units beyond the baseline)")
        units = _gauge("units", "Units (executors) per component", "component")
        predicted = _gauge("predicted_throughput", "Tuples/s the last plan predicted")
        observed = _gauge("observed_throughput", "Tuples/s the sinks ran at when last profiled")
        ready = _gauge("ready", "1 when the budget is applied and the inputs are valid")
        degraded = _gauge("degraded", "1, with the reason the operator holds off", "reason")
        for (namespace, name), snap in items:
            key = [namespace, name]
            if snap.applied_budget is not None:
                budget.add_metric(key, snap.applied_budget)
            for component, n in sorted(snap.units.items()):
                units.add_metric([*key, component], n)
            if snap.predicted is not None:
                predicted.add_metric(key, snap.predicted)
            if snap.observed is not None:
                observed.add_metric(key, snap.observed)
            ready.add_metric(key, 1.0 if snap.ready else 0.0)
            if snap.degraded_reason is not None:
                degraded.add_metric([*key, snap.degraded_reason], 1.0)
        yield from (budget, units, predicted, observed, ready, degraded)


def _gauge(name: str, documentation: str, *labels: str) -> GaugeMetricFamily:
    """``stormscale_topology_<name>``, labelled by the resource (and ``labels``)."""
    return GaugeMetricFamily(f"stormscale_topology_{name}", documentation, labels=[*RESOURCE, *labels])


@dataclass(frozen=True)
class PassEnd:
    """How one pass ended: ``result`` as its log line says it (``Ready True Applied``, ``gone``, an
    exception's name)."""

    namespace: str
    name: str
    cause: str
    seconds: float
    result: str


class OperatorMetrics:
    """The operator's metrics in a registry of their own."""

    def __init__(self) -> None:
        registry = self.registry = CollectorRegistry()
        self.passes = Counter(
            "stormscale_operator_passes",
            "Reconcile passes, by handler and how they ended",
            ["cause", "result"],
            registry=registry,
        )
        self.degraded = Counter(
            "stormscale_operator_degraded_passes",
            "Passes that ended Degraded (no action), by reason",
            ["reason"],
            registry=registry,
        )
        self.skipped = Counter(
            "stormscale_operator_timer_passes_skipped",
            "Timer passes skipped: a pass of the resource ran",
            registry=registry,
        )
        self.pass_seconds = Histogram(
            "stormscale_operator_pass_seconds",
            "Duration of a pass, lock wait included",
            ["cause"],
            buckets=PASS_BUCKETS,
            registry=registry,
        )
        self.plan_seconds = Histogram(
            "stormscale_operator_plan_seconds",
            "Time to plan every strategy for one budget",
            buckets=PLAN_BUCKETS,
            registry=registry,
        )
        self._resources = _Resources()
        registry.register(self._resources)

    def record_pass(self, end: PassEnd, status: StormTopologyStatus | None) -> None:
        """One pass ended with ``status`` saved (``None``: none; the resource's gauges go when it is
        gone, and stay as they were when the pass raised)."""
        self.passes.labels(end.cause, end.result).inc()
        self.pass_seconds.labels(end.cause).observe(end.seconds)
        key = (end.namespace, end.name)
        if status is None:
            if end.result == "gone":
                with self._resources.guard:
                    self._resources.snapshots.pop(key, None)
            return
        snapshot = Snapshot.of(status)
        with self._resources.guard:
            self._resources.snapshots[key] = snapshot
        if snapshot.degraded_reason is not None:
            self.degraded.labels(snapshot.degraded_reason).inc()

    def record_plan(self, seconds: float) -> None:
        self.plan_seconds.observe(seconds)

    def record_skip(self) -> None:
        self.skipped.inc()


def parse_listen(text: str) -> tuple[str, int]:
    """``host:port`` (``:8081`` binds every address, port 0 a free one); ValueError naming the problem."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"STORMSCALE_METRICS_LISTEN must be host:port, got {text!r}")
    return host or "0.0.0.0", int(port)


def serve(metrics: OperatorMetrics, listen: str) -> tuple[str, int]:
    """Serve ``metrics`` on ``listen`` (``host:port``) in a daemon thread; the address bound."""
    host, port = parse_listen(listen)
    server, _ = start_http_server(port, addr=host, registry=metrics.registry)
    bound_host, bound_port = server.server_address[:2]
    return str(bound_host), int(bound_port)
