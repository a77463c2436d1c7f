"""The table-driven controller (the multi-level elasticity paper's §3.1 step 3, §5.2, §5.3).

Every monitoring window (``now = window_end``)::

    reactive:   L ← filtered measured input      (k consecutive windows must agree, see .signals)
    proactive:  L ← max forecast over [now, now + lead]                      (lead = 120 s, §5.3)
    k ← min {k : L ≤ upper_k}
    k > cur:    replay the benchmark's log up to C_k, in its order (push)     (may jump several rows)
    k < cur:    pop the stack down to C_k, last provisioned first (LIFO); a pod goes with its last executor
    L > upper_max: go to the last row, alert "beyond benchmark" (possible DoS), then scale out on
                health with Algorithm 2 ("switch to reactive mode", §5.3); those extra containers are
                popped first once L ≤ upper_max again

Proactive mode also watches the measured load: ``k`` windows above the forecast for their own
window alert "above forecast" and the look-up level becomes ``max(forecast, min(window))``.

Our choices, where the paper is silent:

* a decision on measurements needs a fresh window (see :func:`.observation.is_fresh`); a
  forecast decision only needs every container to run (forecasts are not measured, so they are not
  stale); stale windows are not added to the filter;
* a counter reset drops the window and extends the cool-down by one T;
* a table-less scale-in is not built: the controller always has a table. Containers added on
  health beyond the table are released together, LIFO, when the filtered load is back at or below
  ``upper_max`` (``C_last`` is validated there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import StrEnum

from stormscale.planner.elasticity.health import PAPER_THRESHOLDS, Thresholds
from stormscale.planner.elasticity.model import (
    Alert,
    AlertReason,
    Layout,
    Provision,
    Release,
    inverse,
    replay,
)
from stormscale.planner.elasticity.observation import Observation, is_fresh
from stormscale.planner.elasticity.selection import Selection, first_congested, scale_out
from stormscale.planner.elasticity.signals import (
    ForecastSlot,
    filtered_level,
    forecast_max,
    forecast_over_window,
    required_observations,
    streak,
)
from stormscale.planner.elasticity.table import ConfigTable, lookup

LEAD_TIME = 120.0  # s: §5.3 "about 2 minutes in advance"


class Mode(StrEnum):
    REACTIVE = "reactive"
    PROACTIVE = "proactive"


@dataclass(frozen=True)
class ControllerParams:
    """``T``, the mode and its knobs; ``observations`` defaults to ``k(T)``
    (:func:`.signals.required_observations`)."""

    period: float
    mode: Mode = Mode.REACTIVE
    thresholds: Thresholds = PAPER_THRESHOLDS
    selection: Selection = Selection.RECOMMENDED
    max_pods: int | None = None
    observations: int | None = None
    lead: float = LEAD_TIME
    forecast: tuple[ForecastSlot, ...] = field(default=())
    forecast_tolerance: float = 0.0

    @property
    def k(self) -> int:
        return self.observations if self.observations is not None else required_observations(self.period)


@dataclass(frozen=True)
class ControllerState:
    """The table, the LIFO stack of provisioned containers (beyond the base) and the filters' memory.

    ``stack`` is always ``log[:steps_row]``, plus containers added on health when ``beyond``.
    """

    table: ConfigTable
    stack: tuple[Provision, ...]
    row: int
    beyond: bool = False
    loads: tuple[float, ...] = field(default=())
    congested_streak: int = 0
    above_streak: int = 0
    stale_before: float = -math.inf


Actions = tuple[Provision | Release | Alert, ...]


def start(table: ConfigTable, row: int = 0) -> ControllerState:
    """A controller running ``C_row`` (e.g. the benchmark's last row, or the row of the current load)."""
    return ControllerState(table, table.log[: table.rows[row].steps], row)


def layout(state: ControllerState) -> Layout:
    """The configuration the controller believes is running."""
    return replay(state.table.base, state.stack)


def move_to(
    table: ConfigTable, stack: tuple[Provision, ...], steps: int
) -> tuple[tuple[Provision, ...], tuple[Provision | Release, ...]]:
    """Push the log up to ``steps`` or pop the stack down to it, LIFO."""
    if steps < len(stack):
        popped = stack[steps:]
        return stack[:steps], tuple(inverse(a) for a in reversed(popped))
    if stack != table.log[: len(stack)]:
        raise ValueError("the stack is not a prefix of the benchmark's log")
    return table.log[:steps], table.log[len(stack) : steps]


def step(
    state: ControllerState, observation: Observation, params: ControllerParams
) -> tuple[ControllerState, Actions]:
    """One monitoring window: the new state and the actions to apply, in order."""
    if observation.reset:
        later = max(state.stale_before, observation.window_end + params.period)
        return replace(state, stale_before=later), ()
    if observation.ready_since is None:
        return state, ()
    fresh = is_fresh(observation, state.stale_before)
    if fresh and observation.load is not None:
        state = replace(state, loads=(*state.loads, observation.load)[-params.k :])
    planned = (
        forecast_max(params.forecast, observation.window_end, observation.window_end + params.lead)
        if params.mode is Mode.PROACTIVE
        else None
    )
    alerts: tuple[Alert, ...] = ()
    if planned is None:
        if not fresh:
            return state, ()
        level = _reactive_level(state, params.k)
    else:
        state, level, alerts = _proactive_level(state, observation, params, planned, fresh)
    state, actions = _follow(state, level, observation, params, fresh)
    if any(not isinstance(a, Alert) for a in actions):
        state = replace(state, stale_before=observation.window_end, congested_streak=0)
    return state, alerts + actions


def _reactive_level(state: ControllerState, k: int) -> float | None:
    """The filtered level leaving the current band, ``None`` to stay; the band is open above when beyond."""
    row = state.table.rows[state.row]
    lower, upper = (row.upper, math.inf) if state.beyond else (row.lower, row.upper)
    return filtered_level(state.loads, lower, upper, k)


def _proactive_level(
    state: ControllerState, observation: Observation, params: ControllerParams, planned: float, fresh: bool
) -> tuple[ControllerState, float, tuple[Alert, ...]]:
    """``planned``, raised to the measured load once ``k`` windows exceed their own forecast (§5.3)."""
    expected = forecast_over_window(params.forecast, observation.window_start, observation.window_end)
    run = state.above_streak
    if fresh and observation.load is not None and expected is not None:
        run = streak(run, observation.load > expected * (1 + params.forecast_tolerance))
    alerts: tuple[Alert, ...] = ()
    level = planned
    if run >= params.k:
        level = max(planned, min(state.loads))
        if state.above_streak < params.k:
            alerts = (Alert(AlertReason.ABOVE_FORECAST, f"measured {min(state.loads):g} > forecast"),)
    return replace(state, above_streak=run), level, alerts


def _follow(
    state: ControllerState,
    level: float | None,
    observation: Observation,
    params: ControllerParams,
    fresh: bool,
) -> tuple[ControllerState, Actions]:
    """Move to the row of ``level``; beyond the table, last row, an alert, then health-driven scale-out."""
    table = state.table
    if level is None:
        return _on_health(state, observation, params, fresh) if state.beyond else (state, ())
    row = lookup(table, level)
    if row is not None:
        stack, moves = move_to(table, state.stack, table.rows[row].steps)
        return replace(state, stack=stack, row=row, beyond=False), moves
    last = len(table.rows) - 1
    if not state.beyond:
        stack, moves = move_to(table, state.stack, table.rows[last].steps)
        alert = Alert(AlertReason.BEYOND_BENCHMARK, f"load {level:g} > {table.upper_max:g}: possible DoS")
        return replace(state, stack=stack, row=last, beyond=True), (alert, *moves)
    return _on_health(state, observation, params, fresh)


def _on_health(
    state: ControllerState, observation: Observation, params: ControllerParams, fresh: bool
) -> tuple[ControllerState, Actions]:
    """Beyond the table: Algorithm 2 on the first congested operator, after ``k`` congested windows."""
    if not fresh:
        return state, ()
    operator = first_congested(observation.operators, params.thresholds.min_health)
    run = streak(state.congested_streak, operator is not None)
    if operator is None or run < params.k:
        return replace(state, congested_streak=run), ()
    actions = scale_out(operator, observation.pods, params.selection, params.thresholds, params.max_pods)
    pushed = tuple(a for a in actions if not isinstance(a, Alert))
    return replace(state, stack=state.stack + pushed, congested_streak=run), actions
