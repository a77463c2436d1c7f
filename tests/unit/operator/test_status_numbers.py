"""The rates the status shows are given to the thousandth: enough for tuples/s, and stable enough
that a pass whose numbers did not change does not rewrite the status (each save is a merge patch)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from stormscale.planner import Topology
from tests.harness.fakes.ports import World

from .test_reconcile import LINEAR, run, world
from .test_sizing_placement import spec

#: The thesis's linear topology with every rate divided by 7: no throughput it yields is a round
#: number, so a status number given to 2 or 4 digits differs from the same number given to 3.
SEVENTHS = Topology(
    LINEAR.name,
    tuple(
        dataclasses.replace(
            c, output_per_unit=c.output_per_unit / 7, capacity_per_unit=c.capacity_per_unit / 7
        )
        for c in LINEAR.components
    ),
)


def sevenths_world() -> World:
    w = world()
    w.profiler.topology = SEVENTHS
    return w


def rates(status: dict[str, Any]) -> Iterator[tuple[str, float]]:
    """Every rate the status shows, by where it is."""
    plan = status["lastPlan"]
    yield "lastPlan.predicted.before", plan["predicted"]["before"]
    yield "lastPlan.predicted.after", plan["predicted"]["after"]
    for strategy, after in plan["alternatives"].items():
        yield f"lastPlan.alternatives.{strategy}", after
    yield "observed.throughput", status["observed"]["throughput"]
    if "sizing" in status:
        for key in ("targetRate", "sizedRate", "predicted"):
            yield f"sizing.{key}", status["sizing"][key]


def assert_thousandths(status: dict[str, Any]) -> None:
    """``x`` has at most 3 decimals (``round(x, 3) == x``) and uses the third (``round(x, 2) != x``)."""
    shown = dict(rates(status))
    assert shown, status
    wrong = {where: x for where, x in shown.items() if round(x, 3) != x or round(x, 2) == x}
    assert not wrong, wrong


@pytest.mark.parametrize(
    "scaling",
    [
        {"budget": 2},  # Manual: the budget plan, every strategy beside it
        {"budget": 1, "sizing": "MBA"},  # Manual: the sizing for the measured demand shown beside it
        {"mode": "Recommend", "targetRate": 1000 / 7},  # the sizing for a target, nothing applied
    ],
    ids=["manual", "manual-sizing", "recommend"],
)
def test_the_plans_rates_are_given_to_the_thousandth(scaling: dict[str, Any]) -> None:
    outcome = run(sevenths_world(), spec(**scaling))
    assert outcome.status["observed"]["throughput"] == round(250 / 7, 3)  # bolt 3's capacity, 35.714
    assert_thousandths(outcome.status)


def test_auto_modes_sized_plan_and_its_rates_are_given_to_the_thousandth() -> None:
    """Auto's own lastPlan (the sizing's units as the allocation, Θ before and after on the model)."""
    auto = spec(mode="Auto", budget=0, maxUnits=8, targetRate=750 / 7, sizing="Exact")
    outcome = run(sevenths_world(), auto)
    plan = outcome.status["lastPlan"]
    assert plan["chosen"] == "exact"
    assert plan["predicted"] == {"before": round(250 / 7, 3), "after": round(500 / 7, 3)}
    assert plan["alternatives"]["exact"] == round(500 / 7, 3)
    assert outcome.status["sizing"]["targetRate"] == round(750 / 7, 3)
    assert_thousandths(outcome.status)
