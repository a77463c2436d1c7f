"""Plans that learn: saturated readings are remembered per bolt and preferred to a partly idle one."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from stormscale.operator.decision import Act, decide
from stormscale.operator.decision.learning import (
    READINGS_PER_COMPONENT,
    SATURATED_UTILIZATION,
    curve,
    learned,
    readings,
    remember,
)
from stormscale.operator.policy import Policy, parse_spec
from stormscale.operator.ports import MeasuredProfile
from stormscale.operator.status import CapacityHistory, CapacityReading, StormTopologyStatus
from stormscale.planner import Topology
from stormscale.planner.profile import ComponentConfidence, ProfileConfidence

from .test_decision import BASELINE, LINEAR, seen

AT = "2026-11-22T11:50:00Z"
#: The linear topology's components.
ALL = frozenset({"1", "2", "3", "4"})


def measured(executed: dict[str, float], topology: Topology = LINEAR, **capacities: float) -> MeasuredProfile:
    """The thesis's linear topology (spout 500/s; bolts 2, 3, 4 at 400, 250, 900 per unit) with the
    bolts' executed rates, and ``capacities`` by id (``c2=…``) replacing the profile's."""
    components = tuple(
        dataclasses.replace(c, capacity_per_unit=capacities.get(f"c{c.id}", c.capacity_per_unit))
        for c in topology.components
    )
    confidence = ProfileConfidence(
        steady=True, components={k: ComponentConfidence(executed_rate=v) for k, v in executed.items()}
    )
    return MeasuredProfile(Topology(topology.name, components), 250.0, 5.0, confidence=confidence)


def reading(
    units: int, capacity: float, utilization: float = 1.0, *, tasks: int | None = None
) -> CapacityReading:
    return CapacityReading(
        units=units,
        tasks=tasks,
        capacity_per_unit=capacity,
        utilization=utilization,
        saturated=utilization >= SATURATED_UTILIZATION,
        at=AT,
    )


def history(unit_cpu: str = "200m", **components: list[CapacityReading]) -> CapacityHistory:
    kept = CapacityHistory(components={k.removeprefix("c"): v for k, v in components.items()})
    kept.unit_cpu = unit_cpu
    return kept


def test_a_reading_is_saturated_when_its_busiest_executor_is_busy_enough() -> None:
    found = readings(measured({"2": 250.0, "3": 250.0}), AT)
    assert set(found) == {"2", "3"}  # the spout has no capacity, bolt 4 no executed rate
    assert (found["3"].utilization, found["3"].saturated) == (1.0, True)
    assert (found["2"].utilization, found["2"].saturated) == (0.625, False)
    assert found["2"].capacity_per_unit == 400.0
    assert found["2"].units == 1


def test_one_reading_is_kept_per_units_the_newest_and_a_bounded_number_per_bolt() -> None:
    kept = remember(None, {"3": reading(1, 250.0)}, "200m", ALL)
    kept = remember(kept, {"3": reading(1, 240.0)}, "200m", ALL)
    assert [r.capacity_per_unit for r in kept.components["3"]] == [240.0]  # the newer one
    for units in range(2, READINGS_PER_COMPONENT + 3):
        kept = remember(kept, {"3": reading(units, 250.0)}, "200m", ALL)
    assert len(kept.components["3"]) == READINGS_PER_COMPONENT
    assert kept.components["3"][-1].units == READINGS_PER_COMPONENT + 2  # the oldest went


def test_a_partly_idle_reading_is_not_kept() -> None:
    kept = remember(None, {"3": reading(1, 250.0), "2": reading(1, 400.0, 0.625)}, "200m", ALL)
    assert set(kept.components) == {"3"}
    assert (
        remember(kept, {"3": reading(1, 300.0, 0.5)}, "200m", ALL).components["3"][0].capacity_per_unit
        == 250.0
    )


def test_another_unit_cpu_starts_the_history_afresh() -> None:
    kept = remember(None, {"3": reading(1, 250.0)}, "200m", ALL)
    kept = remember(kept, {"2": reading(1, 400.0)}, "500m", ALL)
    assert set(kept.components) == {"2"}
    assert kept.unit_cpu == "500m"


def test_a_component_the_topology_no_longer_has_loses_its_readings() -> None:
    kept = remember(None, {"3": reading(1, 250.0), "2": reading(1, 400.0)}, "200m", ALL)
    kept = remember(kept, {"3": reading(2, 240.0)}, "200m", ALL - {"2"})
    assert set(kept.components) == {"3"}
    assert [r.units for r in kept.components["3"]] == [1, 2]


def test_the_curve_is_the_reading_at_the_units_interpolated_between_or_the_nearest() -> None:
    seen_at = [reading(1, 250.0), reading(3, 220.0)]
    assert curve(seen_at, 1)[0] == 250.0
    assert curve(seen_at, 2)[0] == pytest.approx(235.0)  # 250 + (220 − 250)·(2 − 1)/(3 − 1)
    assert curve(seen_at, 5)[0] == 220.0
    assert "between saturated readings at 1 and 3 units" in curve(seen_at, 2)[1]


def test_a_bolt_with_room_is_planned_on_its_saturated_reading_and_never_below_what_it_executes() -> None:
    now = measured({"2": 250.0, "3": 250.0})  # bolt 2 read 400/unit at 62.5 % busy; 3 saturated
    planned, used = learned(history(c2=[reading(1, 300.0)], c3=[reading(1, 200.0)]), now)
    capacities = {c.id: c.capacity_per_unit for c in planned.topology.components}
    assert capacities["2"] == 300.0  # the saturated reading, not the partly idle one
    assert capacities["3"] == 250.0  # saturated now: the window's reading stands
    assert set(used) == {"2"}
    assert "saturated at 1 unit(s)" in used["2"]
    low, _ = learned(history(c2=[reading(1, 200.0)]), now)  # below the 250/s bolt 2 executes now
    assert {c.id: c.capacity_per_unit for c in low.topology.components}["2"] == 250.0


def test_readings_of_another_task_count_or_with_room_teach_nothing() -> None:
    now = measured({"2": 250.0})
    for kept in (history(c2=[reading(1, 300.0, tasks=8)]), history(c2=[reading(1, 300.0, 0.5)]), None):
        planned, used = learned(kept, now)
        assert planned is now
        assert used == {}


def policy(budget: int) -> Policy:
    spec: dict[str, Any] = {
        "topologyName": "linear",
        "nimbus": {"host": "nimbus"},
        "workers": {"deployment": "linear-workers", "slotsPerPod": 1},
        "metrics": {"prometheus": "http://prometheus:9090"},
        "scaling": {"mode": "Manual", "budget": budget, "flowModel": "Drop", "maxUnits": 6},
    }
    return parse_spec(spec)


def test_the_decision_remembers_each_profile_and_plans_the_next_budget_on_what_it_learned() -> None:
    """Bolt 2 once ran saturated at 260/s; now it reads 400 at 62.5 % busy. One unit more goes to the
    saturated bolt 3 (250 → 500/s), and the prediction is bolt 2's learned 260, not the 400 read."""
    status = StormTopologyStatus(baseline=BASELINE)
    status.unit_cpu = "200m"
    status.capacity_history = history(c2=[reading(1, 260.0)])
    tasks_free = Topology(LINEAR.name, tuple(dataclasses.replace(c, tasks=None) for c in LINEAR.components))
    now = measured({"2": 250.0, "3": 250.0, "4": 250.0}, tasks_free)
    decision = decide(seen(measured=now), policy(1), status)
    assert decision.act is Act.APPLY
    assert decision.intent is not None
    assert decision.intent.units["3"] == 2
    plan, kept = decision.status.last_plan, decision.status.capacity_history
    assert plan is not None
    assert kept is not None
    assert plan.predicted.after == pytest.approx(260.0)
    assert set(kept.in_use) == {"2"}
    assert {r.units: r.saturated for r in kept.components["3"]} == {1: True}  # this window's, remembered
    assert [r.capacity_per_unit for r in kept.components["2"]] == [260.0]  # the partly idle 400 is not kept
    assert status.capacity_history is not None
    assert status.capacity_history.in_use == {}
