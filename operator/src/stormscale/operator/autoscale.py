"""Auto mode: the budget the topology needs, and when the operator may move to it.

Sizing by budget plans (our rule, not a paper's algorithm: Shukla & Simmhan's LSA/MBA and our
exact minimum for a target rate live in :mod:`stormscale.planner.sizing`): the *needed* budget is the
smallest ``b`` in ``[minUnits, maxUnits]`` whose plan leaves no component congested beyond the threshold θ::

    congested(v)  ⇔  D_v > P_v · (1 + θ)          (D: demand at the spouts' offered rate)

and ``maxUnits`` when no budget gets there (reported as ScalingLimited).

Sizing for a target rate (``scaling.sizing``, ``scaling.targetRate``): the planner's sizing strategy
(:func:`stormscale.planner.size`: exact, LSA, MBA, P-Deployer) gives the units per
component that sustain Ω, the spec's ``targetRate`` or the measured demand over ``targetUtilization``::

    Ω       = targetRate  or  Ω_now / ρ
    Ω_s     = min(Ω, Ω_max)                  Ω_max: the most the components' maxUnits sustain
    units   = size(profile, Ω_s, sizing)     (spouts keep their units)
    b       = Σ units − Σ baseline           Auto's budget, held in [minUnits, maxUnits]:
    b > maxUnits:  the budget strategy removes b − maxUnits units from them (its scale-in)
    b < minUnits:  the budget strategy adds minUnits − b units to them

Auto applies those units (the sizing decides where units go, not the budget strategy); Manual and
Recommend only show them in ``status.sizing``.

Stabilization (Flink's autoscaler and HPA): a rise waits for the cooldown since the last change; a fall
must be wanted for ``scaleInDelay`` without interruption, then also waits for the cooldown. Its state
(last change, since when a fall is wanted) lives in ``status.autoscaler``, never in memory.

A backlog holds a fall (our rule, as Flink's autoscaler sizes for catch-up and KEDA's Kafka scaler
for lag): while a Kafka source's consumer lag shrinks, its spout emits more than the topic appends and
the units that run are at work on the backlog; sizing for the append rate would take them away
half-way and slow the catch-up. A fall is not wanted (and its wish starts over) while::

    catching up  ⇔  dL/dt < −max(CATCH_UP_FLOOR, CATCH_UP_SHARE · append)

(dL/dt: the least-squares slope of the group's lag over the profile's window, ``confidence.demand``;
a lag that holds still, whatever its size, such as offsets committed every 30 s, holds nothing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from stormscale.operator.status import AutoscalerState, seconds_since, timestamp
from stormscale.planner import (
    FlowModel,
    ProfileConfidence,
    SizingError,
    SizingStrategy,
    Strategy,
    Topology,
    add_allocation,
    evaluate,
    make_plan,
    max_feasible_rate,
    offered_rate,
    scaled_to,
    size,
    throughput,
)
from stormscale.planner import Sizing as PlannerSizing

#: Seconds the budget strategy may take to hold a sizing within Auto's bounds (the exact program).
CLAMP_TIME_LIMIT_S = 5.0

#: A Kafka source catches up when its lag shrinks faster than this share of its append rate…
CATCH_UP_SHARE = 0.1
#: …and faster than this many records/s (a lag that jitters by a few records holds still).
CATCH_UP_FLOOR = 1.0


def catching_up(confidence: ProfileConfidence) -> tuple[str, ...]:
    """Spouts whose Kafka backlog drains (module docstring), from the profile's confidence (each
    component's :class:`~stormscale.planner.DemandCheck`; a spout without one never catches up)."""
    checks = {cid: c.demand for cid, c in confidence.components.items() if c.demand is not None}
    return tuple(
        cid
        for cid, d in sorted(checks.items())
        if d.lag_growth < -max(CATCH_UP_FLOOR, CATCH_UP_SHARE * d.append_rate)
    )


@dataclass(frozen=True)
class Sizing:
    """The needed budget and whether it clears every congestion."""

    budget: int
    sufficient: bool


def congested(topology: Topology, units: tuple[int, ...], model: FlowModel, threshold: float) -> list[str]:
    """Components whose demand exceeds capacity by more than ``threshold`` (demand, not measured input)."""
    state = evaluate(topology, units, model)
    out = []
    for c, flow in zip(topology.components, state.components, strict=True):
        if c.is_spout:
            continue
        demand = flow.input + (flow.lost if model is FlowModel.BACKPRESSURE else 0.0)
        if demand > flow.capacity * (1 + threshold) + 1e-9:
            out.append(c.id)
    return out


def needed_budget(
    topology: Topology, bounds: tuple[int, int], *, strategy: Strategy, model: FlowModel, threshold: float
) -> Sizing:
    """The smallest budget in ``bounds`` whose plan clears congestion (``topology`` at baseline units)."""
    low, high = bounds
    for budget in range(low, high + 1):
        plan = make_plan(topology, budget, strategy, model, time_limit=5.0)
        units = add_allocation(topology, topology.units, plan.allocation)
        if not congested(topology, units, model, threshold):
            return Sizing(budget, True)
    return Sizing(high, False)


@dataclass(frozen=True)
class SizedUnits:
    """A sizing for Ω: the strategy's own answer, and the units after Auto's bounds."""

    strategy: SizingStrategy
    source: str  # "targetRate" (the spec's) or "demand" (measured, over targetUtilization)
    target_rate: float
    sized_rate: float
    sized: PlannerSizing
    exact_units: int
    units: dict[str, int]
    budget: int
    predicted: float
    limits: tuple[str, ...] = ()

    @property
    def sufficient(self) -> bool:
        """The units sustain the whole target (no bound took anything away)."""
        return not self.limits


