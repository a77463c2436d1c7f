"""Auto's look-ahead: sizing for the forecast over ``[now, now + lead]`` (pure decision core, then
the whole pass on fakes with a published profile)."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from stormscale.operator.decision.lookahead import (
    LookAhead,
    ScheduleStep,
    look_ahead,
    regression_forecast,
    schedule_forecast,
    with_point,
)
from stormscale.operator.policy import ForecastKind, InvalidSpecError, Policy, parse_spec
from stormscale.operator.status import MAX_DEMAND_POINTS, AutoscalerState, timestamp
from tests.unit.operator.test_published_profile import T0, WHERE, data, run, world

PER_UNIT = 100.0  # tuples/s one unit carries


def units_for(rate: float) -> int:
    """The units a component of :data:`PER_UNIT` needs for ``rate``."""
    return max(1, math.ceil(rate / PER_UNIT - 1e-9))


def spec(look: dict[str, Any] | None) -> dict[str, Any]:
    scaling: dict[str, Any] = {"mode": "Auto", "minUnits": 0, "maxUnits": 16, "demandPercentile": "mean"}
    if look is not None:
        scaling["lookAhead"] = look
    return {
        "topologyName": "linear",
        "nimbus": {"host": "nimbus"},
        "workers": {"deployment": "linear-workers"},
        "metrics": {"prometheus": "http://prometheus:9090", "profile": "Published"},
        "scaling": scaling,
    }


def auto(look: dict[str, Any] | None) -> Policy:
    return parse_spec(spec(look))


def test_absent_look_ahead_keeps_auto_reactive_and_the_defaults_are_a_regression_over_two_minutes() -> None:
    assert auto(None).spec.scaling.look_ahead is None
    look = auto({}).spec.scaling.look_ahead
    assert look is not None
    assert look_ahead(look) == LookAhead(lead_s=120.0, kind=ForecastKind.REGRESSION, windows=6)


SCHEDULE = {"start": "2026-11-22T12:00:00Z", "steps": [{"offset": "0s", "rate": 1}]}


@pytest.mark.parametrize(
    ("look", "field"),
    [
        ({"lead": "2h"}, "lead must be at most 3600s"),
        ({"lead": 120}, r"lookAhead\.lead"),
        ({"forecast": "Oracle"}, r"lookAhead\.forecast"),
        ({"windows": 1}, r"lookAhead\.windows"),
        ({"windows": 61}, r"lookAhead\.windows"),
        ({"maxRate": -1}, r"lookAhead\.maxRate"),
        ({"forecast": "Schedule"}, "forecast Schedule needs scaling.lookAhead.schedule"),
        ({"schedule": {**SCHEDULE, "start": "tomorrow"}}, r"schedule\.start"),
        ({"schedule": {**SCHEDULE, "steps": []}}, r"schedule\.steps"),
        ({"schedule": {**SCHEDULE, "steps": [{"offset": "0s"}]}}, r"steps\.0\.rate"),
        (
            {"schedule": {**SCHEDULE, "steps": [{"offset": "0s", "rate": 1}, {"offset": "0m", "rate": 2}]}},
            "same offset",
        ),
        (
            {"schedule": {**SCHEDULE, "period": "1h", "steps": [{"offset": "1h", "rate": 1}]}},
            "below the period",
        ),
    ],
)
def test_an_invalid_look_ahead_is_refused_naming_its_field(look: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpecError, match=field):
        auto(look)


def test_a_rising_ramp_scales_out_about_a_lead_before_the_reactive_mode() -> None:
    look = LookAhead(lead_s=120.0, windows=6)
    times = [30.0 * i for i in range(40)]
    rates = [100.0 + t / 3 for t in times]  # +10 tuples/s every window, 100 -> 490
    first_reactive = first_ahead = None
    for i in range(2, len(times)):
        forecast = regression_forecast(times[: i + 1], rates[: i + 1], times[i], look)
        if first_reactive is None and units_for(rates[i]) >= 4:
            first_reactive = times[i]
        if first_ahead is None and units_for(forecast.rate) >= 4:
            first_ahead = times[i]
    assert first_reactive is not None
    assert first_ahead is not None
    assert first_reactive - first_ahead >= 90.0  # about the lead (one window of rounding)


def test_regression_never_forecasts_below_the_current_demand_nor_above_the_bound() -> None:
    falling = regression_forecast([0, 30, 60], [300, 200, 100], 60, LookAhead())
    assert falling.rate == pytest.approx(100.0)
    rising = regression_forecast([0, 30, 60], [100, 200, 300], 60, LookAhead(max_rate=350.0))
    assert rising.rate == pytest.approx(350.0)
    unbounded = regression_forecast([0, 30, 60], [100, 200, 300], 60, LookAhead(lead_s=120.0))
    assert unbounded.rate == pytest.approx(700.0)  # 300 + 120 s at 100/30 per s
    assert "regression over 3 windows" in unbounded.source


PEAK = (ScheduleStep(0.0, 100.0), ScheduleStep(600.0, 800.0), ScheduleStep(900.0, 100.0))


def test_a_scheduled_peak_is_sized_for_a_lead_early_and_until_it_has_passed() -> None:
    look = LookAhead(lead_s=120.0, kind=ForecastKind.SCHEDULE, schedule=PEAK, start=1000.0)

    def rate_at(t: float) -> float:
        current = 800.0 if 600 <= t < 900 else 100.0
        return schedule_forecast(current, 1000.0 + t, look).rate

    assert rate_at(470.0) == 100.0
    assert rate_at(480.0) == 800.0  # 600 - 120: a lead early
    assert rate_at(899.0) == 800.0
    assert rate_at(900.0) == 100.0  # the higher level has passed


def test_a_dip_shorter_than_the_lead_holds_the_peak_s_demand_through_it() -> None:
    dip = (ScheduleStep(0.0, 800.0), ScheduleStep(300.0, 100.0), ScheduleStep(360.0, 800.0))
    look = LookAhead(lead_s=120.0, kind=ForecastKind.SCHEDULE, schedule=dip)
    assert [schedule_forecast(100.0, t, look).rate for t in (300.0, 330.0, 359.0)] == [800.0] * 3


def test_a_periodic_schedule_repeats_and_its_last_step_holds_until_the_next_period() -> None:
    daily = (ScheduleStep(3600.0, 800.0), ScheduleStep(7200.0, 100.0))
    look = LookAhead(lead_s=600.0, kind=ForecastKind.SCHEDULE, schedule=daily, period_s=86400.0)
    day = 86400.0
    assert schedule_forecast(0.0, 5 * day + 3000.0, look).rate == 800.0  # 10 min before the sixth day's peak
    assert schedule_forecast(0.0, 5 * day + 2900.0, look).rate == 100.0  # the fifth day's last step
    assert schedule_forecast(0.0, 5 * day + 7200.0, look).rate == 100.0
    assert schedule_forecast(0.0, 6 * day - 300.0, look).rate == 100.0  # across the period's end


def test_before_a_schedule_starts_its_first_step_counts_only_within_the_lead() -> None:
    look = LookAhead(
        lead_s=60.0, kind=ForecastKind.SCHEDULE, schedule=(ScheduleStep(0.0, 500.0),), start=1000.0
    )
    assert schedule_forecast(50.0, 900.0, look).rate == 50.0
    assert schedule_forecast(50.0, 940.0, look).rate == 500.0


def test_the_history_keeps_one_point_per_window_and_at_most_its_bound() -> None:
    state = AutoscalerState()
    for i in range(MAX_DEMAND_POINTS + 5):
        state = with_point(state, T0 + timedelta(seconds=60 * i), float(i))
    state = with_point(state, T0 + timedelta(seconds=60 * (MAX_DEMAND_POINTS + 4)), 1000.0)  # same window
    points = state.demand_history or []
    assert len(points) == MAX_DEMAND_POINTS
    assert points[0].rate == 5.0
    assert points[-1].rate == 1000.0
    assert points[-2].at == timestamp(T0 + timedelta(seconds=60 * (MAX_DEMAND_POINTS + 3)))


# --- the whole pass: the published linear profile offers 500/s; bolt 3 carries 250/s a unit ---------


def plan_of(look: dict[str, Any] | None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    w = world()
    w.published.data[WHERE] = data()
    return run(w, auto(look), status)


def bolt3(status: dict[str, Any]) -> int:
    plan = status["lastPlan"]
    units: int = plan["start"]["3"] + plan["allocation"].get("3", 0)
    return units


def scheduled(rate: float, at: timedelta, lead: str = "2m") -> dict[str, Any]:
    steps = [{"offset": "0s", "rate": 500.0}, {"offset": f"{int(at.total_seconds())}s", "rate": rate}]
    return {"lead": lead, "forecast": "Schedule", "schedule": {"start": timestamp(T0), "steps": steps}}


def test_auto_sizes_for_a_scheduled_rise_within_its_lead_and_says_so() -> None:
    reactive = plan_of(None)
    ahead = plan_of(scheduled(1000.0, timedelta(seconds=90)))
    later = plan_of(scheduled(1000.0, timedelta(seconds=300)))  # beyond the lead: not yet
    assert bolt3(reactive) == 2
    assert bolt3(ahead) == 4
    assert bolt3(later) == 2
    assert ahead["lastPlan"]["predicted"]["after"] == pytest.approx(1000.0)
    assert ahead["autoscaler"]["forecast"] == "1000/s by schedule, max over the next 120s (current 500/s)"
    assert ahead["lastPlan"]["demand"].endswith(
        "sized ahead for 1000/s by schedule, max over the next 120s (current 500/s)"
    )
    assert "sized ahead" not in later["lastPlan"]["demand"]
    assert [p["rate"] for p in ahead["autoscaler"]["demandHistory"]] == [500.0]


def test_auto_sizes_for_a_rising_trend_of_its_recent_windows() -> None:
    """Four windows a minute apart at 200, 275, 350, 425/s and now 500/s: 75/s a minute, so 650/s
    two minutes ahead (bolt 3: three units where the reactive mode plans two)."""
    ended = T0 - timedelta(hours=1)  # the published window's end: the current point's time
    points = [{"at": timestamp(ended - timedelta(minutes=4 - i)), "rate": 200.0 + 75.0 * i} for i in range(4)]
    status = plan_of({"windows": 6}, {"autoscaler": {"demandHistory": points}})
    assert bolt3(status) == 3
    assert status["lastPlan"]["predicted"]["after"] == pytest.approx(650.0)
    history = status["autoscaler"]["demandHistory"]
    assert [p["rate"] for p in history] == [200.0, 275.0, 350.0, 425.0, 500.0]
    assert status["autoscaler"]["forecast"].startswith("650/s by regression over 5 windows")


def test_a_first_window_is_sized_for_as_it_is() -> None:
    status = plan_of({})
    assert bolt3(status) == 2
    assert status["autoscaler"]["forecast"].startswith("500/s by regression: 1 window(s) so far")
