"""Strategies behind one entry point: ``make_plan(topology, budget, strategy, model)``.

Scale-out (budget > 0): ``stela``, ``predictive`` (Algorithm 5 plus the residual recursion of
Algorithm 4), ``combined`` (Algorithm 4: the better of the two predicted gains, ties to predictive),
``optimal`` (the exact program), ``best`` (every other strategy's plan, the highest predicted Θ
applied: :func:`best_of`; the default).

Scale-in (budget < 0; the thesis is scale-out only): ``stela`` removes units from the
components of lowest ETP (as Stela scales in); ``predictive`` removes, one unit at a time, the unit whose loss
lowers predicted Θ least (our choice, documented in docs/planner.md); ``combined`` keeps the better of
the two; ``optimal`` is the exact program with ``Σ x = budget``; ``best`` the best of them.

Every scale-out is then trimmed (:func:`trim_useless_units`): a unit whose removal does not lower the
predicted Θ is not spent. This is our addition to the papers' algorithms.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from stormscale.planner.flow import FlowModel, congestion_tolerance, throughput
from stormscale.planner.model import Topology, Units, add_allocation, allocation_between
from stormscale.planner.optimal import OptimalLimitError, optimal_alloc
from stormscale.planner.predictive import residual_alloc
from stormscale.planner.stela import stela_scale_in, stela_scale_out


class Strategy(StrEnum):
    """The planner's strategies; ``best`` is the default (:data:`DEFAULT_STRATEGY`)."""

    STELA = "stela"
    PREDICTIVE = "predictive"
    COMBINED = "combined"
    OPTIMAL = "optimal"
    BEST = "best"


#: The strategy the CLI and the CRD plan with unless told otherwise.
DEFAULT_STRATEGY = Strategy.BEST

#: The strategies ``best`` plans with, in the order that breaks its ties (after Θ and units spent):
#: the proven optimum first, then the thesis's combined planner, then its two candidates.
BEST_CANDIDATES = (Strategy.OPTIMAL, Strategy.COMBINED, Strategy.PREDICTIVE, Strategy.STELA)


@dataclass(frozen=True)
class Optimality:
    """For ``optimal`` and ``best``: the proven upper bound on Θ and whether the solver proved the optimum."""

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
    #: For ``best``: why the plan is not a proven optimum (time limit reached, exact program not built).
    note: str | None = None

    @property
    def gain(self) -> float:
        return self.after - self.before

    @property
    def units_spent(self) -> int:
        """Units the allocation adds or removes: ``Σ |allocation|``."""
        return sum(abs(n) for n in self.allocation.values())

    def to_json(self) -> dict[str, object]:
        """The plan object of the format page; ``optimality`` and ``note`` are extra fields."""
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
        if self.note is not None:
            out["note"] = self.note
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
    strategy: Strategy = DEFAULT_STRATEGY,
    model: FlowModel = FlowModel.DROP,
    time_limit: float = 30.0,
) -> Plan:
    """Plan ``budget`` units (negative: scale-in) for ``topology`` with one strategy."""
    if strategy is Strategy.BEST:
        return compare_strategies(topology, budget, model, time_limit)[Strategy.BEST]
    return _plan_with(topology, budget, strategy, model, time_limit)


def _plan_with(
    topology: Topology, budget: int, strategy: Strategy, model: FlowModel, time_limit: float
) -> Plan:
    """One of :data:`BEST_CANDIDATES`' plans."""
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
        extra = trim_useless_units(topology, units, extra, model)
        return build(extra, optimality=Optimality(result.proven, max(result.bound, result.throughput)))
    stela = _stela_extra(topology, units, budget, model)
    if strategy is Strategy.STELA:
        return build(stela)
    ours = _predictive_extra(topology, units, budget, model)
    if strategy is Strategy.PREDICTIVE:
        return build(ours)
    winner = _combined_choice(topology, units, model, stela, ours)
    return build(stela if winner is Strategy.STELA else ours, chosen=winner)


