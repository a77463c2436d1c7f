"""Placing the executors a topology runs (placement/units.py): SAM, DSM, RSM and P-Deployer on given units."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner import FlowModel, Topology, evaluate, parse_profile
from stormscale.planner.placement.strategies import PlacementStrategy
from stormscale.planner.placement.units import executor_allocation, executor_loads, place_units
from stormscale.planner.sizing.strategies import SizingError
from tests.synthetic.profiles import random_profile
from tests.unit.planner.conftest import thesis

LINEAR_UNITS = {"1": 1, "2": 2, "3": 2, "4": 1}  # bolt 3 saturated at 500/s, bolt 2 at 62.5 %
SEED_001 = (PlacementStrategy.SAM, PlacementStrategy.DSM, PlacementStrategy.RSM)


def random_case(seed: int) -> tuple[Topology, dict[str, int]]:
    rng = random.Random(seed)
    doc = random_profile(rng, 8, min_units=1, bounded_share=0.0, load=(0.3, 1.6))
    topology = parse_profile(doc)
    units = {c.id: c.units if c.is_spout else rng.randint(1, 4) for c in topology.components}
    return topology, units


def test_each_executor_is_charged_its_busiest_executors_busy_fraction() -> None:
    loads = executor_loads(thesis("linear"), LINEAR_UNITS)
    assert loads == pytest.approx({"1": 1.0, "2": 500 / 800, "3": 1.0, "4": 500 / 900})
    allocation, owner = executor_allocation(thesis("linear"), LINEAR_UNITS)
    assert [owner[t.task] for t in allocation.tasks] == ["1", "2", "2", "3", "3", "4"]  # topological
    two = allocation.task("2#1")
    assert (two.threads, two.full_bundles, two.cpu) == (1, 0, pytest.approx(0.625))
    three = allocation.task("3#0")
    assert (three.threads, three.full_bundles, three.cpu) == (1, 1, 1.0)  # saturated: a whole slot


def test_sam_gives_saturated_executors_whole_slots_and_packs_the_rest_best_fit() -> None:
    result = place_units(thesis("linear"), LINEAR_UNITS, PlacementStrategy.SAM, 2)
    slots = [slot for pod in result.placement.pods for slot in pod.slots if slot.executors]
    assert result.placement.executors() == LINEAR_UNITS
    alone = [s for s in slots if s.executors in ({"1": 1}, {"3": 1})]
    assert len(alone) == 3  # the spout and bolt 3's two saturated executors, one slot each
    assert all(s.cpu <= 1.0 + 1e-9 for s in slots)
    assert result.placement.pod_count == 3  # six executors of which no two partial ones fit one slot


@pytest.mark.parametrize("strategy", SEED_001)
@pytest.mark.parametrize("slots", [1, 2, 4])
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_every_executor_is_placed_once_whatever_the_units(
    strategy: PlacementStrategy, slots: int, seed: int
) -> None:
    topology, units = random_case(seed)
    result = place_units(topology, units, strategy, slots)
    assert result.placement.executors() == units
    assert all(len(pod.slots) == slots for pod in result.placement.pods)


@pytest.mark.parametrize("slots", [1, 2, 3])
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_no_sam_slot_is_charged_above_one_slot_and_each_charge_is_its_executors_load(
    slots: int, seed: int
) -> None:
    topology, units = random_case(seed)
    loads = executor_loads(topology, units)
    result = place_units(topology, units, PlacementStrategy.SAM, slots)
    for pod in result.placement.pods:
        for slot in pod.slots:
            assert slot.cpu <= 1.0 + 1e-9
            charged = sum(n * (1.0 if loads[c] >= 1 - 1e-9 else loads[c]) for c, n in slot.executors.items())
            assert slot.cpu == pytest.approx(charged, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_pdeployer_packs_the_units_as_tasks_within_one_core_per_pod(seed: int) -> None:
    topology, units = random_case(seed)
    result = place_units(topology, units, PlacementStrategy.PDEPLOYER, 1)
    assert result.placement.executors() == units
    assert all(len(pod.slots) == 1 and pod.slots[0].cpu <= 1.0 + 1e-9 for pod in result.placement.pods)
    # the bolts' CPU over every pod is what their flow needs (c_t = 0: placement changes no demand)
    state = evaluate(topology, tuple(units[c.id] for c in topology.components), FlowModel.BACKPRESSURE)
    need = sum(
        f.processed / c.capacity_per_unit if not c.is_spout else (units[c.id] if f.output > 0 else 0)
        for c, f in zip(topology.components, state.components, strict=True)
    )
    assert sum(pod.slots[0].cpu for pod in result.placement.pods) == pytest.approx(need, rel=1e-6)


def test_pdeployer_refuses_pods_of_several_slots_and_bad_units_are_named() -> None:
    with pytest.raises(SizingError, match="single worker slot"):
        place_units(thesis("linear"), LINEAR_UNITS, PlacementStrategy.PDEPLOYER, 2)
    with pytest.raises(SizingError, match="components 4 do not match"):
        place_units(thesis("linear"), {"1": 1, "2": 1, "3": 1}, PlacementStrategy.SAM, 2)
    with pytest.raises(SizingError, match="at least one executor"):
        place_units(thesis("linear"), {**LINEAR_UNITS, "4": 0}, PlacementStrategy.SAM, 2)


@pytest.mark.parametrize("strategy", list(PlacementStrategy))
def test_a_unit_holding_more_memory_than_a_slot_is_refused_by_every_placement(
    strategy: PlacementStrategy,
) -> None:
    """As the sizing refuses it: a whole slot given to a saturated unit of 1.5 slots' memory is still
    short of memory (SAM had placed it)."""
    heavy = Topology(
        "heavy",
        tuple(
            dataclasses.replace(c, memory_per_unit=1.5) if c.id == "2" else c
            for c in thesis("linear").components
        ),
    )
    with pytest.raises(SizingError, match=r"'2': memoryPerUnit 1.5 is above one slot's memory \(1\)"):
        place_units(heavy, LINEAR_UNITS, strategy, 1)
    at_most_a_slot = Topology(
        "full",
        tuple(dataclasses.replace(c, memory_per_unit=1.0) for c in thesis("linear").components),
    )
    assert place_units(at_most_a_slot, LINEAR_UNITS, strategy, 1).placement.pods
