"""A spout's demand from outside Storm (stormscale.storm.samples.demand and the profiler's use of it):
a Kafka topic's offsets or a demand query in place of the spout's own counter, the Kafka cross-check,
and no sizing on a throttled spout's emitted rate.

Samples are generated from the thesis diamond (spout offering 1,000/s, bolt 3 the bottleneck at 200/s:
the spout is throttled to 400/s) without the spout's ``offered_total``, as a KafkaSpout has none.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from stormscale.operator.adapters.profiler import PrometheusProfiler, mark_demand
from stormscale.operator.policy import InvalidSpecError, parse_spec
from stormscale.operator.ports import RefusedError, StaleMetricsError, UnknownDemandError
from stormscale.operator.profiles import (
    check_demand_known,
    check_usable,
    contradicted_spouts,
    saturated_bolts,
)
from stormscale.planner import (
    ComponentConfidence,
    DemandCheck,
    FlowModel,
    Profile,
    ProfileConfidence,
    throughput,
)
from stormscale.samples.names import OFFERED
from stormscale.storm.samples import __main__ as samples_cli
from stormscale.storm.samples.demand import (
    Demand,
    DemandRows,
    KafkaDemand,
    QueryDemand,
    offered_rows,
    running_integral,
    slope_per_s,
    summed_points,
)
from stormscale.storm.samples.reader import Window
from tests.synthetic import samples as synthetic
from tests.unit.operator.test_profiler import DIAMOND, END_S, FakeGraphs, FakeSamples, rows_of

SCENARIO = synthetic.Scenario(name="diamond", duration_s=600, noise=0.01, seed=7, offered_metric=False)
OFFERED_RATE = 1000.0  # the thesis diamond's spout: 1 unit × 1,000/s
STEP_MS = 10_000


@dataclass
class DemandSamples(FakeSamples):
    """Prometheus with the exporter's rows and, for the spout, a demand source's answer."""

    demand_rows: dict[str, DemandRows] = field(default_factory=dict)
    asked: list[tuple[str, Demand]] = field(default_factory=list)

    def demand(self, topology: str, component: str, source: Demand, window: Window) -> DemandRows:
        self.asked.append((component, source))
        return self.demand_rows.get(component, DemandRows([]))


def topic_counter(rate: float, start: float = 123_456.0) -> list[tuple[int, float]]:
    """Σ end offsets of a topic appended to at ``rate`` records/s, every step of the window."""
    first = round((END_S - SCENARIO.duration_s) * 1000)
    return [(t, start + rate * (t - first) / 1000) for t in range(first, round(END_S * 1000) + 1, STEP_MS)]


def profiler(
    demand: dict[str, Demand], rows: dict[str, DemandRows]
) -> tuple[PrometheusProfiler, DemandSamples]:
    source = DemandSamples(rows_of(DIAMOND, SCENARIO), END_S, demand_rows=rows)
    graphs = FakeGraphs(synthetic.structure(DIAMOND, SCENARIO))
    clock = lambda: END_S + 3  # noqa: E731
    return PrometheusProfiler(source, graphs, 10.0, 120.0, clock=clock, demand=demand), source


def test_the_samples_have_no_offered_counter_and_the_spout_is_throttled() -> None:
    """The premise: without a demand signal the spout's rate is the bottleneck's, 400/s, not 1,000."""
    rows = rows_of(DIAMOND, SCENARIO)
    assert not [r for r in rows if r.metric == OFFERED]
    with pytest.raises(UnknownDemandError, match=r"spout 1 is throttled \(3 at 10\d% of capacity\)"):
        profiler({}, {})[0].profile("diamond", 300)


def test_a_kafka_topics_append_rate_is_the_spouts_demand() -> None:
    kafka = KafkaDemand("orders", "storm-orders")
    rows = offered_rows("diamond", "1", topic_counter(OFFERED_RATE))
    # emitted 400/s, the topic gets 1,000/s: the lag grows 600/s
    measured = profiler({"1": kafka}, {"1": DemandRows(rows, lag_growth=600.0)})[0].profile("diamond", 300)
    spout = measured.topology.components[0]
    assert spout.output_per_unit == pytest.approx(OFFERED_RATE, rel=0.01)
    assert throughput(measured.topology, DIAMOND.units, FlowModel.DROP) == pytest.approx(
        throughput(DIAMOND, DIAMOND.units, FlowModel.DROP), rel=0.02
    )


def test_the_profile_names_the_source_and_the_kafka_cross_check() -> None:
    agreeing = measured_confidence({"1": KafkaDemand("orders", "g")}, lag_growth=600.0)
    spout = agreeing.of("1")
    assert spout.output_source == "kafka"
    check = spout.demand
    assert check is not None
    assert check.append_rate == pytest.approx(1000.0, rel=0.01)
    assert check.emitted_rate == pytest.approx(400.0, rel=0.02)
    assert (check.lag_growth, check.disagreement) == (600.0, False)
    assert not [n for n in agreeing.notes if "lag grows" in n]
    # a lag that does not grow while the topic runs 600/s ahead of the spout: flagged, with a note
    flagged = measured_confidence({"1": KafkaDemand("orders", "g")}, lag_growth=0.0)
    flagged_check = flagged.of("1").demand
    assert flagged_check is not None
    assert flagged_check.disagreement is True
    (note,) = [n for n in flagged.notes if "lag grows" in n]
    assert note.startswith("1: Kafka topic 'orders'")
    assert note.endswith("the lag grows 0/s")
    # a query names the source but has no lag to cross-check
    queried = measured_confidence({"1": QueryDemand("q")}, lag_growth=None).of("1")
    assert (queried.output_source, queried.demand) == ("demand-query", None)


def test_marking_the_demand_returns_a_new_profile_and_leaves_the_measured_one_alone() -> None:
    """The aggregation's spout said ``offered``; the marked copy says ``kafka`` and carries the check,
    the measured profile is unchanged (the values are frozen: nothing edits them in place)."""
    spout = ComponentConfidence(output_source="offered", emitted_rate=400.0, fanout=2.0)
    measured = Profile(DIAMOND, ProfileConfidence(steady=True, components={"1": spout}))
    marked = mark_demand(measured, {"1": KafkaDemand("orders", "g")}, {"1": 600.0})
    assert measured.confidence.of("1") == spout
    assert marked.topology is measured.topology
    # append = outputPerUnit · units / fanout = 1,000 · 1 / 2 = 500; 400 + 600 ≠ 500 by more than a tenth
    assert marked.confidence.of("1") == dataclasses.replace(
        spout, output_source="kafka", demand=DemandCheck(500.0, 600.0, 400.0, disagreement=True)
    )
    assert len(marked.confidence.notes) == 1
    assert measured.confidence.notes == ()
    assert mark_demand(measured, {}, {}) == measured


@pytest.mark.parametrize(
    ("fanout", "disagreement", "refused"),
    [
        (1.62, True, True),  # both witnesses contradict the spout's count: a window across a restart
        (1.62, False, False),  # copies to several subscribers: the topic agrees
        (1.0, True, False),  # a lag regressed over a ramp: the children agree
        (1.04, True, False),  # within the split's noise
    ],
)
def test_a_spout_count_both_its_topic_and_its_children_contradict_is_not_planned_on(
    fanout: float, disagreement: bool, refused: bool
) -> None:
    check = DemandCheck(16.0, 12.6, 15.2, disagreement=disagreement)
    spout = ComponentConfidence(output_source="kafka", emitted_rate=15.2, fanout=fanout, demand=check)
    profile = Profile(DIAMOND, ProfileConfidence(steady=True, components={"1": spout}))
    assert contradicted_spouts(profile.confidence) == (["1"] if refused else [])
    if refused:
        with pytest.raises(StaleMetricsError, match="spout 1 disagree with both its topic and its children"):
            check_usable(profile)
    else:
        check_usable(profile)


def measured_confidence(demand: dict[str, Demand], lag_growth: float | None) -> ProfileConfidence:
    """The measured profile's confidence, with the topic appending 1,000/s."""
    rows = offered_rows("diamond", "1", topic_counter(OFFERED_RATE))
    prof, _ = profiler(demand, {"1": DemandRows(rows, lag_growth=lag_growth)})
    return prof.profile("diamond", 300).confidence


