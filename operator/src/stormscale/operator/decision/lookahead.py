"""Auto's look-ahead: size for the largest demand forecast over ``[now, now + lead]``. Pure.

The multi-level elasticity paper's proactive mode, ``L <- max forecast over [now, now + lead]``, for
Auto (``scaling.lookAhead``, off by default; the reconcile pass does not read it from the spec yet).
The forecast is either

* a least-squares line through the recent windows' demand (``Regression``), or
* the user's schedule, a list of ``{offset, rate}`` steps from the schedule's start (``Schedule``);

and Auto sizes for ``max(current demand, L)``: it scales out ``lead`` seconds before the forecast
rise, and scales in only once the forecast's maximum over the lead window has fallen (the higher
level has passed). The forecast helpers are the planner's (:func:`~stormscale.planner.forecast_max`,
:func:`~stormscale.planner.linear_forecast`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stormscale.planner import ForecastSlot, forecast_max, linear_forecast

#: Bounds of ``scaling.lookAhead`` (the CRD's schema says the same).
MAX_LEAD_S = 3600.0
MIN_WINDOWS = 2
MAX_WINDOWS = 60
DEFAULT_LEAD_S = 120.0
DEFAULT_WINDOWS = 6


class LookAheadError(ValueError):
    """``scaling.lookAhead`` is invalid; the message names the field."""


class ForecastKind(enum.Enum):
    """Where the forecast comes from."""

    REGRESSION = "Regression"
    SCHEDULE = "Schedule"


@dataclass(frozen=True)
class ScheduleStep:
    """From ``offset_s`` seconds after the schedule's start, the demand is ``rate`` tuples/s."""

    offset_s: float
    rate: float


@dataclass(frozen=True)
class LookAhead:
    """``scaling.lookAhead``: the lead, the forecast's kind, the windows a regression fits, the
    schedule (sorted by offset) and the largest rate a forecast may reach."""

    lead_s: float = DEFAULT_LEAD_S
    kind: ForecastKind = ForecastKind.REGRESSION
    windows: int = DEFAULT_WINDOWS
    schedule: tuple[ScheduleStep, ...] = ()
    max_rate: float | None = None


@dataclass(frozen=True)
class Forecast:
    """The demand Auto sizes for (``rate``) and the line status shows for where it came from."""

    rate: float
    source: str


def _number(raw: object, field: str, low: float, high: float) -> float:
    """``raw`` as a finite number in ``[low, high]``, or a :class:`LookAheadError` naming ``field``."""
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise LookAheadError(f"scaling.lookAhead.{field} must be a finite number, not {raw!r}")
    if not low <= raw <= high:
        raise LookAheadError(f"scaling.lookAhead.{field} must be within [{low:g}, {high:g}], not {raw:g}")
    return float(raw)


def _schedule(raw: object) -> tuple[ScheduleStep, ...]:
    """The schedule's steps sorted by offset; offsets are distinct."""
    if not isinstance(raw, list) or not raw:
        raise LookAheadError("scaling.lookAhead.schedule must be a non-empty list of {offset, rate}")
    steps = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping):
            raise LookAheadError(f"scaling.lookAhead.schedule[{i}] must be an object {{offset, rate}}")
        offset = _number(entry.get("offset"), f"schedule[{i}].offset", 0.0, 7 * 24 * 3600.0)
        rate = _number(entry.get("rate"), f"schedule[{i}].rate", 0.0, math.inf)
        steps.append(ScheduleStep(offset, rate))
    steps.sort(key=lambda s: s.offset_s)
    if len({s.offset_s for s in steps}) != len(steps):
        raise LookAheadError("scaling.lookAhead.schedule has two steps at the same offset")
    return tuple(steps)


def parse_look_ahead(raw: object) -> LookAhead | None:
    """``scaling.lookAhead`` as a :class:`LookAhead`; ``None`` (absent) keeps Auto reactive."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise LookAheadError("scaling.lookAhead must be an object")
    lead = _number(raw.get("lead", DEFAULT_LEAD_S), "lead", 1.0, MAX_LEAD_S)
    try:
        kind = ForecastKind(raw.get("forecast", ForecastKind.REGRESSION.value))
    except ValueError:
        raise LookAheadError(
            f"scaling.lookAhead.forecast must be Regression or Schedule, not {raw.get('forecast')!r}"
        ) from None
    windows = _number(raw.get("windows", DEFAULT_WINDOWS), "windows", MIN_WINDOWS, MAX_WINDOWS)
    if windows != int(windows):
        raise LookAheadError(f"scaling.lookAhead.windows must be an integer, not {windows:g}")
    max_rate = None if raw.get("maxRate") is None else _number(raw["maxRate"], "maxRate", 0.0, math.inf)
    schedule = _schedule(raw.get("schedule")) if kind is ForecastKind.SCHEDULE else ()
    return LookAhead(lead, kind, int(windows), schedule, max_rate)


def regression_forecast(
    times: Sequence[float], rates: Sequence[float], now: float, look: LookAhead
) -> Forecast:
    """The largest demand on the least-squares line over ``[now, now + lead]``, clamped.

    With the last ``n = windows`` points ``(t_i, x_i)``, the line is ``x(t) = x̄ + b (t - t̄)`` with
    ``b = Σ (t_i - t̄)(x_i - x̄) / Σ (t_i - t̄)²``. A line is largest at an end of the interval, so
    ``L = max(x(now), x(now + lead))``; then ``L <- min(max(L, x_last), maxRate)``: never below the
    current demand ``x_last``, never above the bound.
    """
    if not rates or len(times) != len(rates):
        raise ValueError("regression_forecast needs as many times as rates, at least one")
    ts, xs = list(times)[-look.windows :], list(rates)[-look.windows :]
    current = xs[-1]
    line = max(linear_forecast(ts, xs, now), linear_forecast(ts, xs, now + look.lead_s))
    rate = max(line, current)
    if look.max_rate is not None:
        rate = min(rate, max(look.max_rate, current))
    return Forecast(rate, f"regression over {len(xs)} windows, max over the next {look.lead_s:g}s")


def schedule_slots(schedule: Sequence[ScheduleStep], start: float) -> tuple[ForecastSlot, ...]:
    """The schedule as the planner's forecast slots: each step holds until the next; the last, for ever."""
    ends = [start + s.offset_s for s in schedule[1:]] + [math.inf]
    return tuple(ForecastSlot(start + s.offset_s, end, s.rate) for s, end in zip(schedule, ends, strict=True))


def schedule_forecast(current: float, now: float, start: float, look: LookAhead) -> Forecast:
    """``L = max(current, max schedule over [now, now + lead])``; before the first step, the current."""
    peak = forecast_max(schedule_slots(look.schedule, start), now, now + look.lead_s)
    rate = current if peak is None else max(current, peak)
    return Forecast(rate, f"schedule, max over the next {look.lead_s:g}s")


def ahead_budget(budget: int, current: float, forecast: Forecast, max_units: int) -> int:
    """The budget for the forecast: ``⌈budget · L / current⌉`` within ``[budget, max_units]``.

    The budget sized for the current demand scales with the demand (units per tuple/s held); with no
    current demand, the budget stays.
    """
    if current <= 0 or forecast.rate <= current:
        return budget
    return max(budget, min(max_units, math.ceil(budget * forecast.rate / current - 1e-9)))
