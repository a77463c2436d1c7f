"""Application benchmarking (the multi-level elasticity paper's Algorithm 1, §3.1).

::

    for inputLoad ← 0 to initLoad step ΔL:        injectLoad(inputLoad, Δ)     # warm-up, not monitored
    for inputLoad ← initLoad to maxLoad step ΔL:   injectLoad(inputLoad, Δ)
        every T in Δ: i ← first congested in sortedInstances; if i: SCALEOUT(i.op, inputLoad)

The load plan is data (:func:`load_schedule`); the caller injects it and calls
:func:`benchmark_step` once per monitoring window, time being an argument. Resolutions:

* at most one scale-out per window (``find`` returns the first congested operator);
* after a scale-out, decide again only on a window that starts after it and after every new
  container runs (the cool-down); a window with a counter reset is dropped and the cool-down
  extended by one T;
* a window that straddles two levels is not used (ours: its load is neither level);
* the warm-up is ``0, ΔL, …`` strictly below ``initLoad`` (the listing's ``0 to initLoad`` would hold
  ``initLoad`` twice); with ``initLoad = 0`` there is none;
* ``observations`` consecutive congested windows are needed (default 1: Algorithm 1 as written).

:func:`derive_table` turns the record into the table (Table 1): a level is *validated* by the
configuration running at its last fresh window if that window is healthy; ``upper_k`` is the highest
level validated by ``C_k``. A level whose last window is still congested (Δ too short for the system
to stabilise, which the paper assumes never happens) validates nothing and is noted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from stormscale.planner.elasticity.health import PAPER_THRESHOLDS, Thresholds
from stormscale.planner.elasticity.model import Alert, Layout, Provision
from stormscale.planner.elasticity.observation import Observation, is_fresh
from stormscale.planner.elasticity.selection import Selection, first_congested, scale_out
from stormscale.planner.elasticity.signals import streak
from stormscale.planner.elasticity.table import ConfigTable, make_table


@dataclass(frozen=True)
class BenchmarkParams:
    """``initLoad``, ``maxLoad``, ``ΔL`` (tuples/s), ``Δ`` (s), ``T`` (s), and Algorithm 2's knobs."""

    init_load: float
    max_load: float
    step: float
    hold: float
    period: float
    start: float = 0.0
    thresholds: Thresholds = PAPER_THRESHOLDS
    selection: Selection = Selection.RECOMMENDED
    max_pods: int | None = None
    observations: int = 1


@dataclass(frozen=True)
class LoadLevel:
    """One held load: ``[start, start + Δ)`` at ``load``; warm-up levels are not monitored."""

    start: float
    load: float
    monitored: bool


def load_schedule(params: BenchmarkParams) -> tuple[LoadLevel, ...]:
    """Algorithm 1's two loops as a list of levels, each held Δ."""
    if params.step <= 0 or params.hold <= 0 or params.max_load < params.init_load:
        raise ValueError("need ΔL > 0, Δ > 0 and maxLoad ≥ initLoad")
    warm = [(i * params.step, False) for i in range(math.ceil(params.init_load / params.step))]
    count = math.floor((params.max_load - params.init_load) / params.step + 1e-9) + 1
    main = [(params.init_load + i * params.step, True) for i in range(count)]
    return tuple(
        LoadLevel(params.start + k * params.hold, load, monitored)
        for k, (load, monitored) in enumerate(warm + main)
    )


def level_of_window(params: BenchmarkParams, start: float, end: float) -> int | None:
    """Index of the level that holds all of ``[start, end)``, ``None`` if none does."""
    index = math.floor((start - params.start) / params.hold)
    last = math.ceil((end - params.start) / params.hold) - 1
    return index if index == last and 0 <= index < len(load_schedule(params)) else None


@dataclass(frozen=True)
class Recorded:
    """``confs.update(inputLoad, op, instance, container, node)``: one provisioning step and its load."""

    load: float
    action: Provision


@dataclass(frozen=True)
class LevelRecord:
    """The last fresh window of a level: the log length then, and whether nothing was congested."""

    level: int
    load: float
    steps: int
    settled: bool


@dataclass(frozen=True)
class BenchmarkState:
    base: Layout
    log: tuple[Recorded, ...] = field(default=())
    levels: tuple[LevelRecord, ...] = field(default=())
    alerts: tuple[Alert, ...] = field(default=())
    stale_before: float = -math.inf
    congested_streak: int = 0


def benchmark_step(
    state: BenchmarkState, observation: Observation, params: BenchmarkParams
) -> tuple[BenchmarkState, tuple[Provision | Alert, ...]]:
    """One monitoring tick of Algorithm 1; returns the new state and the actions to apply.

    ``observation.pods`` must be the layout's pods (ordinals ``0 … n-1``) with the actions of the
    previous ticks applied.
    """
    if observation.reset:
        later = max(state.stale_before, observation.window_end + params.period)
        return replace(state, stale_before=later), ()
    index = level_of_window(params, observation.window_start, observation.window_end)
    if index is None or not is_fresh(observation, state.stale_before):
        return state, ()
    level = load_schedule(params)[index]
    if not level.monitored:
        return state, ()
    operator = first_congested(observation.operators, params.thresholds.min_health)
    run = streak(state.congested_streak, operator is not None)
    actions: tuple[Provision | Alert, ...] = ()
    if operator is not None and run >= params.observations:
        actions = scale_out(operator, observation.pods, params.selection, params.thresholds, params.max_pods)
    provisions = tuple(a for a in actions if not isinstance(a, Alert))
    alerts = tuple(a for a in actions if isinstance(a, Alert))
    log = state.log + tuple(Recorded(level.load, a) for a in provisions)
    record = LevelRecord(index, level.load, len(log), operator is None)
    levels = state.levels
    if levels and levels[-1].level == index:
        levels = levels[:-1]
    return (
        replace(
            state,
            log=log,
            levels=(*levels, record),
            alerts=state.alerts + alerts,
            stale_before=observation.window_end if provisions else state.stale_before,
            congested_streak=0 if provisions else run,
        ),
        actions,
    )


def derive_table(state: BenchmarkState, margin: float = 0.0) -> ConfigTable:
    """The benchmark's configuration table (Table 1); ``upper_k`` lowered by ``margin`` (ours, default 0),
    never below 0. A larger configuration validated only up to a smaller one's bound is dropped."""
    notes: list[str] = []
    best: dict[int, float] = {}
    for record in state.levels:
        if not record.settled:
            notes.append(f"level {record.load:g} ended congested: it validates no configuration")
            continue
        best[record.steps] = max(best.get(record.steps, -math.inf), record.load)
    bands: list[tuple[float, int]] = []
    for steps in sorted(best):
        upper = max(best[steps] - margin, 0.0)
        if bands and upper <= bands[-1][0]:
            notes.append(f"configuration of {steps} steps validated only below a smaller one: dropped")
            continue
        bands.append((upper, steps))
    if not bands:
        raise ValueError("the benchmark validated no configuration")
    return make_table(state.base, [r.action for r in state.log], bands, notes)


def recorded_loads(state: BenchmarkState) -> Sequence[float]:
    """The load at which each provisioning step was taken (the paper's ``confs``)."""
    return [r.load for r in state.log]
