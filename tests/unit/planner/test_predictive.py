"""The predictive allocator and the combined choice: the thesis's examples and regression curves."""

from __future__ import annotations

import pytest

from stormscale.planner import FlowModel, Strategy, make_plan, parse_profile
from stormscale.planner.model import Topology
from stormscale.planner.predictive import candidates, predictive_alloc

from .conftest import thesis
from .papers import assert_trimmed_from, gain_of, predictive_allocation


def named(topology: Topology, extra: dict[int, int]) -> dict[str, int]:
    return {topology.components[v].id: n for v, n in extra.items() if n}


def test_topology_17_candidate_list(t17: Topology) -> None:
    found = {
        (t17.components[c.head].id, c.r): (named(t17, dict(c.extra)), c.gain, c.count)
        for c in candidates(t17, t17.units, 6, FlowModel.DROP)
    }
    assert found[("16", 1)] == ({"16": 1}, pytest.approx(500), 1)
    assert found[("16", 2)] == ({"16": 2}, pytest.approx(700), 2)
    assert ("16", 3) not in found  # decongested at r = 2 (1500 ≥ 1200)
    assert found[("11", 1)] == ({"11": 1}, pytest.approx(300), 1)
    assert found[("9", 1)] == ({"9": 1, "16": 2, "17": 1}, pytest.approx(1100), 4)
    assert found[("4", 1)] == ({"4": 1, "9": 1, "16": 3, "17": 1}, pytest.approx(1700), 6)
    assert found[("10", 1)] == ({"10": 1}, pytest.approx(200), 1)
    assert found[("5", 1)] == ({"5": 1, "10": 1, "11": 2}, pytest.approx(620), 4)
    assert found[("8", 1)] == ({"8": 1}, pytest.approx(60), 1)
    assert found[("6", 1)] == ({"6": 1}, pytest.approx(40), 1)


@pytest.mark.parametrize(
    ("budget", "allocation", "gain"),
    [(1, {"16": 1}, 500), (2, {"16": 2}, 700), (3, {"11": 1, "16": 2}, 1000)],
)
def test_table_6_8_our_column_and_combined(
    t17: Topology, budget: int, allocation: dict[str, int], gain: float
) -> None:
    ours = make_plan(t17, budget, Strategy.PREDICTIVE)
    assert (ours.allocation, ours.gain) == (allocation, pytest.approx(gain))
    combined = make_plan(t17, budget, Strategy.COMBINED)
    assert (combined.allocation, combined.chosen) == (allocation, Strategy.PREDICTIVE)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("linear", [({"3": 1}, 150), ({"2": 1, "3": 1}, 250), ({"2": 1, "3": 2}, 250)]),
        (
            "diamond",
            [({"3": 1}, 200), ({"3": 2}, 300), ({"2": 1, "3": 2}, 300), ({"2": 1, "3": 2, "4": 1}, 400)],
        ),
        (
            "simple-tree",
            [
                ({"3": 1}, 300),
                ({"3": 1, "4": 1}, 400),
                ({"2": 1, "3": 1, "4": 1}, 800),
                ({"2": 1, "3": 2, "4": 1}, 800),
            ],
        ),
        ("topology-10", [({"4": 1}, 1020), ({"4": 1, "5": 1}, 1040), ({"3": 1, "4": 1, "7": 1}, 2800)]),
    ],
)
def test_ours_on_the_other_thesis_tables_model_values(
    name: str, expected: list[tuple[dict[str, int], float]]
) -> None:
    topology = thesis(name)
    for budget, (allocation, gain) in enumerate(expected, start=1):
        untrimmed = predictive_allocation(topology, budget)
        assert (untrimmed, gain_of(topology, untrimmed)) == (allocation, pytest.approx(gain))
        assert_trimmed_from(make_plan(topology, budget, Strategy.PREDICTIVE), allocation, gain)


def test_diamond_joint_check_rejects_a_set_that_leaves_the_shared_sink_congested() -> None:
    diamond = thesis("diamond")
    decongesting = predictive_alloc(diamond, diamond.units, 3, FlowModel.DROP).extra
    assert named(diamond, decongesting) == {"3": 2}  # (2,1) with (3,2) needs 4: rejected (joint check)


