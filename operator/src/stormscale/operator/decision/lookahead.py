"""Auto's look-ahead: size for the largest demand forecast over ``[now, now + lead]``. Pure.

The multi-level elasticity paper's proactive mode, ``L <- max forecast over [now, now + lead]``, for
Auto (``scaling.lookAhead``; absent, Auto stays reactive). The forecast is either

* a least-squares line through the recent windows' demand (``Regression``; the windows' demand is
  kept in ``status.autoscaler.demandHistory``, one point per profile window), or
* the user's schedule of rates from a start, repeated every period if given (``Schedule``);

and Auto plans and sizes on the profile with every source scaled to ``max(current demand, L)``
(:func:`~stormscale.planner.scaled_to`): it scales out ``lead`` before a forecast rise, and, since
the forecast's maximum over the lead stays high until the peak has passed, scales in only after the
higher level has gone (then ``scaleInDelay`` as ever). The demand is the topology's total at the
spouts (each spout at ``scaling.demandPercentile``); the spouts keep their shares of it.

Where this differs from the paper: the paper's controller changes one level at a time; here the
forecast only moves the demand the usual Auto plans for, so cooldown, delayed scale-in and the
planner's strategies apply unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from stormscale.operator.policy import ForecastKind, LookAheadSpec
from stormscale.operator.ports import MeasuredProfile
from stormscale.operator.status import (
    MAX_DEMAND_POINTS,
    AutoscalerState,
    DemandPoint,
    parse_timestamp,
    timestamp,
)
from stormscale.planner import ForecastSlot, forecast_max, linear_forecast, offered_rate, scaled_to
from stormscale.samples import parse_duration

DEFAULT_LEAD_S = 120.0
DEFAULT_WINDOWS = 6


@dataclass(frozen=True)
class ScheduleStep:
    """From ``offset_s`` seconds after the schedule's start (of each period), ``rate`` tuples/s."""

    offset_s: float
    rate: float


@dataclass(frozen=True)
class LookAhead:
    """``scaling.lookAhead`` in seconds: the lead, the forecast's kind, the windows a regression fits,
    the schedule (sorted by offset, from ``start`` in Unix seconds, every ``period_s`` if set) and the
    largest rate a forecast may reach."""

    lead_s: float = DEFAULT_LEAD_S
    kind: ForecastKind = ForecastKind.REGRESSION
    windows: int = DEFAULT_WINDOWS
    schedule: tuple[ScheduleStep, ...] = ()
    start: float = 0.0
    period_s: float | None = None
    max_rate: float | None = None


@dataclass(frozen=True)
class Forecast:
    """The demand Auto sizes for (``rate``) and where it came from."""

    rate: float
    source: str


def look_ahead(spec: LookAheadSpec) -> LookAhead:
    """The spec's look-ahead in seconds (the spec model has checked every bound)."""
    schedule = spec.schedule
    steps = (
        ()
        if schedule is None
        else tuple(ScheduleStep(parse_duration(s.offset), s.rate) for s in schedule.steps)
    )
    start = 0.0
    period = None
    if schedule is not None:
        start = parse_timestamp(schedule.start).timestamp()
        period = None if schedule.period is None else parse_duration(schedule.period)
    return LookAhead(
        lead_s=parse_duration(spec.lead),
        kind=spec.forecast,
        windows=spec.windows,
        schedule=tuple(sorted(steps, key=lambda s: s.offset_s)),
        start=start,
        period_s=period,
        max_rate=spec.max_rate,
    )


def _bounded(rate: float, current: float, look: LookAhead) -> float:
    """``min(max(rate, current), max(maxRate, current))``: never below the current demand, never
    above the bound (unless the current demand already is)."""
    rate = max(rate, current)
    return rate if look.max_rate is None else min(rate, max(look.max_rate, current))


def regression_forecast(
    times: Sequence[float], rates: Sequence[float], now: float, look: LookAhead
) -> Forecast:
    """The largest demand on the least-squares line over ``[now, now + lead]``, bounded.

    With the last ``n = windows`` points ``(t_i, x_i)``, the line is ``x(t) = x̄ + b (t - t̄)`` with
    ``b = Σ (t_i - t̄)(x_i - x̄) / Σ (t_i - t̄)²``. A line is largest at an end of the interval, so
    ``L = max(x(now), x(now + lead))``, bounded by :func:`_bounded` around the current ``x_n``.
    """
    if not rates or len(times) != len(rates):
        raise ValueError("regression_forecast needs as many times as rates, at least one")
    ts, xs = list(times)[-look.windows :], list(rates)[-look.windows :]
    line = max(linear_forecast(ts, xs, now), linear_forecast(ts, xs, now + look.lead_s))
    rate = _bounded(line, xs[-1], look)
    return Forecast(rate, f"regression over {len(xs)} windows, max over the next {look.lead_s:g}s")


