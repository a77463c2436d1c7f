"""The data behind the plots: throughput curves, the layered layout, utilization and
bottlenecks, the checks of the plots' inputs and the words in the figures. No matplotlib here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stormscale.planner import FlowModel, Strategy, Topology, make_plan, parse_profile
from stormscale.planner.plots.curves import plot_budgets, throughput_curves
from stormscale.planner.plots.draw import node_label, percent, plan_moves
from stormscale.planner.plots.graph import (
    MAX_GRAPH_COMPONENTS,
    bottlenecks,
    graph_view,
    layered_layout,
    longest_path_layers,
    utilization,
)
from stormscale.planner.plots.inputs import (
    MeasuredPoint,
    PlotInputError,
    output_format,
    parse_measured,
    parse_plan,
)

from .conftest import PROFILES, thesis

THESIS = sorted(p.stem.removeprefix("thesis-") for p in PROFILES.glob("thesis-*.json"))


def bolt(cid: str, capacity: float, children: dict[str, float] | None = None) -> dict[str, Any]:
    return {"id": cid, "kind": "bolt", "units": 1, "capacityPerUnit": capacity, "children": children or {}}


def spout(cid: str, children: dict[str, float], rate: float = 100.0, **extra: Any) -> dict[str, Any]:
    return {"id": cid, "kind": "spout", "units": 1, "outputPerUnit": rate, "children": children, **extra}


def topology(*components: dict[str, Any]) -> Topology:
    return parse_profile({"topology": "t", "components": list(components)})


# --- throughput against budget ------------------------------------------------------------------


@pytest.mark.parametrize("model", list(FlowModel))
@pytest.mark.parametrize("name", THESIS)
def test_each_curve_is_its_strategys_plan_after_at_every_budget(name: str, model: FlowModel) -> None:
    t = thesis(name)
    curves = throughput_curves(t, 4, model)
    assert [c.strategy for c in curves] == list(Strategy)
    for curve in curves:
        assert curve.missing is None
        assert curve.budgets == (0, 1, 2, 3, 4)
        assert curve.throughput == tuple(make_plan(t, b, curve.strategy, model).after for b in range(5))


def test_the_linear_curves_are_table_6_2_at_model_values() -> None:
    """The thesis's example: every strategy gains 150, 250, 250 (Θ is capped by the spout's 500)."""
    for curve in throughput_curves(thesis("linear"), 3, FlowModel.DROP):
        assert curve.throughput == (250.0, 400.0, 500.0, 500.0), curve.strategy


def test_the_diamond_curves_show_stela_below_predictive_at_one_unit() -> None:
    """The thesis's example: Stela's tie goes to 2 (+100), predictive takes 3 (+200). The exact program is the
    ceiling: from 3 units on it also grows the spout (``maxUnits: null``), e.g. {1:+1, 2:+1, 4:+1} → 1,000."""
    curves = {c.strategy: c.throughput for c in throughput_curves(thesis("diamond"), 4, FlowModel.DROP)}
    assert curves[Strategy.STELA] == (600.0, 700.0, 900.0, 900.0, 1000.0)
    assert curves[Strategy.PREDICTIVE] == (600.0, 800.0, 900.0, 900.0, 1000.0)
    assert curves[Strategy.COMBINED] == curves[Strategy.PREDICTIVE]
    assert curves[Strategy.OPTIMAL] == (600.0, 800.0, 900.0, 1000.0, 1200.0)


def test_the_optimal_curve_is_the_ceiling(t17: Topology) -> None:
    curves = {c.strategy: c.throughput for c in throughput_curves(t17, 6, FlowModel.BACKPRESSURE)}
    for strategy, values in curves.items():
        assert all(v <= o + 1e-9 for v, o in zip(values, curves[Strategy.OPTIMAL], strict=True)), strategy


def test_a_scale_in_plots_from_the_budget_up_to_zero() -> None:
    assert plot_budgets(-2) == (-2, -1, 0)
    assert plot_budgets(0) == (0,)
    curves = throughput_curves(thesis("linear"), -1, FlowModel.DROP)
    assert all(c.budgets == (-1, 0) for c in curves)


def test_too_many_budget_steps_is_one_line() -> None:
    with pytest.raises(PlotInputError, match=r"--plot: at most ±100 budget steps, got --budget 101"):
        plot_budgets(101)


def test_where_the_exact_program_cannot_plan_its_curve_is_left_out_and_says_why() -> None:
    """13 scalable spouts: 2¹³ combinations of their units at budget 1, beyond the program's 4,096."""
    spouts = [spout(f"s{i}", {"b": 1.0}, maxUnits=None) for i in range(13)]
    t = topology(*spouts, bolt("b", 500.0))
    curves = {c.strategy: c for c in throughput_curves(t, 2, FlowModel.BACKPRESSURE)}
    optimal = curves.pop(Strategy.OPTIMAL)
    assert optimal.budgets == optimal.throughput == ()
    assert optimal.missing is not None
    assert "combinations of scalable spout units" in optimal.missing
    assert all(c.missing is None and len(c.throughput) == 3 for c in curves.values())


