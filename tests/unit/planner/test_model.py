"""The topology model's helpers: one way to add an allocation to units."""

from __future__ import annotations

from stormscale.planner import Topology, add_allocation
from stormscale.planner.model import allocation_between


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
