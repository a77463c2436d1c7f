"""The in-operator profiler: samples (as the reader returns them) → the local aggregation → a profile.

Samples come from :mod:`tests.synthetic.samples` generated from a known thesis profile; the fake
sample source stands in for Prometheus (the reader itself is tested against a real Prometheus).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from math import floor
from pathlib import Path

import pytest

from stormscale.aggregation import AggregationError
from stormscale.aggregation.aggregates import Aggregates, ComponentStats
from stormscale.aggregation.structure import ComponentSpec as StructureComponent
from stormscale.aggregation.structure import Structure, parse_structure
from stormscale.operator.adapters.profiler import PrometheusProfiler, naming, sink_throughput, structure_of
from stormscale.operator.ports import SettlingError, StaleMetricsError, UnsteadyWindowError
from stormscale.planner import FlowModel, Topology, load_profile, throughput
from stormscale.samples import Sample
from stormscale.storm.model import ComponentSpec, Kind, StreamId, TopologyStructure
from stormscale.storm.samples.demand import Demand, DemandRows
from stormscale.storm.samples.reader import Window
from tests.synthetic import samples as synthetic

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"
DIAMOND = load_profile(PROFILES / "thesis-diamond.json")
SCENARIO = synthetic.Scenario(name="diamond", duration_s=600, noise=0.01, seed=7)
END_S = synthetic.EPOCH.timestamp() + SCENARIO.duration_s


def rows_of(topology: Topology, scenario: synthetic.Scenario) -> list[Sample]:
    out = []
    for r in synthetic.generate(topology, scenario).to_pylist():
        ts: datetime = r.pop("ts")
        out.append(Sample(ts_ms=round(ts.timestamp() * 1000), **r))
    return out


@dataclass
class FakeSamples:
    """What Prometheus would answer; records the windows asked for."""

    rows: list[Sample]
    newest_s: float | None
    windows: list[Window] = field(default_factory=list)

    def read(self, topology: str, window: Window) -> list[Sample]:
        self.windows.append(window)
        return [
            r
            for r in self.rows
            if r.topology == topology and window.start * 1000 <= r.ts_ms <= window.end * 1000
        ]

    def newest(self, topology: str) -> float | None:
        return self.newest_s

    def demand(self, topology: str, component: str, source: Demand, window: Window) -> DemandRows:
        return DemandRows([])


@dataclass(frozen=True)
class FakeGraphs:
    structure_doc: dict[str, object]

    def structure(self, topology: str) -> Structure:
        return parse_structure(self.structure_doc)


def profiler(rows: list[Sample], newest_s: float | None = END_S, step_s: float = 10.0) -> PrometheusProfiler:
    graphs = FakeGraphs(synthetic.structure(DIAMOND, SCENARIO))
    return PrometheusProfiler(FakeSamples(rows, newest_s), graphs, step_s, 120.0, clock=lambda: END_S + 3)


def test_measured_profile_recovers_the_generating_profile() -> None:
    measured = profiler(rows_of(DIAMOND, SCENARIO)).profile("diamond", 300)
    units = DIAMOND.units
    assert [c.id for c in measured.topology.components] == [c.id for c in DIAMOND.components]
    assert measured.topology.units == units
    for model in FlowModel:
        assert throughput(measured.topology, units, model) == pytest.approx(
            throughput(DIAMOND, units, model), rel=0.02
        )
    expected = {c.id: c.capacity_per_unit for c in DIAMOND.components if c.capacity_per_unit}
    assert {
        c.id: c.capacity_per_unit for c in measured.topology.components if c.id in expected
    } == pytest.approx(expected, rel=0.02)
    # Observed throughput is what the sinks executed; the generator's sinks run at the model's rate.
    assert measured.throughput == pytest.approx(throughput(DIAMOND, units, FlowModel.BACKPRESSURE), rel=0.02)
    assert measured.age_s == pytest.approx(3.0)


def test_measured_profile_says_where_each_number_came_from() -> None:
    """Every component's executors and tasks by their gauges, the spout's output by its offered
    counter (throttled by bolt 3 to 400/s), the bolts' busy time by Storm's busy counter."""
    measured = profiler(rows_of(DIAMOND, SCENARIO)).profile("diamond", 300)
    confidence = measured.confidence
    assert (confidence.steady, confidence.unstable, confidence.notes) == (True, (), ())
    assert confidence.window is not None
    assert confidence.window.intervals == 30
    assert {c: (k.units_source, k.max_units_source, k.stable) for c, k in confidence.components.items()} == (
        dict.fromkeys(["1", "2", "3", "4"], ("executors-gauge", "tasks-gauge", True))
    )
    spout = confidence.of("1")
    assert (spout.output_source, spout.throttled, spout.demand) == ("offered", True, None)
    assert spout.emitted_rate == pytest.approx(400.0, rel=0.02)
    bolts = {c: (confidence.of(c).capacity_source, confidence.of(c).selectivity_source) for c in "234"}
    assert bolts == dict.fromkeys("234", ("busy-counter", "measured"))
    assert measured.throughput == pytest.approx(confidence.of("4").executed_rate, rel=1e-5)  # 4: the sink


def test_window_ends_on_a_step_boundary_and_spans_the_policy_window() -> None:
    source = FakeSamples(rows_of(DIAMOND, SCENARIO), END_S)
    graphs = FakeGraphs(synthetic.structure(DIAMOND, SCENARIO))
    PrometheusProfiler(source, graphs, 10.0, 120.0, clock=lambda: END_S + 7).profile("diamond", 300)
    (window,) = source.windows
    assert (window.end - window.start, window.step_s) == (300, 10)
    assert window.end == floor((END_S + 7) / 10) * 10  # the last 10 s boundary at or before the clock


def test_age_is_taken_from_the_newest_scrape_not_the_range_query() -> None:
    measured = profiler(rows_of(DIAMOND, SCENARIO), newest_s=END_S - 400).profile("diamond", 300)
    assert measured.age_s == pytest.approx(403.0)


def test_no_samples_is_stale_not_a_guess() -> None:
    with pytest.raises(StaleMetricsError, match="no samples of topology 'diamond'"):
        profiler([]).profile("diamond", 300)


def test_too_few_steady_intervals_after_a_rebalance_is_settling_with_the_newest_samples_age() -> None:
    rebalanced = synthetic.Scenario(
        name="diamond", duration_s=600, rebalance_at_s=540, units_after={"2": 2}, noise=0.01, seed=7
    )
    with pytest.raises(SettlingError, match="steady intervals") as info:
        profiler(rows_of(DIAMOND, rebalanced)).profile("diamond", 300)
    assert info.value.newest_age_s == pytest.approx(3.0)
    with pytest.raises(SettlingError) as info:
        profiler(rows_of(DIAMOND, rebalanced), newest_s=END_S - 60).profile("diamond", 300)
    assert info.value.newest_age_s == pytest.approx(63.0)  # reconcile calls this stale, not settling


def test_an_aggregation_error_names_the_topology_once() -> None:
    assert naming("linear", AggregationError("topology 'linear', component '2': no tuples")) == (
        "topology 'linear', component '2': no tuples"
    )
    assert naming("linear", AggregationError("samples: none")) == "topology 'linear': samples: none"


def test_unsteady_rates_are_refused_as_an_unsteady_window() -> None:
    noisy = synthetic.Scenario(name="diamond", duration_s=600, noise=0.6, seed=7)
    with pytest.raises(UnsteadyWindowError, match="not steady"):
        profiler(rows_of(DIAMOND, noisy)).profile("diamond", 300)


def test_structure_of_storm_graph_lists_children_and_tasks() -> None:
    def spec(cid: str, kind: Kind, inputs: tuple[str, ...]) -> ComponentSpec:
        return ComponentSpec(cid, kind, {StreamId(p, "default"): "shuffle" for p in inputs}, ("default",), 1)

    graph = TopologyStructure(
        {
            "1": spec("1", Kind.SPOUT, ()),
            "2": spec("2", Kind.BOLT, ("1",)),
            "3": spec("3", Kind.BOLT, ("1", "2")),
        }
    )
    structure = structure_of("t", graph, {"1": 2, "2": 4, "3": 4})
    assert structure == Structure(
        "t",
        (
            StructureComponent("1", "spout", ("2", "3"), 2),
            StructureComponent("2", "bolt", ("3",), 4),
            StructureComponent("3", "bolt", (), 4),
        ),
    )


def test_sink_throughput_sums_sinks_only() -> None:
    structure = Structure(
        "t",
        (
            StructureComponent("1", "spout", ("2", "3"), 1),
            StructureComponent("2", "bolt", (), 1),
            StructureComponent("3", "bolt", (), 1),
        ),
    )

    def stats(cid: str, rate: float) -> ComponentStats:
        values = dict.fromkeys(ComponentStats.__dataclass_fields__)
        return ComponentStats(**{**values, "topology": "t", "component": cid, "executed_rate": rate})  # type: ignore[arg-type]

    aggregates = Aggregates(
        {}, {"t": {"1": stats("1", 999.0), "2": stats("2", 10.0), "3": stats("3", 5.5)}}, {}
    )
    assert sink_throughput(structure, aggregates) == 15.5


def test_a_profile_through_which_nothing_flows_is_refused() -> None:
    frozen = [r for r in rows_of(DIAMOND, SCENARIO) if not (r.component == "1" and r.metric != "executors")]
    spout_stuck = frozen + [
        Sample(r.ts_ms, r.topology, r.component, r.executor, r.metric, r.stream, r.source, 14.0)
        for r in rows_of(DIAMOND, SCENARIO)
        if r.component == "1" and r.metric in ("emitted_total", "offered_total", "transferred_total")
    ]
    with pytest.raises(StaleMetricsError, match="no flow"):
        profiler(spout_stuck).profile("diamond", 300)
