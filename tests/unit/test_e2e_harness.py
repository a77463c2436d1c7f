"""The pure parts of the end-to-end harness: the resources it applies and the report it prints."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.accuracy_steps import Report, Step, fitted, fitted_components, predictions
from stormscale.operator.policy import Mode, PlacementKind, parse_spec
from stormscale.operator.ports import MeasuredProfile
from stormscale.planner import FlowModel, load_profile
from stormscale.storm.samples.demand import KafkaDemand
from tests.harness.bed.measure import Measured, Sighting
from tests.harness.bed.scenarios import (
    CONGESTED_LINEAR,
    JVM_DIAMOND,
    JVM_KAFKA_AUTO,
    JVM_KAFKA_LINEAR,
    JVM_LINEAR,
    SCENARIOS,
)
from tests.harness.bed.stack import kafka_properties, overhead_settled, storm_topology, worker_deployment
from tests.harness.storm.topology import flux_file, topology_properties

LINEAR = load_profile(Path(__file__).parents[2] / "examples" / "profiles" / "thesis-linear.json")


def test_the_storm_topology_resource_is_a_valid_manual_spec_with_the_scenarios_metrics() -> None:
    resource = storm_topology(CONGESTED_LINEAR, 6627, "http://127.0.0.1:9090", 2)
    policy = parse_spec(resource["spec"])
    assert (policy.mode, policy.budget, policy.window_s, policy.step_s, policy.settle_s) == (
        Mode.MANUAL,
        2,
        180.0,
        20.0,
        60.0,
    )
    assert policy.spec.components[0].max_units == 1


def test_a_placed_scenario_delivers_its_placement_to_the_scheduler_s_endpoint_when_there_is_one() -> None:
    placed = dataclasses.replace(JVM_KAFKA_LINEAR, placement="MultiLevel")
    spec = parse_spec(storm_topology(placed, 6627, "http://p:9090", 1, placement_port=6629)["spec"]).spec
    assert (spec.workers.placement, spec.nimbus.placement_port) == (PlacementKind.MULTI_LEVEL, 6629)
    in_conf = parse_spec(storm_topology(placed, 6627, "http://p:9090", 1)["spec"]).spec
    assert (in_conf.workers.placement, in_conf.nimbus.placement_port) == (PlacementKind.MULTI_LEVEL, None)
    plain = parse_spec(
        storm_topology(JVM_KAFKA_LINEAR, 6627, "http://p:9090", 1, placement_port=6629)["spec"]
    )
    assert (plain.spec.workers.placement, plain.spec.nimbus.placement_port) == (None, None)


def test_jvm_scenarios_split_every_bolts_input_evenly_at_one_to_four_units() -> None:
    """Storm's shuffle picks a task: a component on u executors runs at u units' pace only when u
    divides its tasks, and only with load-aware messaging off (docs/planner.md, Model)."""
    for scenario in (JVM_LINEAR, JVM_DIAMOND):
        tasks = scenario.properties["max.tasks"]
        assert isinstance(tasks, int), scenario.name
        assert all(tasks % units == 0 for units in (1, 2, 3, 4)), scenario.name
        assert scenario.storm_conf["topology.disable.loadaware.messaging"] is True, scenario.name


def test_the_kafka_scenario_is_the_jvm_linear_one_with_a_kafka_spout_held_at_one_unit() -> None:
    scenario = JVM_KAFKA_LINEAR
    assert (scenario.source, scenario.topic, scenario.partitions) == ("kafka", "e2e-jvm-kafka-linear", 4)
    assert (scenario.shape, scenario.language) == ("kafka-linear", "jvm")
    assert scenario.storm_conf == JVM_LINEAR.storm_conf
    assert scenario.overrides == ({"name": "1", "maxUnits": 1},)
    assert scenario.properties["max.tasks"] == 12
    for key in ("c2.cost_us", "c3.cost_us", "c4.cost_us", "c1.tasks"):
        assert scenario.properties[key] == JVM_LINEAR.properties[key], key
    assert not any(k in scenario.properties for k in ("c1.rate", "c1.batch")), "the rate is the load's"
    assert scenario.load == "48@60m", "the offered 48/s of the RateSpout scenarios, from the topic"
    flux_file(scenario.shape, scenario.language)  # a shape submit() knows
    props = kafka_properties(scenario, "127.0.0.1:9092", Path("/seen"))
    assert props == {
        "kafka.bootstrap": "127.0.0.1:9092",
        "kafka.topic": "e2e-jvm-kafka-linear",
        "kafka.group": "e2e-jvm-kafka-linear",
        "seen.dir": "/seen",
    }
    assert set(props) <= set(topology_properties(scenario.shape, language="jvm")), "placeholders"


def test_a_kafka_scenarios_spec_takes_the_spouts_demand_from_its_topic() -> None:
    """The spout's override keeps its bound and gains the topic as its demand (one entry per name)."""
    for scenario in (JVM_KAFKA_LINEAR, JVM_KAFKA_AUTO):
        policy = parse_spec(storm_topology(scenario, 6627, "http://127.0.0.1:9090", 0)["spec"])
        assert [o.name for o in policy.spec.components] == ["1"]
        assert policy.spec.components[0].max_units == 1
        assert policy.spec.demand() == {"1": KafkaDemand(scenario.topic, scenario.group)}
    assert (
        parse_spec(storm_topology(JVM_LINEAR, 6627, "http://127.0.0.1:9090", 0)["spec"]).spec.demand() == {}
    )


