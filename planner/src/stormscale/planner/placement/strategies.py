"""Placement strategies behind one entry point: ``place(topology, Ω, strategy, K)``.

The profile is read through :mod:`~stormscale.planner.sizing.adapters`' mapping::

    dsm, rsm, sam  Shukla & Simmhan: LSA or MBA's allocation at Ω (MBA unless the plan was sized with LSA),
                   pods of K slots acquired for ρ, one more slot at a time until the mapping fits (§8.4)
    pdeployer      P-Deployer: §4 parallelization and Algorithm 1, a pod per machine, only with K = 1

SAM maps MBA's full and partial bundles; it refuses an LSA allocation (LSA has no bundles).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from stormscale.planner.model import Topology
from stormscale.planner.placement.model import Placement
from stormscale.planner.placement.pdeployer import plan_deployment
from stormscale.planner.placement.shukla import (
    Mapper,
    MappingError,
    map_dsm,
    map_rsm,
    map_sam,
    map_until_fits,
)
from stormscale.planner.sizing.adapters import PDEPLOYER_PARAMS, operator_graph, shukla_allocation
from stormscale.planner.sizing.performance import Allocator
from stormscale.planner.sizing.strategies import (
    ONE_SLOT_PER_POD,
    SizingError,
    check_slots_per_pod,
    feasible_rates,
    pdeployer_capacity,
)


class PlacementStrategy(StrEnum):
    """Where executors go: Shukla & Simmhan's three mappings and P-Deployer's bin packing."""

    DSM = "dsm"
    RSM = "rsm"
    SAM = "sam"
    PDEPLOYER = "pdeployer"


MAPPERS: dict[PlacementStrategy, Mapper] = {
    PlacementStrategy.DSM: map_dsm,
    PlacementStrategy.RSM: map_rsm,
    PlacementStrategy.SAM: map_sam,
}


@dataclass(frozen=True)
class PlacementResult:
    """A placement, the slots its sizing asked for, and the extra slots the mapping needed (§8.4)."""

    strategy: PlacementStrategy
    placement: Placement
    slots_per_pod: int
    sized_slots: int
    extra_slots: int

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = self.placement.to_json()
        out["slotsPerPod"] = self.slots_per_pod
        return out


def place(
    topology: Topology,
    target_rate: float,
    strategy: PlacementStrategy,
    slots_per_pod: int,
    allocator: Allocator = Allocator.MBA,
) -> PlacementResult:
    """Place ``topology``'s executors for Ω on pods of ``slots_per_pod`` slots."""
    check_slots_per_pod(slots_per_pod)
    rates = feasible_rates(topology, target_rate)
    if strategy is PlacementStrategy.PDEPLOYER:
        if slots_per_pod != 1:
            raise SizingError(ONE_SLOT_PER_POD)
        plan = plan_deployment(operator_graph(topology, rates), pdeployer_capacity(), PDEPLOYER_PARAMS)
        return PlacementResult(strategy, plan.placement, 1, plan.machine_count, 0)
    if strategy is PlacementStrategy.SAM and allocator is not Allocator.MBA:
        raise SizingError("sam: maps MBA's full and partial bundles; size with --strategy mba (or exact)")
    allocation = shukla_allocation(topology, rates, allocator)
    mapped = map_until_fits(allocation, MAPPERS[strategy], sizes=(slots_per_pod,))
    return PlacementResult(strategy, mapped.placement, slots_per_pod, allocation.slots, mapped.extra_slots)


def place_all(
    topology: Topology, target_rate: float, slots_per_pod: int, allocator: Allocator = Allocator.MBA
) -> dict[PlacementStrategy, PlacementResult | str]:
    """Every strategy's placement, or the one-line reason it cannot place (side by side in the table)."""
    out: dict[PlacementStrategy, PlacementResult | str] = {}
    for s in PlacementStrategy:
        try:
            out[s] = place(topology, target_rate, s, slots_per_pod, allocator)
        except (MappingError, ValueError) as err:
            out[s] = str(err)
    return out
