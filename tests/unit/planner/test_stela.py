"""Stela: ETP (the Stela paper's worked example) and serial allocation (the thesis's examples)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings

from stormscale.planner import FlowModel, Strategy, make_plan, parse_profile
from stormscale.planner.flow import drop_rates
from stormscale.planner.model import Topology
from stormscale.planner.stela import EtpMode, expected_throughput_percentage, stela_scale_in, stela_scale_out

from .conftest import thesis
from .papers import assert_trimmed_from, gain_of, stela_allocation
from .reference import profiles

FIG2_EDGES = {"1": ["2", "3"], "2": ["4"], "3": ["5", "6"], "5": ["7", "8"], "6": ["9", "10"]}
FIG2_SINK_RATES = {"4": 2000, "7": 1000, "8": 1000, "9": 200, "10": 300}


def fig2() -> Topology:
    """Stela's Fig. 2 tree (edges reconstructed from the paper), with made-up capacities."""
    components: list[dict[str, object]] = [
        {"id": "1", "kind": "bolt", "units": 1, "capacityPerUnit": 1.0, "externalInput": 1.0}
    ]
    for cid in ["2", "3", "4", "5", "6", "7", "8", "9", "10"]:
        components.append({"id": cid, "kind": "bolt", "units": 1, "capacityPerUnit": 1.0})
    for comp in components:
        kids = FIG2_EDGES.get(str(comp["id"]), [])
        if kids:
            comp["children"] = {k: 1 / len(kids) for k in kids}
    return parse_profile({"topology": "fig2", "components": components})


def test_etp_worked_example_of_stela() -> None:
    topology = fig2()
    outputs = [float(FIG2_SINK_RATES.get(c.id, 0)) for c in topology.components]
    congested = {topology.index[c] for c in ["1", "3", "4", "6"]}
    etp = dict(
        zip(
            [c.id for c in topology.components],
            expected_throughput_percentage(topology, outputs, congested),
            strict=True,
        )
    )
    expected: dict[str, Fraction | int] = {
        "1": 0,
        "2": 0,
        "3": Fraction(4, 9),
        "4": Fraction(4, 9),
        "5": Fraction(4, 9),
        "6": Fraction(1, 9),
        "7": Fraction(2, 9),
        "8": Fraction(2, 9),
        "9": Fraction(2, 45),
        "10": Fraction(1, 15),
    }
    assert etp == pytest.approx({k: float(v) for k, v in expected.items()})
    assert [round(100 * etp[c]) for c in ["1", "3", "4", "6"]] == [0, 44, 44, 11]  # the thesis's percentages


def test_etp_counts_a_sink_reached_twice_once_in_set_mode_and_twice_in_literal_mode() -> None:
    topology = parse_profile(
        {
            "components": [
                {
                    "id": "X",
                    "kind": "bolt",
                    "units": 1,
                    "capacityPerUnit": 1,
                    "externalInput": 1,
                    "children": {"A": 0.5, "B": 0.5},
                },
                {"id": "A", "kind": "bolt", "units": 1, "capacityPerUnit": 1, "children": {"O": 1}},
                {"id": "B", "kind": "bolt", "units": 1, "capacityPerUnit": 1, "children": {"O": 1}},
                {"id": "O", "kind": "bolt", "units": 1, "capacityPerUnit": 1},
            ]
        }
    )
    outputs = [0.0, 0.0, 0.0, 300.0]
    assert expected_throughput_percentage(topology, outputs, set())[0] == 1.0
    assert expected_throughput_percentage(topology, outputs, set(), EtpMode.LITERAL)[0] == 2.0


def test_etp_of_topology_17_at_step_one(t17: Topology) -> None:
    rates = drop_rates(t17, t17.units)
    congested = {v for v in range(len(t17.components)) if rates.congested(v)}
    etp = expected_throughput_percentage(t17, rates.outputs, congested)
    scaled = {t17.components[v].id: round(etp[v] * 4740, 6) for v in sorted(congested)}
    assert scaled == {"4": 0, "5": 0, "6": 1400, "8": 500, "9": 800, "10": 400, "11": 300, "16": 500}


