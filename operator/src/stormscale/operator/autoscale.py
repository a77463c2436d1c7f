"""Auto mode: the budget the topology needs, and when the operator may move to it.

Sizing by budget plans (our rule, not a seed's algorithm: seed 001's LSA/MBA and our exact minimum for
a target rate live in :mod:`stormscale.planner.sizing`): the *needed* budget is the smallest ``b`` in
``[minUnits, maxUnits]`` whose plan leaves no component congested beyond the threshold θ::

    congested(v)  ⇔  D_v > P_v · (1 + θ)          (D: demand at the spouts' offered rate)

and ``maxUnits`` when no budget gets there (reported as ScalingLimited).

Stabilization (Flink's autoscaler and HPA): a rise waits for the cooldown since the last change; a fall
must be wanted for ``scaleInDelay`` without interruption, then also waits for the cooldown. Its state
(last change, since when a fall is wanted) lives in ``status.autoscaler``, never in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from stormscale.operator.status import AutoscalerState, seconds_since, timestamp
from stormscale.planner import FlowModel, Strategy, Topology, add_allocation, evaluate, make_plan


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
) -> Decision:
    """Move from ``current`` towards ``needed`` under cooldown and delayed scale-in."""
    cooled = seconds_since(state.last_scale_time, now) >= cooldown_s
    kept = state.model_copy(update={"scale_in_since": None})
    if needed > current:
        if not cooled:
            return Decision(current, kept.model_copy(update={"desired_budget": current}), "CoolingDown")
        scaled = {"desired_budget": needed, "last_scale_time": timestamp(now)}
        return Decision(needed, kept.model_copy(update=scaled), "ScaleOut")
    if needed == current:
        return Decision(current, kept.model_copy(update={"desired_budget": current}), "Sized")
    since = state.scale_in_since or timestamp(now)
    waited = seconds_since(since, now) >= scale_in_delay_s
    if waited and cooled:
        scaled = {"desired_budget": needed, "last_scale_time": timestamp(now)}
        return Decision(needed, kept.model_copy(update=scaled), "ScaleIn")
    delayed = {"desired_budget": current, "scale_in_since": since}
    return Decision(current, kept.model_copy(update=delayed), "ScaleInDelayed")
