"""Auto's look-ahead: sizing for the forecast over ``[now, now + lead]`` (pure decision core)."""

from __future__ import annotations

import math

import pytest

from stormscale.operator.decision.lookahead import (
    ForecastKind,
    LookAhead,
    LookAheadError,
    ScheduleStep,
    ahead_budget,
    parse_look_ahead,
    regression_forecast,
    schedule_forecast,
)

PER_UNIT = 100.0  # tuples/s one unit carries
MAX_UNITS = 20


def reactive_budget(rate: float) -> int:
    """The budget the reactive mode needs for ``rate``."""
    return max(1, math.ceil(rate / PER_UNIT - 1e-9))


def test_absent_look_ahead_keeps_auto_reactive() -> None:
    assert parse_look_ahead(None) is None


def test_defaults_are_a_regression_over_two_minutes() -> None:
    look = parse_look_ahead({})
    assert look == LookAhead(lead_s=120.0, kind=ForecastKind.REGRESSION, windows=6)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"lead": 0}, "lead"),
        ({"lead": 7200}, "lead"),
        ({"lead": "2m"}, "lead"),
        ({"forecast": "Oracle"}, "forecast"),
        ({"windows": 1}, "windows"),
        ({"windows": 2.5}, "windows"),
        ({"maxRate": -1}, "maxRate"),
        ({"forecast": "Schedule"}, "schedule"),
        ({"forecast": "Schedule", "schedule": [{"offset": 0}]}, "schedule[0].rate"),
        (
            {"forecast": "Schedule", "schedule": [{"offset": 0, "rate": 1}, {"offset": 0, "rate": 2}]},
            "same offset",
        ),
    ],
)
def test_invalid_look_ahead_is_refused_by_name(raw: dict[str, object], field: str) -> None:
    with pytest.raises(LookAheadError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_look_ahead(raw)


def test_a_rising_ramp_scales_out_before_the_reactive_mode() -> None:
    look = LookAhead(lead_s=120.0, windows=6)
    times = [30.0 * i for i in range(40)]
    rates = [100.0 + 5.0 * t / 3 for t in times]  # +10 tuples/s every window, 100 -> 490
    first_reactive = first_ahead = None
    for i in range(2, len(times)):
        now, current = times[i], rates[i]
        budget = reactive_budget(current)
        forecast = regression_forecast(times[: i + 1], rates[: i + 1], now, look)
        ahead = ahead_budget(budget, current, forecast, MAX_UNITS)
        if first_reactive is None and budget >= 4:
            first_reactive = now
        if first_ahead is None and ahead >= 4:
            first_ahead = now
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


def test_a_scheduled_peak_scales_out_lead_early() -> None:
    look = LookAhead(
        lead_s=120.0,
        kind=ForecastKind.SCHEDULE,
        schedule=(ScheduleStep(0.0, 100.0), ScheduleStep(600.0, 800.0), ScheduleStep(900.0, 100.0)),
    )
    start = 1000.0

    def budget_at(t: float) -> int:
        current = 100.0 if not 600 <= t < 900 else 800.0
        forecast = schedule_forecast(current, start + t, start, look)
        return ahead_budget(reactive_budget(current), current, forecast, MAX_UNITS)

    assert budget_at(470.0) == 1
    assert budget_at(480.0) == 8  # 600 - 120: out a lead early
    assert budget_at(600.0) == 8


def test_no_scale_in_while_the_forecast_over_the_lead_window_is_high() -> None:
    look = LookAhead(
        lead_s=120.0,
        kind=ForecastKind.SCHEDULE,
        schedule=(ScheduleStep(0.0, 800.0), ScheduleStep(300.0, 100.0), ScheduleStep(360.0, 800.0)),
    )
    # the dip at 300-360 s is shorter than the lead: the peak after it holds the budget through it
    for t in (300.0, 330.0, 359.0):
        forecast = schedule_forecast(100.0, t, 0.0, look)
        assert ahead_budget(reactive_budget(100.0), 100.0, forecast, MAX_UNITS) == 8


def test_scale_in_once_the_higher_level_has_passed() -> None:
    look = LookAhead(
        lead_s=120.0,
        kind=ForecastKind.SCHEDULE,
        schedule=(ScheduleStep(0.0, 800.0), ScheduleStep(300.0, 100.0)),
    )
    forecast = schedule_forecast(100.0, 300.0, 0.0, look)
    assert forecast.rate == 100.0
    assert ahead_budget(1, 100.0, forecast, MAX_UNITS) == 1


def test_the_forecast_budget_stays_within_max_units() -> None:
    forecast = regression_forecast([0, 30, 60], [100, 1000, 2000], 60, LookAhead())
    assert ahead_budget(10, 2000.0, forecast, MAX_UNITS) == MAX_UNITS
    assert "regression over 3 windows" in forecast.source
