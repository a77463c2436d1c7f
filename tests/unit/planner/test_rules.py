"""Rules a mutant once broke without a failing test: which unit predictive scale-in removes, and to
which strategy ``combined`` gives a tie."""

from __future__ import annotations

import dataclasses

import pytest

from stormscale.planner import FlowModel, Strategy, Topology, make_plan, parse_profile
from stormscale.planner.flow import throughput
from stormscale.planner.model import add_allocation

from .conftest import thesis


def grown(topology: Topology, units: dict[str, int]) -> Topology:
    """``topology`` running ``units`` (the others as profiled)."""
    comps = tuple(dataclasses.replace(c, units=units.get(c.id, c.units)) for c in topology.components)
    return dataclasses.replace(topology, components=comps)


def test_predictive_scale_in_removes_the_unit_whose_loss_costs_least() -> None:
    """Linear 1 → 2 → 3 → 4 at 1, 2, 3, 1 units (spout 500/s, capacities 400, 250, 900): a unit of 3
    is spare (750 ≥ 500), a unit of 2 is not (400 < 500)."""
    linear = grown(thesis("linear"), {"2": 2, "3": 3})
    plan = make_plan(linear, -1, Strategy.PREDICTIVE, FlowModel.DROP)
    assert plan.allocation == {"3": -1}
    assert (plan.before, plan.after) == (500.0, 500.0)
    worst = throughput(linear, add_allocation(linear, linear.units, {linear.index["2"]: -1}), FlowModel.DROP)
    assert worst == 400.0  # what removing the other unit would have cost


def test_each_scale_in_step_starts_from_what_the_steps_before_it_left() -> None:
    """Spout 3 × 200/s → bolt 2 (3 × 400/s) → bolt 3 (3 × 100/s, selectivity 2): Θ = 600. Two units
    out: bolt 2 can give up two (one unit's 400/s still feeds bolt 3's 300/s), bolt 3 none without
    loss; judged from a state that forgot the first removal, the second would come from bolt 3."""
    chain = parse_profile(
        {
            "components": [
                {"id": "1", "kind": "spout", "units": 3, "outputPerUnit": 200, "children": {"2": 1}},
                {"id": "2", "kind": "bolt", "units": 3, "capacityPerUnit": 400, "children": {"3": 1}},
                {"id": "3", "kind": "bolt", "units": 3, "capacityPerUnit": 100, "selectivity": 2},
            ]
        }
    )
    plan = make_plan(chain, -2, Strategy.PREDICTIVE, FlowModel.DROP)
    assert (plan.allocation, plan.before, plan.after) == ({"2": -2}, 600.0, 600.0)


def test_each_predictive_scale_in_step_keeps_the_highest_throughput() -> None:
    t17 = grown(thesis("topology-17"), {})
    start = make_plan(t17, 4, Strategy.PREDICTIVE, FlowModel.DROP)
    big = grown(t17, {c: t17.components[t17.index[c]].units + a for c, a in start.allocation.items()})
    units = big.units
    for _ in range(3):
        options = [v for v in range(len(units)) if big.removable(units, v) > 0]
        thetas = {v: throughput(big, add_allocation(big, units, {v: -1}), FlowModel.DROP) for v in options}
        step = make_plan(
            grown(big, dict(zip((c.id for c in big.components), units, strict=True))),
            -1,
            Strategy.PREDICTIVE,
            FlowModel.DROP,
        )
        assert step.after == max(thetas.values())
        (removed,) = step.allocation
        units = add_allocation(big, units, {big.index[removed]: -1})


def test_combined_gives_a_tie_to_predictive() -> None:
    """Diamond, budget 2 (drop): Stela's {1: +1, 2: +1} and predictive's {2: +2} predict the same Θ."""
    diamond = thesis("diamond")
    stela = make_plan(diamond, 2, Strategy.STELA, FlowModel.DROP)
    ours = make_plan(diamond, 2, Strategy.PREDICTIVE, FlowModel.DROP)
    assert stela.after == ours.after
    assert stela.allocation != ours.allocation
    combined = make_plan(diamond, 2, Strategy.COMBINED, FlowModel.DROP)
    assert combined.chosen is Strategy.PREDICTIVE
    assert combined.allocation == ours.allocation


def test_combined_takes_stela_only_when_strictly_better() -> None:
    tree = thesis("simple-tree")
    stela = make_plan(tree, 2, Strategy.STELA, FlowModel.DROP)
    assert stela.after > make_plan(tree, 2, Strategy.PREDICTIVE, FlowModel.DROP).after
    combined = make_plan(tree, 2, Strategy.COMBINED, FlowModel.DROP)
    assert (combined.chosen, combined.allocation) == (Strategy.STELA, stela.allocation)


def test_a_heuristic_scale_out_that_would_lower_throughput_under_backpressure_is_not_made() -> None:
    """Spout c0 (2 × 500/s) feeds c3 (150/s, no headroom); spout c1 (500/s) feeds c2 (→ c3 and c5) and
    c4 (150/s, no headroom). Under backpressure every source feeding c3 slows to its ratio 150/1,100:
    Θ = 150 + 27.3 + 27.3 = 204.5. No bolt with headroom is congested, so both heuristics would add
    a unit to the first spout, c0: c3's ratio falls to 150/1,600 and c1's flow with it, Θ = 187.5. That
    plan is not made (its unit stays unallocated); the exact program adds c1's unit instead: 250."""
    topology = parse_profile(
        {
            "components": [
                {
                    "id": "c0",
                    "kind": "spout",
                    "units": 2,
                    "outputPerUnit": 500,
                    "maxUnits": None,
                    "children": {"c3": 1},
                },
                {
                    "id": "c1",
                    "kind": "spout",
                    "units": 1,
                    "outputPerUnit": 500,
                    "maxUnits": None,
                    "children": {"c2": 0.6, "c4": 0.4},
                },
                {
                    "id": "c2",
                    "kind": "bolt",
                    "units": 1,
                    "capacityPerUnit": 400,
                    "children": {"c3": 1 / 3, "c5": 2 / 3},
                },
                {"id": "c3", "kind": "bolt", "units": 1, "capacityPerUnit": 150, "maxUnits": 1},
                {"id": "c4", "kind": "bolt", "units": 1, "capacityPerUnit": 150, "maxUnits": 1},
                {"id": "c5", "kind": "bolt", "units": 2, "capacityPerUnit": 300},
            ]
        }
    )
    for strategy in (Strategy.STELA, Strategy.PREDICTIVE, Strategy.COMBINED):
        plan = make_plan(topology, 1, strategy, FlowModel.BACKPRESSURE)
        assert (plan.allocation, plan.unallocated) == ({}, 1), strategy
        assert plan.after == pytest.approx(plan.before) == pytest.approx(150 + 2 * 150 * 500 / 1100 * 0.4)
    exact = make_plan(topology, 1, Strategy.OPTIMAL, FlowModel.BACKPRESSURE)
    assert (exact.allocation, exact.after) == ({"c1": 1}, pytest.approx(250))
