"""The predictive batch allocator of the thesis (its Algorithms 4 and 5, with our corrections).

A *candidate* gives a congested head h ``r`` more units and then exactly the units every descendant
needs to process all of its new input (the thesis's subtree prediction)::

    O'_h = min(I_h, (n_h + r)·c_h)·ρ_h                 (spout head: (n_h + r)·s_h)
    I'_v = ext_v + Σ_p O'_p · f_{p→v}                  for v ∈ desc(h), topological order
    A_v  = max(0, ⌈I'_v / c_v⌉ − n_v);   O'_v = I'_v · ρ_v
    τ    = ΔΘ / Σ A

Candidates are taken greedily by τ (ties: lower head id, then smaller r) with the thesis's superset rules
(ignore a candidate a chosen one contains; replace a chosen one it contains), and every tentative set is
re-evaluated jointly so shared descendants on a DAG are sized for their combined input. Units the greedy
cannot place are *residual*: one unit to the cheapest head, then the allocator runs again on that head's
subtree.

Our choices where the thesis is silent (also in docs/planner.md):
- a candidate whose descendants would need more than their ``maxUnits`` is not a candidate (it cannot
  decongest its subtree, which is what a candidate promises);
- congestion is detected on the drop model's rates in both flow models; ΔΘ (and so τ and every
  comparison) is computed under the requested flow model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from stormscale.planner.congestion import candidate_heads
from stormscale.planner.flow import DropRates, FlowModel, drop_rates, throughput
from stormscale.planner.model import Component, Topology, Units, add_allocation

Extra = dict[int, int]


@dataclass(frozen=True, slots=True)
class Candidate:
    """An ``AllocationMap`` of the thesis: head, its extra units r, the subtree's extra units, ΔΘ."""

    head: int
    r: int
    extra: Mapping[int, int]
    gain: float

    @property
    def count(self) -> int:
        return sum(self.extra.values())

    @property
    def ratio(self) -> float:
        """τ = ΔΘ / units."""
        return self.gain / self.count


def decongest(topology: Topology, units: Units, rates: DropRates, heads: Mapping[int, int]) -> Extra | None:
    """The joint check: heads keep their r, every other node of ∪ sub(h) gets its ceil-need.

    Returns the extra units per component, or ``None`` when some component would need more than its
    ``maxUnits``.
    """
    outputs = list(rates.outputs)
    extra: Extra = {}
    comps = topology.components
    for v in _members(topology, heads):
        c = comps[v]
        arriving = c.external_input + sum(outputs[p] * f for p, f in topology.parents[v])
        if v in heads:
            r = heads[v]
            extra[v] = r
            outputs[v] = _head_output(c, units[v] + r, arriving)
            continue
        add = max(0, c.units_for(arriving) - units[v])
        if units[v] + add > topology.max_units[v]:
            return None
        if add:
            extra[v] = add
        outputs[v] = arriving * c.selectivity
    return extra


def _members(topology: Topology, heads: Mapping[int, int]) -> Iterable[int]:
    """∪ sub(h) in topological order."""
    if len(heads) == 1:
        return topology.subtree(next(iter(heads)))
    union = 0
    for h in heads:
        union |= topology.descendants[h] | (1 << h)
    return (v for v in topology.order if union >> v & 1)


def _head_output(c: Component, units: int, arriving: float) -> float:
    if c.is_spout:
        return units * c.output_per_unit
    return min(arriving, c.capacity(units)) * c.selectivity


def candidates(topology: Topology, units: Units, budget: int, model: FlowModel) -> list[Candidate]:
    """Every (head, r) candidate that fits the budget (Algorithm 5 lines 5–25)."""
    rates = drop_rates(topology, units)
    base = throughput(topology, units, model)
    out: list[Candidate] = []
    for h in candidate_heads(topology, units, rates):
        comp = topology.components[h]
        for r in range(1, budget + 1):
            if r > topology.headroom(units, h):
                break
            extra = decongest(topology, units, rates, {h: r})
            if extra is None or sum(extra.values()) > budget:
                break
            gain = throughput(topology, add_allocation(topology, units, extra), model) - base
            out.append(Candidate(h, r, extra, gain))
            if not comp.is_spout and comp.capacity(units[h] + r) >= rates.inputs[h]:
                break
    return out


@dataclass(frozen=True, slots=True)
class PredictiveResult:
    """The no-worsening allocation (the thesis's ``optimalAlloc``) and the candidates left unused."""

    extra: Extra
    unused: tuple[Candidate, ...]