def schedule_slots(look: LookAhead, now: float) -> tuple[ForecastSlot, ...]:
    """The schedule as the planner's forecast slots over ``[now, now + lead]``: each step holds until
    the next; without a period the last holds for ever, with one the schedule repeats (the last step
    holding until the next period's first)."""
    steps = look.schedule
    if look.period_s is None:
        ends = [look.start + s.offset_s for s in steps[1:]] + [math.inf]
        return tuple(
            ForecastSlot(look.start + s.offset_s, e, s.rate) for s, e in zip(steps, ends, strict=True)
        )
    period = look.period_s
    first = math.floor((now - look.start) / period) - 1  # the period before holds now's last step
    last = math.floor((now + look.lead_s - look.start) / period)
    slots = []
    for k in range(first, last + 1):
        base = look.start + k * period
        ends = [base + s.offset_s for s in steps[1:]] + [base + period + steps[0].offset_s]
        slots += [ForecastSlot(base + s.offset_s, e, s.rate) for s, e in zip(steps, ends, strict=True)]
    return tuple(slots)


def schedule_forecast(current: float, now: float, look: LookAhead) -> Forecast:
    """``L = max(current, max schedule over [now, now + lead])``, bounded; before the first step, the
    current demand."""
    peak = forecast_max(schedule_slots(look, now), now, now + look.lead_s)
    rate = _bounded(current if peak is None else peak, current, look)
    return Forecast(rate, f"schedule, max over the next {look.lead_s:g}s")


def with_point(state: AutoscalerState | None, at: datetime, rate: float) -> AutoscalerState:
    """``state`` with the demand of the window ending ``at`` appended (once per window: a pass on
    the same window replaces its point), keeping the newest :data:`MAX_DEMAND_POINTS`."""
    state = state or AutoscalerState()
    points = list(state.demand_history or [])
    stamp = timestamp(at)
    if points and points[-1].at == stamp:
        points.pop()
    points.append(DemandPoint(at=stamp, rate=rate))
    return state.model_copy(update={"demand_history": points[-MAX_DEMAND_POINTS:]})


def forecast(look: LookAhead, history: Sequence[DemandPoint], current: float, now: datetime) -> Forecast:
    """The forecast of ``look``'s kind: the schedule's over ``[now, now + lead]``; the regression's
    over the lead from the newest window's end (the time the profile describes: a published profile's
    window may have ended long before ``now``, and a line carried over that gap is no forecast)."""
    if look.kind is ForecastKind.SCHEDULE:
        return schedule_forecast(current, now.timestamp(), look)
    if len(history) < 2:
        return Forecast(current, f"regression: {len(history)} window(s) so far, the current demand until 2")
    times = [parse_timestamp(p.at).timestamp() for p in history]
    return regression_forecast(times, [p.rate for p in history], times[-1], look)


def window_end(measured: MeasuredProfile, now: datetime) -> datetime:
    """When the profile's window ended: a kept profile's measurement time, else ``now - age``."""
    if measured.measured_at is not None:
        return measured.measured_at
    return datetime.fromtimestamp(now.timestamp() - measured.age_s, tz=UTC)


def sized_ahead(
    measured: MeasuredProfile, state: AutoscalerState | None, spec: LookAheadSpec, now: datetime
) -> tuple[MeasuredProfile, AutoscalerState]:
    """The profile Auto plans on with ``scaling.lookAhead``, and the state keeping its history.

    The current demand ``x = Σ spouts' offered rate`` joins the history; with the forecast ``L``
    above it, every source is scaled by ``L / x`` and the demand line says so; the state's
    ``forecast`` line says what was sized for either way.
    """
    look = look_ahead(spec)
    current = offered_rate(measured.topology)
    state = with_point(state, window_end(measured, now), current)
    ahead = forecast(look, state.demand_history or [], current, now)
    line = f"{ahead.rate:.4g}/s by {ahead.source} (current {current:.4g}/s)"
    state = state.model_copy(update={"forecast": line})
    if current <= 0 or ahead.rate <= current * (1 + 1e-9):
        return measured, state
    shown = f"{measured.demand_used}; " if measured.demand_used else ""
    profile = dataclasses.replace(
        measured,
        topology=scaled_to(measured.topology, ahead.rate),
        demand_used=f"{shown}sized ahead for {line}",
    )
    return profile, state