# --- the layered layout -------------------------------------------------------------------------


def test_the_diamond_has_three_layers() -> None:
    layout = layered_layout(thesis("diamond"))
    assert layout.layers == (("1",), ("2", "3"), ("4",))
    assert layout.positions == {"1": (0.0, 0.0), "2": (1.0, 0.5), "3": (1.0, -0.5), "4": (2.0, 0.0)}
    assert layout.crossings == 0
    assert layout.routes[("1", "2")] == ((0.0, 0.0), (1.0, 0.5))


def test_topology_10_is_a_tree_of_three_layers_in_id_order(t10: Topology) -> None:
    layout = layered_layout(t10)
    assert layout.layers == (("1",), ("2", "3", "4"), ("5", "6", "7", "8", "9", "10"))
    assert layout.crossings == 0


def test_topology_17_sinks_sit_below_their_parents(t17: Topology) -> None:
    layout = layered_layout(t17)
    assert layout.layers == (
        ("1",),
        ("2", "3", "4"),
        ("5", "6", "7", "8", "9"),
        ("10", "11", "12", "13", "14", "15", "16", "17"),
    )
    assert layout.crossings == 0


def test_layers_are_the_longest_path_from_the_sources() -> None:
    """s → a → b and s → b: b is two layers down; the long edge bends in the layer it passes."""
    t = topology(spout("s", {"a": 0.5, "b": 0.5}), bolt("a", 10.0, {"b": 1.0}), bolt("b", 10.0))
    assert longest_path_layers(t) == (0, 1, 2)
    layout = layered_layout(t)
    assert layout.layers == (("s",), ("a",), ("b",))
    route = layout.routes[("s", "b")]
    assert [x for x, _ in route] == [0.0, 1.0, 2.0]
    assert route[1] != layout.positions["a"]  # the bend has its own place beside a


def test_the_barycentre_pass_uncrosses_edges_that_id_order_crosses() -> None:
    """By id, layer 2 is c1, c2 while b1 → c2 and b2 → c1 cross; ordered by parents, they do not."""
    t = topology(
        spout("s", {"b1": 0.5, "b2": 0.5}),
        bolt("b1", 10.0, {"c2": 1.0}),
        bolt("b2", 10.0, {"c1": 1.0}),
        bolt("c1", 10.0),
        bolt("c2", 10.0),
    )
    layout = layered_layout(t)
    assert layout.layers == (("s",), ("b1", "b2"), ("c2", "c1"))
    assert layout.crossings == 0


def test_a_graph_too_large_to_read_is_refused() -> None:
    sinks = [bolt(f"b{i}", 10.0) for i in range(MAX_GRAPH_COMPONENTS)]
    t = topology(spout("s", {s["id"]: 1 / len(sinks) for s in sinks}), *sinks)
    with pytest.raises(PlotInputError, match="at most 200 components can be drawn readably"):
        layered_layout(t)


# --- utilization and bottlenecks ----------------------------------------------------------------


def test_linear_utilization_is_table_6_1_input_over_max_rate() -> None:
    """Table 6.1: inputs 500, 400, 250 against MaxProcRate 400, 250, 900; 2 and 3 are congested."""
    t = thesis("linear")
    u = utilization(t, t.units, FlowModel.DROP)
    assert u == (None, 500 / 400, 400 / 250, 250 / 900)
    assert bottlenecks(u) == {t.index["2"], t.index["3"]}


