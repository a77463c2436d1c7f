"""Sizing strategies behind one entry point: ``size(topology, Ω, strategy, K)``, and the sizing plan.

Every strategy reads the profile through :mod:`~stormscale.planner.sizing.adapters`' one mapping and
answers in the same vocabulary: executors (units) per component, the CPU and memory it charges (in
slots), the slots, and the pods of ``K`` slots::

    exact      units n_v* = max(1, ⌈D_v/c_v⌉), one unit per slot;      pods ⌈Σ n* / K⌉  (proven minimum)
    lsa, mba   Algorithms 2 and 3; slots ρ = max(⌈Σ c_i⌉, ⌈Σ m_i⌉);     pods ⌈ρ / K⌉     (§7.1, one pod size)
    pdeployer  its parallelization and Algorithm 1; slots n_m;        pods n_m, only with K = 1

A target some component cannot sustain within its ``maxUnits`` is refused for every strategy: the
papers know no ``maxUnits``, and the exact minimum shows the target is out of the profile's reach.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stormscale.planner.flow import backpressure_rates
from stormscale.planner.model import Topology
from stormscale.planner.numbers import is_finite_number, short
from stormscale.planner.placement.pdeployer import MachineCapacity, plan_deployment
from stormscale.planner.placement.shukla import acquire_pods
from stormscale.planner.profile import ProfileError, parse_profile
from stormscale.planner.sizing.adapters import (
    PDEPLOYER_PARAMS,
    SLOT_MEMORY,
    TargetRates,
    operator_graph,
    shukla_allocation,
    target_rates,
)
from stormscale.planner.sizing.exact import offered_rate
from stormscale.planner.sizing.pdeployer import POINTS_PER_CORE
from stormscale.planner.sizing.performance import Allocator

FORMAT_VERSION = 2
"""``formatVersion`` of a plan that carries a target rate and a sizing strategy."""

ONE_SLOT_PER_POD = (
    "pdeployer: its machine is a pod with a single worker slot (collocated tasks talk for free only "
    "inside one worker); use --slots-per-pod 1"
)


class SizingError(ValueError):
    """A target or a pod size a strategy cannot serve; the message says why, in one line."""


class SizingStrategy(StrEnum):
    """How units are sized for a target rate; ``exact`` is the proven minimum."""

    EXACT = "exact"
    LSA = "lsa"
    MBA = "mba"
    PDEPLOYER = "pdeployer"


@dataclass(frozen=True)
class Sizing:
    """One strategy's answer for Ω and K. ``pods`` is ``None`` when the strategy refuses K (``note``)."""

    strategy: SizingStrategy
    target_rate: float
    slots_per_pod: int
    units: dict[str, int]
    cpu: float
    memory: float
    slots: int
    pods: int | None
    note: str = ""

    @property
    def total_units(self) -> int:
        return sum(self.units.values())


MAX_SLOTS_PER_POD = 64
"""The most worker slots per pod: the CRD's bound on ``workers.slotsPerPod``."""

MAX_SIZED_UNITS = 100_000
"""The most units (executors, hence slots and pods) a sizing may produce, summed over components: a
Storm cluster of 100,000 executors is beyond any real topology; every strategy sizes it in about 1 s."""


def check_slots_per_pod(slots_per_pod: int) -> None:
    if slots_per_pod < 1:
        raise SizingError(f"--slots-per-pod: must be at least 1, got {slots_per_pod}")
    if slots_per_pod > MAX_SLOTS_PER_POD:
        raise SizingError(f"--slots-per-pod: must be at most {MAX_SLOTS_PER_POD}, got {short(slots_per_pod)}")


def check_sizing_bound(topology: Topology, target_rate: float, bound: int = MAX_SIZED_UNITS) -> None:
    """Refuse Ω before any sizing loop runs when the units it needs pass ``bound``::

        n_v ≈ (Ω / Ω_now) · D_v / c_v     (D_v: v's demand with every source unthrottled, today's units)

    summed over the bolts (plus the spouts' units); a capacity so small that ``n_v`` overflows counts too.
    """
    now = offered_rate(topology)
    if not now > 0:
        return  # the sizing's own error names it
    scale = target_rate / now
    demands = backpressure_rates(topology, topology.units).demands
    total = float(sum(c.units for c in topology.components if c.is_spout))
    for c, demand in zip(topology.components, demands, strict=True):
        if not c.is_spout and c.capacity_per_unit > 0:  # no capacity: the sizing's own error names it
            total += scale * demand / c.capacity_per_unit
        if not total <= bound:
            raise SizingError(
                f"--target-rate: {target_rate:g} tuples/s needs more than {bound:,} units in all "
                f"(at {c.id!r}, capacityPerUnit {c.capacity_per_unit:g}): the bound on a sizing"
            )


def check_units_fit_a_slot(topology: Topology) -> None:
    """:class:`SizingError` when one unit of a component holds more memory than a slot
    (``memoryPerUnit > 1``): no sizing and no placement can put it anywhere."""
    heavy = next((c for c in topology.components if c.memory_per_unit > SLOT_MEMORY), None)
    if heavy is not None:
        raise SizingError(
            f"{heavy.id!r}: memoryPerUnit {heavy.memory_per_unit:g} is above one slot's memory "
            f"({SLOT_MEMORY:g}): no slot can hold one unit"
        )


