"""The decision core on plain observations: what it asks to measure, what it decides, and that it
changes nothing it is given (no ports, no clock: ``now`` is observed)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stormscale.operator.autoscale import Sizing
from stormscale.operator.decision import (
    Act,
    Need,
    Observation,
    ProfileFailure,
    PublishedRead,
    TopologyView,
    decide,
)
from stormscale.operator.decision.auto import Needed, auto_target, congestion_need
from stormscale.operator.decision.core import MIN_UNSTEADY_RETRY_S
from stormscale.operator.policy import Policy, parse_spec
from stormscale.operator.ports import MeasuredProfile
from stormscale.operator.status import SCALING_LIMITED, AutoscalerState, Reason, StormTopologyStatus
from stormscale.planner import FlowModel, load_profile, throughput

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"
LINEAR = load_profile(PROFILES / "thesis-linear.json")  # 1 → 2 → 3 → 4, one unit each
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
BASELINE = {"1": 1, "2": 1, "3": 1, "4": 1}


def policy(mode: str = "Manual", **metrics: Any) -> Policy:
    return parse_spec(
        {
            "topologyName": "linear",
            "nimbus": {"host": "nimbus"},
            "workers": {"deployment": "linear-workers", "slotsPerPod": 1},
            "metrics": {"prometheus": "http://prometheus:9090", **metrics},
            "scaling": {"mode": mode, "budget": 2, "flowModel": "Drop", "maxUnits": 6},
        }
    )


def seen(
    executors: dict[str, int] | None = None,
    replicas: int = 4,
    owners: tuple[str, ...] = (),
    **fields: Any,
) -> Observation:
    """The topology running ``executors`` (the baseline) on ``replicas`` pods whose ``spec.replicas``
    other field managers (``owners``) own too."""
    running = executors or BASELINE
    view = TopologyView(
        state="ACTIVE",
        active=True,
        executors=running,
        tasks=dict.fromkeys(running, 8),
        system_executors={},
        replicas=replicas,
        replicas_owners=owners,
    )
    return Observation(NOW, 1, view, baseline=BASELINE, **fields)


def profile() -> MeasuredProfile:
    return MeasuredProfile(LINEAR, throughput(LINEAR, LINEAR.units, FlowModel.BACKPRESSURE), 5.0)


def test_a_manual_budget_that_runs_is_stable_without_a_profile() -> None:
    applied = {"1": 1, "2": 2, "3": 2, "4": 1}
    status = StormTopologyStatus(units=applied, applied_budget=2, baseline=BASELINE)
    decision = decide(seen(applied, replicas=6), policy(), status)
    assert (decision.act, decision.need, decision.retry_after) == (Act.STABLE, None, None)


def test_a_budget_to_plan_asks_for_a_profile_then_applies_an_intent_on_it() -> None:
    status = StormTopologyStatus(baseline=BASELINE)
    first = decide(seen(), policy(), status)
    assert (first.act, first.need) == (Act.MEASURE, Need.IN_PROCESS)
    second = decide(seen(measured=profile()), policy(), status)
    assert second.act is Act.APPLY
    assert second.intent is not None
    assert second.intent.budget == 2
    assert sum(second.intent.units.values()) == sum(BASELINE.values()) + 2
    assert second.planned
    assert second.status.last_plan is not None
    assert status.last_plan is None
    assert status.pending is None


def test_a_published_profile_is_asked_for_first_and_a_missing_one_falls_back_with_a_warning() -> None:
    status = StormTopologyStatus(baseline=BASELINE)
    published = policy(profile="Published")
    assert decide(seen(), published, status).need is Need.PUBLISHED
    read = PublishedRead("streaming/linear-profile", None)
    fallback = decide(seen(published=read), published, status)
    assert (fallback.act, fallback.need) == (Act.MEASURE, Need.IN_PROCESS)
    planned = decide(seen(published=read, measured=profile()), published, status)
    assert planned.act is Act.APPLY
    assert next((kind, holds, reason) for kind, holds, reason, _ in planned.conditions) == (
        "PublishedProfile",
        False,
        Reason.PUBLISHED_PROFILE_MISSING,
    )
    assert [e[:2] for e in planned.events] == [("Warning", Reason.PUBLISHED_PROFILE_MISSING)]


def test_a_profile_that_failed_is_degraded_and_a_settling_one_is_waited_for() -> None:
    status = StormTopologyStatus(baseline=BASELINE)
    down = decide(seen(measured=ProfileFailure(Reason.METRICS_UNAVAILABLE, "down")), policy(), status)
    assert (down.act, down.reason, down.message) == (Act.DEGRADED, Reason.METRICS_UNAVAILABLE, "down")
    settling = ProfileFailure(Reason.STALE_METRICS, "a restart", newest_age_s=10.0)
    assert decide(seen(measured=settling), policy(), status).act is Act.SETTLING
    stale = ProfileFailure(Reason.STALE_METRICS, "a restart", newest_age_s=10_000.0)
    old = decide(seen(measured=stale), policy(), status)
    assert (old.act, old.reason) == (Act.DEGRADED, Reason.STALE_METRICS)
    assert old.message == "a restart; newest samples are 10000s old"
    assert old.retry_after is None  # the reason's usual wait


@pytest.mark.parametrize(("step", "retry_s"), [("10s", 10.0), ("45s", 45.0), ("1s", MIN_UNSTEADY_RETRY_S)])
def test_an_unsteady_window_is_degraded_and_looked_at_again_one_step_later(step: str, retry_s: float) -> None:
    unsteady = ProfileFailure(Reason.STALE_METRICS, "rates of 4 are not steady", unsteady=True)
    decision = decide(seen(measured=unsteady), policy("Auto", step=step, window="10m"), StormTopologyStatus())
    assert (decision.act, decision.reason) == (Act.DEGRADED, Reason.STALE_METRICS)
    assert decision.retry_after == retry_s


def test_auto_moves_to_the_needed_budget_from_congestion_or_a_sizing_alike() -> None:
    auto = policy("Auto")
    status = StormTopologyStatus(baseline=BASELINE)
    short = congestion_need(Sizing(budget=6, sufficient=False), 6)
    target = auto_target(short, status, auto, NOW, catching_up=False)
    assert (target.budget, target.sized) == (6, None)
    assert target.condition is not None
    assert target.condition[:3] == (
        SCALING_LIMITED,
        True,
        Reason.MAX_UNITS_REACHED,
    )
    assert target.state is not None
    assert target.state.desired_budget == 6
    cooling = status.model_copy(update={"autoscaler": AutoscalerState(desired_budget=2)})
    held = auto_target(Needed(1), cooling, auto, NOW, catching_up=True)  # a fall, held by the backlog
    assert (held.budget, held.condition) == (2, None)