def test_a_demand_query_gives_tuples_per_second_through_its_running_integral() -> None:
    first = round((END_S - SCENARIO.duration_s) * 1000)
    rates = [(t, OFFERED_RATE) for t in range(first, round(END_S * 1000) + 1, STEP_MS)]
    rows = offered_rows("diamond", "1", running_integral(rates, STEP_MS / 1000))
    query = QueryDemand("sum(rate(orders_total[1m]))")
    measured = profiler({"1": query}, {"1": DemandRows(rows)})[0].profile("diamond", 300)
    assert measured.topology.components[0].output_per_unit == pytest.approx(OFFERED_RATE, rel=0.01)


def test_the_demand_rows_replace_the_spouts_own_counter() -> None:
    """A spout that exports offered_total too: the spec's source wins (its rows alone are used)."""
    with_counter = synthetic.Scenario(name="diamond", duration_s=600, noise=0.01, seed=7, offered_scale=2.0)
    source = DemandSamples(rows_of(DIAMOND, with_counter), END_S)
    assert [r for r in source.rows if r.metric == OFFERED]
    source.demand_rows["1"] = DemandRows(offered_rows("diamond", "1", topic_counter(700.0)))
    graphs = FakeGraphs(synthetic.structure(DIAMOND, with_counter))
    prof = PrometheusProfiler(
        source, graphs, 10.0, 120.0, clock=lambda: END_S + 3, demand={"1": QueryDemand("q")}
    )
    assert prof.profile("diamond", 300).topology.components[0].output_per_unit == pytest.approx(
        700.0, rel=0.01
    )


