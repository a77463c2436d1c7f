"""Strategies behind one entry point: ``make_plan(topology, budget, strategy, model)``.

Scale-out (budget > 0): ``stela``, ``predictive`` (Algorithm 5 plus the residual recursion of
Algorithm 4), ``combined`` (Algorithm 4: the better of the two predicted gains, ties to predictive),
``optimal`` (the exact program).

Scale-in (budget < 0; the thesis is scale-out only): ``stela`` removes units from the
components of lowest ETP (as Stela scales in); ``predictive`` removes, one unit at a time, the unit whose loss
lowers predicted Θ least (our choice, documented in docs/planner.md); ``combined`` keeps the better of
the two; ``optimal`` is the exact program with ``Σ x = budget``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from stormscale.planner.flow import FlowModel, congestion_tolerance, throughput
from stormscale.planner.model import Topology, Units, add_allocation, allocation_between
from stormscale.planner.optimal import optimal_alloc
from stormscale.planner.predictive import residual_alloc
from stormscale.planner.stela import stela_scale_in, stela_scale_out


class Strategy(StrEnum):
    """The planner's strategies; ``combined`` is the default."""

    STELA = "stela"
    PREDICTIVE = "predictive"
    COMBINED = "combined"
    OPTIMAL = "optimal"


@dataclass(frozen=True)
class Optimality:
    """For ``optimal``: the proven upper bound on Θ and whether the solver proved the optimum."""

    proven: bool
    bound: float


@dataclass(frozen=True)
class Plan:
    """A plan in the shape of ``docs/formats/profile.md`` (see :meth:`to_json`)."""

    topology: str
    strategy: Strategy
    flow_model: FlowModel
    budget: int
    allocation: dict[str, int]
    unallocated: int
    before: float
    after: float
    chosen: Strategy | None = None
    optimality: Optimality | None = None

    @property
    def gain(self) -> float:
        return self.after - self.before

    def to_json(self) -> dict[str, object]:
        """The plan object of the format page; ``optimality`` is an extra field."""
        out: dict[str, object] = {
            "topology": self.topology,
            "strategy": self.strategy.value,
            "flowModel": self.flow_model.value,
            "budget": self.budget,
            "allocation": self.allocation,
            "unallocated": self.unallocated,
            "throughput": {"before": self.before, "after": self.after},
        }
        if self.chosen is not None:
            out["chosen"] = self.chosen.value
        if self.optimality is not None:
            bound = self.optimality.bound
            out["optimality"] = {
                "proven": self.optimality.proven,
                "bound": bound if math.isfinite(bound) else None,
            }
        return out


def greedy_scale_in(topology: Topology, units: Units, remove: int, model: FlowModel) -> list[int]:
    """Remove units one at a time, each time the one whose loss keeps predicted Θ highest."""
    current = list(units)
    picks: list[int] = []
    for _ in range(remove):
        state = tuple(current)
        options = [v for v in range(len(current)) if topology.removable(state, v) > 0]
        if not options:
            break

        def after_removal(v: int, state: Units = state) -> float:
            return throughput(topology, add_allocation(topology, state, {v: -1}), model)

        target = min(options, key=lambda v: (-after_removal(v), topology.rank[v]))
        current[target] -= 1
        picks.append(target)
    return picks


def _extra_from_picks(picks: list[int], sign: int) -> dict[int, int]:
    return {v: sign * k for v, k in Counter(picks).items()}