def feasible_rates(topology: Topology, target_rate: float) -> TargetRates:
    """The target's rates, or :class:`SizingError` when Ω ≤ 0, some component hits its ``maxUnits``, or
    one unit holds more memory than a slot."""
    if not (math.isfinite(target_rate) and target_rate > 0):
        raise SizingError(f"--target-rate: must be a finite rate > 0 tuples/s, got {target_rate!r}")
    check_units_fit_a_slot(topology)
    check_sizing_bound(topology, target_rate)
    rates = target_rates(topology, target_rate)
    if not rates.exact.feasible:
        cid = rates.exact.limited[0]
        c = topology.components[topology.index[cid]]
        need = math.ceil(rates.arrivals[cid] / c.capacity_per_unit)
        raise SizingError(
            f"target rate {target_rate:g} tuples/s needs {need} units of {cid!r}, "
            f"above its maxUnits {c.max_units}"
        )
    return rates


def size(topology: Topology, target_rate: float, strategy: SizingStrategy, slots_per_pod: int = 1) -> Sizing:
    """One strategy's sizing of ``topology`` for Ω = ``target_rate`` and pods of ``slots_per_pod`` slots."""
    check_slots_per_pod(slots_per_pod)
    rates = feasible_rates(topology, target_rate)
    order = [c.id for c in topology.components]
    if strategy is SizingStrategy.EXACT:
        exact = rates.exact
        memory = math.fsum(
            n * topology.components[topology.index[cid]].memory_per_unit for cid, n in exact.units.items()
        )
        return Sizing(
            strategy, target_rate, slots_per_pod, exact.units, float(exact.total_units), memory,
            exact.total_units, exact.pods(slots_per_pod), "proven minimum",
        )  # fmt: skip
    if strategy is SizingStrategy.PDEPLOYER:
        plan = plan_deployment(operator_graph(topology, rates), pdeployer_capacity(), PDEPLOYER_PARAMS)
        machines = plan.packing.machines
        cpu = math.fsum(m.cpu for m in machines) / POINTS_PER_CORE
        memory = math.fsum(m.memory for m in machines) / SLOT_MEMORY
        units = {cid: plan.parallelism[cid] for cid in order}
        pods = plan.machine_count if slots_per_pod == 1 else None
        note = "" if pods is not None else "one slot per pod"
        return Sizing(
            strategy, target_rate, slots_per_pod, units, cpu, memory, plan.machine_count, pods, note
        )
    allocator = Allocator.LSA if strategy is SizingStrategy.LSA else Allocator.MBA
    allocation = shukla_allocation(topology, rates, allocator)
    executors = allocation.executors()
    units = {cid: executors[cid] for cid in order}
    slots = allocation.slots
    pods = len(acquire_pods(slots, (slots_per_pod,)))
    return Sizing(
        strategy,
        target_rate,
        slots_per_pod,
        units,
        allocation.total_cpu,
        allocation.total_memory,
        slots,
        pods,
    )


FLOAT_SLACK = 1e-9
"""Relative slack on W_c: a task at exactly capacityPerUnit costs ``(100/c)·c`` points, which float
rounding can put a hair above 100, and Algorithm 1's pre-check ``Ĉ_max > 1`` is literal (no tolerance)."""


def pdeployer_capacity() -> MachineCapacity:
    """A P-Deployer machine is one slot: W_c = 100·(1 + 1e-9) points (one core), W_m = one slot's memory."""
    return MachineCapacity(w_c=POINTS_PER_CORE * (1 + FLOAT_SLACK), w_m=SLOT_MEMORY)


def size_all(topology: Topology, target_rate: float, slots_per_pod: int = 1) -> dict[SizingStrategy, Sizing]:
    """Every strategy's sizing for the same Ω and K, side by side."""
    return {s: size(topology, target_rate, s, slots_per_pod) for s in SizingStrategy}


def sizing_plan(sizing: Sizing, topology: Topology, profile: dict[str, Any], exact: Sizing) -> dict[str, Any]:
    """The plan object of ``formatVersion`` 2 (``docs/formats/profile.md``, "Sizing plan")."""
    return {
        "formatVersion": FORMAT_VERSION,
        "topology": topology.name,
        "sizing": sizing.strategy.value,
        "targetRate": sizing.target_rate,
        "slotsPerPod": sizing.slots_per_pod,
        "units": sizing.units,
        "cpu": sizing.cpu,
        "memory": sizing.memory,
        "slots": sizing.slots,
        "pods": sizing.pods,
        "exact": {"units": exact.total_units, "pods": exact.pods},
        "profile": profile,
    }


@dataclass(frozen=True)
class SizingPlan:
    """What ``place`` needs from a sizing plan: its profile, Ω, the sizing strategy and its units."""

    topology: Topology
    target_rate: float
    strategy: SizingStrategy
    units: dict[str, int]


def parse_sizing_plan(document: Mapping[str, Any]) -> SizingPlan:
    """Validate a ``formatVersion`` 2 plan; errors name the field (``targetRate: …``, ``profile.…``)."""
    version = document.get("formatVersion")
    if version != FORMAT_VERSION:
        raise SizingError(
            f"formatVersion: this planner reads plans of version {FORMAT_VERSION}, got {version!r}"
        )
    strategy = document.get("sizing")
    if strategy not in {s.value for s in SizingStrategy}:
        choices = ", ".join(s.value for s in SizingStrategy)
        raise SizingError(f"sizing: must be one of {choices}, got {strategy!r}")
    rate = document.get("targetRate")
    if not is_finite_number(rate) or rate <= 0:
        raise SizingError(f"targetRate: must be a finite rate > 0 tuples/s, got {short(rate)}")
    if "profile" not in document:
        raise SizingError("profile: missing (write the plan with `stormscale size … --output json`)")
    try:
        topology = parse_profile(document["profile"])
    except ProfileError as err:
        raise ProfileError(f"profile.{err}") from None
    units = document.get("units")
    if not isinstance(units, Mapping) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in units.values()
    ):
        raise SizingError("units: must be an object mapping component id to an integer")
    return SizingPlan(topology, float(rate), SizingStrategy(strategy), dict(units))