def test_under_backpressure_demand_is_what_every_source_offers() -> None:
    """Nothing is dropped at 2, so 3's demand is the spout's whole 500/s: 200 %, the bottleneck."""
    t = thesis("linear")
    u = utilization(t, t.units, FlowModel.BACKPRESSURE)
    assert u == (None, 500 / 400, 500 / 250, 500 / 900)
    assert bottlenecks(u) == {t.index["2"], t.index["3"]}


def test_without_congestion_the_most_utilized_bolt_is_the_bottleneck() -> None:
    """After Table 6.2's plan {2:+1, 3:+2}: 500/800, 500/750, 500/900: 3 is the closest to its capacity."""
    t = thesis("linear")
    view = graph_view(t, FlowModel.DROP, {"2": 1, "3": 2})
    nodes = {n.id: n for n in view.nodes}
    assert [n.id for n in view.nodes if n.bottleneck] == ["3"]
    assert nodes["3"].utilization_after == pytest.approx(500 / 750)
    assert nodes["3"].utilization_before == 400 / 250
    assert (nodes["3"].units_before, nodes["3"].units_after) == (1, 3)
    assert (view.throughput_before, view.throughput_after) == (250.0, 500.0)


def test_bottlenecks_of_ties_and_of_nothing_flowing() -> None:
    assert bottlenecks([None, 0.5, 0.5, 0.25]) == {1, 2}
    assert bottlenecks([None, 0.0, 0.0]) == frozenset()
    assert bottlenecks([None]) == frozenset()
    assert bottlenecks([None, 1.0, 0.2]) == {1}  # saturated counts


def test_a_bolt_without_units_under_demand_is_infinitely_utilized() -> None:
    t = topology(spout("s", {"b": 1.0}), {**bolt("b", 10.0), "units": 0})
    assert utilization(t, t.units, FlowModel.DROP) == (None, float("inf"))


def test_the_graph_view_labels_edges_with_fractions_and_spouts_with_their_rates(t17: Topology) -> None:
    view = graph_view(t17, FlowModel.BACKPRESSURE)
    assert view.allocation is None
    fractions = {(e.source, e.target): e.fraction for e in view.edges}
    assert fractions[("1", "2")] == 0.4
    assert fractions[("4", "9")] == 1
    source = next(n for n in view.nodes if n.id == "1")
    assert source.utilization_after is None
    assert source.offered == 2000.0
    assert source.emitted < source.offered  # throttled by backpressure
    assert all(n.units_before == n.units_after for n in view.nodes)


# --- inputs -------------------------------------------------------------------------------------


def test_measured_points_are_a_list_or_a_reports_steps() -> None:
    assert parse_measured([{"budget": 3, "throughput": 37.5}, {"budget": 0, "throughput": 12}]) == (
        MeasuredPoint(0, 12.0),
        MeasuredPoint(3, 37.5),
    )
    report = {"scenario": "linear", "steps": [{"budget": 0, "measured": 12.1, "allocation": {}}]}
    assert parse_measured(report) == (MeasuredPoint(0, 12.1),)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"budget": 1}, "m.json: must be a list of {budget, throughput} points"),
        ([7], "m.json: [0]: must be an object with budget and throughput"),
        ([{"budget": 1.5, "throughput": 3}], "m.json: [0].budget: must be an integer within ±100"),
        ([{"budget": True, "throughput": 3}], "m.json: [0].budget: must be an integer"),
        ([{"budget": 1, "throughput": -1}], "m.json: [0].throughput: must be a finite number ≥ 0"),
        ([{"budget": 1, "throughput": "3"}], "m.json: [0].throughput: must be a finite number ≥ 0"),
        ([{"budget": 1, "throughput": 10**400}], "m.json: [0].throughput: must be a finite number ≥ 0"),
        ({"steps": [{"budget": 1}]}, "m.json: steps[0].measured: must be a finite number ≥ 0"),
    ],
)
def test_bad_measured_points_name_the_field(document: Any, message: str) -> None:
    with pytest.raises(PlotInputError) as caught:
        parse_measured(document, "m.json")
    assert str(caught.value).startswith(message)


