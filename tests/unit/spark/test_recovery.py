"""The job recovers a known profile from synthetic samples: noise, skew, a rebalance, backpressure.

All cases live in one Parquet file (one topology each) and go through one Spark run, as a platform's
history would; each test then checks one topology's profile against the profile that generated it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from stormscale.aggregation import local
from stormscale.aggregation.params import Params
from stormscale.aggregation.spark import job
from stormscale.planner import FlowModel, Topology, evaluate, parse_profile, throughput
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import scenario_inputs, thesis

pytestmark = pytest.mark.spark

REL = 0.02
T17 = thesis("topology-17")
DIAMOND = thesis("diamond")
LINEAR = thesis("linear")
TREE = thesis("simple-tree")
T10 = thesis("topology-10")

REBALANCE = synthetic.Scenario(
    name="rebalance",
    duration_s=1800,
    rebalance_at_s=900,
    units_after={"4": 2, "16": 2},
    noise=0.02,
    skew=0.3,
    seed=1,
)
BACKPRESSURE = synthetic.Scenario(name="backpressure", duration_s=1200, offered_scale=3.0, noise=0.01, seed=2)
NO_OFFERED = synthetic.Scenario(
    name="no-offered", duration_s=1200, offered_scale=2.0, offered_metric=False, seed=3
)
UNSTABLE = synthetic.Scenario(name="unstable", duration_s=1200, noise=0.5, seed=4)
PARTIAL = synthetic.Scenario(name="partial-split", duration_s=1200, noise=0.01, seed=5)
# Storm's 10-minute gauges under-read busy time by 15 % (a start's first tuples took no time)
LAGGING = synthetic.Scenario(name="lagging", duration_s=1200, offered_scale=3.0, gauge_scale=0.85, seed=6)
LAGGING_OLD = dataclasses.replace(LAGGING, name="lagging-old", busy_counter=False)
OLD_STYLE = synthetic.Scenario(
    name="old-style", duration_s=1200, noise=0.02, skew=0.3, busy_counter=False, seed=7
)
# a worker restart: the same executor ids, every counter back to 0, no gauge changes
RESTART = synthetic.Scenario(
    name="restart", duration_s=1200, rebalance_at_s=600, noise=0.02, skew=0.3, seed=8
)
# multilang bolts: Storm reads bolts 2 (62.5 % busy) and 4 (28 %) at 5 % and 2 % of their busy time
# (execute latency is the hand-off into the pipe); their pods' CPU tells the truth. Bolt 3 is the
# saturated bottleneck, measured right by both.
MULTILANG = synthetic.Scenario(
    name="multilang",
    duration_s=1200,
    noise=0.01,
    cpu_components=("2", "3", "4"),
    storm_busy_scale={"2": 0.05, "4": 0.02},
    seed=9,
)
MULTILANG_NO_CPU = dataclasses.replace(MULTILANG, name="multilang-no-cpu", cpu_components=())
# a source at 1.4× its base rate one step in ten, the topology following it (bolt 3 keeps up: 210 < 250/s)
BURSTY = synthetic.Scenario(
    name="bursty", duration_s=1200, noise=0.01, offered_scale=0.3, load_wave=(1.0,) * 9 + (1.4,), seed=10
)
CASES = [(T17, REBALANCE), (DIAMOND, BACKPRESSURE), (LINEAR, NO_OFFERED), (TREE, UNSTABLE), (T10, PARTIAL)]
CASES += [(DIAMOND, LAGGING), (DIAMOND, LAGGING_OLD), (T17, OLD_STYLE), (LINEAR, RESTART)]
CASES += [(LINEAR, MULTILANG), (LINEAR, MULTILANG_NO_CPU), (LINEAR, BURSTY)]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    samples, structures, _ = scenario_inputs(tmp_path_factory.mktemp("recovery"), CASES)
    return samples, structures


@pytest.fixture(scope="module")
def profiles(spark: SparkSession, inputs: tuple[Path, list[Any]]) -> dict[str, dict[str, Any]]:
    samples, structures = inputs
    documents = job.run(spark, [str(samples)], structures, Params())
    return {d["topology"]: d for d in documents}


def by_id(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in document["components"]}


def assert_recovers_model(document: dict[str, Any], truth: Topology, scenario: synthetic.Scenario) -> None:
    """Capacities, selectivities, fractions and offered rates within 2%; units and maxUnits exact."""
    got = by_id(document)
    tasks = synthetic.tasks_of(truth, scenario)
    for c in truth.components:
        g = got[c.id]
        assert g["units"] == scenario.units_after.get(c.id, c.units), c.id
        assert g["maxUnits"] == tasks[c.id], c.id
        if c.is_spout:
            assert g["outputPerUnit"] == pytest.approx(c.output_per_unit * scenario.offered_scale, rel=REL), (
                c.id
            )
        else:
            assert g["capacityPerUnit"] == pytest.approx(c.capacity_per_unit, rel=REL), c.id
            assert g["selectivity"] == pytest.approx(c.selectivity, rel=REL), c.id
        fractions = g.get("children", {})
        assert set(fractions) == {cid for cid, _ in c.children}, c.id
        for cid, f in c.children:
            assert fractions[cid] == pytest.approx(f, rel=REL), (c.id, cid)


def test_rebalance_with_noise_and_skew_recovers_the_profile(profiles: dict[str, dict[str, Any]]) -> None:
    document = profiles["rebalance"]
    assert_recovers_model(document, T17, REBALANCE)
    window = document["confidence"]["window"]
    assert window["changedAt"] == "2026-01-01T00:15:00+00:00"
    assert window["steadyStart"] == "2026-01-01T00:17:00+00:00"
    assert document["confidence"]["steady"] is True
    skew = by_id(document)["4"]["confidence"]["capacityPerUnit"]["skew"]
    assert skew == pytest.approx(1.3 / (2.3 / 2), rel=REL)  # busiest / mean busy fraction


def test_rebalance_profile_is_valid_for_the_planner(profiles: dict[str, dict[str, Any]]) -> None:
    topology = parse_profile(profiles["rebalance"])
    assert [c.id for c in topology.components] == [c.id for c in T17.components]


def test_backpressure_recovers_demand_not_the_throttled_rates(profiles: dict[str, dict[str, Any]]) -> None:
    document = profiles["backpressure"]
    assert_recovers_model(document, DIAMOND, BACKPRESSURE)
    spout = by_id(document)["1"]
    measured = (
        evaluate(synthetic.scaled(DIAMOND, 3.0), DIAMOND.units, FlowModel.BACKPRESSURE).components[0].output
    )
    assert measured < 0.5 * spout["outputPerUnit"]  # the spout really was throttled in the samples
    assert spout["confidence"]["emittedRate"] == pytest.approx(measured, rel=REL)
    assert spout["confidence"]["outputPerUnit"] == {
        "samples": pytest.approx(119, abs=2),
        "spread": pytest.approx(0.01, abs=0.01),
        "source": "offered",
        "throttled": True,
    }
    # the bottleneck (3) is saturated, the other branch (2) is not: both capacities come from busy time
    assert by_id(document)["3"]["confidence"]["capacityPerUnit"]["busiest"] == pytest.approx(1.0, rel=REL)
    assert by_id(document)["2"]["confidence"]["capacityPerUnit"]["busiest"] < 0.6


def test_backpressure_profile_predicts_the_true_throughput(profiles: dict[str, dict[str, Any]]) -> None:
    estimated = parse_profile(profiles["backpressure"])
    truth = synthetic.scaled(DIAMOND, 3.0)
    for extra in ((0, 0, 0, 0), (0, 1, 2, 0)):
        units = tuple(u + x for u, x in zip(truth.units, extra, strict=True))
        for model in FlowModel:
            assert throughput(estimated, units, model) == pytest.approx(
                throughput(truth, units, model), rel=REL
            )


def test_without_offered_total_the_emitted_rate_is_used_and_said(profiles: dict[str, dict[str, Any]]) -> None:
    document = profiles["no-offered"]
    spout = by_id(document)["1"]
    throttled = (
        evaluate(synthetic.scaled(LINEAR, 2.0), LINEAR.units, FlowModel.BACKPRESSURE).components[0].output
    )
    assert spout["outputPerUnit"] == pytest.approx(throttled, rel=REL)
    assert spout["confidence"]["outputPerUnit"]["source"] == "emitted"
    assert any("no offered_total" in n for n in document["confidence"]["notes"])
    for c in LINEAR.components[1:]:
        assert by_id(document)[c.id]["capacityPerUnit"] == pytest.approx(c.capacity_per_unit, rel=REL)


def test_unstable_rates_are_flagged_not_hidden(profiles: dict[str, dict[str, Any]]) -> None:
    confidence = profiles["unstable"]["confidence"]
    assert confidence["steady"] is False
    ends = {c.id for c in TREE.components if c.is_spout or not c.children}
    assert ends < {c.id for c in TREE.components}  # the tree has bolts between them
    assert set(confidence["unstable"]) == ends  # the window is judged by its spouts and sinks
    assert all(not c["confidence"]["stable"] for c in profiles["unstable"]["components"])
    between = sorted({c.id for c in TREE.components} - ends)
    assert any(f"in {', '.join(between)} between" in note for note in confidence["notes"]), confidence
    assert all(c["confidence"]["stable"] for c in profiles["rebalance"]["components"])


def test_fractions_summing_below_one_are_kept(profiles: dict[str, dict[str, Any]]) -> None:
    assert_recovers_model(profiles["partial-split"], T10, PARTIAL)
    assert sum(by_id(profiles["partial-split"])["1"]["children"].values()) == pytest.approx(0.99, rel=0.005)


def busy_sources(document: dict[str, Any]) -> set[str]:
    return {
        c["confidence"]["capacityPerUnit"]["source"] for c in document["components"] if c["kind"] == "bolt"
    }


def test_busy_time_from_the_counter_ignores_lagging_gauges(profiles: dict[str, dict[str, Any]]) -> None:
    document = profiles["lagging"]
    assert_recovers_model(document, DIAMOND, LAGGING)
    assert busy_sources(document) == {"busy-counter"}
    assert not any("busy_seconds_total" in n for n in document["confidence"]["notes"])
    truth = synthetic.scaled(DIAMOND, 3.0)
    predicted = throughput(parse_profile(document), truth.units, FlowModel.BACKPRESSURE)
    assert predicted == pytest.approx(throughput(truth, truth.units, FlowModel.BACKPRESSURE), rel=REL)


def test_without_the_counter_lagging_gauges_inflate_capacity_and_the_profile_says_so(
    profiles: dict[str, dict[str, Any]],
) -> None:
    """Negative control: the same samples without busy_seconds_total give the real finding's error."""
    document = profiles["lagging-old"]
    assert busy_sources(document) == {"execute-latency"}
    for c in DIAMOND.components[1:]:
        assert by_id(document)[c.id]["capacityPerUnit"] == pytest.approx(c.capacity_per_unit / 0.85, rel=REL)
    truth = synthetic.scaled(DIAMOND, 3.0)
    predicted = throughput(parse_profile(document), truth.units, FlowModel.BACKPRESSURE)
    assert predicted > 1.1 * throughput(truth, truth.units, FlowModel.BACKPRESSURE)
    notes = [n for n in document["confidence"]["notes"] if "busy_seconds_total" in n]
    assert len(notes) == len(DIAMOND.components) - 1