def test_a_demand_source_without_samples_is_stale_and_one_on_a_bolt_is_refused() -> None:
    with pytest.raises(StaleMetricsError, match="spout 1: no samples of its Kafka topic 'orders'"):
        profiler({"1": KafkaDemand("orders", "g")}, {})[0].profile("diamond", 300)
    with pytest.raises(RefusedError, match=r"names '3', a bolt"):
        profiler({"3": QueryDemand("q")}, {})[0].profile("diamond", 300)
    with pytest.raises(RefusedError, match="not a component of the topology"):
        profiler({"9": QueryDemand("q")}, {})[0].profile("diamond", 300)


def test_an_unthrottled_spouts_emitted_rate_is_planned_on() -> None:
    """No bolt near its capacity: the spout emits what it is offered, and no demand signal is needed."""
    light = synthetic.scaled(DIAMOND, 0.3)  # 300/s offered: bolt 3 (200/s) gets 150/s, 75 % busy
    assert not saturated_bolts(light)
    assert [c for c, _ in saturated_bolts(DIAMOND)] == ["3"]
    emitted = ProfileConfidence(components={"1": ComponentConfidence(output_source="emitted")})
    check_demand_known(light, emitted)
    with pytest.raises(UnknownDemandError, match=r"spout 1 is throttled \(3 at 100% of capacity\)"):
        check_demand_known(DIAMOND, emitted)
    check_demand_known(
        DIAMOND, ProfileConfidence(components={"1": ComponentConfidence(output_source="kafka")})
    )


def test_helpers_sum_series_integrate_rates_and_fit_the_lag_slope() -> None:
    result = [
        {"metric": {"partition": "0"}, "values": [[100, "10"], [110, "20"], [120, "NaN"]]},
        {"metric": {"partition": "1"}, "values": [[100, "1"], [110, "2"]]},
    ]
    assert summed_points(result) == [(100_000, 11.0), (110_000, 22.0)]
    assert running_integral([(0, 5.0), (10_000, -3.0), (20_000, 2.0)], 10.0) == [
        (0, 50.0), (10_000, 50.0), (20_000, 70.0),
    ]  # fmt: skip
    assert slope_per_s([(0, 3.0), (10_000, 23.0), (20_000, 43.0)]) == pytest.approx(2.0)
    assert slope_per_s([(0, 3.0)]) is None


def test_queries_use_the_kafka_exporters_names_and_escape_labels() -> None:
    kafka = KafkaDemand('or"ders', "g")
    assert kafka.offered_query() == 'sum(kafka_topic_partition_current_offset{topic="or\\"ders"})'
    assert kafka.lag_query() == 'sum(kafka_consumergroup_lag{consumergroup="g", topic="or\\"ders"})'


SPEC = {
    "topologyName": "t",
    "nimbus": {"host": "nimbus"},
    "workers": {"deployment": "w"},
    "metrics": {"prometheus": "http://p:9090"},
}


def test_the_spec_names_one_demand_source_per_spout() -> None:
    components = [
        {"name": "1", "kafka": {"topic": "orders", "consumerGroup": "storm"}},
        {"name": "5", "demandQuery": "sum(rate(x[1m]))"},
        {"name": "3", "maxUnits": 4},
    ]
    policy = parse_spec({**SPEC, "components": components})
    assert policy.spec.demand() == {"1": KafkaDemand("orders", "storm"), "5": QueryDemand("sum(rate(x[1m]))")}
    both = [{"name": "1", "demandQuery": "q", "kafka": {"topic": "o", "consumerGroup": "g"}}]
    with pytest.raises(InvalidSpecError, match="demandQuery and kafka are exclusive"):
        parse_spec({**SPEC, "components": both})
    with pytest.raises(InvalidSpecError, match=r"spec\.components\.0\.kafka\.topic"):
        parse_spec({**SPEC, "components": [{"name": "1", "kafka": {"topic": "a b", "consumerGroup": "g"}}]})


def test_the_samples_cli_takes_demand_sources_and_refuses_malformed_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["--prometheus", "http://p:9090", "--topology", "t", "--out", "x.parquet"]
    args = samples_cli.parse_args(
        [*base, "--kafka", "1=orders/storm", "--demand-query", "5=sum(rate(x[1m]))"]
    )
    assert args.kafka == [("1", KafkaDemand("orders", "storm"))]
    assert args.demand_query == [("5", QueryDemand("sum(rate(x[1m]))"))]
    with pytest.raises(SystemExit) as exit_:
        samples_cli.parse_args([*base, "--kafka", "1=orders"])
    assert exit_.value.code == 2
    assert "expected SPOUT=TOPIC/GROUP, got '1=orders'" in capsys.readouterr().err
