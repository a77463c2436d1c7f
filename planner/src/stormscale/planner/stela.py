"""Stela (the Stela paper; the thesis's chapter 4): Expected Throughput Percentage and serial allocation.

ETP of a component x is the share of Θ produced by sinks reachable from x without passing through a
congested component::

    S(v)   = {v}                                  if v is a sink
           = ∪_{c ∈ children(v), c ∉ C} S(c)      otherwise
    ETP(x) = Σ_{s ∈ S(x)} O_s / Θ

``set`` semantics counts a sink once (a visited set); ``literal`` counts it once per
uncongested path, as the thesis's recursion does on a DAG.

Scale-out is serial (Algorithm 2 with the congestion fallback chain and a visited set): each unit goes to the
candidate head of highest ETP (ties: lowest id), then the state is re-evaluated with that unit before the next
one.

Scale-in (Stela's scale-in): ETP of every component on the current state; units are given up from the
components of lowest ETP first (ties: lowest id), down to each component's floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from stormscale.planner.congestion import candidate_heads, strictly_congested
from stormscale.planner.flow import FlowModel, component_outputs, drop_rates
from stormscale.planner.model import Topology, Units


class EtpMode(StrEnum):
    """How a sink reached along several paths counts (Stela does not say)."""

    SET = "set"
    LITERAL = "literal"


def effective_throughput(
    topology: Topology,
    sink_output: Sequence[float],
    congested: set[int],
    mode: EtpMode = EtpMode.SET,
) -> list[float]:
    """``Σ_{s ∈ S(x)} O_s`` for every component x (the numerator of ETP), in one reverse pass."""
    n = len(topology.components)
    if mode is EtpMode.LITERAL:
        weight = [0.0] * n
        for v in reversed(topology.order):
            kids = topology.children[v]
            weight[v] = sink_output[v] if not kids else sum(weight[c] for c, _ in kids if c not in congested)
        return weight
    reach = [0] * n
    for v in reversed(topology.order):
        kids = topology.children[v]
        if not kids:
            reach[v] = 1 << v
            continue
        bits = 0
        for c, _ in kids:
            if c not in congested:
                bits |= reach[c]
        reach[v] = bits
    return [_sum_bits(bits, sink_output) for bits in reach]


def _sum_bits(bits: int, values: Sequence[float]) -> float:
    total = 0.0
    while bits:
        low = bits & -bits
        total += values[low.bit_length() - 1]
        bits ^= low
    return total


def expected_throughput_percentage(
    topology: Topology,
    sink_output: Sequence[float],
    congested: set[int],
    mode: EtpMode = EtpMode.SET,
) -> list[float]:
    """ETP of every component as a fraction of Θ (0 everywhere when Θ = 0).

    Examples
    --------
    Stela's worked example of ETP: ETP_3 = 4/9, ETP_1 = 0, ETP_6 = 1/9.
    """
    theta = sum(sink_output[s] for s in topology.sinks)
    effective = effective_throughput(topology, sink_output, congested, mode)
    return [0.0 if theta <= 0 else e / theta for e in effective]


def stela_scale_out(topology: Topology, units: Units, budget: int, model: FlowModel) -> list[int]:
    """The components Stela picks, one per unit, in order (may be shorter than ``budget``).

    Each round: candidate heads by the congestion fallback chain; if they are bolts, the one of highest
    ETP (ETP prunes every strictly congested bolt); if only scalable spouts remain, the spout with the
    fewest units picked so far (round-robin, ours). The pick's unit is applied and the state re-evaluated.
    """
    current = list(units)
    picks: list[int] = []
    for _ in range(budget):
        state = tuple(current)
        rates = drop_rates(topology, state)
        heads = candidate_heads(topology, state, rates)
        if not heads:
            break
        if topology.components[heads[0]].is_spout:
            target = min(heads, key=lambda v: (picks.count(v), topology.rank[v]))
        else:
            etp = expected_throughput_percentage(
                topology, component_outputs(topology, state, model), strictly_congested(topology, rates)
            )
            target = min(heads, key=lambda v: (-etp[v], topology.rank[v]))
        current[target] += 1
        picks.append(target)
    return picks


def stela_scale_in(topology: Topology, units: Units, remove: int, model: FlowModel) -> list[int]:
    """The components that give up a unit, one entry per unit, lowest ETP first (Stela's scale-in).

    ETP is computed once, on the current state, for every component.
    """
    rates = drop_rates(topology, units)
    etp = expected_throughput_percentage(
        topology, component_outputs(topology, units, model), strictly_congested(topology, rates)
    )
    order = sorted(range(len(topology.components)), key=lambda v: (etp[v], topology.rank[v]))
    picks: list[int] = []
    for v in order:
        take = min(topology.removable(units, v), remove - len(picks))
        picks.extend([v] * take)
    return picks