def test_samples_without_the_counter_still_give_the_profile(profiles: dict[str, dict[str, Any]]) -> None:
    document = profiles["old-style"]
    assert_recovers_model(document, T17, OLD_STYLE)
    assert busy_sources(document) == {"execute-latency"}


def test_a_restart_resets_the_busy_counter_and_the_window_starts_after_it(
    profiles: dict[str, dict[str, Any]],
) -> None:
    document = profiles["restart"]
    assert_recovers_model(document, LINEAR, RESTART)
    assert busy_sources(document) == {"busy-counter"}
    window = document["confidence"]["window"]
    assert (window["changedAt"], window["steadyStart"]) == (
        "2026-01-01T00:10:00+00:00",
        "2026-01-01T00:12:00+00:00",
    )


def test_busy_time_from_the_pods_cpu_gives_the_true_capacity_where_storm_lies(
    profiles: dict[str, dict[str, Any]],
) -> None:
    document = profiles["multilang"]
    assert_recovers_model(document, LINEAR, MULTILANG)
    assert busy_sources(document) == {"pod-cpu"}
    got = by_id(document)
    for cid, disagree in (("2", True), ("3", False), ("4", True)):
        conf = got[cid]["confidence"]["capacityPerUnit"]
        assert conf["disagreement"] is disagree, cid
        assert conf["storm"]["source"] == "busy-counter", cid
        capacity = next(c.capacity_per_unit for c in LINEAR.components if c.id == cid)
        scale = MULTILANG.storm_busy_scale.get(cid, 1.0)
        assert conf["storm"]["capacityPerUnit"] == pytest.approx(capacity / scale, rel=REL), cid
    notes = [n for n in document["confidence"]["notes"] if "pod's CPU" in n]
    assert [n.split(":")[0] for n in notes] == ["2", "4"]
    truth = synthetic.scaled(LINEAR, 1.0)
    estimated = parse_profile(document)
    for extra in ((0, 0, 0, 0), (0, 0, 1, 0), (0, 1, 3, 1)):
        units = tuple(u + x for u, x in zip(truth.units, extra, strict=True))
        assert throughput(estimated, units, FlowModel.BACKPRESSURE) == pytest.approx(
            throughput(truth, units, FlowModel.BACKPRESSURE), rel=REL
        )


