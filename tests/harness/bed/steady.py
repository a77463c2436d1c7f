"""A live stack at a steady state: the topology runs as planned, its sinks' rate, its profile.

- ``wait_running``: Storm runs the expected number of workers and every executor reports.
- ``sink_rate``: the sinks' executed tuples/s from Nimbus's own counters (independent of Prometheus),
  and how each worker pod fared against its CPU quota meanwhile (from its cgroup's ``cpu.stat``).
- ``profile_now``: the profile exactly as the operator takes it (same profiler, window, step, settle).
- ``applied_events``: the Normal ScalingApplied events the operator posted for a budget.
"""

from __future__ import annotations

import json
import time

from stormscale.operator.adapters.kube import KubePods
from stormscale.operator.adapters.profiler import prometheus_profiler
from stormscale.operator.policy import parse_spec
from stormscale.operator.ports import MeasuredProfile, StaleMetricsError
from stormscale.storm.model import ALL_TIME
from tests.harness.bed.measure import SinkCounter, rate_over
from tests.harness.bed.stack import Scenario, Stack, storm_topology, wait_for
from tests.harness.kubernetes.cgroups import QuotaUse, parse_cpu_millis

MEASURE_S = 90.0
PROFILE_TIMEOUT_S = 300.0
RUNNING_TIMEOUT_S = 300.0


def wait_running(stack: Stack, scenario: Scenario, total_units: int) -> None:
    """Storm runs ``total_units`` workers for the topology and every executor reports."""

    def running() -> bool:
        summary = stack.nimbus().topology(scenario.name)
        if summary is None or summary.status != "ACTIVE" or summary.workers != total_units:
            return False
        page = stack.nimbus().topology_page(summary.id, ALL_TIME).components
        return all(page[c].executors >= 1 for c in scenario.components if c in page)

    wait_for(running, RUNNING_TIMEOUT_S, f"{total_units} workers running", every_s=2.0)


def sink_rate(
    stack: Stack, scenario: Scenario, topology_id: str, window_s: float = MEASURE_S
) -> tuple[float, dict[str, QuotaUse]]:
    """Σ sinks' executed tuples/s over ``window_s``, between two of Nimbus's stats updates, and each
    worker pod's use of its quota over the same wall time."""
    groups = stack.pod_cgroups(scenario)
    before, start = {name: g.bandwidth() for name, g in groups.items()}, time.monotonic()
    rate = rate_over(SinkCounter(stack.nimbus(), topology_id, scenario.sinks), window_s).rate
    seconds = time.monotonic() - start
    quota_cores = parse_cpu_millis(scenario.unit_cpu) / 1000
    use = {
        name: QuotaUse.between(before[name], g.bandwidth(), seconds, quota_cores)
        for name, g in groups.items()
    }
    return rate, use


def profile_now(stack: Stack, scenario: Scenario) -> MeasuredProfile:
    """The profile exactly as the operator takes it (same profiler, window, step and settle, and busy
    time from the worker pods' CPU)."""
    overhead = stack.pod_overhead.get(scenario.name, "0")
    policy = parse_spec(storm_topology(scenario, 6627, stack.prometheus.url, 0, overhead)["spec"])
    workers = (KubePods(stack.api), stack.namespace, scenario.deployment)
    profiler = prometheus_profiler(
        stack.prometheus.url,
        stack.nimbus(),
        policy.step_s,
        policy.settle_s,
        workers=workers,
        pod_overhead_cores=policy.spec.workers.pod_overhead_cores,
    )

    def attempt() -> MeasuredProfile | None:
        try:
            return profiler.profile(scenario.name, policy.window_s)
        except StaleMetricsError as err:
            stack.log(f"[profile] not yet: {err}")
            return None

    result: MeasuredProfile = wait_for(attempt, PROFILE_TIMEOUT_S, "a steady profile", every_s=10.0)
    return result


def applied_events(stack: Stack, scenario: Scenario, budget: int) -> int:
    """How many Normal ScalingApplied events announce ``budget``."""
    text = stack.plane.kubectl("get", "events", "-n", stack.namespace, "-o", "json")
    items = json.loads(text)["items"]
    return sum(
        int(e.get("count") or 1)
        for e in items
        if e.get("reason") == "ScalingApplied"
        and e["involvedObject"].get("name") == scenario.name
        and e.get("message", "").startswith(f"Applied budget {budget}:")
    )
