"""``best``: every strategy's plan, the highest predicted Θ applied; and the trimming of units that add
nothing, which every strategy's scale-out goes through."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner import (
    BEST_CANDIDATES,
    FlowModel,
    Plan,
    Strategy,
    Topology,
    add_allocation,
    best_of,
    compare_strategies,
    make_plan,
    parse_profile,
    throughput,
    trim_useless_units,
)
from stormscale.planner.flow import congestion_tolerance

from .conftest import thesis
from .papers import predictive_allocation, stela_allocation
from .reference import profiles


def _epsilon(theta: float) -> float:
    return congestion_tolerance(theta)


@settings(max_examples=40, deadline=None)
@given(
    profiles(max_size=12, spouts=1),
    st.integers(min_value=1, max_value=6),
    st.sampled_from(list(FlowModel)),
)
def test_best_is_never_below_any_strategy_and_is_the_optimum_where_it_is_proven(
    document: dict[str, Any], budget: int, model: FlowModel
) -> None:
    topology = parse_profile(document)
    plans = compare_strategies(topology, budget, model)
    best = plans[Strategy.BEST]
    assert best.strategy is Strategy.BEST
    assert best.chosen in BEST_CANDIDATES
    top = max(p.after for s, p in plans.items() if s is not Strategy.BEST)
    assert best.after >= top - _epsilon(top)
    assert best.after == plans[best.chosen].after
    exact = plans[Strategy.OPTIMAL]
    assert exact.optimality is not None
    assert exact.optimality.proven
    assert best.after == pytest.approx(exact.after, rel=1e-9, abs=1e-9)
    assert best.note is None


@settings(max_examples=30, deadline=None)
@given(
    profiles(max_size=10, spouts=2), st.integers(min_value=1, max_value=5), st.sampled_from(list(FlowModel))
)
def test_best_is_never_below_any_strategy_with_two_sources(
    document: dict[str, Any], budget: int, model: FlowModel
) -> None:
    topology = parse_profile(document)
    plans = compare_strategies(topology, budget, model)
    top = max(p.after for s, p in plans.items() if s is not Strategy.BEST)
    assert plans[Strategy.BEST].after >= top - _epsilon(top)
    assert make_plan(topology, budget, Strategy.BEST, model) == plans[Strategy.BEST]


def test_the_diamonds_extra_unit_is_trimmed() -> None:
    """Backpressure, budget 2: the thesis's predictive allocator (so combined) puts both units on bolt 3,
    Stela one on 2 and one on 3; one unit on 3 reaches the same throughput. The other is reported
    unallocated."""
    diamond = thesis("diamond")
    model = FlowModel.BACKPRESSURE
    assert predictive_allocation(diamond, 2, model) == {"3": 2}
    assert stela_allocation(diamond, 2, model) == {"2": 1, "3": 1}
    index = diamond.index["3"]
    assert trim_useless_units(diamond, diamond.units, {index: 2}, model) == {index: 1}
    two = throughput(diamond, add_allocation(diamond, diamond.units, {"3": 2}), model)
    for strategy in Strategy:
        plan = make_plan(diamond, 2, strategy, model)
        assert (plan.allocation, plan.unallocated, plan.after) == ({"3": 1}, 1, two)


@settings(max_examples=40, deadline=None)
@given(
    profiles(max_size=10, spouts=1, tasks=True),
    st.integers(min_value=1, max_value=6),
    st.sampled_from(list(FlowModel)),
)
def test_trimming_keeps_the_throughput_and_leaves_no_unit_that_adds_nothing(
    document: dict[str, Any], budget: int, model: FlowModel
) -> None:
    topology = parse_profile(document)
    units = topology.units
    for strategy in (Strategy.STELA, Strategy.PREDICTIVE):
        untrimmed = {
            topology.index[c]: n
            for c, n in (
                stela_allocation(topology, budget, model)
                if strategy is Strategy.STELA
                else predictive_allocation(topology, budget, model)
            ).items()
        }
        target = throughput(topology, add_allocation(topology, units, untrimmed), model)
        kept = trim_useless_units(topology, units, untrimmed, model)
        after = throughput(topology, add_allocation(topology, units, kept), model)
        assert after >= target - _epsilon(target)
        assert all(0 < n <= untrimmed[v] for v, n in kept.items())
        for v in kept:  # a fixed point: every unit left lowers Θ when taken away
            less = throughput(topology, add_allocation(topology, units, {**kept, v: kept[v] - 1}), model)
            assert less < target - _epsilon(target)
        assert trim_useless_units(topology, units, kept, model) == kept


def test_a_scale_in_is_not_trimmed() -> None:
    linear = thesis("linear")
    removal = {linear.index["3"]: -1}
    assert trim_useless_units(linear, linear.units, removal, FlowModel.DROP) == removal


def _plan(strategy: Strategy, after: float, allocation: dict[str, int]) -> Plan:
    return Plan("t", strategy, FlowModel.DROP, 3, allocation, 3 - sum(allocation.values()), 100.0, after)


def test_ties_go_to_fewest_units_then_to_a_fixed_order_whatever_the_plans_order() -> None:
    plans = {
        Strategy.STELA: _plan(Strategy.STELA, 200.0, {"a": 1}),
        Strategy.PREDICTIVE: _plan(Strategy.PREDICTIVE, 200.0, {"b": 1}),
        Strategy.COMBINED: _plan(Strategy.COMBINED, 200.0, {"b": 1}),
        Strategy.OPTIMAL: _plan(Strategy.OPTIMAL, 200.0 + 1e-12, {"a": 1, "b": 1}),
    }
    for order in (list(plans), list(reversed(plans))):
        best = best_of({s: plans[s] for s in order})
        assert (best.strategy, best.chosen, best.allocation) == (Strategy.BEST, Strategy.COMBINED, {"b": 1})
    plans[Strategy.OPTIMAL] = _plan(Strategy.OPTIMAL, 200.0, {"c": 1})
    assert best_of(plans).chosen is Strategy.OPTIMAL
    plans[Strategy.STELA] = _plan(Strategy.STELA, 201.0, {"a": 3})
    assert best_of(plans).chosen is Strategy.STELA  # a higher Θ wins whatever it spends
    assert BEST_CANDIDATES == (Strategy.OPTIMAL, Strategy.COMBINED, Strategy.PREDICTIVE, Strategy.STELA)


def test_best_is_deterministic_on_topology_17(t17: Topology) -> None:
    for model in FlowModel:
        first = [make_plan(t17, b, Strategy.BEST, model) for b in (2, 3, 4, 6, 8)]
        again = [make_plan(t17, b, Strategy.BEST, model) for b in (2, 3, 4, 6, 8)]
        assert first == again
        assert all(p.chosen is Strategy.OPTIMAL for p in first)


def test_at_the_time_limit_best_applies_the_best_plan_found_and_says_so(t17: Topology) -> None:
    best = make_plan(t17, 3, Strategy.BEST, FlowModel.BACKPRESSURE, time_limit=1e-12)
    assert best.optimality is not None
    assert not best.optimality.proven
    assert best.note is not None
    assert "time limit" in best.note
    assert best.to_json()["note"] == best.note
    combined = make_plan(t17, 3, Strategy.COMBINED, FlowModel.BACKPRESSURE)
    assert best.after >= combined.after


def test_where_the_exact_program_cannot_run_best_plans_without_it_and_says_why() -> None:
    """13 scalable spouts: 2¹³ combinations of their units, beyond the program's 4,096."""
    spouts = [
        {
            "id": f"s{i}",
            "kind": "spout",
            "units": 1,
            "outputPerUnit": 100.0,
            "children": {"b": 1.0},
            "maxUnits": None,
        }
        for i in range(13)
    ]
    bolt = {"id": "b", "kind": "bolt", "units": 1, "capacityPerUnit": 500.0, "children": {}}
    topology = parse_profile({"topology": "t", "components": [*spouts, bolt]})
    plans = compare_strategies(topology, 1, FlowModel.BACKPRESSURE)
    assert Strategy.OPTIMAL not in plans
    best = plans[Strategy.BEST]
    assert best.note is not None
    assert "combinations of scalable spout units" in best.note
    assert best.chosen is Strategy.COMBINED
    combined = plans[Strategy.COMBINED]
    assert (best.allocation, best.after, best.unallocated) == (
        combined.allocation,
        combined.after,
        combined.unallocated,
    )
