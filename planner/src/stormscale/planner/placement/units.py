"""Placing the executors a topology runs: units per component in, a placement out.

:func:`~stormscale.planner.placement.strategies.place` sizes for a target rate and then maps, as the
papers do. An operator has its units already (a budget plan, or a sizing) and must place exactly
those, as Storm will run them. The mappings' inputs are therefore built from the units and the flow
at them, under the backpressure model (what Storm 2 does)::

    ω_v = the rate v processes at the units (a spout: what it emits)
    u_v = ω_v / capacity_v(n_v)       the busy fraction of v's busiest executor (≤ 1)

**SAM, DSM, RSM (Shukla & Simmhan).** Storm's shuffle grouping gives every executor its share of the input
by task, not MBA's full bundles at ω̂ plus one residual: the error source Shukla & Simmhan name (§8.5,
``Routing.SHUFFLE``). So each executor is a task of its own in the allocation, allocated by MBA
(:func:`~stormscale.planner.sizing.mba.mba_task`, the stated mapping's one-point model) at rate
``u_v · c_v``: a saturated executor is a full bundle (a whole slot, closed), any other a partial
bundle of one thread charged ``u_v`` CPU and ``u_v · m_v`` memory, placed best fit; a spout executor
takes a slot's CPU (the stated mapping). Every executor of v is charged its busiest executor's
``u_v``, so whichever of them the scheduler puts where, no slot holds more than it was charged. The
mapping is the planner's own (``map_sam`` …), retried on ρ + 1 slots until it fits (§8.4); the
executors are then counted per component and slot.

**P-Deployer.** The operator graph at the flow (:func:`~.sizing.adapters.flow_graph`), the
task demands of Eqs. 3–4 with ``P_op = n_v`` (the units, not its parallelization), and Algorithm 1
(:func:`~.pdeployer.pack`) unchanged; a machine is a pod of one slot.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from stormscale.planner.flow import FlowModel, evaluate
from stormscale.planner.model import Component, Topology
from stormscale.planner.placement.model import Placement, Pod, Slot
from stormscale.planner.placement.pdeployer import pack
from stormscale.planner.placement.shukla import map_until_fits
from stormscale.planner.placement.strategies import MAPPERS, PlacementResult, PlacementStrategy
from stormscale.planner.sizing.adapters import flow_graph, performance_model, spout_task
from stormscale.planner.sizing.mba import mba_task
from stormscale.planner.sizing.pdeployer import task_demands
from stormscale.planner.sizing.performance import Allocation, Allocator, TaskAllocation
from stormscale.planner.sizing.strategies import (
    ONE_SLOT_PER_POD,
    SizingError,
    check_slots_per_pod,
    check_units_fit_a_slot,
    pdeployer_capacity,
)


def executor_loads(topology: Topology, units: Mapping[str, int]) -> dict[str, float]:
    """``u_v``: the busy fraction of v's busiest executor at ``units`` (backpressure flow); spouts 1.0
    (a spout unit takes a slot's CPU, the stated mapping)."""
    vector = _vector(topology, units)
    state = evaluate(topology, vector, FlowModel.BACKPRESSURE)
    loads = {}
    for c, flow in zip(topology.components, state.components, strict=True):
        if c.is_spout:
            loads[c.id] = 1.0
        else:
            loads[c.id] = min(1.0, flow.processed / flow.capacity) if flow.capacity > 0 else 0.0
    return loads


def executor_allocation(topology: Topology, units: Mapping[str, int]) -> tuple[Allocation, dict[str, str]]:
    """MBA's allocation with one task per executor (module docstring), in topological order, and each
    task's component (task names are ``<component>#<k>``)."""
    loads = executor_loads(topology, units)
    tasks: list[TaskAllocation] = []
    owner: dict[str, str] = {}
    for v in topology.order:
        c = topology.components[v]
        for k in range(units[c.id]):
            name = f"{c.id}#{k}"
            owner[name] = c.id
            tasks.append(_executor_task(c, name, loads[c.id]))
    return Allocation(Allocator.MBA, 0.0, tuple(tasks)), owner


def _executor_task(component: Component, name: str, load: float) -> TaskAllocation:
    if component.is_spout:
        return dataclasses.replace(
            spout_task(dataclasses.replace(component, units=1), Allocator.MBA), task=name
        )
    return mba_task(name, performance_model(component), load * component.capacity_per_unit)


def place_units(
    topology: Topology, units: Mapping[str, int], strategy: PlacementStrategy, slots_per_pod: int
) -> PlacementResult:
    """Place exactly ``units`` executors per component on pods of ``slots_per_pod`` slots."""
    check_slots_per_pod(slots_per_pod)
    missing = sorted({c.id for c in topology.components} ^ set(units))
    if missing:
        raise SizingError(f"units: components {', '.join(missing)} do not match the topology")
    if any(n < 1 for n in units.values()):
        raise SizingError("units: every component runs at least one executor")
    check_units_fit_a_slot(topology)
    if strategy is PlacementStrategy.PDEPLOYER:
        if slots_per_pod != 1:
            raise SizingError(ONE_SLOT_PER_POD)
        demands = task_demands(flow_graph(topology, _vector(topology, units)), units)
        packing = pack(demands, pdeployer_capacity())
        return PlacementResult(strategy, packing.placement, 1, packing.machine_count, 0)
    allocation, owner = executor_allocation(topology, units)
    mapped = map_until_fits(allocation, MAPPERS[strategy], sizes=(slots_per_pod,))
    placement = by_component(mapped.placement, owner)
    return PlacementResult(strategy, placement, slots_per_pod, allocation.slots, mapped.extra_slots)


def by_component(placement: Placement, owner: Mapping[str, str]) -> Placement:
    """The placement with each slot's executors counted per component (tasks → their component)."""
    pods = []
    for pod in placement.pods:
        slots = []
        for slot in pod.slots:
            counts: dict[str, int] = {}
            for task, n in slot.executors.items():
                counts[owner[task]] = counts.get(owner[task], 0) + n
            slots.append(Slot(counts, slot.cpu, slot.memory))
        pods.append(Pod(tuple(slots)))
    return Placement(placement.strategy, tuple(pods), placement.notes)


def _vector(topology: Topology, units: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(units[c.id] for c in topology.components)
