"""Rates right with acking on: selectivities and edge fractions come from user
streams only, and emitted and executed are each counted over whole periods of their own updates.

Every case runs through both engines on the same samples; a selectivity-1 bolt must profile at
1.00 ± 0.02 and its edges at their true fractions.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from stormscale.aggregation import local
from stormscale.aggregation.params import Params
from stormscale.aggregation.spark import job
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import scenario_inputs, thesis
from tests.unit.spark.test_recovery import assert_same, by_id

pytestmark = pytest.mark.spark

LINEAR = thesis("linear")  # every bolt has selectivity 1 and every edge fraction 1
DIAMOND = thesis("diamond")
ACKED = synthetic.Scenario(name="acked", duration_s=600, noise=0.01, acking=True, seed=11)
METRICS = synthetic.Scenario(name="metrics", duration_s=600, noise=0.01, metrics_streams=True, seed=12)
# emitted counters move every 60 s, 30 s out of step with executed (which moves at every scrape); the
# window (0, 300] then holds 270 s of emitted counts against 300 s of executed ones
STEPPED = synthetic.Scenario(
    name="stepped", duration_s=300, noise=0.01, emitted_period_s=60.0, emitted_phase_s=30.0, seed=13
)
STEPPED_DIAMOND = synthetic.Scenario(
    name="stepped-diamond",
    duration_s=400,
    noise=0.01,
    emitted_period_s=60.0,
    emitted_phase_s=20.0,
    acking=True,
    metrics_streams=True,
    seed=14,
)
CASES = [(LINEAR, ACKED), (LINEAR, METRICS), (LINEAR, STEPPED), (DIAMOND, STEPPED_DIAMOND)]
PARAMS = Params(settle_s=0)


@pytest.fixture(scope="module")
def both(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    samples, structures, _ = scenario_inputs(tmp_path_factory.mktemp("rates"), CASES)
    return {
        "spark": job.run(spark, [str(samples)], structures, PARAMS),
        "local": local.run([str(samples)], structures, PARAMS),
    }


def profile(both: dict[str, list[dict[str, Any]]], engine: str, name: str) -> dict[str, dict[str, Any]]:
    return by_id(next(d for d in both[engine] if d["topology"] == name))


def assert_rates(got: dict[str, dict[str, Any]], truth: Any, where: str) -> None:
    for c in truth.components:
        if not c.is_spout:
            assert got[c.id]["selectivity"] == pytest.approx(c.selectivity, abs=0.02), (where, c.id)
        for child, fraction in c.children:
            assert got[c.id]["children"][child] == pytest.approx(fraction, abs=0.02), (where, c.id, child)


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_ack_streams_count_neither_in_selectivity_nor_in_fractions(
    both: dict[str, list[dict[str, Any]]], engine: str
) -> None:
    assert_rates(profile(both, engine, "acked"), LINEAR, engine)


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_metrics_and_tick_streams_count_neither_in_selectivity_nor_in_fractions(
    both: dict[str, list[dict[str, Any]]], engine: str
) -> None:
    got = profile(both, engine, "metrics")
    assert_rates(got, LINEAR, engine)
    # __tick tuples from __system are not data: the executed rate is the data rate alone
    truth = {"2": 250.0, "3": 250.0, "4": 250.0}  # the backpressure model's rates (bolt 3 saturated)
    for cid, rate in truth.items():
        assert got[cid]["confidence"]["executedRate"] == pytest.approx(rate, rel=0.02), (engine, cid)
        assert got[cid]["capacityPerUnit"] == pytest.approx(
            next(c.capacity_per_unit for c in LINEAR.components if c.id == cid), rel=0.02
        ), (engine, cid)


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_emitted_counted_at_other_scrapes_than_executed_gives_selectivity_one(
    both: dict[str, list[dict[str, Any]]], engine: str
) -> None:
    assert_rates(profile(both, engine, "stepped"), LINEAR, engine)
    assert_rates(profile(both, engine, "stepped-diamond"), DIAMOND, engine)


def test_the_engines_agree_on_every_case(both: dict[str, list[dict[str, Any]]]) -> None:
    spark_docs = {d["topology"]: d for d in both["spark"]}
    for document in both["local"]:
        assert_same(document, spark_docs[document["topology"]], document["topology"])


def test_without_update_spans_the_stepped_case_would_be_off() -> None:
    """Negative control: over the window the stepped emitted counter holds 270 s of counts against
    300 s of executed ones, so a window ratio reads 0.9 (the bias the estimator removes)."""
    table = synthetic.generate(LINEAR, STEPPED).to_pylist()

    def total(metric: str, stream: str) -> float:
        values = [
            r["value"]
            for r in table
            if r["component"] == "2" and r["metric"] == metric and r["stream"] == stream
        ]
        return float(max(values) - min(values))

    assert total("emitted_total", "default") / total("executed_total", "default") == pytest.approx(
        0.9, abs=0.01
    )
