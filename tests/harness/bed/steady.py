"""A live stack at a steady state: the topology runs as planned, its sinks' rate, its profile.

- ``wait_running``: Storm runs the expected number of workers and every executor reports.
- ``sink_rate``: the sinks' executed counts and tuples/s from Nimbus's own counters (independent of
  Prometheus), and how each worker pod fared against its CPU quota meanwhile (its cgroup's ``cpu.stat``).
- ``profile_now``: the profile exactly as the operator takes it (same profiler, window, step, settle);
  ``profile_taken`` also says which window it read, and can start it where a step's measurement did.
- ``aggregate_offline``: the same window's rows through the aggregation job (PySpark and local).
- ``applied_events``: the Normal ScalingApplied events the operator posted for a budget.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from math import floor
from pathlib import Path
from typing import Any

from stormscale.operator.adapters.kube import KubePods
from stormscale.operator.adapters.profiler import PrometheusProfiler, prometheus_profiler
from stormscale.operator.policy import Policy, parse_spec
from stormscale.operator.ports import MeasuredProfile, StaleMetricsError
from stormscale.samples import write_parquet
from stormscale.storm.model import ALL_TIME
from stormscale.storm.samples.reader import Window
from tests.harness.bed.measure import ExecutedCounter, Measured, rate_over, run_aggregation, write_structure
from tests.harness.bed.stack import Scenario, Stack, storm_topology
from tests.harness.kubernetes.cgroups import QuotaUse, parse_cpu_millis
from tests.harness.waiting import wait_for

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
) -> tuple[Measured, dict[str, QuotaUse]]:
    """Σ sinks' executed counts at two of Nimbus's stats updates ``window_s`` apart (``.rate`` is the
    tuples/s; ``.component_rates()`` every component's executed tuples/s at the same moments), and
    each worker pod's use of its quota over the same wall time."""
    groups = stack.pod_cgroups(scenario)
    before, start = {name: g.bandwidth() for name, g in groups.items()}, time.monotonic()
    every = ExecutedCounter(stack.nimbus(), topology_id, scenario.components)
    measured = rate_over(ExecutedCounter(stack.nimbus(), topology_id, scenario.sinks), window_s, every.each)
    seconds = time.monotonic() - start
    quota_cores = parse_cpu_millis(scenario.pod_cpu) / 1000
    use = {
        name: QuotaUse.between(before[name], g.bandwidth(), seconds, quota_cores)
        for name, g in groups.items()
    }
    return measured, use


def operator_profiler(stack: Stack, scenario: Scenario) -> tuple[PrometheusProfiler, Policy]:
    """The operator's profiler for ``scenario`` (same window, step, settle and busy time from the worker
    pods' CPU less their overhead) and the policy it reads them from."""
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
        slots_per_pod=policy.spec.workers.slots_per_pod,
        demand=policy.spec.demand(),
    )
    return profiler, policy


def profile_now(stack: Stack, scenario: Scenario) -> MeasuredProfile:
    """The profile exactly as the operator takes it (:func:`operator_profiler`)."""
    return profile_taken(stack, scenario).profile


@dataclass(frozen=True)
class TakenProfile:
    """A profile as the operator's profiler took it, and the window it read: ``window_s`` seconds up
    to ``end`` (Unix time; give both to :func:`aggregate_offline` for the very same rows)."""

    profile: MeasuredProfile
    end: float
    window_s: float


def profile_taken(stack: Stack, scenario: Scenario, since: float | None = None) -> TakenProfile:
    """:func:`profile_now`, and the window it read. With ``since`` (Unix time) the window starts no
    earlier than that: the state a step measured from ``since`` on, not the transient before it.

    (The operator's settle starts when the executor count changes, at the rebalance's assignment; the
    disruption lasts longer: workers boot at a fifth of a core, and a reliable spout waits out the
    message timeout of the tuples the restarted workers lost. Measured on the diamond at budget 1:
    the spout stalled 30 s, 40 s after the assignment, inside the 3-minute window, and its profile
    read bolt 2's selectivity as 1.18 and its edge as 0.46, a fit 13.7 % high.)"""
    profiler, policy = operator_profiler(stack, scenario)
    step = max(1, floor(policy.step_s))

    def attempt() -> TakenProfile | None:
        now = time.time()
        end = floor(now / step) * step
        window_s = policy.window_s
        if since is not None:
            window_s = min(window_s, floor((end - since) / step) * step)
        timed = replace(profiler, clock=lambda: now)
        try:
            return TakenProfile(timed.profile(scenario.name, window_s), now, window_s)
        except StaleMetricsError as err:
            stack.log(f"[profile] not yet: {err}")
            return None

    taken: TakenProfile = wait_for(attempt, PROFILE_TIMEOUT_S, "a steady profile", every_s=5.0)
    return taken


def aggregate_offline(
    stack: Stack, scenario: Scenario, end: float, out: Path, window_s: float | None = None
) -> dict[str, dict[str, Any]]:
    """The fleet path over the operator's window that ends at ``end`` (Unix time, in the past) and
    spans ``window_s`` (default: the policy's; :class:`TakenProfile` gives both for the window the
    operator's profiler found steady): the rows the operator aggregates (the sample reader's and the
    worker pods' CPU) written to Parquet, the structure from Nimbus, then ``python -m
    stormscale.aggregation`` with PySpark and with ``--engine local`` on the same files, at the
    operator's settle. The profiles by engine."""
    profiler, policy = operator_profiler(stack, scenario)
    assert profiler.cpu is not None
    step = floor(policy.step_s)
    stop = floor(end / step) * step
    window = Window(stop - floor(policy.window_s if window_s is None else window_s), stop, step)
    rows = profiler.samples.read(scenario.name, window) + profiler.cpu.rows(scenario.name, window)
    samples = out / "samples.parquet"
    write_parquet(rows, samples)
    structure = write_structure(stack.nimbus(), scenario.name, out / "structure" / f"{scenario.name}.json")
    settle = ["--settle", f"{policy.settle_s:g}"]
    return {
        "spark": run_aggregation(samples, structure, out / "spark", settle),
        "local": run_aggregation(samples, structure, out / "local", [*settle, "--engine", "local"]),
    }


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