def test_simple_tree_combined_picks_stela_at_two_units() -> None:
    plan = make_plan(thesis("simple-tree"), 2, Strategy.COMBINED)
    assert (plan.allocation, plan.gain, plan.chosen) == ({"2": 1, "4": 1}, pytest.approx(500), Strategy.STELA)


def test_batch_is_not_serial_on_topology_10(t10: Topology) -> None:
    two = make_plan(t10, 2, Strategy.PREDICTIVE).allocation
    three = make_plan(t10, 3, Strategy.PREDICTIVE).allocation
    assert two == {"4": 1, "5": 1}
    assert three == {"3": 1, "4": 1, "7": 1}


CURVES = {  # the thesis's curves: ΔΘ for budgets 1..10 (S = Stela, O = ours, C = combined)
    "topology-17": {
        "S": [40, 140, 200, 440, 500, 1000, 1500, 1800, 2000, 2060],
        "O": [500, 700, 1000, 1200, 1400, 1600, 2000, 2200, 2260, 2320],
        "C": [500, 700, 1000, 1200, 1400, 1600, 2000, 2200, 2260, 2320],
    },
    "topology-10": {
        "S": [1312, 1332, 2956, 3424, 4444, 5160, 10680, 11600, 11640, 12776],
        "O": [1020, 1040, 2800, 2820, 4444, 5160, 10680, 11600, 11880, 11920],
        "C": [1312, 1332, 2956, 3424, 4444, 5160, 10680, 11600, 11880, 12776],
    },
}
SERIES = {"S": Strategy.STELA, "O": Strategy.PREDICTIVE, "C": Strategy.COMBINED}


@pytest.mark.parametrize("name", sorted(CURVES))
@pytest.mark.parametrize("series", sorted(SERIES))
def test_reference_curves_budgets_1_to_10(name: str, series: str) -> None:
    topology = thesis(name)
    gains = [make_plan(topology, n, SERIES[series]).gain for n in range(1, 11)]
    assert gains == pytest.approx(CURVES[name][series], abs=1e-6)


def test_combined_beats_stela_on_topology_17_by_the_reference_margins(t17: Topology) -> None:
    margins = [
        make_plan(t17, n, Strategy.COMBINED).gain - make_plan(t17, n, Strategy.STELA).gain
        for n in range(1, 11)
    ]
    assert margins == pytest.approx([460, 560, 800, 760, 900, 600, 500, 400, 260, 260])  # TC-13


def chain(spout: tuple[int, float], *bolts: tuple[int, float, float]) -> Topology:
    """A linear topology: the spout's (units, output per unit), each bolt's (units, capacity, selectivity)."""
    components: list[dict[str, object]] = [
        {
            "id": "1",
            "kind": "spout",
            "units": spout[0],
            "outputPerUnit": spout[1],
            "children": {"2": 1},
            "maxUnits": None,
        }
    ]
    for i, (units, capacity, selectivity) in enumerate(bolts, start=2):
        children = {str(i + 1): 1} if i <= len(bolts) else {}
        components.append(
            {
                "id": str(i),
                "kind": "bolt",
                "units": units,
                "capacityPerUnit": capacity,
                "selectivity": selectivity,
                "children": children,
            }
        )
    return parse_profile({"topology": "chain", "components": components})


def test_a_spout_head_sizes_its_subtree_for_its_grown_output() -> None:
    # No bolt saturated (100 < 150), so the spout is the head; at 2 units it emits 200/s, which the
    # bolt absorbs only with a second unit (2 × 150 ≥ 200).
    topology = chain((1, 100.0), (1, 150.0, 1.0))
    found = {
        c.r: named(topology, dict(c.extra)) for c in candidates(topology, topology.units, 2, FlowModel.DROP)
    }
    assert found[1] == {"1": 1, "2": 1}


