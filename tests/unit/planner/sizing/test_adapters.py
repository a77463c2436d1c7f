"""Our profile mapped to Shukla & Simmhan and P-Deployer (sizing/adapters.py), and the plan."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner import Topology, parse_profile
from stormscale.planner.placement.model import Placement, PlacementError, parse_placement
from stormscale.planner.placement.strategies import PlacementStrategy, place
from stormscale.planner.profile import profile_document
from stormscale.planner.sizing.adapters import (
    operator_graph,
    performance_model,
    shukla_allocation,
    target_rates,
)
from stormscale.planner.sizing.exact import offered_rate
from stormscale.planner.sizing.pdeployer import cpu_min, memory_consumption, parallelize
from stormscale.planner.sizing.performance import Allocator
from stormscale.planner.sizing.strategies import SizingError, SizingStrategy, size
from tests.synthetic.profiles import random_profile
from tests.unit.planner.conftest import thesis

THESIS = ("linear", "diamond", "simple-tree", "topology-10", "topology-17")


def synthetic(seed: int, size_: int = 12, memory: float = 0.0) -> Topology:
    doc = random_profile(random.Random(seed), size_, min_units=1, bounded_share=0.0, load=(0.6, 1.4))
    for c in doc["components"]:
        if memory:
            c["memoryPerUnit"] = memory
    return parse_profile(doc)


def test_one_thread_saturates_its_slot_at_capacity_per_unit(t17: Topology) -> None:
    bolt = next(c for c in t17.components if not c.is_spout)
    model = performance_model(bolt)
    assert model.single_rate == model.peak_rate == bolt.capacity_per_unit
    assert (model.cpu(1), model.peak_threads) == (1.0, 1)


@pytest.mark.parametrize("name", THESIS)
@pytest.mark.parametrize("factor", [0.5, 1.0, 1.7])
def test_every_seed_sizes_units_to_the_exact_minimum_under_the_mapping(name: str, factor: float) -> None:
    topology = thesis(name)
    omega = factor * offered_rate(topology)
    exact = size(topology, omega, SizingStrategy.EXACT)
    for strategy in (SizingStrategy.LSA, SizingStrategy.MBA, SizingStrategy.PDEPLOYER):
        assert size(topology, omega, strategy).units == exact.units, strategy


@given(seed=st.integers(0, 10_000), factor=st.floats(0.2, 3.0))
@settings(max_examples=40, deadline=None)
def test_the_rates_are_the_profiles_demands_at_the_target(seed: int, factor: float) -> None:
    topology = synthetic(seed)
    rates = target_rates(topology, factor * offered_rate(topology))
    assert rates.scale == pytest.approx(factor)
    graph = operator_graph(topology, rates)
    for c in topology.components:
        if not c.is_spout:  # what arrives on the edges (and externalInput) is D_v(Ω)
            assert graph.stream_load(c.id) == pytest.approx(rates.arrivals[c.id], rel=1e-9, abs=1e-9)
    lsa = shukla_allocation(topology, rates, Allocator.LSA)
    cpu = sum(rates.arrivals[c.id] / c.capacity_per_unit for c in topology.components if not c.is_spout)
    spouts = sum(c.units for c in topology.components if c.is_spout)
    assert lsa.total_cpu == pytest.approx(cpu + spouts)


@given(seed=st.integers(0, 10_000), memory=st.floats(0.05, 0.9))
@settings(max_examples=30, deadline=None)
def test_a_saturated_pdeployer_task_uses_one_core_and_its_memory_per_unit(seed: int, memory: float) -> None:
    topology = synthetic(seed, memory=memory)
    graph = operator_graph(topology, target_rates(topology, 2 * offered_rate(topology)))
    for c in topology.components:
        op = graph.operator(c.id)
        rate = c.capacity_per_unit if not c.is_spout else graph.stream_load(c.id) / c.units
        share = graph.output_load(c.id) / graph.stream_load(c.id) if graph.stream_load(c.id) else 0.0
        assert cpu_min(op.profile, rate) == pytest.approx(100.0)
        assert op.profile.c_t == 0.0
        assert memory_consumption(op.profile, rate, rate * share) == pytest.approx(memory)
    parallelism = parallelize(graph)
    assert {c.id: parallelism[c.id] for c in topology.components if c.is_spout} == {
        c.id: c.units for c in topology.components if c.is_spout
    }


@given(seed=st.integers(0, 10_000), k=st.integers(1, 4), memory=st.sampled_from([0.0, 0.3]))
@settings(max_examples=25, deadline=None)
def test_placements_hold_every_executor_once_within_slot_cpu_and_memory(
    seed: int, k: int, memory: float
) -> None:
    topology = synthetic(seed, memory=memory)
    omega = 1.5 * offered_rate(topology)
    units = size(topology, omega, SizingStrategy.MBA, k).units
    for strategy in (PlacementStrategy.SAM, PlacementStrategy.PDEPLOYER):
        if strategy is PlacementStrategy.PDEPLOYER and k != 1:
            continue
        result = place(topology, omega, strategy, k)
        assert result.placement.executors() == {cid: n for cid, n in units.items() if n}
        for pod in result.placement.pods:
            assert len(pod.slots) == k
            for slot in pod.slots:
                assert slot.cpu <= 1 + 1e-9
                assert slot.memory <= 1 + 1e-9


def test_pdeployer_refuses_more_than_one_slot_per_pod_and_says_why(t17: Topology) -> None:
    with pytest.raises(SizingError, match="single worker slot"):
        place(t17, 3000.0, PlacementStrategy.PDEPLOYER, 2)


def test_a_target_beyond_max_units_is_refused_naming_the_component() -> None:
    doc = profile_document(thesis("linear"))
    bolt = next(c for c in doc["components"] if c["kind"] == "bolt")
    bolt["maxUnits"] = bolt["units"]
    topology = parse_profile(doc)
    with pytest.raises(SizingError, match=f"units of '{bolt['id']}', above its maxUnits"):
        size(topology, 100 * offered_rate(topology), SizingStrategy.LSA)


@pytest.mark.parametrize("name", THESIS)
def test_profile_document_round_trips(name: str) -> None:
    topology = thesis(name)
    assert parse_profile(profile_document(topology)) == topology


@given(seed=st.integers(0, 10_000))
@settings(max_examples=30, deadline=None)
def test_random_profiles_round_trip(seed: int) -> None:
    doc = random_profile(random.Random(seed), 8, min_units=seed % 2, scalable_spout=seed % 3 == 0)
    topology = parse_profile(doc)
    assert parse_profile(profile_document(topology)) == topology


def test_placement_json_round_trips(t17: Topology) -> None:
    placement = place(t17, 3000.0, PlacementStrategy.SAM, 2).placement
    assert Placement.from_json(placement.to_json()) == placement


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ([], "placement"),
        ({"pods": []}, "strategy"),
        ({"strategy": "sam"}, "pods"),
        ({"strategy": "sam", "pods": [{"slots": []}]}, "pods[0].slots"),
        ({"strategy": "sam", "pods": [{"slots": [{"executors": {"a": 0}}]}]}, "pods[0].slots[0].executors.a"),
        ({"strategy": "sam", "pods": [{"slots": [{"executors": {}, "cpu": -1}]}]}, "pods[0].slots[0].cpu"),
        (
            {"strategy": "sam", "pods": [{"slots": [{"executors": {}, "memory": math.inf}]}]},
            "pods[0].slots[0].memory",
        ),
        (
            {"strategy": "sam", "pods": [{"slots": [{"executors": {}, "cpu": 10**400}]}]},
            "pods[0].slots[0].cpu",
        ),
    ],
)
def test_a_bad_placement_names_its_field(document: object, field: str) -> None:
    with pytest.raises(PlacementError) as err:
        parse_placement(document)
    assert str(err.value).startswith(f"{field}:")
