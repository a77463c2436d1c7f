"""Specs the CRD's schema accepts but the operator cannot act on: each is an
``InvalidSpecError`` naming the field, and an override of a component the topology lacks marks the
resource Degraded (InvalidSpec) with no action."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stormscale.operator.policy import InvalidSpecError, parse_spec
from stormscale.operator.reconcile import Resource, reconcile
from stormscale.operator.status import StormTopologyStatus
from stormscale.planner import load_profile
from tests.harness.fakes.ports import FakeCluster, FakeNimbus, FakeProfiler, World

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"


def spec(metrics: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "topologyName": "linear",
        "nimbus": {"host": "nimbus"},
        "workers": {"deployment": "linear-workers"},
        "metrics": {"prometheus": "http://prometheus:9090", **(metrics or {})},
        "scaling": {"budget": 2, "flowModel": "Drop"},
        **extra,
    }


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"window": "48h", "step": "10s"}, "raise metrics.step"),
        ({"window": "5m", "settle": "5m"}, "metrics.settle"),
        ({"window": "5m", "settle": "1h"}, "metrics.settle"),
        ({"maxAge": "0s"}, "metrics.maxAge"),
        ({"maxAge": "5s", "step": "10s"}, "metrics.maxAge"),
    ],
)
def test_metrics_the_operator_cannot_use_are_refused(metrics: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSpecError, match=message) as err:
        parse_spec(spec(metrics))
    assert len(str(err.value).splitlines()) == 1


def test_the_defaults_and_the_test_beds_metrics_stay_valid() -> None:
    parse_spec(spec())
    parse_spec(spec({"window": "3m", "step": "20s", "settle": "60s", "maxAge": "1m"}))


def test_two_overrides_of_one_component_are_refused() -> None:
    with pytest.raises(InvalidSpecError, match=r"^spec: Value error, components: overrides '2' twice$"):
        parse_spec(spec(components=[{"name": "2", "maxUnits": 2}, {"name": "2", "maxUnits": 3}]))


@pytest.mark.parametrize(
    "scaling",
    [
        {"budget": 2, "flowModel": "Drop"},  # the budget's plan
        {"mode": "Recommend", "budget": 0, "targetRate": 750, "sizing": "Exact"},  # the sizing
    ],
)
def test_an_override_of_an_unknown_component_degrades_with_no_action(scaling: dict[str, Any]) -> None:
    overrides = [{"name": "2", "maxUnits": 4}, {"name": "splitter", "maxUnits": 2}]
    policy = parse_spec(spec(components=overrides, scaling=scaling))
    executors = {"1": 1, "2": 1, "3": 1, "4": 1}
    w = World(
        FakeCluster(replicas=4),
        FakeNimbus(executors, dict.fromkeys(executors, 8)),
        FakeProfiler(load_profile(PROFILES / "thesis-linear.json")),
    )
    outcome = reconcile(
        Resource("streaming", "linear", generation=1),
        policy,
        StormTopologyStatus.from_json(None),
        w.ports,
        datetime(2026, 1, 1, tzinfo=UTC),
    )
    conditions = {
        c["type"]: (c["status"], c["reason"], c["message"]) for c in outcome.status.to_json()["conditions"]
    }
    assert conditions["Degraded"][:2] == ("True", "InvalidSpec")
    assert "spec.components: unknown component splitter" in conditions["Degraded"][2]
    assert [j for j in w.journal if j[0] in {"scale", "rebalance"}] == []
