"""One stated mapping from our profile to the inputs of Shukla & Simmhan and P-Deployer (not tuned to tests).

Our profile gives, per bolt, ``capacityPerUnit`` c_v (tuples/s one unit processes), ``selectivity``
and ``fractions``, and, optionally, ``memoryPerUnit`` m_v (the memory one saturated unit holds, as
a fraction of a slot; 0 when absent). The papers need more; we read our profile as follows.

**A unit is CPU-bound.** One unit is one thread alone on one slot: it saturates at c_v tuples/s
with 100 % of the slot's CPU, and a second thread on the same slot adds nothing (one slot = one
core). At a rate ω ≤ c_v its CPU is ω/c_v of a slot and its memory m_v·ω/c_v.

**Rates at the target.** Ω is the total rate the sources offer, in today's mix, as in
:mod:`~stormscale.planner.sizing.exact` (``k = Ω / Ω_now``). Every rate below is the profile's
uncapped demand scaled by k, so every strategy sizes the same arrivals::

    D_v(Ω) = k · D_v(Ω_now)        (bolts; the demand pass of the backpressure model)
    E_v(Ω) = D_v(Ω) · selectivity_v  (bolts),   k · units_s · outputPerUnit_s  (spouts)

**Spouts keep their units** (as in the exact minimum) and each spout unit takes one slot's CPU
and m_s of its memory.

Shukla & Simmhan, per bolt (``performance_model``)::

    𝒫_v = { τ = 1 ↦ ⟨ω = c_v, c = 1.00, m = m_v⟩ }     (so ω̄_v = ω̂_v = c_v and τ̂_v = 1)
    ω_v = D_v(Ω)                                       (replaces GetRate: several spouts and
                                                        externalInput are the profile's)

P-Deployer, per operator (``task_profile``), with a machine of one slot
(W_c = 100 points, W_m = 1.0 slot of memory; β = 1.0)::

    c_p = 100 / c_v,   c_t = 0,   t_soj = 0,   m_pt = m_v / (c_v · (1 + σ_v)),  σ_v = selectivity_v · Σ f_v
    spout s:  ingress = E_s(Ω),  c_p = 100 · units_s / E_s(Ω),  m_pt = m_s · units_s / (E_s(Ω) · (1 + Σ f_s))
    S_{u→v} = E_u(Ω) · f_{u→v}       (edge loads; a bolt's externalInput is its ingress, k · ext_v)

so that a saturated task uses exactly 100 points and m_v of a slot (Eqs. 1–2), and P_op =
⌈D_v / c_v⌉. c_t = 0 because the profile measures no transfer cost: placement changes no demand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from stormscale.planner.flow import backpressure_rates
from stormscale.planner.model import Component, Topology, Units
from stormscale.planner.sizing.exact import ExactSizing, minimum_units
from stormscale.planner.sizing.lsa import lsa_task
from stormscale.planner.sizing.mba import mba_task
from stormscale.planner.sizing.pdeployer import (
    POINTS_PER_CORE,
    Operator,
    OperatorGraph,
    ParallelizationParams,
    Stream,
    TaskProfile,
)
from stormscale.planner.sizing.performance import (
    Allocation,
    Allocator,
    Bundle,
    ModelPoint,
    PerformanceModel,
    TaskAllocation,
)

SLOT_MEMORY = 1.0
"""W_m of one slot: memory is counted in slots, like ``memoryPerUnit``."""

PDEPLOYER_PARAMS = ParallelizationParams(beta=SLOT_MEMORY)
"""β = one slot's memory (the memory bound then never exceeds the CPU bound when m_v ≤ 1)."""


@dataclass(frozen=True)
class TargetRates:
    """The profile's rates at Ω: bolts' arrivals D_v, every component's emitted rate E_v, scale k."""

    exact: ExactSizing
    arrivals: dict[str, float]
    emitted: dict[str, float]

    @property
    def scale(self) -> float:
        return self.exact.scale


def target_rates(topology: Topology, target_rate: float) -> TargetRates:
    """``D_v(Ω)`` and ``E_v(Ω)`` (module docstring); raises ``TargetRateError`` like the exact minimum."""
    exact = minimum_units(topology, target_rate)
    emitted: dict[str, float] = {}
    for c in topology.components:
        if c.is_spout:
            emitted[c.id] = exact.scale * c.units * c.output_per_unit
        else:
            emitted[c.id] = exact.demands[c.id] * c.selectivity
    return TargetRates(exact, dict(exact.demands), emitted)