def trim_useless_units(
    topology: Topology, units: Units, extra: dict[int, int], model: FlowModel
) -> dict[int, int]:
    """A scale-out without the units that add nothing: those whose removal does not lower predicted Θ.

    With ``Θ* = Θ(u + extra)`` and ``ε = 1e-9 · max(Θ*, 1)``, repeat until nothing changes: for each
    component ``v`` with ``extra_v > 0``, in natural id order (the highest first), while

        Θ(u + extra − e_v) ≥ Θ* − ε      set  extra_v := extra_v − 1

    Every removal is checked against ``Θ*`` itself, so the result predicts at least ``Θ* − ε`` (more
    where a removed unit had lowered Θ, as a spout's can under backpressure); the removed units are
    reported as unallocated. A scale-in (any ``extra_v < 0``) is returned unchanged: it spends nothing.

    Our addition to the papers' algorithms (docs/planner.md, "Strategies"): the thesis's heuristics,
    Stela and the exact program may all place a unit that raises no bottleneck (a third executor on
    four tasks, a bolt whose parent still limits it), and a unit that adds nothing is a unit paid for.
    """
    if any(k < 0 for k in extra.values()):
        return dict(extra)
    target = throughput(topology, add_allocation(topology, units, extra), model)
    floor = target - congestion_tolerance(target)
    kept = {v: k for v, k in extra.items() if k > 0}
    changed = True
    while changed:
        changed = False
        for v in sorted(kept, key=lambda v: -topology.rank[v]):
            while kept.get(v, 0) > 0:
                trial = {**kept, v: kept[v] - 1}
                if throughput(topology, add_allocation(topology, units, trial), model) < floor:
                    break
                kept = {w: k for w, k in trial.items() if k > 0}
                changed = True
    return kept


def best_of(plans: Mapping[Strategy, Plan], note: str | None = None) -> Plan:
    """The plan ``best`` applies, among :data:`BEST_CANDIDATES`' plans in ``plans``.

    With ``top = max_s Θ_s`` and ``ε = 1e-9 · max(top, 1)``, the candidates within ε of the top are
    tied; among them the fewest units spent (``Σ |allocation|``) wins, then the first in
    :data:`BEST_CANDIDATES` order. The result is that plan named ``best``, ``chosen`` the winner,
    carrying the exact program's ``optimality`` (when it ran) and ``note``, or, where the exact
    program stopped at its time limit, a note saying so.
    """
    candidates = [plans[s] for s in BEST_CANDIDATES if s in plans]
    if not candidates:
        raise ValueError("best: no strategy's plan to choose from")
    top = max(p.after for p in candidates)
    tied = [p for p in candidates if p.after >= top - congestion_tolerance(top)]
    winner = min(tied, key=lambda p: (p.units_spent, BEST_CANDIDATES.index(p.strategy)))
    exact = plans.get(Strategy.OPTIMAL)
    optimality = None if exact is None else exact.optimality
    if note is None and optimality is not None and not optimality.proven:
        note = (
            f"the exact program stopped at its time limit before proving the optimum "
            f"(Θ ≤ {optimality.bound:,.1f}); the best plan found is applied"
        )
    return dataclasses.replace(
        winner, strategy=Strategy.BEST, chosen=winner.strategy, optimality=optimality, note=note
    )


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
        kept = _no_loss(topology, units, model, _extra_from_picks(picks, +1))
        return trim_useless_units(topology, units, kept, model)
    return _extra_from_picks(stela_scale_in(topology, units, -budget, model), -1)


def _predictive_extra(topology: Topology, units: Units, budget: int, model: FlowModel) -> dict[int, int]:
    if budget > 0:
        kept = _no_loss(topology, units, model, residual_alloc(topology, units, budget, model))
        return trim_useless_units(topology, units, kept, model)
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
    """Every strategy's plan for the same budget and flow model, side by side, ``best`` last (chosen
    among the others' plans, each planned once). The exact program past its size limit is left out;
    ``best``'s note says why."""
    plans: dict[Strategy, Plan] = {}
    note = None
    for strategy in (Strategy.STELA, Strategy.PREDICTIVE, Strategy.COMBINED, Strategy.OPTIMAL):
        try:
            plans[strategy] = _plan_with(topology, budget, strategy, model, time_limit)
        except OptimalLimitError as err:
            note = f"the exact program did not run: {err}"
    plans[Strategy.BEST] = best_of(plans, note)
    return plans
