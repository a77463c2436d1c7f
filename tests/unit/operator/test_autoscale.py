"""Auto mode: sizing from congestion, cooldown and delayed scale-in, state kept in status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stormscale.operator.autoscale import congested, decide, needed_budget
from stormscale.operator.ports import UnknownDemandError
from stormscale.operator.status import AutoscalerState
from stormscale.planner import FlowModel, Strategy, load_profile

from .test_reconcile import conditions, policy, run, world

LINEAR = load_profile(Path(__file__).parents[3] / "examples" / "profiles" / "thesis-linear.json")
T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("model", list(FlowModel))
def test_linear_needs_two_units_to_clear_congestion(model: FlowModel) -> None:
    assert congested(LINEAR, LINEAR.units, model, 0.05) == ["2", "3"]
    sizing = needed_budget(LINEAR, (0, 5), strategy=Strategy.COMBINED, model=model, threshold=0.05)
    assert (sizing.budget, sizing.sufficient) == (2, True)


def test_a_high_enough_threshold_tolerates_light_congestion() -> None:
    assert congested(LINEAR, LINEAR.units, FlowModel.DROP, 0.5) == ["3"]  # 2 is 25% over, 3 is 60% over


def test_sizing_reports_when_max_units_is_not_enough() -> None:
    sizing = needed_budget(LINEAR, (0, 1), strategy=Strategy.COMBINED, model=FlowModel.DROP, threshold=0.05)
    assert (sizing.budget, sizing.sufficient) == (1, False)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_scale_out_waits_for_the_cooldown() -> None:
    state = AutoscalerState(last_scale_time="2026-11-22T12:00:00Z")
    early = decide(1, 3, state, at(2), cooldown_s=300, scale_in_delay_s=900)
    assert (early.budget, early.reason) == (1, "CoolingDown")
    late = decide(1, 3, state, at(6), cooldown_s=300, scale_in_delay_s=900)
    assert (late.budget, late.reason, late.state.last_scale_time) == (3, "ScaleOut", "2026-11-22T12:06:00Z")


def test_scale_in_must_be_wanted_for_the_whole_delay() -> None:
    first = decide(3, 1, AutoscalerState(), at(0), cooldown_s=300, scale_in_delay_s=900)
    assert (first.budget, first.reason, first.state.scale_in_since) == (
        3,
        "ScaleInDelayed",
        "2026-11-22T12:00:00Z",
    )
    middle = decide(3, 1, first.state, at(10), cooldown_s=300, scale_in_delay_s=900)
    assert middle.budget == 3
    interrupted = decide(3, 3, middle.state, at(12), cooldown_s=300, scale_in_delay_s=900)
    assert interrupted.state.scale_in_since is None  # the wish must start over
    again = decide(3, 1, interrupted.state, at(13), cooldown_s=300, scale_in_delay_s=900)
    assert again.budget == 3
    done = decide(3, 1, again.state, at(28), cooldown_s=300, scale_in_delay_s=900)
    assert (done.budget, done.reason) == (1, "ScaleIn")


def test_auto_mode_sizes_applies_and_keeps_its_state_in_status() -> None:
    w = world()
    auto = policy(mode="Auto", budget=0, minUnits=0, maxUnits=5)
    first = run(w, auto)
    assert first.status["autoscaler"]["desiredBudget"] == 2
    assert first.status["pending"]["budget"] == 2
    second = run(w, auto, first.status, minutes=1)
    assert second.status["appliedBudget"] == 2
    assert conditions(second)["Ready"] == ("True", "Applied")
    third = run(w, auto, second.status, minutes=2)  # sized already: no action, but keeps watching
    assert third.retry_after is not None
    assert [c[0] for c in w.nimbus.calls].count("rebalance") == 1


def test_auto_mode_does_not_act_on_stale_metrics() -> None:
    w = world()
    w.profiler.age_s = 3600
    outcome = run(w, policy(mode="Auto", budget=0, maxUnits=5))
    assert conditions(outcome)["Degraded"] == ("True", "StaleMetrics")
    assert w.journal == []


def test_a_target_utilization_sizes_for_the_demand_over_it() -> None:
    """Linear (spout 500/s; bolts 400, 250 and 900/s per unit): at ρ = 1 two units clear congestion;
    at ρ = 0.5 Auto sizes for 1,000/s: 2 needs 3 units, 3 needs 4, 4 needs 2, so six more."""
    w = world()
    plain = run(w, policy(mode="Auto", budget=0, maxUnits=10))
    assert plain.status["autoscaler"]["desiredBudget"] == 2
    w = world()
    headroom = run(w, policy(mode="Auto", budget=0, maxUnits=10, targetUtilization=0.5))
    assert headroom.status["autoscaler"]["desiredBudget"] == 6
    assert headroom.status["pending"]["units"] == {"1": 1, "2": 3, "3": 4, "4": 2}


def test_manual_mode_ignores_the_target_utilization() -> None:
    w = world()
    outcome = run(w, policy(budget=2, targetUtilization=0.5))
    assert outcome.status["pending"]["units"] == {"1": 1, "2": 2, "3": 2, "4": 1}


@pytest.mark.parametrize("mode", ["Auto", "Manual"])
def test_no_plan_on_a_throttled_spout_without_a_demand_signal(mode: str) -> None:
    w = world()
    w.profiler.fail = UnknownDemandError("spout 1 is throttled (3 at 100% of capacity), no demand signal")
    outcome = run(w, policy(mode=mode, budget=2, maxUnits=5))
    assert conditions(outcome)["Degraded"] == ("True", "DemandUnknown")
    assert w.journal == []
    assert "lastPlan" not in outcome.status or outcome.status["lastPlan"] is None
