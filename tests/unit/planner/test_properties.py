"""Invariants of every strategy on random DAGs (hypothesis), for both flow models."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner import FlowModel, Strategy, compare_strategies, parse_profile
from stormscale.planner.model import add_allocation

from .reference import profiles, reference_throughput


@settings(max_examples=80, deadline=None)
@given(
    profiles(max_size=12, spouts=1),
    st.integers(min_value=-4, max_value=8),
    st.sampled_from(list(FlowModel)),
)
def test_every_strategy_respects_budget_bounds_and_its_own_prediction(
    document: dict[str, object], budget: int, model: FlowModel
) -> None:
    topology = parse_profile(document)
    plans = compare_strategies(topology, budget, model)
    for plan in plans.values():
        after = add_allocation(topology, topology.units, plan.allocation)
        moved = sum(abs(n) for n in plan.allocation.values())
        assert moved + plan.unallocated == abs(budget)
        assert plan.unallocated >= 0
        assert all((n > 0) == (budget > 0) for n in plan.allocation.values())
        for v, c in enumerate(topology.components):
            assert c.min_units <= after[v] or after[v] == topology.units[v]
            assert after[v] <= topology.max_units[v]
        assert plan.before == pytest.approx(
            reference_throughput(topology, topology.units, model), rel=1e-9, abs=1e-9
        )
        assert plan.after == pytest.approx(reference_throughput(topology, after, model), rel=1e-9, abs=1e-9)
    best = plans[Strategy.OPTIMAL].after
    for plan in plans.values():
        assert plan.after <= best * (1 + 1e-7) + 1e-6
    combined = plans[Strategy.COMBINED].after
    assert combined >= max(plans[Strategy.STELA].after, plans[Strategy.PREDICTIVE].after) - 1e-9


@settings(max_examples=40, deadline=None)
@given(
    profiles(max_size=10, spouts=2), st.integers(min_value=1, max_value=6), st.sampled_from(list(FlowModel))
)
def test_optimal_bounds_every_heuristic_with_two_spouts(
    document: dict[str, object], budget: int, model: FlowModel
) -> None:
    topology = parse_profile(document)
    plans = compare_strategies(topology, budget, model)
    best = plans[Strategy.OPTIMAL].after
    assert all(p.after <= best * (1 + 1e-7) + 1e-6 for p in plans.values())
    assert all(p.after >= p.before - 1e-9 for p in plans.values())  # more units never lower Θ


@settings(max_examples=60, deadline=None)
@given(
    profiles(max_size=10, spouts=1, tasks=True),
    st.integers(min_value=1, max_value=8),
    st.sampled_from(list(FlowModel)),
)
def test_with_task_counts_every_strategy_stays_within_the_tasks_and_optimal_bounds_them(
    document: dict[str, object], budget: int, model: FlowModel
) -> None:
    topology = parse_profile(document)
    plans = compare_strategies(topology, budget, model)
    best = plans[Strategy.OPTIMAL].after
    for plan in plans.values():
        after = add_allocation(topology, topology.units, plan.allocation)
        assert all(c.tasks is None or after[v] <= c.tasks for v, c in enumerate(topology.components))
        assert plan.after == pytest.approx(reference_throughput(topology, after, model), rel=1e-9, abs=1e-9)
        assert plan.before - 1e-9 <= plan.after <= best * (1 + 1e-7) + 1e-6