# --------------------------------------------------------------------------------------------------
# Shukla & Simmhan


def performance_model(component: Component) -> PerformanceModel:
    """𝒫_v = {1 ↦ ⟨c_v, 1.00, m_v⟩}: one CPU-bound thread saturates its slot at capacityPerUnit."""
    return PerformanceModel((ModelPoint(1, component.capacity_per_unit, 1.0, component.memory_per_unit),))


def spout_task(component: Component, allocator: Allocator) -> TaskAllocation:
    """A spout keeps its units: ``units`` threads, each a whole slot's CPU and m_s of its memory.

    For MBA each unit is a full bundle (charged 1.00 CPU and 1.00 memory, as Algorithm 3 charges a
    saturated slot); for LSA the threads are charged ``units · (1.00, m_s)``.
    """
    n, m = component.units, component.memory_per_unit
    if allocator is Allocator.MBA:
        return TaskAllocation(component.id, 0.0, n, float(n), float(n), n, 1, None, 1.0, m)
    return TaskAllocation(
        component.id, 0.0, n, float(n), n * m, 0, 1, Bundle(n, n, n * m) if n else None, 1.0, m
    )


def shukla_allocation(topology: Topology, rates: TargetRates, allocator: Allocator) -> Allocation:
    """LSA (Algorithm 2) or MBA (Algorithm 3) on every bolt at ω_v = D_v(Ω), in topological order."""
    size = lsa_task if allocator is Allocator.LSA else mba_task
    tasks = []
    for v in topology.order:
        c = topology.components[v]
        if c.is_spout:
            tasks.append(spout_task(c, allocator))
        else:
            tasks.append(size(c.id, performance_model(c), rates.arrivals[c.id]))
    return Allocation(allocator, rates.exact.target_rate, tuple(tasks))


# --------------------------------------------------------------------------------------------------
# P-Deployer


def output_share(component: Component) -> float:
    """σ_v: tuples sent downstream per tuple received (spouts: Σ f, they emit what they take in)."""
    total = math.fsum(f for _, f in component.children)
    return total if component.is_spout else component.selectivity * total


def task_profile(component: Component, ingress: float = 0.0) -> TaskProfile:
    """c_p, c_t = 0, m_pt, t_soj = 0 of one operator (module docstring); a spout's ``ingress`` is E_s(Ω)."""
    load_factor = 1.0 + output_share(component)
    if component.is_spout:
        if ingress <= 0:
            return TaskProfile(c_p=0.0, c_t=0.0, m_pt=0.0)
        per_task = ingress / component.units if component.units else ingress
        return TaskProfile(
            c_p=POINTS_PER_CORE / per_task,
            c_t=0.0,
            m_pt=component.memory_per_unit / (per_task * load_factor),
        )
    c = component.capacity_per_unit
    return TaskProfile(c_p=POINTS_PER_CORE / c, c_t=0.0, m_pt=component.memory_per_unit / (c * load_factor))


def operator_graph(topology: Topology, rates: TargetRates) -> OperatorGraph:
    """The profile as P-Deployer's operator graph at Ω: profiles, ingresses and edge loads."""
    ingress = {c.id: rates.scale * c.external_input for c in topology.components if not c.is_spout}
    return graph_at(topology, rates.emitted, ingress)


def flow_graph(topology: Topology, units: Units) -> OperatorGraph:
    """The profile as P-Deployer's operator graph at the flow ``units`` run (backpressure model, what
    Storm 2 does): a spout's ingress is what it emits, a bolt's its throttled external input α·ext,
    and ``S_{u→v} = O_u · f_{u→v}``."""
    rates = backpressure_rates(topology, units)
    emitted = {c.id: rates.outputs[v] for v, c in enumerate(topology.components)}
    ingress = {
        c.id: rates.throttles[v] * c.external_input
        for v, c in enumerate(topology.components)
        if not c.is_spout
    }
    return graph_at(topology, emitted, ingress)


def graph_at(topology: Topology, emitted: Mapping[str, float], ingress: Mapping[str, float]) -> OperatorGraph:
    """The operator graph with every component's emitted rate and each bolt's external ingress."""
    operators = []
    for c in topology.components:
        taken = emitted[c.id] if c.is_spout else ingress[c.id]
        operators.append(Operator(c.id, task_profile(c, taken), taken))
    streams = tuple(
        Stream(c.id, child, emitted[c.id] * fraction)
        for c in topology.components
        for child, fraction in c.children
    )
    return OperatorGraph(tuple(operators), streams)
