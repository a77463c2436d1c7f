"""The papers' allocations as their algorithms give them, before the planner trims the units that add
nothing (``trim_useless_units``): what the thesis's tables list."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest

from stormscale.planner import FlowModel, Plan, Topology, add_allocation, throughput
from stormscale.planner.predictive import residual_alloc
from stormscale.planner.stela import stela_scale_out


def _named(topology: Topology, extra: Mapping[int, int]) -> dict[str, int]:
    return {topology.components[v].id: n for v, n in sorted(extra.items()) if n}


def gain_of(topology: Topology, extra: Mapping[str, int], model: FlowModel = FlowModel.DROP) -> float:
    units = topology.units
    return throughput(topology, add_allocation(topology, units, extra), model) - throughput(
        topology, units, model
    )


def stela_allocation(topology: Topology, budget: int, model: FlowModel = FlowModel.DROP) -> dict[str, int]:
    """Stela's scale-out as the thesis restates it: ``budget`` units, one at a time by ETP."""
    return _named(topology, Counter(stela_scale_out(topology, topology.units, budget, model)))


def predictive_allocation(
    topology: Topology, budget: int, model: FlowModel = FlowModel.DROP
) -> dict[str, int]:
    """The thesis's predictive allocator with the residual recursion, untrimmed."""
    return _named(topology, residual_alloc(topology, topology.units, budget, model))


def assert_trimmed_from(plan: Plan, untrimmed: Mapping[str, int], gain: float) -> None:
    """The plan is the papers' allocation less units that add nothing: the same gain, never more units
    on any component, the units left out reported as unallocated."""
    assert plan.gain == pytest.approx(gain)
    assert all(0 < n <= untrimmed.get(c, 0) for c, n in plan.allocation.items())
    assert plan.unallocated == plan.budget - sum(plan.allocation.values())
