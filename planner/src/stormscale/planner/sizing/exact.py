"""The exact minimum under our profile model: the fewest units (and pods) that sustain a target rate.

A target rate Ω is the total rate the sources offer: the spouts' ``units · outputPerUnit`` plus the
bolts' ``externalInput``, in today's mix (every source scaled by the same factor
``k = Ω / Ω_now``). Sustaining Ω means no component is congested, so that under either flow model
every source runs at its offered rate and nothing is dropped or throttled.

With every source at its offered rate, a bolt's arrivals are the backpressure model's uncapped
demands, which do not depend on any bolt's units (``flow``'s demand pass)::

    D_v(Ω) = k · D_v(Ω_now)

and v is uncongested iff ``D_v ≤ n_v · c_v``. The constraints are separable, so the minimum of
``Σ_v n_v`` is reached component by component::

    n_v* = max(floor_v, ⌈D_v / c_v⌉)        (floor_v: 1, or the component's minUnits if higher)

Spouts keep their units (a spout's outputPerUnit is the load it is offered, not a capacity). Ω is
infeasible when some ``n_v* > maxUnits_v``. The integer program of :mod:`stormscale.planner.optimal`
proves the minimum in the tests: the smallest budget whose optimum reaches Θ(Ω) is ``Σ n* − Σ n``.

Pods: with ``slots_per_pod`` slots each and one unit per slot, ``⌈Σ_v n_v* / slots_per_pod⌉`` pods
are the fewest that hold the units (any slot takes any unit); with one component per pod (the
isolation a unit's CPU measurement needs), ``Σ_v ⌈n_v* / slots_per_pod⌉``.

When slots may be shared (several partly loaded executors of different components in one worker,
as Shukla & Simmhan's mappings do), no placement can use fewer slots than the CPU the target needs::

    S_min = ⌈Σ_bolts D_v / c_v + Σ_spouts n_s⌉          (a spout unit takes one slot's CPU)

so ``⌈S_min / slots_per_pod⌉`` pods is a proven lower bound for any placement
(:meth:`ExactSizing.shared_pods`).

The highest target the bounds allow (:func:`max_feasible_rate`): ``n_v* ≤ maxUnits_v`` holds iff
``k · D_v / c_v ≤ maxUnits_v``, so::

    Ω_max = Ω_now · min_{v bounded, D_v > 0} maxUnits_v · c_v / D_v      (∞ when nothing bounds it)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from stormscale.planner.flow import backpressure_rates
from stormscale.planner.model import Topology

#: Relative slack when a demand lands on a whole number of units (``D/c`` = 3.0000000001 is 3 units).
RATIO_TOLERANCE = 1e-9


class TargetRateError(ValueError):
    """The target rate is not a rate, or the topology offers nothing to scale."""


@dataclass(frozen=True)
class ExactSizing:
    """The fewest units per component that sustain ``target_rate``, and what they hold.

    ``feasible`` is false when some component would need more than its ``maxUnits`` (``limited``
    names them); ``units`` then holds the bound for those components.
    """

    target_rate: float
    scale: float
    units: dict[str, int]
    demands: dict[str, float]
    limited: tuple[str, ...]
    cpu_slots: float = 0.0  # Σ_bolts D_v / c_v + Σ_spouts n_s: the slots' worth of CPU the target needs

    @property
    def feasible(self) -> bool:
        return not self.limited

    @property
    def total_units(self) -> int:
        return sum(self.units.values())

    def pods(self, slots_per_pod: int, *, one_component_per_pod: bool = False) -> int:
        """Pods of ``slots_per_pod`` slots that hold the units (one unit per slot)."""
        if slots_per_pod < 1:
            raise ValueError(f"slots per pod must be at least 1, got {slots_per_pod}")
        if one_component_per_pod:
            return sum(math.ceil(n / slots_per_pod) for n in self.units.values())
        return math.ceil(self.total_units / slots_per_pod)

    def shared_pods(self, slots_per_pod: int) -> int:
        """The lower bound on pods for any placement that may share slots: ``⌈⌈S_min⌉ / K⌉``."""
        if slots_per_pod < 1:
            raise ValueError(f"slots per pod must be at least 1, got {slots_per_pod}")
        slots = math.ceil(self.cpu_slots * (1 - RATIO_TOLERANCE))
        return math.ceil(slots / slots_per_pod)


def offered_rate(topology: Topology) -> float:
    """Ω_now: what every source offers now (spouts' units · outputPerUnit, bolts' externalInput)."""
    return sum(c.units * c.output_per_unit if c.is_spout else c.external_input for c in topology.components)


def units_for(demand: float, capacity_per_unit: float, floor: int) -> int:
    """``max(floor, ⌈D / c⌉)``, with a whole ratio not rounded up by float noise."""
    ratio = demand / capacity_per_unit
    return max(floor, math.ceil(ratio * (1 - RATIO_TOLERANCE)))


def scaled_to(topology: Topology, target_rate: float) -> Topology:
    """The topology with every source offering ``k = Ω / Ω_now`` times what it offers now (spouts'
    ``outputPerUnit``, bolts' ``externalInput``): the state whose throughput a sizing for Ω predicts."""
    now = offered_rate(topology)
    if now <= 0 or not math.isfinite(target_rate) or target_rate < 0:
        raise TargetRateError(f"topology {topology.name!r} offers no input to scale to {target_rate:g}/s")
    k = target_rate / now
    components = tuple(
        dataclasses.replace(c, output_per_unit=c.output_per_unit * k, external_input=c.external_input * k)
        for c in topology.components
    )
    return Topology(topology.name, components)


def max_feasible_rate(topology: Topology) -> float:
    """Ω_max: the highest target rate every component sustains within its ``maxUnits`` (module
    docstring); 0 when some bound is below the component's floor, ``inf`` when no bound binds."""
    now = offered_rate(topology)
    if now <= 0:
        raise TargetRateError(f"topology {topology.name!r} offers no input to scale")
    demands = backpressure_rates(topology, topology.units).demands
    k_max = math.inf
    for c, demand in zip(topology.components, demands, strict=True):
        if c.is_spout or c.max_units is None:
            continue
        if max(1, c.min_units) > c.max_units:
            return 0.0
        if demand > 0:
            k_max = min(k_max, c.max_units * c.capacity_per_unit / demand)
    return now * k_max


def minimum_units(topology: Topology, target_rate: float) -> ExactSizing:
    """The fewest units per component that sustain ``target_rate`` (see the module docstring)."""
    if not math.isfinite(target_rate) or target_rate < 0:
        raise TargetRateError(f"target rate must be a finite rate ≥ 0 tuples/s, got {target_rate!r}")
    now = offered_rate(topology)
    if now <= 0:
        raise TargetRateError(f"topology {topology.name!r} offers no input to scale to {target_rate:g}/s")
    scale = target_rate / now
    demands = backpressure_rates(topology, topology.units).demands
    units: dict[str, int] = {}
    scaled: dict[str, float] = {}
    limited: list[str] = []
    cpu_slots = 0.0
    for c, demand in zip(topology.components, demands, strict=True):
        if c.is_spout:
            units[c.id] = c.units
            cpu_slots += c.units
            continue
        scaled[c.id] = scale * demand
        cpu_slots += scale * demand / c.capacity_per_unit
        need = units_for(scale * demand, c.capacity_per_unit, max(1, c.min_units))
        if c.max_units is not None and need > c.max_units:
            limited.append(c.id)
            need = c.max_units
        units[c.id] = need
    return ExactSizing(target_rate, scale, units, scaled, tuple(limited), cpu_slots)
