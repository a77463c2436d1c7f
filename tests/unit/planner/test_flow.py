"""Flow models: the thesis's micro-examples and the backpressure rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner import FlowModel, evaluate, parse_profile, throughput
from stormscale.planner.flow import backpressure_rates, drop_rates
from stormscale.planner.model import Topology, add_allocation

from .conftest import thesis
from .reference import profiles, reference_throughput


def by_id(topology: Topology, values: tuple[float, ...]) -> dict[str, float]:
    return {c.id: values[i] for i, c in enumerate(topology.components)}


@pytest.mark.parametrize(
    ("name", "theta", "congested"),
    [
        ("linear", 250, {"2", "3"}),
        ("diamond", 600, {"2", "3"}),
        ("simple-tree", 1000, {"2", "3", "4"}),
        ("topology-17", 4740, {"4", "5", "6", "8", "9", "10", "11", "16"}),
        ("topology-10", 10680, {"2", "3", "4", "5"}),
    ],
)
def test_initial_throughput_and_congestion_of_the_thesis_topologies(
    name: str, theta: float, congested: set[str]
) -> None:
    state = evaluate(thesis(name), thesis(name).units, FlowModel.DROP)
    assert state.throughput == pytest.approx(theta, abs=1e-6)
    assert {c.id for c in state.components if c.congested} == congested


def test_under_backpressure_only_bolts_whose_demand_exceeds_their_capacity_are_congested() -> None:
    """Linear: the spout's 500/s is every bolt's demand; 2 (400) and 3 (250) cannot take it, 4 (900) can."""
    state = evaluate(thesis("linear"), thesis("linear").units, FlowModel.BACKPRESSURE)
    assert state.throughput == pytest.approx(250)
    assert {c.id for c in state.components if c.congested} == {"2", "3"}


def test_topology_17_rates_drops_and_ratios(t17: Topology) -> None:
    state = {c.id: c for c in evaluate(t17, t17.units, FlowModel.DROP).components}
    dropped = {cid: c.lost for cid, c in state.items() if c.lost > 0}
    assert dropped == pytest.approx(
        {"4": 100, "5": 80, "6": 20, "8": 60, "9": 200, "10": 200, "11": 300, "16": 700}
    )
    assert state["16"].input == pytest.approx(1200)
    assert state["17"].input == pytest.approx(800)
    assert state["9"].output / state["9"].processed == pytest.approx(2.0)


def test_linear_scaling_of_capacity_and_spout_output(t17: Topology) -> None:
    linear = thesis("linear")
    for units, capacity in [(1, 250), (2, 500), (3, 750), (4, 1000)]:  # the (n+1)/n rule
        state = evaluate(linear, add_allocation(linear, linear.units, {"3": units - 1}), FlowModel.DROP)
        assert state.components[2].capacity == capacity
    more = evaluate(t17, add_allocation(t17, t17.units, {"1": 1}), FlowModel.DROP)
    assert more.components[0].output == 3000  # spout 2 units × 1000 → +1 unit


def test_drop_model_drops_and_backpressure_throttles_the_spout() -> None:
    linear = thesis("linear")  # 500 → 400 → 250 → 900
    drop = evaluate(linear, linear.units, FlowModel.DROP)
    assert [c.lost for c in drop.components] == [0, 100, 150, 0]
    bp = evaluate(linear, linear.units, FlowModel.BACKPRESSURE)
    assert bp.throughput == pytest.approx(250)
    assert bp.components[0].output == pytest.approx(250)  # λ = min(500, 400/1, 250/1)
    assert bp.components[0].lost == pytest.approx(250)  # offered − emitted
    assert all(c.input <= c.capacity + 1e-9 for c in bp.components)


def test_backpressure_single_spout_formula_on_topology_17(t17: Topology) -> None:
    rates = drop_rates(t17, t17.units)
    d = {}  # input per spout tuple, by hand from the profile: d_v = Π fractions·selectivities on the path
    d.update({"2": 0.4, "3": 0.35, "4": 0.25})
    d.update({"5": 0.4 * 2 * 0.55, "6": 0.4 * 2 * 0.45, "9": 0.25 * 3, "16": 0.25 * 3 * 2 * 0.6})
    lam = min(2000.0, *(t17.components[t17.index[v]].capacity_per_unit / dv for v, dv in d.items()))
    bp = backpressure_rates(t17, t17.units)
    assert bp.outputs[0] == pytest.approx(lam)
    assert lam == pytest.approx(500 / (0.25 * 3 * 2 * 0.6))  # 16 binds: 1111.1 tuples/s
    assert rates.outputs[0] == 2000.0


def test_backpressure_with_two_sources_throttles_each_by_what_it_reaches() -> None:
    topology = parse_profile(
        {
            "components": [
                {"id": "s1", "kind": "spout", "units": 1, "outputPerUnit": 100, "children": {"a": 1}},
                {
                    "id": "s2",
                    "kind": "spout",
                    "units": 1,
                    "outputPerUnit": 100,
                    "children": {"a": 0.5, "b": 0.5},
                },
                {"id": "a", "kind": "bolt", "units": 1, "capacityPerUnit": 75},
                {"id": "b", "kind": "bolt", "units": 1, "capacityPerUnit": 1000},
            ]
        }
    )
    rates = backpressure_rates(topology, topology.units)
    # a's demand is 150 for a capacity of 75: both spouts reach a and slow to α = 0.5.
    assert by_id(topology, rates.throttles)["s1"] == pytest.approx(0.5)
    assert by_id(topology, rates.throttles)["s2"] == pytest.approx(0.5)
    assert by_id(topology, rates.inputs) == pytest.approx({"s1": 0, "s2": 0, "a": 75, "b": 25})


@settings(max_examples=250, deadline=None)
@given(st.integers(min_value=1, max_value=2).flatmap(lambda spouts: profiles(max_size=10, spouts=spouts)))
def test_throughput_matches_an_independent_evaluator(document: dict[str, object]) -> None:
    topology = parse_profile(document)
    for model in FlowModel:
        assert throughput(topology, topology.units, model) == pytest.approx(
            reference_throughput(topology, topology.units, model), rel=1e-9, abs=1e-9
        )


@settings(max_examples=100, deadline=None)
@given(profiles(max_size=10, spouts=2))
def test_backpressure_never_sends_a_component_more_than_it_processes(document: dict[str, object]) -> None:
    topology = parse_profile(document)
    state = evaluate(topology, topology.units, FlowModel.BACKPRESSURE)
    bolts = [c for c, comp in zip(state.components, topology.components, strict=True) if not comp.is_spout]
    for c in bolts:
        assert c.input <= c.capacity * (1 + 1e-9) + 1e-9
        assert c.processed == pytest.approx(c.input)


def test_backpressure_throttles_a_bolts_external_source_to_the_room_below_it() -> None:
    """Bolt a (60/s) is offered 10/s by the spout and 100/s from outside: 110/s of demand, so both
    sources slow to 60/110 and a passes exactly its capacity, 60/s (not 105.45/s)."""
    topology = parse_profile(
        {
            "components": [
                {"id": "s", "kind": "spout", "units": 1, "outputPerUnit": 10, "children": {"a": 1}},
                {
                    "id": "a",
                    "kind": "bolt",
                    "units": 1,
                    "capacityPerUnit": 60,
                    "externalInput": 100,
                    "children": {"b": 1},
                },
                {"id": "b", "kind": "bolt", "units": 1, "capacityPerUnit": 1000},
            ]
        }
    )
    rates = backpressure_rates(topology, topology.units)
    assert by_id(topology, rates.throttles) == pytest.approx({"s": 60 / 110, "a": 60 / 110, "b": 1.0})
    assert throughput(topology, topology.units, FlowModel.BACKPRESSURE) == pytest.approx(60.0)


def test_backpressure_sends_a_bolt_with_spare_capacity_exactly_its_external_input() -> None:
    """A bolt fed from outside (``externalInput``) with room to spare is not throttled: α = 1, not
    the room left at and below it (here b's: 100/20 = 5)."""
    topology = parse_profile(
        {
            "components": [
                {"id": "s", "kind": "spout", "units": 1, "outputPerUnit": 10, "children": {"a": 1}},
                {
                    "id": "a",
                    "kind": "bolt",
                    "units": 1,
                    "capacityPerUnit": 1000,
                    "externalInput": 10,
                    "children": {"b": 1},
                },
                {"id": "b", "kind": "bolt", "units": 1, "capacityPerUnit": 100},
            ]
        }
    )
    rates = backpressure_rates(topology, topology.units)
    assert by_id(topology, rates.throttles)["a"] == pytest.approx(1.0)
    assert by_id(topology, rates.inputs) == pytest.approx({"s": 0, "a": 20, "b": 20})