def test_the_other_scenarios_keep_their_own_spout() -> None:
    assert [n for n, s in SCENARIOS.items() if s.source == "kafka"] == ["jvm-kafka-linear"]
    for scenario in SCENARIOS.values():
        if scenario.source == "kafka":
            continue
        assert scenario.source == "rate", scenario.name
        with pytest.raises(ValueError, match="no Kafka source"):
            kafka_properties(scenario, "127.0.0.1:9092", Path("/seen"))


def test_worker_pods_carry_the_unit_as_their_cpu_limit_and_the_pod_runner_label() -> None:
    deployment = worker_deployment(CONGESTED_LINEAR, 4)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["cpu"] == "200m"
    assert deployment["metadata"]["labels"] == {"stormscale.io/storm-workers": "yes"}
    assert deployment["spec"]["replicas"] == 4


def test_predictions_cover_every_strategy_under_both_flow_models() -> None:
    measured = MeasuredProfile(LINEAR, throughput=0.0, age_s=0.0)
    baseline = {c.id: c.units for c in LINEAR.components}
    out = predictions(measured, CONGESTED_LINEAR, baseline, dict.fromkeys(baseline, 8), 2).throughput
    assert set(out) == {"backpressure", "drop"}
    assert all(set(v) == {"stela", "predictive", "combined", "optimal", "best"} for v in out.values())
    assert out["drop"]["optimal"] >= out["drop"]["combined"] > fitted(measured)["drop"]


def test_predicted_bolt_rates_are_those_of_the_operators_plan_and_end_in_its_throughput() -> None:
    """Per bolt, what it processes in the plan of the scenario's strategy: the sink's output is the
    plan's Θ, and the rates differ from the fit at the running units where the plan added units."""
    measured = MeasuredProfile(LINEAR, throughput=0.0, age_s=0.0)
    baseline = {c.id: c.units for c in LINEAR.components}
    out = predictions(measured, CONGESTED_LINEAR, baseline, dict.fromkeys(baseline, 8), 2)
    bolts = {c.id for c in LINEAR.components if not c.is_spout}
    sink = LINEAR.components[LINEAR.sinks[0]]
    for model in ("backpressure", "drop"):
        rates = out.components[model]
        assert set(rates) == bolts
        combined = out.throughput[model]["combined"]
        assert rates[sink.id] * sink.selectivity == pytest.approx(combined, rel=1e-3)
        assert rates != fitted_components(measured)[model]


