"""The metrics faults, on a bed with a real Prometheus: Prometheus stopped, and the
metrics frozen (stale), while a budget is to be applied.

The bed (:func:`metrics_bed`): the real API server and the operator as a real ``kopf run`` process, as
in :mod:`bench.operator_faults`; the fake Nimbus running one topology (thesis-linear:
a 500/s spout, bolts of 400, 250 and 900 tuples/s per unit, their stats the backpressure model's);
the project's real exporter reading that Nimbus; and the real Prometheus (Debian's, from
``tests/harness/prometheus``) scraping the exporter every second. The StormTopology measures over a
:data:`METRICS` window of 16 s at 2 s steps (newest sample at most 6 s old) and names the spout's
demand (``vector(500)``: the spout is throttled by bolt 3, so its emitted rate is not its demand).

One run (:func:`run_metrics_faults`): the part stops (``prometheus-stop``: Prometheus itself, so the
operator's queries are refused; ``metrics-stale``: the exporter, so Prometheus answers but the series
go stale, and the apply waits :data:`STALE_AFTER_S` so that they are older than ``maxAge``), the next
budget is applied and the operator watched for :data:`OBSERVE_S`: it must take no action (no
rebalance, no replica change, no pending plan, no ``ScalingApplied``), be Degraded with the reason
docs/operator/reference.md names (``MetricsUnavailable``, ``StaleMetrics``) and post one Warning for it. Then
the part starts again and the run ends when the budget is applied and Ready (the common checks of
:class:`~bench.operator_faults.FaultRun`).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from bench import fleet
from bench.operator_faults import (
    CONVERGE_S,
    NAME,
    POLL_S,
    Bed,
    Fault,
    FaultRun,
    ensure_ready,
    line,
    namespace_with_workers,
    new_reasons,
    next_budget,
)
from stormscale.planner import load_profile
from tests.harness.fakes import nimbus as fake_nimbus
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.paths import REPO_ROOT
from tests.harness.process import Daemon, LaunchSpec, free_port, http_ok
from tests.harness.prometheus.server import Prometheus, StaticJob
from tests.harness.waiting import seconds_until

NAMESPACE = "faults-metrics"
METRICS = {"window": "16s", "step": "2s", "settle": "4s", "maxAge": "6s"}
WINDOW_S = 16.0
MAX_AGE_S = 6.0
#: The spout's demand: the profile's 500 tuples/s (a Kafka topic's append rate in production).
DEMAND = [{"name": "1", "demandQuery": "vector(500)"}]
SCRAPE_S = 1
#: ``metrics-stale``: the apply comes this long after the exporter stopped (newest sample > maxAge).
STALE_AFTER_S = MAX_AGE_S + 2 * SCRAPE_S
#: How long the operator is watched while the part is down: its spec pass and a timer pass (each ends
#: Degraded and is looked at again 30 s later, when the part is back and the window clean again).
OBSERVE_S = 6.0
EXPECTED = {Fault.PROMETHEUS_STOP: "MetricsUnavailable", Fault.METRICS_STALE: "StaleMetrics"}
PHASE = "before the apply"


@dataclass
class Exporter:
    """The project's exporter (``python -m stormscale.storm.exporter``) on a fixed port, restartable."""

    nimbus_port: int
    run_dir: Path
    port: int = 0
    daemon: Daemon | None = None

    def __post_init__(self) -> None:
        self.port = self.port or free_port()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "stormscale.storm.exporter",
            "--nimbus",
            f"127.0.0.1:{self.nimbus_port}",
        ]
        argv += ["--port", str(self.port), "--cache-seconds", "0.5", "--timeout", "2"]
        log = self.run_dir / "exporter.log"
        self.daemon = Daemon(LaunchSpec("exporter", argv, {"PATH": "/usr/bin:/bin"}, REPO_ROOT, log, log))
        self.daemon.wait_ready(lambda: http_ok(f"http://{self.target}/healthz"), 30, "the exporter answers")

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
            self.daemon = None


@dataclass
class MetricsBed:
    bed: Bed
    prometheus: Prometheus
    exporter: Exporter