@pytest.mark.parametrize(
    ("budget", "allocation", "gain"),
    [(1, {"6": 1}, 40), (2, {"6": 1, "9": 1}, 140), (3, {"6": 1, "9": 1, "17": 1}, 200)],
)
def test_table_6_8_stela_column(t17: Topology, budget: int, allocation: dict[str, int], gain: float) -> None:
    plan = make_plan(t17, budget, Strategy.STELA)
    assert plan.allocation == allocation
    assert plan.gain == pytest.approx(gain)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("linear", [({"3": 1}, 150), ({"2": 1, "3": 1}, 250), ({"2": 1, "3": 2}, 250)]),
        (
            "diamond",
            [
                ({"2": 1}, 100),
                ({"2": 1, "3": 1}, 300),
                ({"2": 1, "3": 2}, 300),
                ({"2": 1, "3": 2, "4": 1}, 400),
            ],
        ),
        (
            "simple-tree",
            [
                ({"4": 1}, 100),
                ({"2": 1, "4": 1}, 500),
                ({"2": 1, "3": 1, "4": 1}, 800),
                ({"2": 1, "3": 2, "4": 1}, 800),
            ],
        ),
        ("topology-10", [({"3": 1}, 1312), ({"3": 1, "5": 1}, 1332), ({"2": 1, "3": 1, "5": 1}, 2956)]),
    ],
)
def test_stela_on_the_other_thesis_tables_model_values(
    name: str, expected: list[tuple[dict[str, int], float]]
) -> None:
    topology = thesis(name)
    for budget, (allocation, gain) in enumerate(expected, start=1):
        untrimmed = stela_allocation(topology, budget)
        assert (untrimmed, gain_of(topology, untrimmed)) == (allocation, pytest.approx(gain))
        assert_trimmed_from(make_plan(topology, budget, Strategy.STELA), allocation, gain)


@settings(max_examples=60, deadline=None)
@given(profiles(max_size=12))
def test_stela_is_serial_each_budget_extends_the_previous(document: dict[str, object]) -> None:
    topology = parse_profile(document)
    picks = stela_scale_out(topology, topology.units, 6, FlowModel.DROP)
    for budget in range(1, len(picks) + 1):
        assert stela_scale_out(topology, topology.units, budget, FlowModel.DROP) == picks[:budget]


def test_stela_scale_in_gives_up_lowest_etp_units_first(t17: Topology) -> None:
    # spout fixed in this variant: only bolts with a second unit can give one up; add some first.
    grown = parse_profile(
        {
            "components": [
                {
                    "id": "s",
                    "kind": "spout",
                    "units": 1,
                    "outputPerUnit": 1000,
                    "children": {"hot": 0.9, "cold": 0.1},
                },
                {"id": "hot", "kind": "bolt", "units": 3, "capacityPerUnit": 400},
                {"id": "cold", "kind": "bolt", "units": 3, "capacityPerUnit": 400},
            ]
        }
    )
    picks = stela_scale_in(grown, grown.units, 3, FlowModel.DROP)
    assert [grown.components[v].id for v in picks] == ["cold", "cold", "hot"]  # cold's ETP 0.1 < hot's 0.9
    plan = make_plan(t17, -2, Strategy.STELA)
    assert plan.allocation == {"1": -1}
    assert plan.unallocated == 1


@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e3])
def test_etp_is_a_fraction_of_theta_whatever_the_rates_unit(scale: float) -> None:
    """ETP_i = effective_i / Θ does not depend on the rates' unit: a topology below 1 tuple/s in
    all (Θ = 0.45 at scale 1e-4) has the worked example's percentages too."""
    topology = fig2()
    outputs = [scale * float(FIG2_SINK_RATES.get(c.id, 0)) for c in topology.components]
    congested = {topology.index[c] for c in ["1", "3", "4", "6"]}
    etp = expected_throughput_percentage(topology, outputs, congested)
    assert etp[topology.index["3"]] == pytest.approx(4 / 9)
    assert etp[topology.index["6"]] == pytest.approx(1 / 9)
