"""Shukla & Simmhan: the performance model 𝒫_i and GetRate ."""

from __future__ import annotations

import pytest

from stormscale.planner import parse_profile
from stormscale.planner.sizing.performance import (
    ModelPoint,
    PerformanceModel,
    TaskGraph,
    ceil_slots,
    models_from_dict,
)

from .fixture import MODELS, star


def test_derived_functions_of_the_table_model() -> None:
    t = MODELS["T"]
    assert t.single_rate == 3  # ω̄_T
    assert t.peak_rate == 40  # ω̂_T (40, not the paper's "60" in its text)
    assert t.peak_threads == 60  # τ̂_T
    assert t.threads_for(20) == 40  # 𝒯_T(20)
    assert t.threads_for(10) == 9  # "9 threads support 10"
    assert t.threads_for(0) == 0


def test_interpolation_is_piecewise_linear_and_clamped() -> None:
    t = MODELS["T"]
    assert t.rate(3) == pytest.approx(6.0)  # between (2, 5) and (4, 7)
    assert t.rate(0) == 0.0
    assert t.rate(500) == 35  # clamped to the last point
    b = MODELS["B"]
    assert b.rate(15) == pytest.approx(7.5)
    assert b.cpu(24) == pytest.approx(0.225)


def test_threads_for_takes_the_smallest_measured_count_or_interpolates() -> None:
    t = MODELS["T"]
    assert t.threads_for(6) == 4  # the grid: the next measured τ ("over-estimate")
    assert t.threads_for(6, interpolate=True) == 3
    with pytest.raises(ValueError, match="above the peak rate"):
        t.threads_for(41)


def test_peak_ties_go_to_the_fewest_threads() -> None:
    model = PerformanceModel(
        (ModelPoint(1, 5, 0.1, 0.1), ModelPoint(2, 9, 0.2, 0.2), ModelPoint(4, 9, 0.3, 0.3))
    )
    assert (model.peak_rate, model.peak_threads) == (9, 2)


def test_loads_from_a_dict_and_back() -> None:
    document = {"points": [{"threads": 1, "peakRate": 310, "cpu": 0.85, "memory": 0.2298}]}
    model = PerformanceModel.from_dict(document)
    assert model.points == (ModelPoint(1, 310.0, 0.85, 0.2298),)
    assert PerformanceModel.from_dict(model.to_dict()) == model
    assert models_from_dict({"X": document})["X"] == model


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, "points: must be a list"),
        ({"points": []}, "at least one"),
        ({"points": [{"threads": 1.5, "peakRate": 1, "cpu": 0, "memory": 0}]}, r"points\[0\].threads"),
        ({"points": [{"threads": 1, "peakRate": 0, "cpu": 0, "memory": 0}]}, r"points\[0\].peakRate"),
        ({"points": [{"threads": 1, "peakRate": 1, "cpu": -1, "memory": 0}]}, r"points\[0\].cpu"),
        ({"points": [{"threads": 1, "peakRate": 1, "cpu": 0}]}, r"points\[0\].memory"),
        (
            {
                "points": [
                    {"threads": 2, "peakRate": 1, "cpu": 0, "memory": 0},
                    {"threads": 2, "peakRate": 1, "cpu": 0, "memory": 0},
                ]
            },
            r"points\[1\].threads",
        ),
    ],
)
def test_bad_models_name_the_field(document: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PerformanceModel.from_dict(document)


def test_models_from_dict_names_the_task() -> None:
    with pytest.raises(ValueError, match=r"^B\.points"):
        models_from_dict({"B": {"points": "no"}})


def test_get_rate_on_the_star() -> None:
    """a, b = Ω; hub = 2Ω; d, e = 2Ω each (duplicate semantics); the sink receives 4Ω."""
    rates = star().input_rates(100)
    assert rates == {"src": 100, "B": 100, "T": 100, "X": 200, "P": 200, "F": 200, "sink": 400}


def test_graph_rejects_cycles_and_unknown_tasks() -> None:
    with pytest.raises(ValueError, match="cycle"):
        TaskGraph(("a", "b"), (("a", "b", 1.0), ("b", "a", 1.0)))
    with pytest.raises(ValueError, match="unknown task 'c'"):
        TaskGraph(("a",), (("a", "c", 1.0),))


def test_graph_from_a_profile_multiplies_selectivity_and_fraction() -> None:
    topology = parse_profile(
        {
            "topology": "t",
            "components": [
                {"id": "s", "kind": "spout", "units": 1, "outputPerUnit": 5, "children": {"a": 1.0}},
                {
                    "id": "a",
                    "kind": "bolt",
                    "units": 1,
                    "capacityPerUnit": 1,
                    "selectivity": 2,
                    "children": {"b": 0.5, "c": 0.5},
                },
                {"id": "b", "kind": "bolt", "units": 1, "capacityPerUnit": 1},
                {"id": "c", "kind": "bolt", "units": 1, "capacityPerUnit": 1},
            ],
        }
    )
    assert TaskGraph.from_topology(topology).input_rates(10) == {"s": 10, "a": 10, "b": 10, "c": 10}


def test_ceil_forgives_float_drift() -> None:
    assert ceil_slots(7.0000000001) == 7
    assert ceil_slots(7.01) == 8
    assert ceil_slots(0.0) == 0
