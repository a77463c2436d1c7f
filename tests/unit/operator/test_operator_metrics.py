"""The operator's own metrics (stormscale.operator.metrics): what each pass and each resource's status
become in Prometheus's text format, served over real HTTP."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from stormscale.operator.metrics import OperatorMetrics, PassEnd, parse_listen, serve
from stormscale.operator.reconcile import reconcile
from stormscale.operator.status import StormTopologyStatus

from .test_reconcile import RESOURCE, T0, policy, run, world


def samples(metrics: OperatorMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the registry: (name, sorted labels) → value."""
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def applied_status() -> StormTopologyStatus:
    """The status of a linear topology after budget 2 was planned, applied and verified."""
    w = world()
    first = run(w, policy())
    return StormTopologyStatus.from_json(run(w, policy(), first.status, minutes=1).status)


def resource(namespace: str = "streaming", name: str = "linear") -> tuple[tuple[str, str], ...]:
    return (("namespace", namespace), ("stormtopology", name))


def test_a_pass_becomes_counters_and_the_resources_gauges() -> None:
    metrics = OperatorMetrics()
    status = applied_status()
    metrics.record_pass(PassEnd("streaming", "linear", "spec", 0.3, "Ready True Applied"), status)
    got = samples(metrics)
    assert (
        got[("stormscale_operator_passes_total", (("cause", "spec"), ("result", "Ready True Applied")))] == 1
    )
    assert got[("stormscale_operator_pass_seconds_count", (("cause", "spec"),))] == 1
    assert got[("stormscale_topology_applied_budget", resource())] == 2
    units = {dict(k[1])["component"]: v for k, v in got.items() if k[0] == "stormscale_topology_units"}
    assert units == {"1": 1, "2": 2, "3": 2, "4": 1}
    assert status.last_plan is not None
    assert status.observed is not None
    assert got[("stormscale_topology_predicted_throughput", resource())] == status.last_plan.predicted.after
    assert got[("stormscale_topology_observed_throughput", resource())] == status.observed.throughput
    assert got[("stormscale_topology_ready", resource())] == 1
    assert not [k for k in got if k[0] == "stormscale_topology_degraded"]


def test_a_degraded_pass_names_its_reason_and_a_gone_resource_leaves_no_series() -> None:
    metrics = OperatorMetrics()
    w = world()
    w.profiler.age_s = 3600  # stale
    stale = StormTopologyStatus.from_json(run(w, policy()).status)
    end = PassEnd("streaming", "linear", "timer", 0.1, "Ready False StaleMetrics")
    metrics.record_pass(end, stale)
    metrics.record_pass(end, stale)
    got = samples(metrics)
    assert (
        got[("stormscale_topology_degraded", tuple(sorted((*resource(), ("reason", "StaleMetrics")))))] == 1
    )
    assert got[("stormscale_topology_ready", resource())] == 0
    assert got[("stormscale_operator_degraded_passes_total", (("reason", "StaleMetrics"),))] == 2
    metrics.record_pass(PassEnd("streaming", "linear", "timer", 0.1, "TemporaryError"), None)
    assert ("stormscale_topology_ready", resource()) in samples(metrics)  # a pass that raised: kept
    metrics.record_pass(PassEnd("streaming", "linear", "timer", 0.1, "gone"), None)
    assert not [k for k in samples(metrics) if k[0].startswith("stormscale_topology_")]


def test_planning_time_is_measured_only_by_passes_that_plan() -> None:
    w = world()
    planned = reconcile(RESOURCE, policy(), StormTopologyStatus(), w.ports, T0)
    assert planned.plan_seconds is not None
    assert 0 <= planned.plan_seconds < 10
    w2 = world()
    w2.profiler.age_s = 3600
    assert reconcile(RESOURCE, policy(), StormTopologyStatus(), w2.ports, T0).plan_seconds is None
    metrics = OperatorMetrics()
    metrics.record_plan(planned.plan_seconds)
    assert samples(metrics)[("stormscale_operator_plan_seconds_count", ())] == 1


def test_the_metrics_are_served_over_http_and_a_bad_address_is_one_line() -> None:
    metrics = OperatorMetrics()
    metrics.record_skip()
    host, port = serve(metrics, "127.0.0.1:0")
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as answer:
        body: Any = answer.read().decode()
    assert "stormscale_operator_timer_passes_skipped_total 1.0" in body
    assert parse_listen(":8081") == ("0.0.0.0", 8081)
    for bad in ("8081", "host:port", "h:-1", "h:70000"):
        with pytest.raises(ValueError, match="STORMSCALE_METRICS_LISTEN must be host:port"):
            parse_listen(bad)