def test_without_the_pods_cpu_the_lying_latency_inflates_capacity(
    profiles: dict[str, dict[str, Any]],
) -> None:
    """Negative control: the same samples without the CPU rows give the real finding's error."""
    got = by_id(profiles["multilang-no-cpu"])
    assert busy_sources(profiles["multilang-no-cpu"]) == {"busy-counter"}
    assert got["2"]["capacityPerUnit"] == pytest.approx(400.0 / 0.05, rel=REL)  # 20x too high
    assert got["4"]["capacityPerUnit"] == pytest.approx(900.0 / 0.02, rel=REL)  # 50x too high
    assert "storm" not in got["2"]["confidence"]["capacityPerUnit"]
    estimated = parse_profile(profiles["multilang-no-cpu"])
    # a unit more for the bottleneck (3) lifts Θ to bolt 2's real 400/s; the lying profile says 500/s
    units = (1, 1, 2, 1)
    assert throughput(estimated, units, FlowModel.BACKPRESSURE) > 1.2 * throughput(
        LINEAR, units, FlowModel.BACKPRESSURE
    )


def test_a_bursty_source_s_demand_is_its_distribution_over_the_window_s_steps(
    profiles: dict[str, dict[str, Any]],
) -> None:
    """Base 150/s, 210/s one step in ten: the mean is 1.04 × 150, the median 150, the p95 and the
    largest step 210 (that the engines agree on it: the test after this one)."""
    spout = by_id(profiles["bursty"])["1"]
    demand = spout["demandPerUnit"]
    assert demand["mean"] == spout["outputPerUnit"] == pytest.approx(1.04 * 150.0, rel=REL)
    assert demand["p50"] == pytest.approx(150.0, rel=REL)
    assert demand["p95"] == pytest.approx(210.0, rel=REL)
    assert demand["max"] == pytest.approx(210.0, rel=0.05)
    assert (demand["steps"], demand["stepSeconds"]) == (119, 10.0)  # 120 intervals, the first before any move
    steady = by_id(profiles["partial-split"])["1"]["demandPerUnit"]  # a constant load: all four agree
    assert steady["p50"] == pytest.approx(steady["mean"], rel=REL)
    assert steady["p95"] == pytest.approx(steady["mean"], rel=0.05)


def test_single_process_engine_gives_the_same_profiles(
    profiles: dict[str, dict[str, Any]], inputs: tuple[Path, list[Any]]
) -> None:
    samples, structures = inputs
    for document in local.run([str(samples)], structures, Params()):
        assert_same(document, profiles[document["topology"]], document["topology"])


def assert_same(a: Any, b: Any, where: str) -> None:
    """Equal documents, numbers to 1e-4 (the engines sum in different orders)."""
    if isinstance(a, dict):
        assert isinstance(b, dict), where
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list), where
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool):
        assert b == pytest.approx(a, rel=1e-4), where
    else:
        assert a == b, where


def test_without_settling_the_transient_biases_capacity(inputs: tuple[Path, list[Any]]) -> None:
    """Negative control: the rebalance's transient is what the settle period removes."""
    samples, structures = inputs
    rebalance = [s for s in structures if s.topology == "rebalance"]
    (document,) = local.run([str(samples)], rebalance, Params(settle_s=0))
    errors = [
        abs(by_id(document)[c.id]["capacityPerUnit"] / c.capacity_per_unit - 1) for c in T17.components[1:]
    ]
    assert max(errors) > 0.05