def test_the_residual_rounds_add_to_what_earlier_rounds_gave() -> None:
    # Spout 200/s; bolt 2 congested (cap 100); bolt 3 cap 150; bolt 4 cap 50, selectivity 0.5.
    # Greedy: {4: 1} (bolt 4 absorbs 100). Round 1: bolt 2 +1, its subtree's allocator +1 on bolt 4
    # (now 150 in): {2: 1, 4: 2}. Round 2: bolt 3 congested (200 > 150): {2: 1, 3: 1, 4: 2}.
    topology = chain((2, 100.0), (1, 100.0, 1.0), (1, 150.0, 1.0), (1, 50.0, 0.5))
    untrimmed = predictive_allocation(topology, 4)
    assert (untrimmed, gain_of(topology, untrimmed)) == ({"2": 1, "3": 1, "4": 2}, pytest.approx(50))
    assert_trimmed_from(make_plan(topology, 4, Strategy.PREDICTIVE), untrimmed, 50)


def test_a_residual_unit_goes_to_the_head_whose_one_unit_decongestion_costs_least_then_gains_most() -> None:
    """Spout 1,000/s split between bolts 2 and 3 (100/s each, congested). One unit fits no candidate
    with its subtree (each needs 2), so the residual round picks a head by its r = 1 decongestion:
    2 needs {2, 5} and 3 needs {3, 4}, 2 units each; the tie goes to the larger ΔΘ (3's +400 against
    2's +200), not to the lower id. Bolt 3 gets the unit: 600 → 840/s (+240; r = 2 would have picked
    2, +100)."""
    topology = parse_profile(
        {
            "components": [
                {
                    "id": "1",
                    "kind": "spout",
                    "units": 2,
                    "outputPerUnit": 500,
                    "children": {"2": 0.5, "3": 0.5},
                },
                {"id": "2", "kind": "bolt", "units": 1, "capacityPerUnit": 100, "children": {"5": 1}},
                {"id": "3", "kind": "bolt", "units": 1, "capacityPerUnit": 100, "children": {"4": 1}},
                {
                    "id": "4",
                    "kind": "bolt",
                    "units": 2,
                    "capacityPerUnit": 80,
                    "selectivity": 2,
                    "children": {"6": 1},
                },
                {"id": "5", "kind": "bolt", "units": 1, "capacityPerUnit": 150, "selectivity": 2},
                {"id": "6", "kind": "bolt", "units": 1, "capacityPerUnit": 400, "selectivity": 2},
            ]
        }
    )
    plan = make_plan(topology, 1, Strategy.PREDICTIVE)
    assert (plan.allocation, plan.before, plan.gain) == ({"3": 1}, pytest.approx(600), pytest.approx(240))


def test_a_residual_head_is_judged_by_what_its_next_unit_needs_not_by_its_current_state() -> None:
    """Spout 1,000/s split between bolt 2 (150/s) → 7 and bolt 3 (2 × 200/s, selectivity ½) → 4, 5.
    One unit fits no candidate with its subtree. With a unit, 2 would send 300/s to 7 (160/s: +2
    units), 3 would send 125/s to 4 (100/s: +1): 3 needs fewer and gets it, 675 → 725/s (+50). Judged
    at r = 0 both need nothing, and the lower id, 2, would gain 5."""
    topology = parse_profile(
        {
            "components": [
                {
                    "id": "1",
                    "kind": "spout",
                    "units": 2,
                    "outputPerUnit": 500,
                    "children": {"2": 0.5, "3": 0.5},
                },
                {"id": "2", "kind": "bolt", "units": 1, "capacityPerUnit": 150, "children": {"7": 1}},
                {
                    "id": "3",
                    "kind": "bolt",
                    "units": 2,
                    "capacityPerUnit": 200,
                    "selectivity": 0.5,
                    "children": {"4": 0.5, "5": 0.5},
                },
                {
                    "id": "4",
                    "kind": "bolt",
                    "units": 2,
                    "capacityPerUnit": 50,
                    "selectivity": 2,
                    "children": {"6": 1},
                },
                {"id": "5", "kind": "bolt", "units": 2, "capacityPerUnit": 80, "selectivity": 2},
                {"id": "6", "kind": "bolt", "units": 2, "capacityPerUnit": 250, "selectivity": 2},
                {"id": "7", "kind": "bolt", "units": 2, "capacityPerUnit": 80, "selectivity": 0.5},
            ]
        }
    )
    plan = make_plan(topology, 1, Strategy.PREDICTIVE)
    assert (plan.allocation, plan.before, plan.gain) == ({"3": 1}, pytest.approx(675), pytest.approx(50))