@contextmanager
def metrics_bed(plane: ControlPlane, api: client.ApiClient, run_dir: Path) -> Iterator[MetricsBed]:
    """The namespace and worker Deployment, the fake Nimbus, the exporter and Prometheus; the first
    :data:`WINDOW_S` of samples are in Prometheus when it yields."""
    profile = load_profile(fleet.PROFILE)
    with ExitStack() as stack:
        stack.enter_context(namespace_with_workers(plane, NAMESPACE))
        nimbus = stack.enter_context(fake_nimbus.serving(lambda port: fake_nimbus.Fleet("127.0.0.1", port)))
        nimbus.submit(NAME, profile, {c.id: fleet.TASKS for c in profile.components})
        exporter = Exporter(nimbus.port, run_dir)
        exporter.start()
        stack.callback(exporter.stop)
        job = StaticJob("storm", [exporter.target])
        prometheus = Prometheus(run_dir / "prometheus", scrape_interval_s=SCRAPE_S, jobs=[job]).start()
        stack.callback(prometheus.stop)
        prometheus.wait_for(f'storm_component_executed_total{{topology="{NAME}"}}', 60)
        time.sleep(WINDOW_S)  # a whole window of samples: the first pass can plan
        bed = Bed(plane, api, nimbus, prometheus.url, run_dir, NAMESPACE, dict(METRICS), list(DEMAND))
        yield MetricsBed(bed, prometheus, exporter)


def run_metrics_faults(
    mbed: MetricsBed,
    fault: Fault,
    *,
    runs: int,
    progress: Callable[[str], None] = lambda _: None,
) -> list[FaultRun]:
    """``runs`` applies, each made while ``fault``'s part is down (see the module's docstring)."""
    bed = mbed.bed
    stop, start = _controls(mbed, fault)
    operator = bed.start_operator()
    done: list[FaultRun] = []
    try:
        ensure_ready(bed, operator)
        for index in range(runs):
            before = bed.observe()
            budget = next_budget(before.applied_budget)
            stopped_at = time.time()
            stop()
            if fault is Fault.METRICS_STALE:
                time.sleep(STALE_AFTER_S)
            applied_at = time.time()
            bed.apply_budget(budget)
            found = _watch_no_action(bed, operator, applied_at)
            meanwhile = bed.observe(applied_at)
            start()
            outage_s = time.time() - stopped_at

            took = seconds_until(
                functools.partial(bed.converged, budget),
                CONVERGE_S,
                "converged",
                every_s=POLL_S,
                daemons=(operator,),
                raise_on_timeout=False,
            )
            after = bed.observe(applied_at)
            events = new_reasons(before, after)
            expected = EXPECTED[fault]
            if meanwhile.degraded != expected:
                found.append(f"Degraded {meanwhile.degraded} while down, not {expected}")
            if events.get(expected) != 1:
                found.append(f"{events.get(expected, 0)} {expected} Warnings, not one")
            run = FaultRun(
                fault,
                index,
                budget,
                0.0,
                PHASE,
                took,
                after,
                fleet.BASELINE_UNITS,
                events.get("ScalingApplied", 0),
                tuple(found),
                outage_s,
                meanwhile.degraded,
                None,
                events,
            )
            done.append(run)
            progress(line(run))
    finally:
        operator.stop()
    return done


def _controls(mbed: MetricsBed, fault: Fault) -> tuple[Callable[[], object], Callable[[], object]]:
    """How ``fault`` stops its part and starts it again."""
    if fault is Fault.PROMETHEUS_STOP:
        return mbed.prometheus.stop, mbed.prometheus.start
    if fault is Fault.METRICS_STALE:
        return mbed.exporter.stop, mbed.exporter.start
    raise ValueError(f"{fault} is not a metrics fault")


def _watch_no_action(bed: Bed, operator: Daemon, applied_at: float) -> list[str]:
    """Watch the operator for :data:`OBSERVE_S` after the apply: anything it did is a problem."""
    found: list[str] = []
    deadline = time.monotonic() + OBSERVE_S
    while time.monotonic() < deadline:
        now = bed.observe(applied_at)
        if now.rebalanced_since_apply:
            found.append("asked Nimbus to rebalance")
        if now.pending:
            found.append("saved a plan to apply (status.pending)")
        if now.replicas != sum(now.storm_units.values()):
            found.append(f"set {now.replicas} replicas")
        if found:
            return found
        if operator.exited() is not None:
            raise operator.failure("exited")
        time.sleep(0.5)
    return found