def test_prediction_table_has_a_row_per_budget_and_flow_model_with_the_chosen_strategys_error() -> None:
    predicted = {
        "backpressure": {"stela": 80.0, "predictive": 85.0, "combined": 90.0, "optimal": 95.0},
        "drop": {"stela": 120.0, "predictive": 125.0, "combined": 130.0, "optimal": 135.0},
    }
    step = Step(1, {}, {}, 5, 5, 1, 100.0, {"3": 1}, {}, predicted=predicted)
    lines = Report("t", [step]).prediction_table().splitlines()
    assert len(lines) == 2 + 2
    # a report saved without best's prediction shows a dash in its column
    assert lines[2].startswith("| 1 | 3+1 | 100.0 | backpressure | 80.0 | 85.0 | 90.0 | 95.0 | – | -10.0% |")
    assert lines[3].endswith("| drop | 120.0 | 125.0 | 130.0 | 135.0 | – | +30.0% |")
    stela = Report("t", [step], strategy="stela").prediction_table().splitlines()
    assert stela[2].endswith("| -20.0% |")


def test_fit_table_has_one_row_per_budget_with_each_models_relative_error() -> None:
    step = Step(0, {}, {}, 4, 4, 1, 100.0, {}, {}, fitted={"backpressure": 110.0, "drop": 95.0})
    lines = Report("t", [step]).fit_table().splitlines()
    assert len(lines) == 3
    assert lines[2] == "| 0 | 100.0 | 110.0 | +10.0% | 95.0 | -5.0% |"


def test_a_budget_without_predictions_shows_dashes_not_zeroes() -> None:
    step = Step(0, {}, {}, 4, 4, 1, 100.0, {}, {})
    row = Report("t", [step]).prediction_table().splitlines()[2]
    assert row == "| 0 | – | 100.0 | backpressure | – | – | – | – | – | – |"


def test_component_table_has_a_row_per_budget_and_measured_bolt_with_both_errors() -> None:
    step = Step(
        1,
        {},
        {},
        5,
        5,
        1,
        10.0,
        {"3": 1},
        {},
        component_measured={"2": 20.0, "3": 10.0},
        component_predicted={"backpressure": {"2": 22.0, "3": 9.0}},
        component_fitted={"backpressure": {"2": 20.0, "3": 10.5}, "drop": {"2": 1.0}},
    )
    lines = Report("t", [step]).component_table().splitlines()
    assert lines[2:] == [
        "| 1 | 2 | 20.0 | 22.0 | +10.0% | 20.0 | +0.0% |",
        "| 1 | 3 | 10.0 | 9.0 | -10.0% | 10.5 | +5.0% |",
    ]
    drop = Report("t", [step]).component_table(FlowModel.DROP).splitlines()
    assert drop[2:] == ["| 1 | 2 | 20.0 | – | – | 1.0 | -95.0% |", "| 1 | 3 | 10.0 | – | – | – | – |"]


def test_component_rates_are_each_counts_difference_over_the_sinks_window() -> None:
    start = Sighting(100.0, 50, {"2": 1000, "3": 500})
    end = Sighting(190.0, 950, {"2": 2800, "3": 1400, "9": 7})
    measured = Measured(start, end)
    assert measured.rate == pytest.approx(10.0)
    assert measured.component_rates() == pytest.approx({"2": 20.0, "3": 10.0})


@pytest.mark.parametrize(
    ("previous", "current", "settled"),
    [
        ([0.053, 0.055], [0.054, 0.052], True),  # idle and steady
        ([], [0.054, 0.052], False),  # one window says nothing yet
        ([0.190, 0.185], [0.188, 0.190], False),  # steady, but booting: near the 200m limit
        ([0.090, 0.055], [0.060, 0.054], False),  # a pod still coming down
        ([0.100, 0.060], [0.090, 0.061], True),  # within 15 % of a larger reading
        ([0.053], [0.054, 0.052], False),  # a pod came or went
    ],
)
def test_the_pods_overhead_is_read_only_once_it_settled(
    previous: list[float], current: list[float], settled: bool
) -> None:
    assert overhead_settled(previous, current, limit_cores=0.2) is settled