def make_plan(
    topology: Topology,
    budget: int,
    strategy: Strategy = Strategy.COMBINED,
    model: FlowModel = FlowModel.DROP,
    time_limit: float = 30.0,
) -> Plan:
    """Plan ``budget`` units (negative: scale-in) for ``topology`` with one strategy."""
    units = topology.units
    before = throughput(topology, units, model)

    def build(
        extra: dict[int, int], chosen: Strategy | None = None, optimality: Optimality | None = None
    ) -> Plan:
        after_units = add_allocation(topology, units, extra)
        moved = sum(abs(e) for e in extra.values())
        return Plan(
            topology=topology.name,
            strategy=strategy,
            flow_model=model,
            budget=budget,
            allocation=allocation_between(topology, units, after_units),
            unallocated=abs(budget) - moved,
            before=before,
            after=throughput(topology, after_units, model),
            chosen=chosen,
            optimality=optimality,
        )

    if budget == 0:
        return build({})
    if strategy is Strategy.OPTIMAL:
        result = optimal_alloc(topology, units, budget, model, time_limit)
        extra = result.extra
        if not result.proven:  # a time limit stopped the solver: never return less than the heuristics
            fallback = _best_heuristic(topology, units, budget, model)
            theta_fallback = throughput(topology, add_allocation(topology, units, fallback), model)
            if not result.found or theta_fallback > result.throughput:
                extra = fallback
        return build(extra, optimality=Optimality(result.proven, max(result.bound, result.throughput)))
    stela = _stela_extra(topology, units, budget, model)
    if strategy is Strategy.STELA:
        return build(stela)
    ours = _predictive_extra(topology, units, budget, model)
    if strategy is Strategy.PREDICTIVE:
        return build(ours)
    winner = _combined_choice(topology, units, model, stela, ours)
    return build(stela if winner is Strategy.STELA else ours, chosen=winner)


def _combined_choice(
    topology: Topology, units: Units, model: FlowModel, stela: dict[int, int], ours: dict[int, int]
) -> Strategy:
    """Algorithm 4 line 16: Stela only if its predicted Θ is strictly higher (ties go to predictive)."""
    theta_stela = throughput(topology, add_allocation(topology, units, stela), model)
    theta_ours = throughput(topology, add_allocation(topology, units, ours), model)
    return Strategy.STELA if theta_stela > theta_ours else Strategy.PREDICTIVE


def _best_heuristic(topology: Topology, units: Units, budget: int, model: FlowModel) -> dict[int, int]:
    stela = _stela_extra(topology, units, budget, model)
    ours = _predictive_extra(topology, units, budget, model)
    return stela if _combined_choice(topology, units, model, stela, ours) is Strategy.STELA else ours


def _stela_extra(topology: Topology, units: Units, budget: int, model: FlowModel) -> dict[int, int]:
    if budget > 0:
        picks = stela_scale_out(topology, units, budget, model)
        return _no_loss(topology, units, model, _extra_from_picks(picks, +1))
    return _extra_from_picks(stela_scale_in(topology, units, -budget, model), -1)


def _predictive_extra(topology: Topology, units: Units, budget: int, model: FlowModel) -> dict[int, int]:
    if budget > 0:
        return _no_loss(topology, units, model, residual_alloc(topology, units, budget, model))
    return _extra_from_picks(greedy_scale_in(topology, units, -budget, model), -1)


def _no_loss(topology: Topology, units: Units, model: FlowModel, extra: dict[int, int]) -> dict[int, int]:
    """A heuristic's scale-out, or nothing if it predicts a lower Θ than the units it starts from:

        Θ(u + extra) < Θ(u) − ε  ⇒  extra := ∅  (its units stay unallocated)

    Our correction, not the thesis's: under the drop model Θ never falls when units are added, but
    under backpressure a spout's extra output can take a shared, capped bottleneck's capacity from
    another source's flow (every source feeding it slows to the same ratio), and both heuristics add
    a spout unit when no bolt with headroom is congested (found by the property tests; the exact
    program picks the other spout there). docs/planner.md, "Model".
    """
    before = throughput(topology, units, model)
    after = throughput(topology, add_allocation(topology, units, extra), model)
    return {} if after < before - congestion_tolerance(before) else extra


def compare_strategies(
    topology: Topology, budget: int, model: FlowModel, time_limit: float = 30.0
) -> dict[Strategy, Plan]:
    """Every strategy's plan for the same budget and flow model, side by side."""
    return {s: make_plan(topology, budget, s, model, time_limit) for s in Strategy}
