"""The exact optimum: known gaps of the heuristics, brute force on small instances, time limits."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner import FlowModel, Strategy, compare_strategies, make_plan, parse_profile, throughput
from stormscale.planner.model import Topology
from stormscale.planner.optimal import optimal_alloc
from tests.synthetic.profiles import random_profile

from .conftest import PROFILES
from .papers import predictive_allocation, stela_allocation
from .reference import allocations, profiles, removals


def test_topology_17_two_units_reach_800_where_combined_predicts_700(t17: Topology) -> None:
    optimal = make_plan(t17, 2, Strategy.OPTIMAL)
    assert optimal.gain == pytest.approx(800)
    assert optimal.optimality is not None
    assert optimal.optimality.proven
    assert optimal.optimality.bound == pytest.approx(optimal.after)
    assert make_plan(t17, 2, Strategy.COMBINED).gain == pytest.approx(700)


def test_topology_10_with_a_fixed_spout_reaches_2332_where_combined_predicts_1332() -> None:
    document = json.loads((PROFILES / "thesis-topology-10.json").read_text())
    del document["components"][0]["maxUnits"]  # absent: the spout is fixed
    t10 = parse_profile(document)
    assert make_plan(t10, 2, Strategy.COMBINED).gain == pytest.approx(1332)
    optimal = make_plan(t10, 2, Strategy.OPTIMAL)
    assert optimal.gain == pytest.approx(2332)
    assert "1" not in optimal.allocation


def brute_force(topology: Topology, budget: int, model: FlowModel) -> float:
    vectors = allocations(topology, budget) if budget >= 0 else removals(topology, -budget)
    units = topology.units
    best = -1.0
    for extra in vectors:
        best = max(best, throughput(topology, tuple(u + e for u, e in zip(units, extra, strict=True)), model))
    return best


@settings(max_examples=90, deadline=None)
@given(
    st.integers(min_value=1, max_value=2).flatmap(lambda spouts: profiles(max_size=6, spouts=spouts)),
    st.integers(min_value=1, max_value=3),
    st.sampled_from(list(FlowModel)),
)
def test_optimal_equals_brute_force(document: dict[str, object], budget: int, model: FlowModel) -> None:
    topology = parse_profile(document)
    result = optimal_alloc(topology, topology.units, budget, model)
    assert result.proven
    assert result.throughput == pytest.approx(brute_force(topology, budget, model), rel=1e-7, abs=1e-6)
    assert sum(result.extra.values()) <= budget


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=2).flatmap(
        lambda spouts: profiles(max_size=6, spouts=spouts, tasks=True)
    ),
    st.integers(min_value=1, max_value=4),
    st.sampled_from(list(FlowModel)),
)
def test_optimal_with_task_counts_equals_brute_force(
    document: dict[str, object], budget: int, model: FlowModel
) -> None:
    """A step-function capacity (one binary per value of x_v) keeps the program exact."""
    topology = parse_profile(document)
    result = optimal_alloc(topology, topology.units, budget, model)
    assert result.proven
    assert result.throughput == pytest.approx(brute_force(topology, budget, model), rel=1e-7, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    profiles(max_size=6, spouts=1), st.integers(min_value=1, max_value=3), st.sampled_from(list(FlowModel))
)
def test_optimal_scale_in_equals_brute_force(
    document: dict[str, object], remove: int, model: FlowModel
) -> None:
    topology = parse_profile(document)
    available = sum(topology.removable(topology.units, v) for v in range(len(topology.components)))
    plan = make_plan(topology, -remove, Strategy.OPTIMAL, model)
    assert -sum(plan.allocation.values()) == min(remove, available)
    assert plan.after == pytest.approx(
        brute_force(topology, -min(remove, available), model), rel=1e-7, abs=1e-6
    )


def test_a_time_limit_returns_a_feasible_plan_with_a_proven_bound() -> None:
    topology = parse_profile(random_profile(random.Random(7), 400))
    plan = make_plan(topology, 60, Strategy.OPTIMAL, FlowModel.DROP, time_limit=1e-3)
    assert plan.optimality is not None
    assert plan.optimality.bound >= plan.after - 1e-6
    assert sum(plan.allocation.values()) <= 60
    assert plan.after >= plan.before - 1e-9
    assert not plan.optimality.proven  # 1 ms is not enough to prove 400 components optimal
    assert plan.after >= make_plan(topology, 60, Strategy.COMBINED).after - 1e-9  # falls back, never worse


def test_a_search_stopped_before_it_found_anything_falls_back_to_the_combined_choice() -> None:
    """Topology 17, one unit: predictive's {16: 1} gains 500 tuples/s, Stela's {6: 1} 40; a search
    given no time returns the better of the two (the combined strategy's choice), unproven."""
    t17 = parse_profile(json.loads((PROFILES / "thesis-topology-17.json").read_text()))
    plan = make_plan(t17, 1, Strategy.OPTIMAL, FlowModel.DROP, time_limit=1e-12)
    assert (plan.allocation, plan.gain) == ({"16": 1}, pytest.approx(500))
    assert plan.optimality is not None
    assert not plan.optimality.proven


def test_a_unit_that_adds_nothing_is_left_unallocated_by_every_strategy() -> None:
    """Bolt 3 at 2 executors of 4 tasks is the bottleneck: a third executor adds nothing (one of them
    runs 2 of the 4 tasks), the fourth doubles it. Stela and predictive place the one unit on bolt 3
    as the papers do; the trimming takes it back. docs/planner.md, Model."""
    document = json.loads((PROFILES / "thesis-linear.json").read_text())
    spout, two, three, _ = document["components"]
    spout.update(outputPerUnit=2000.0, maxUnits=1)
    two["units"] = 4
    three.update(units=2, tasks=4)
    topology = parse_profile(document)
    assert stela_allocation(topology, 1, FlowModel.BACKPRESSURE) == {"3": 1}
    assert predictive_allocation(topology, 1, FlowModel.BACKPRESSURE) == {"3": 1}
    one = compare_strategies(topology, 1, FlowModel.BACKPRESSURE)
    assert set(one) == set(Strategy)
    assert all(p.allocation == {} and p.unallocated == 1 for p in one.values())
    assert {p.after for p in one.values()} == {500.0}
    two_units = compare_strategies(topology, 2, FlowModel.BACKPRESSURE)
    assert all(p.allocation == {"3": 2} and p.after == 900.0 for p in two_units.values())
