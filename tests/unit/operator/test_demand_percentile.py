"""Auto sizes for ``scaling.demandPercentile`` of each spout's per-step demand over the profile's
window (published or in-process), and says which demand it used; a profile without the distribution
offers its mean."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from stormscale.operator.decision.demand import at_percentile, describe, duration
from stormscale.operator.policy import InvalidSpecError, Policy, parse_spec
from stormscale.operator.ports import MeasuredProfile
from stormscale.planner import DemandStatistic, at_demand, read_profile
from tests.unit.operator.test_profiler import DIAMOND, SCENARIO, profiler, rows_of
from tests.unit.operator.test_published_profile import LINEAR, WHERE, data, document, run, world

#: Spout 1 offers 500/s on average and 800/s in its bursts (its p95).
BURSTY = {"mean": 500.0, "p50": 480.0, "p95": 800.0, "max": 900.0, "steps": 30, "stepSeconds": 10.0}


def bursty_document(**distribution: Any) -> dict[str, Any]:
    doc = document()
    doc["components"][0]["demandPerUnit"] = {**BURSTY, **distribution}
    return doc


def auto(percentile: str | None = None) -> Policy:
    scaling: dict[str, Any] = {"mode": "Auto", "minUnits": 0, "maxUnits": 16}
    if percentile is not None:
        scaling["demandPercentile"] = percentile
    return parse_spec(
        {
            "topologyName": "linear",
            "nimbus": {"host": "nimbus"},
            "workers": {"deployment": "linear-workers"},
            "metrics": {"prometheus": "http://prometheus:9090", "profile": "Published"},
            "scaling": scaling,
        }
    )


def auto_plan(percentile: str | None, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    w = world()
    w.published.data[WHERE] = data(doc or bursty_document())
    status = run(w, auto(percentile))
    plan: dict[str, Any] = status["lastPlan"]
    return plan


def test_the_percentile_defaults_to_p95_and_takes_only_the_four_statistics() -> None:
    assert auto().spec.scaling.demand_percentile is DemandStatistic.P95
    assert auto("mean").spec.scaling.demand_percentile is DemandStatistic.MEAN
    with pytest.raises(InvalidSpecError, match=r"spec\.scaling\.demandPercentile"):
        auto("p99")


def test_auto_sizes_a_bursty_source_for_its_p95_not_its_mean() -> None:
    """At the mean (500/s) bolt 3 (250/s a unit) needs 2 units; at the p95 (800/s) it needs 4."""
    at_mean, at_p95 = auto_plan("mean"), auto_plan("p95")
    assert at_p95["budget"] > at_mean["budget"]
    assert at_p95["start"]["3"] + at_p95["allocation"].get("3", 0) == 4
    assert at_mean["start"]["3"] + at_mean["allocation"].get("3", 0) == 2
    assert at_p95["predicted"]["after"] == pytest.approx(800.0)
    assert at_mean["predicted"]["after"] == pytest.approx(500.0)
    assert at_p95["demand"] == "demand p95 of 5m00s (30 steps of 10s): 800/s (mean 500/s)"
    assert at_mean["demand"] == "demand mean of 5m00s (30 steps of 10s): 500/s (mean 500/s)"
    assert auto_plan("max")["predicted"]["after"] == pytest.approx(900.0)


def test_a_profile_without_the_distribution_is_sized_for_its_mean_and_says_so() -> None:
    plan = auto_plan("p95", document())
    assert plan["budget"] == auto_plan("mean")["budget"]
    assert plan["demand"] == (
        "demand mean of the window: 500/s (p95 asked; the profile has no per-step demand)"
    )


def test_manual_plans_on_the_mean_as_before() -> None:
    w = world()
    w.published.data[WHERE] = data(bursty_document())
    p = auto().model_copy(update={"mode": auto().mode.MANUAL})
    status = run(w, p)
    assert "demand" not in status["lastPlan"]


def test_a_malformed_distribution_is_no_published_profile() -> None:
    w = world()
    w.published.data[WHERE] = data(bursty_document(p95=1000.0))  # above its max
    status = run(w, auto())
    assert status["lastPlan"]["profileSource"] == "InProcess"
    published = next(c for c in status["conditions"] if c["type"] == "PublishedProfile")
    assert published["reason"] == "PublishedProfileInvalid"
    assert "components[0].demandPerUnit: p50 ≤ p95 ≤ max must hold" in published["message"]


def test_several_spouts_each_take_their_own_statistic_and_one_without_keeps_its_mean() -> None:
    doc = bursty_document()
    two = read_profile(
        {
            "topology": "two",
            "components": [
                {**doc["components"][0], "units": 2},
                {"id": "0", "kind": "spout", "units": 1, "outputPerUnit": 100.0, "children": {"2": 1}},
                {"id": "2", "kind": "bolt", "units": 1, "capacityPerUnit": 400.0},
            ],
        }
    )
    model, used = at_demand(two.topology, two.demand, DemandStatistic.P95)
    assert [c.output_per_unit for c in model.components] == [800.0, 100.0, 0.0]
    assert (used.rate, used.mean, used.without) == (1700.0, 1100.0, ("0",))
    measured = at_percentile(MeasuredProfile(two.topology, 0.0, 0.0, demand=two.demand), DemandStatistic.P95)
    assert measured.demand_used == (
        "demand p95 of 5m00s (30 steps of 10s): 1700/s (mean 1100/s); "
        "spout 0 without per-step demand: at its mean"
    )
    assert measured.topology.components[0].output_per_unit == 800.0


def test_the_in_process_profile_offers_the_same_statistics() -> None:
    """The profiler (Prometheus window → the single-process aggregation) carries each spout's
    per-step demand: a load 1.4× its base one step in ten has its mean near 1.04× and its p95 at 1.4×."""
    bursty = dataclasses.replace(SCENARIO, load_wave=(1.0,) * 9 + (1.4,))
    measured = profiler(rows_of(DIAMOND, bursty)).profile("diamond", 300)
    spout = next(c for c in DIAMOND.components if c.is_spout)
    distribution = measured.demand[spout.id]
    assert distribution.mean == pytest.approx(measured.topology.components[0].output_per_unit)
    assert distribution.mean == pytest.approx(1.04 * spout.output_per_unit, rel=0.03)
    assert distribution.p95 == pytest.approx(1.4 * spout.output_per_unit, rel=0.03)
    assert (distribution.steps, distribution.step_seconds) == (29, 10.0)
    at_p95 = at_percentile(measured, DemandStatistic.P95)
    assert at_p95.topology.components[0].output_per_unit == distribution.p95
    assert [duration(s) for s in (90, 45, 3900)] == ["1m30s", "45s", "1h05m"]
    assert describe(at_demand(LINEAR, {}, DemandStatistic.MAX)[1], DemandStatistic.MAX).startswith(
        "demand mean of the window: 500/s (max asked"
    )