def size_units(
    model: Topology,
    baseline: Mapping[str, int],
    *,
    strategy: SizingStrategy,
    target_rate: float,
    source: str,
    slots_per_pod: int,
    bounds: tuple[int, int] | None = None,
    plan_strategy: Strategy = Strategy.BEST,
    flow_model: FlowModel = FlowModel.BACKPRESSURE,
) -> SizedUnits:
    """The sizing's units for Ω = ``target_rate`` (module docstring; ``source``: where Ω comes from);
    ``bounds``: Auto's [minUnits, maxUnits] budget.

    ``model`` is the measured profile with its bounds (``maxUnits`` from the task counts), holding the
    units that run. Raises :class:`SizingError` (or the planner's ``TargetRateError``) when nothing
    can be sized.
    """
    omega = target_rate
    ceiling = max_feasible_rate(model)
    if ceiling <= 0:
        raise SizingError("no target rate fits the components' maxUnits (a bound below one unit)")
    limits: list[str] = []
    sized_rate = omega
    if omega > ceiling:
        sized_rate = ceiling
        limits.append(
            f"{omega:.4g} tuples/s needs more units than the components' maxUnits allow; "
            f"sized for {ceiling:.4g} tuples/s"
        )
    sized = size(model, sized_rate, strategy, slots_per_pod)
    exact = size(model, sized_rate, SizingStrategy.EXACT, slots_per_pod)
    units = dict(sized.units)
    at_rate = scaled_to(_with_units(model, units), sized_rate)
    budget = sum(units.values()) - sum(baseline.values())
    if bounds is not None:
        low, high = bounds
        wanted = min(max(budget, low), high)
        if wanted != budget:
            plan = make_plan(at_rate, wanted - budget, plan_strategy, flow_model, CLAMP_TIME_LIMIT_S)
            vector = add_allocation(at_rate, at_rate.units, plan.allocation)
            units = {c.id: n for c, n in zip(at_rate.components, vector, strict=True)}
            side = "scaling.maxUnits" if wanted == high else "scaling.minUnits"
            limits.append(
                f"the sizing's budget {budget} is outside [{low}, {high}]: {plan.chosen or plan.strategy} "
                f"moved {wanted - budget:+d} units to hold {side} {wanted}"
            )
            if plan.unallocated:
                limits.append(f"{plan.unallocated} units could not be moved")
            budget = sum(units.values()) - sum(baseline.values())
    vector = tuple(units[c.id] for c in at_rate.components)
    return SizedUnits(
        strategy=strategy,
        source=source,
        target_rate=omega,
        sized_rate=sized_rate,
        sized=sized,
        exact_units=exact.total_units,
        units=units,
        budget=budget,
        predicted=throughput(at_rate, vector, flow_model),
        limits=tuple(limits),
    )


def target_of(measured: Topology, target_rate: float | None, utilization: float) -> tuple[float, str]:
    """Ω and where it comes from: the spec's ``targetRate``, else the measured demand over ρ."""
    if target_rate is not None:
        return target_rate, "targetRate"
    return offered_rate(measured) / utilization, "demand"


def _with_units(model: Topology, units: Mapping[str, int]) -> Topology:
    """``model`` holding ``units`` (bounds widened to hold them, a bolt's floor at one unit)."""
    components = tuple(
        dataclasses.replace(
            c,
            units=units[c.id],
            max_units=None if c.max_units is None else max(c.max_units, units[c.id]),
            min_units=c.min_units if c.is_spout else min(units[c.id], 1),
        )
        for c in model.components
    )
    return Topology(model.name, components)


@dataclass(frozen=True)
class Decision:
    """The budget to run now, and the stabilization state to keep in status."""

    budget: int
    state: AutoscalerState
    reason: str


def decide(
    current: int,
    needed: int,
    state: AutoscalerState,
    now: datetime,
    *,
    cooldown_s: float,
    scale_in_delay_s: float,
    catching_up: bool = False,
) -> Decision:
    """Move from ``current`` towards ``needed`` under cooldown and delayed scale-in; while a source
    is ``catching_up`` on its backlog, a fall is not wanted (the wish starts over)."""
    cooled = seconds_since(state.last_scale_time, now) >= cooldown_s
    kept = state.model_copy(update={"scale_in_since": None})
    if needed > current:
        if not cooled:
            return Decision(current, kept.model_copy(update={"desired_budget": current}), "CoolingDown")
        scaled = {"desired_budget": needed, "last_scale_time": timestamp(now)}
        return Decision(needed, kept.model_copy(update=scaled), "ScaleOut")
    if needed == current:
        return Decision(current, kept.model_copy(update={"desired_budget": current}), "Sized")
    if catching_up:
        return Decision(current, kept.model_copy(update={"desired_budget": current}), "CatchingUp")
    since = state.scale_in_since or timestamp(now)
    waited = seconds_since(since, now) >= scale_in_delay_s
    if waited and cooled:
        scaled = {"desired_budget": needed, "last_scale_time": timestamp(now)}
        return Decision(needed, kept.model_copy(update=scaled), "ScaleIn")
    delayed = {"desired_budget": current, "scale_in_since": since}
    return Decision(current, kept.model_copy(update=delayed), "ScaleInDelayed")
