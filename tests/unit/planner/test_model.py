"""The topology model's helpers: one way to add an allocation to units; a bolt's capacity by its tasks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner import Topology, add_allocation
from stormscale.planner.model import Component, Kind, allocation_between, natural_key


def test_an_allocation_keyed_by_id_or_by_index_gives_the_same_units(t17: Topology) -> None:
    by_id = {"1": 1, "16": 3, "4": -1}
    by_index = {t17.index[cid]: n for cid, n in by_id.items()}
    after = add_allocation(t17, t17.units, by_id)
    assert add_allocation(t17, t17.units, by_index) == after
    assert allocation_between(t17, t17.units, after) == {"1": 1, "4": -1, "16": 3}


def test_components_left_out_keep_their_units(t17: Topology) -> None:
    assert add_allocation(t17, t17.units, {}) == t17.units
    after = add_allocation(t17, t17.units, {0: 2})
    assert after[0] == t17.units[0] + 2
    assert after[1:] == t17.units[1:]


def bolt(tasks: int | None, per_unit: float = 10.0) -> Component:
    return Component(id="b", kind=Kind.BOLT, units=1, capacity_per_unit=per_unit, tasks=tasks)


@pytest.mark.parametrize(
    ("tasks", "capacities"),
    [
        (None, [0, 10, 20, 30, 40, 50]),
        (4, [0, 10, 20, 20, 40, 40]),  # 3 executors over 4 tasks: one runs 2 and takes half the input
        (12, [0, 10, 20, 30, 40, 40]),  # 5 executors: runs of 3, 3, 2, 2, 2 → 12/3 = 4 units' pace
        (5, [0, 10, 50 / 3, 50 / 2, 50 / 2, 50]),
    ],
)
def test_a_bolts_capacity_follows_its_busiest_executors_share_of_the_tasks(
    tasks: int | None, capacities: list[float]
) -> None:
    assert [bolt(tasks).capacity(u) for u in range(6)] == pytest.approx(capacities)


@pytest.mark.parametrize(
    ("tasks", "rate", "units"),
    [
        (None, 25.0, 3),
        (None, 20.0 + 1e-12, 2),  # equality within float noise is enough
        (4, 25.0, 4),  # 3 units take 20/s: the next unit that helps is the 4th
        (4, 20.0, 2),
        (4, 45.0, 5),  # more than the tasks allow: the caller's bound refuses it
        (12, 31.0, 4),
        (12, 0.0, 0),
    ],
)
def test_units_for_a_rate_are_the_fewest_whose_capacity_takes_it(
    tasks: int | None, rate: float, units: int
) -> None:
    assert bolt(tasks).units_for(rate) == units


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=60),
    st.floats(min_value=0.5, max_value=50.0),
    st.floats(min_value=0.0, max_value=3000.0),
)
def test_units_for_agrees_with_counting_up_the_units(tasks: int, per_unit: float, rate: float) -> None:
    component = bolt(tasks, per_unit)
    enough = [u for u in range(tasks + 1) if component.capacity(u) >= rate - 1e-9 * max(per_unit, rate)]
    found = component.units_for(rate)
    assert found == enough[0] if enough else found > tasks  # none: beyond what the tasks allow


def test_ids_sort_as_people_read_them() -> None:
    ids = ["10", "9", "b", "a10", "a2", "a", "2"]
    assert sorted(ids, key=natural_key) == ["2", "9", "10", "a", "a2", "a10", "b"]
