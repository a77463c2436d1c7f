"""The exact minimum units for a target rate: golden values, and the integer program's proof."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner import FlowModel, Topology, load_profile, parse_profile, throughput
from stormscale.planner.optimal import optimal_alloc
from stormscale.planner.placement.strategies import PlacementResult, place_all
from stormscale.planner.sizing.exact import (
    TargetRateError,
    max_feasible_rate,
    minimum_units,
    offered_rate,
    scaled_to,
)
from tests.synthetic.profiles import random_profile

PROFILES = Path(__file__).parents[4] / "examples" / "profiles"
THESIS = sorted(PROFILES.glob("thesis-*.json"))


def scaled(topology: Topology, k: float) -> Topology:
    """Every source offering k times what it offers now, spouts fixed at their units (as sizing has them)."""
    comps = tuple(
        dataclasses.replace(
            c,
            output_per_unit=c.output_per_unit * k,
            external_input=c.external_input * k,
            max_units=c.units if c.is_spout else c.max_units,
            min_units=c.units if c.is_spout else c.min_units,
        )
        for c in topology.components
    )
    return Topology(topology.name, comps)


def random_topology(seed: int) -> Topology:
    return parse_profile(random_profile(random.Random(seed), 8, scalable_spout=False, bounded_share=0.0))


def test_linear_golden() -> None:
    linear = load_profile(PROFILES / "thesis-linear.json")  # 500/s → 400 → 250 → …, selectivity 1
    sizing = minimum_units(linear, 500.0)
    assert sizing.scale == 1.0
    assert sizing.units["2"] == 2  # ⌈500/400⌉
    assert sizing.units["3"] == 2  # ⌈500/250⌉, a whole ratio is not rounded up
    assert sizing.feasible
    doubled = minimum_units(linear, 1000.0)
    assert (doubled.units["2"], doubled.units["3"]) == (3, 4)
    assert doubled.demands["2"] == pytest.approx(1000.0)


def test_pods_with_and_without_one_component_per_pod() -> None:
    sizing = minimum_units(load_profile(PROFILES / "thesis-linear.json"), 500.0)
    total = sizing.total_units
    assert sizing.pods(2) == -(-total // 2)
    per_component = sum(-(-n // 2) for n in sizing.units.values())
    assert sizing.pods(2, one_component_per_pod=True) == per_component >= sizing.pods(2)
    with pytest.raises(ValueError, match="at least 1"):
        sizing.pods(0)


def test_a_bound_below_the_need_is_reported_not_exceeded() -> None:
    linear = load_profile(PROFILES / "thesis-linear.json")
    capped = Topology(
        linear.name,
        tuple(dataclasses.replace(c, max_units=2) if c.id == "3" else c for c in linear.components),
    )
    sizing = minimum_units(capped, 1000.0)
    assert sizing.limited == ("3",)
    assert sizing.units["3"] == 2
    assert not sizing.feasible


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_target_that_is_not_a_rate_is_refused(bad: float) -> None:
    with pytest.raises(TargetRateError, match="finite rate"):
        minimum_units(load_profile(PROFILES / "thesis-linear.json"), bad)


def proves_minimum(topology: Topology, k: float) -> None:
    """The integer program agrees: from one unit per bolt, Σn* − Σn extra units reach Θ at the
    target, and one fewer do not (the program only adds units, so it starts from the floor)."""
    target = scaled(topology, k)
    sizing = minimum_units(topology, k * offered_rate(topology))
    assert sizing.feasible
    full = throughput(target, tuple(sizing.units[c.id] for c in target.components), FlowModel.BACKPRESSURE)
    floor = tuple(c.units if c.is_spout else 1 for c in target.components)
    budget = sizing.total_units - sum(floor)
    best = optimal_alloc(target, floor, budget, FlowModel.BACKPRESSURE)
    assert best.throughput >= full * (1 - 1e-6)
    if budget > 0:
        fewer = optimal_alloc(target, floor, budget - 1, FlowModel.BACKPRESSURE)
        assert fewer.throughput < full * (1 - 1e-6)


@pytest.mark.parametrize("path", THESIS, ids=lambda p: p.stem)
@pytest.mark.parametrize("k", [0.5, 1.0, 2.0, 3.7])
def test_the_integer_program_proves_the_minimum_on_the_thesis_profiles(path: Path, k: float) -> None:
    proves_minimum(load_profile(path), k)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.floats(0.2, 4.0))
def test_the_integer_program_proves_the_minimum_on_random_dags(seed: int, k: float) -> None:
    proves_minimum(random_topology(seed), k)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.floats(0.1, 5.0), more=st.floats(1.0, 3.0))
def test_more_target_never_needs_fewer_units(seed: int, k: float, more: float) -> None:
    topology = random_topology(seed)
    low = minimum_units(topology, k * offered_rate(topology))
    high = minimum_units(topology, k * more * offered_rate(topology))
    assert all(high.units[c] >= n for c, n in low.units.items())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.floats(0.2, 4.0), slots=st.integers(1, 4))
def test_no_placement_uses_fewer_pods_than_the_cpu_lower_bound(seed: int, k: float, slots: int) -> None:
    topology = random_topology(seed)
    omega = k * offered_rate(topology)
    sizing = minimum_units(topology, omega)
    bound = sizing.shared_pods(slots)
    assert bound <= sizing.pods(slots)
    placed = [r for r in place_all(topology, omega, slots).values() if isinstance(r, PlacementResult)]
    assert placed  # at least Shukla & Simmhan's mappings place every feasible target
    for result in placed:
        assert result.placement.pod_count >= bound, result.strategy


def test_the_highest_feasible_rate_is_where_a_bound_starts_to_bind() -> None:
    linear = load_profile(PROFILES / "thesis-linear.json")  # bolt 3: 250/s per unit, demand = Ω
    assert max_feasible_rate(linear) == float("inf")
    capped = Topology(
        linear.name,
        tuple(dataclasses.replace(c, max_units=3) if c.id == "3" else c for c in linear.components),
    )
    ceiling = max_feasible_rate(capped)
    assert ceiling == pytest.approx(750.0)  # 3 units of 250/s
    assert minimum_units(capped, ceiling).feasible
    assert not minimum_units(capped, ceiling * 1.001).feasible


def test_a_bound_below_a_bolts_floor_leaves_no_feasible_rate() -> None:
    linear = load_profile(PROFILES / "thesis-linear.json")
    floored = Topology(
        linear.name,
        tuple(
            dataclasses.replace(c, min_units=2, max_units=1) if c.id == "2" else c for c in linear.components
        ),
    )
    assert max_feasible_rate(floored) == 0.0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), bound=st.integers(1, 6))
def test_the_highest_feasible_rate_is_feasible_and_nothing_above_it(seed: int, bound: int) -> None:
    rng = random.Random(seed)
    doc = random_profile(rng, 8, scalable_spout=False, bounded_share=0.5)
    for c in doc["components"]:
        if "maxUnits" in c and c["kind"] == "bolt":
            c["maxUnits"] = max(bound, c["units"])
    topology = parse_profile(doc)
    ceiling = max_feasible_rate(topology)
    if ceiling == float("inf"):
        return
    assert minimum_units(topology, ceiling).feasible
    assert not minimum_units(topology, ceiling * 1.0001).feasible


@pytest.mark.parametrize("path", THESIS, ids=lambda p: p.stem)
def test_scaled_to_offers_the_target_in_todays_mix(path: Path) -> None:
    topology = load_profile(path)
    target = scaled_to(topology, 3.5 * offered_rate(topology))
    assert offered_rate(target) == pytest.approx(3.5 * offered_rate(topology))
    assert scaled(topology, 3.5).components == tuple(
        dataclasses.replace(c, max_units=s.max_units, min_units=s.min_units)
        for c, s in zip(target.components, scaled(topology, 3.5).components, strict=True)
    )