def test_a_plan_gives_its_allocation_and_flow_model() -> None:
    t = thesis("linear")
    plan = make_plan(t, 3, Strategy.COMBINED, FlowModel.BACKPRESSURE).to_json()
    overlay = parse_plan(plan, t)
    assert overlay.allocation == {
        "2": 1,
        "3": 1,
    }  # the thesis's {"2": 1, "3": 2} less a unit that adds nothing
    assert overlay.flow_model is FlowModel.BACKPRESSURE


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "p.json: must be a plan object with an allocation"),
        ({"allocation": {}, "formatVersion": 2}, "p.json: formatVersion: a sizing plan"),
        ({"allocation": {}, "topology": "other"}, "p.json: topology: the plan is for 'other'"),
        ({"allocation": []}, "p.json: allocation: must be an object"),
        ({"allocation": {"9": 1}}, "p.json: allocation.9: unknown component"),
        ({"allocation": {"2": 1.5}}, "p.json: allocation.2: must be an integer"),
        ({"allocation": {"2": 10**400}}, "p.json: allocation.2: must be an integer"),
        ({"allocation": {"2": -2}}, "p.json: allocation.2: leaves the component below 0 units"),
        ({"allocation": {}, "flowModel": "magic"}, "p.json: flowModel: must be one of drop, backpressure"),
    ],
)
def test_bad_plans_name_the_field(document: Any, message: str) -> None:
    with pytest.raises(PlotInputError) as caught:
        parse_plan(document, thesis("linear"), "p.json")
    assert str(caught.value).startswith(message)


def test_the_output_format_is_the_extension(tmp_path: Path) -> None:
    assert output_format(str(tmp_path / "a.PNG"), "--out") == "png"
    assert output_format(str(tmp_path / "a.svg"), "--out") == "svg"
    with pytest.raises(PlotInputError, match=r"--out: .*: is a directory"):
        output_format(str(tmp_path), "--out")
    with pytest.raises(PlotInputError, match=r"unknown extension '.jpg', use .png or .svg"):
        output_format(str(tmp_path / "a.jpg"), "--out")
    with pytest.raises(PlotInputError, match=r"unknown extension '\(none\)'"):
        output_format(str(tmp_path / "a"), "--out")
    with pytest.raises(PlotInputError, match=r"no such directory"):
        output_format(str(tmp_path / "missing" / "a.png"), "--out")


# --- the words in the figures (stormscale.planner.plots.draw imports matplotlib only to draw) -----


def test_a_box_reads_units_and_utilization_before_and_after() -> None:
    t = thesis("linear")
    nodes = {n.id: n for n in graph_view(t, FlowModel.DROP, {"2": 1, "3": 2}).nodes}
    assert (
        node_label(nodes["3"])
        == "3 · bolt\nunits 1 → 3\nutilization 160 % → 67 %\nBOTTLENECK (most utilized)"
    )
    assert node_label(nodes["4"]) == "4 · bolt\nunits 1\nutilization 28 % → 56 %"
    assert node_label(nodes["1"]) == "1 · spout\nunits 1\nemits 500/s"
    congested = {n.id: n for n in graph_view(t, FlowModel.DROP).nodes}
    assert node_label(congested["2"]) == "2 · bolt\nunits 1\nutilization 125 %\nBOTTLENECK"


def test_a_throttled_spout_shows_what_it_would_offer(t17: Topology) -> None:
    source = next(n for n in graph_view(t17, FlowModel.BACKPRESSURE).nodes if n.id == "1")
    assert node_label(source).splitlines()[2].endswith(" of 2,000")


def test_the_plan_in_words() -> None:
    assert plan_moves({"2": 1, "3": 2}) == "+1 unit on 2, +2 on 3"
    assert plan_moves({"16": 2}) == "+2 units on 16"
    assert plan_moves({"2": -1}) == "-1 unit on 2"
    assert plan_moves({}) == "no change"
    assert percent(None) == ""
    assert percent(float("inf")) == "∞"
    assert percent(0.984) == "98 %"