def _covered(chosen: Iterable[Candidate], a: Candidate, topology: Topology) -> bool:
    """A chosen candidate already contains ``a`` (same head with r ≥, or an ancestor head)."""
    return any((c.head == a.head and c.r >= a.r) or topology.is_descendant(a.head, of=c.head) for c in chosen)


def predictive_alloc(topology: Topology, units: Units, budget: int, model: FlowModel) -> PredictiveResult:
    """PREDICTIVEALLOC (Algorithm 5): greedy by τ with superset rules and joint checks."""
    cands = candidates(topology, units, budget, model)
    cands.sort(key=lambda a: (-a.ratio, topology.rank[a.head], a.r))
    rates = drop_rates(topology, units)
    chosen: list[Candidate] = []
    current: Extra = {}
    unused = list(cands)
    for a in cands:
        if _covered(chosen, a, topology):
            continue
        tentative = [c for c in chosen if not (c.head == a.head or topology.is_descendant(c.head, of=a.head))]
        tentative.append(a)
        joint = decongest(topology, units, rates, {c.head: c.r for c in tentative})
        if joint is not None and sum(joint.values()) <= budget:
            chosen, current = tentative, joint
            unused.remove(a)
        if sum(current.values()) == budget:
            break
    return PredictiveResult(current, tuple(unused))


def subtree_topology(topology: Topology, units: Units, rates: DropRates, head: int) -> tuple[Topology, Units]:
    """``sub(head)`` as a topology of its own; parents outside it become fixed external inputs."""
    members = topology.subtree(head)
    inside = set(members)
    comps = []
    for v in members:
        c = topology.components[v]
        frozen = sum(rates.outputs[p] * f for p, f in topology.parents[v] if p not in inside)
        comps.append(replace(c, units=units[v], external_input=c.external_input + frozen))
    sub = Topology(name=f"{topology.name}/sub({topology.components[head].id})", components=tuple(comps))
    return sub, tuple(units[v] for v in members)


def residual_alloc(topology: Topology, units: Units, budget: int, model: FlowModel) -> Extra:
    """Algorithm 4 lines 2–14: the predictive allocation plus its residual recursion.

    Each round re-evaluates the state after the allocation so far, gives one unit to the candidate head
    whose r = 1 candidate needs the fewest units (then larger ΔΘ, then lower id), and runs the predictive
    allocator on that head's subtree with what is left. Stops early (units unallocated) when no head
    remains.
    """
    allocation = dict(predictive_alloc(topology, units, budget, model).extra)
    while (left := budget - sum(allocation.values())) > 0:
        state = add_allocation(topology, units, allocation)
        rates = drop_rates(topology, state)
        heads = candidate_heads(topology, state, rates)
        if not heads:
            break
        if topology.components[heads[0]].is_spout:
            spout = min(heads, key=lambda v: (allocation.get(v, 0), topology.rank[v]))
            allocation[spout] = allocation.get(spout, 0) + 1
            continue
        head = _cheapest_head(topology, state, rates, heads, model)
        allocation[head] = allocation.get(head, 0) + 1
        if left > 1:
            sub, sub_units = subtree_topology(
                topology, add_allocation(topology, state, {head: 1}), rates, head
            )
            inner = predictive_alloc(sub, sub_units, left - 1, model).extra
            for i, add in inner.items():
                v = topology.index[sub.components[i].id]
                allocation[v] = allocation.get(v, 0) + add
    return {v: a for v, a in allocation.items() if a}


def _cheapest_head(
    topology: Topology, units: Units, rates: DropRates, heads: list[int], model: FlowModel
) -> int:
    """The head whose r = 1 candidate needs the fewest units, then has the larger ΔΘ, then the lower id.

    Infeasible candidates (a descendant beyond ``maxUnits``) rank last; ΔΘ is computed only to break
    ties on the unit count.
    """
    need: dict[int, tuple[float, Extra]] = {}
    for h in heads:
        extra = decongest(topology, units, rates, {h: 1})
        need[h] = (math.inf, {}) if extra is None else (sum(extra.values()), extra)
    fewest = min(n for n, _ in need.values())
    tied = [h for h in heads if need[h][0] == fewest]
    if len(tied) == 1 or math.isinf(fewest):
        return tied[0]
    base = throughput(topology, units, model)
    gains = {h: throughput(topology, add_allocation(topology, units, need[h][1]), model) - base for h in tied}
    return min(tied, key=lambda h: (-gains[h], topology.rank[h]))
