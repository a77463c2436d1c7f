"""Auto mode: sizing from congestion, cooldown and delayed scale-in, state kept in status."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stormscale.operator.autoscale import catching_up, congested, decide, needed_budget, target_of
from stormscale.operator.ports import UnknownDemandError
from stormscale.operator.status import AutoscalerState
from stormscale.planner import (
    ComponentConfidence,
    DemandCheck,
    FlowModel,
    ProfileConfidence,
    Strategy,
    load_profile,
    parse_confidence,
)

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


def test_the_needed_budget_may_be_max_units_itself() -> None:
    sizing = needed_budget(LINEAR, (0, 2), strategy=Strategy.COMBINED, model=FlowModel.DROP, threshold=0.05)
    assert (sizing.budget, sizing.sufficient) == (2, True)


def test_sizing_reports_when_max_units_is_not_enough() -> None:
    sizing = needed_budget(LINEAR, (0, 1), strategy=Strategy.COMBINED, model=FlowModel.DROP, threshold=0.05)
    assert (sizing.budget, sizing.sufficient) == (1, False)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_scale_out_waits_for_the_cooldown() -> None:
    state = AutoscalerState(last_scale_time="2026-11-22T12:00:00Z")
    early = decide(1, 3, state, at(2), cooldown_s=300, scale_in_delay_s=900)
    assert (early.budget, early.reason) == (1, "CoolingDown")
    cooled = decide(1, 3, state, at(5), cooldown_s=300, scale_in_delay_s=900)
    assert (cooled.budget, cooled.reason) == (3, "ScaleOut")  # a cooldown's end is cooled
    late = decide(1, 3, state, at(6), cooldown_s=300, scale_in_delay_s=900)
    assert (late.budget, late.reason, late.state.last_scale_time) == (3, "ScaleOut", "2026-11-22T12:06:00Z")


def test_a_sized_budget_keeps_the_last_change_so_the_cooldown_runs_on() -> None:
    state = AutoscalerState(last_scale_time="2026-11-22T12:00:00Z")
    sized = decide(2, 2, state, at(10), cooldown_s=300, scale_in_delay_s=900)
    assert (sized.budget, sized.reason, sized.state.last_scale_time) == (2, "Sized", "2026-11-22T12:00:00Z")


def test_the_demand_over_the_target_utilization_is_not_rounded() -> None:
    omega, source = target_of(LINEAR, None, 0.7)
    assert (omega, source) == (pytest.approx(500 / 0.7), "demand")
    assert target_of(LINEAR, 640.0, 0.7) == (640.0, "targetRate")


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
    later = decide(3, 1, again.state, at(29.5), cooldown_s=300, scale_in_delay_s=900)
    assert (later.budget, later.reason) == (1, "ScaleIn")  # past the delay, not only at it


def draining(append: float, growth: float) -> ProfileConfidence:
    """A profile's confidence whose Kafka-fed spout "1" appends ``append``/s, its lag growing ``growth``/s."""
    check = DemandCheck(append_rate=append, lag_growth=growth, emitted_rate=append - growth)
    return ProfileConfidence(
        steady=True, components={"1": ComponentConfidence(demand=check), "2": ComponentConfidence()}
    )


def test_a_source_catches_up_while_its_lag_shrinks_faster_than_a_tenth_of_its_appends() -> None:
    assert catching_up(draining(16.0, -8.6)) == ("1",)
    assert catching_up(draining(16.0, -1.5)) == ()  # within a tenth of 16/s
    assert catching_up(draining(7.0, -0.8)) == ()  # within the floor of 1 record/s
    assert catching_up(draining(16.0, 5.0)) == ()  # a growing lag is demand, sized already
    assert catching_up(ProfileConfidence()) == ()
    assert catching_up(draining(7.0, -1.2)) == ("1",)  # past the floor of 1 record/s
    both = {"0": ComponentConfidence(demand=DemandCheck(9.0, -5.0)), **draining(16.0, -8.6).components}
    assert catching_up(ProfileConfidence(components=both)) == ("0", "1")  # every draining spout, by id
    without = {"0": ComponentConfidence(), **draining(16.0, -8.6).components}
    assert catching_up(ProfileConfidence(components=without)) == ("1",)  # one without a check is skipped


def test_a_published_demand_check_is_read_only_when_its_rates_are_numbers() -> None:
    """A lag growth that is not a number (a hostile or partial published profile) is no check at all."""

    def component(demand: object) -> dict[str, object]:
        return {
            "id": "1",
            "kind": "spout",
            "units": 1,
            "outputPerUnit": 9.0,
            "confidence": {"demand": demand},
        }

    unknown = parse_confidence({"components": [component({"lagGrowth": None, "appendRate": 9})]})
    assert unknown.of("1").demand is None
    assert catching_up(unknown) == ()
    junk = parse_confidence({"components": [component({"lagGrowth": "-5", "appendRate": 9})]})
    assert junk.of("1").demand is None
    read = parse_confidence({"components": [component({"lagGrowth": -5, "appendRate": 9})]})
    assert read.of("1").demand == DemandCheck(append_rate=9.0, lag_growth=-5.0)
    assert catching_up(read) == ("1",)


def test_a_backlog_holds_a_fall_and_its_wish_starts_over_but_never_a_rise() -> None:
    wished = decide(3, 1, AutoscalerState(), at(0), cooldown_s=0, scale_in_delay_s=300)
    held = decide(3, 1, wished.state, at(6), cooldown_s=0, scale_in_delay_s=300, catching_up=True)
    assert (held.budget, held.reason, held.state.scale_in_since) == (3, "CatchingUp", None)
    again = decide(3, 1, held.state, at(7), cooldown_s=0, scale_in_delay_s=300)
    assert (again.budget, again.reason) == (3, "ScaleInDelayed")  # not 7 minutes wanted: 0
    rise = decide(1, 3, AutoscalerState(), at(0), cooldown_s=0, scale_in_delay_s=300, catching_up=True)
    assert (rise.budget, rise.reason) == (3, "ScaleOut")


def test_auto_mode_does_not_shrink_while_a_kafka_backlog_drains() -> None:
    """Budget 2 applied; then the demand falls (spout 1 offers 200/s, which the baseline carries):
    a fall is wished, unless the profile says the topic's lag shrinks."""
    w = world()
    auto = policy(mode="Auto", budget=0, minUnits=0, maxUnits=5)
    first = run(w, auto)
    applied = run(w, auto, first.status, minutes=1)
    assert applied.status["appliedBudget"] == 2
    spout = dataclasses.replace(LINEAR.components[0], output_per_unit=200.0)
    w.profiler.topology = dataclasses.replace(LINEAR, components=(spout, *LINEAR.components[1:]))
    w.profiler.confidence = draining(200.0, -60.0)
    held = run(w, auto, applied.status, minutes=3)
    assert held.status["autoscaler"]["desiredBudget"] == 2
    assert held.status["autoscaler"].get("scaleInSince") is None
    w.profiler.confidence = draining(200.0, 0.0)
    wished = run(w, auto, held.status, minutes=4)
    assert wished.status["autoscaler"]["scaleInSince"] is not None


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
