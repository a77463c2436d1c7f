"""The target-rate benchmark's pure parts (bench/target.py) and the bed's pods of several slots: the
runs, the resources they apply, the planner's optimum they record, and the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import target as bench
from stormscale.operator.policy import Mode, PlacementKind, SizingKind, parse_spec
from stormscale.operator.ports import MeasuredProfile
from stormscale.planner import ComponentConfidence, ProfileConfidence, load_profile
from stormscale.storm.model import Executor, TopologyInfo
from tests.harness.bed.stack import SLOTS_ENV, storm_topology, supervisor_slots, worker_deployment

LINEAR = load_profile(Path(__file__).parents[2] / "examples" / "profiles" / "thesis-linear.json")
SAM2 = bench.Strategy("Exact", "SAM", 2)
DEFAULT1 = bench.Strategy("Exact", None, 1)


def test_each_sizing_runs_on_sam_with_two_slots_then_on_storms_own_one_slot_placement() -> None:
    runs = bench.strategies(["Exact", "MBA"], quick=False)
    assert runs == [SAM2, DEFAULT1, bench.Strategy("MBA", "SAM", 2), bench.Strategy("MBA", None, 1)]
    assert bench.strategies(["Exact", "MBA"], quick=True) == [SAM2]
    assert [r.label for r in runs[:2]] == ["Exact / SAM K=2", "Exact / default K=1"]


def test_a_runs_scenario_has_pods_of_its_slots_at_a_unit_per_slot_and_a_name_of_its_own() -> None:
    sam, default = bench.scenario_for(SAM2), bench.scenario_for(DEFAULT1)
    assert (sam.slots_per_pod, sam.unit_cpu, sam.pod_cpu) == (2, "200m", "400m")
    assert (default.slots_per_pod, default.pod_cpu) == (1, "200m")
    names = {bench.scenario_for(s).name for s in bench.strategies(["Exact", "MBA"], quick=False)}
    assert len(names) == 4  # Deployment, topic and consumer group of its own per run
    assert (sam.source, sam.load, sam.topic) == ("kafka", bench.LOAD, sam.name)


def test_the_worker_pods_carry_their_slots_to_the_supervisor_and_their_limit_is_a_unit_per_slot() -> None:
    deployment = worker_deployment(bench.scenario_for(SAM2), 3)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["cpu"] == "400m"
    assert supervisor_slots(container) == 2
    one = worker_deployment(bench.scenario_for(DEFAULT1), 3)["spec"]["template"]["spec"]["containers"][0]
    assert supervisor_slots(one) == 1
    assert supervisor_slots({"name": "other"}) == 1  # a Deployment that does not say: one slot
    with pytest.raises(ValueError, match=SLOTS_ENV):
        supervisor_slots({"env": [{"name": SLOTS_ENV, "value": "0"}]})


def test_the_target_resource_is_a_valid_auto_spec_with_the_target_the_sizing_and_the_placement() -> None:
    scenario = bench.scenario_for(SAM2)
    resource = bench.target_resource(
        scenario, SAM2, 30.0, nimbus_port=6627, prometheus="http://127.0.0.1:9090", pod_overhead="53m"
    )
    policy = parse_spec(resource["spec"])
    assert policy.mode is Mode.AUTO
    scaling, workers = policy.spec.scaling, policy.spec.workers
    assert (scaling.target_rate, scaling.sizing) == (30.0, SizingKind.EXACT)
    assert (workers.slots_per_pod, workers.placement) == (2, PlacementKind.SAM)
    assert workers.pod_overhead_cores == pytest.approx(0.053)
    assert scaling.target_utilization == 1.0  # Ω is the target, no headroom on top
    assert min(policy.cooldown_s, policy.scale_in_delay_s) >= 1800  # one change per run
    assert "budget" not in resource["spec"]["scaling"]
    assert resource["spec"]["components"][0]["kafka"]["topic"] == scenario.topic  # demand from the topic
    default = bench.target_resource(
        bench.scenario_for(DEFAULT1), DEFAULT1, 30.0, nimbus_port=6627, prometheus="http://127.0.0.1:9090"
    )
    assert "placement" not in default["spec"]["workers"]
    assert default["spec"]["workers"]["slotsPerPod"] == 1
    # the bed's Manual resource says the pods' slots too
    assert storm_topology(scenario, 6627, "http://p:9090", 0)["spec"]["workers"]["slotsPerPod"] == 2


def test_the_optimum_is_the_exact_minimum_on_the_operators_planning_model_and_the_cpu_bound_on_pods() -> None:
    """The thesis's linear profile (500 tuples/s offered; bolts of 400, 250 and 900 per unit) at
    2000/s: ⌈2000 / c⌉ units per bolt, the spout keeps its one; 17 units are 9 pods of 2 slots, and
    the CPU bound is ⌈⌈1 + 5 + 8 + 2.22⌉ / 2⌉ = 9 pods as well."""
    measured = MeasuredProfile(LINEAR, 0.0, 0.0)
    running = {c.id: c.units for c in LINEAR.components}
    resource = bench.target_resource(
        bench.scenario_for(SAM2), SAM2, 2000.0, nimbus_port=6627, prometheus="http://127.0.0.1:9090"
    )
    resource["spec"]["components"] = []  # the thesis's profile has no Kafka spout
    best = bench.optimum(measured, resource, running, {}, 2000.0)
    assert best.units == {"1": 1, "2": 5, "3": 8, "4": 3}
    assert (best.total, best.pods, best.bound) == (17, 9, 9)
    one = bench.target_resource(
        bench.scenario_for(DEFAULT1), DEFAULT1, 2000.0, nimbus_port=6627, prometheus="http://127.0.0.1:9090"
    )
    one["spec"]["components"] = []
    assert (bench.optimum(measured, one, running, {}, 2000.0).bound) == 17  # ⌈16.22⌉ slots of one pod each


def executor(component: str, host: str, port: int = 6700) -> Executor:
    return Executor(component, 1, 1, host, port, 100)


def test_supervisors_hosting_the_workers_and_the_placements_pods() -> None:
    info = TopologyInfo(
        "id",
        "t",
        "ACTIVE",
        100,
        (
            executor("1", "127.0.1.1"),
            executor("__acker", "127.0.1.1"),
            executor("2", "127.0.1.1", 6701),
            executor("3", "127.0.1.2"),
        ),
    )
    assert bench.hosting(info) == {"127.0.1.1", "127.0.1.2"}
    assert bench.placement_pods({"placement": {"pods": 3}, "units": {"1": 1, "2": 4}}, 2) == 3
    assert bench.placement_pods({"units": {"1": 1, "2": 2, "3": 2}}, 2) == 3  # no placement: ⌈5 / 2⌉
    assert bench.placement_pods({"units": {"1": 1, "2": 2, "3": 2}}, 1) == 5


def ready(reason: str) -> dict[str, str]:
    return {"type": "Ready", "status": "True", "reason": reason, "message": ""}


def test_the_sizing_counts_as_applied_once_verified_by_the_runs_sizing_and_placement() -> None:
    done = {
        "conditions": [ready("Applied")],
        "units": {"1": 1, "2": 2},
        "appliedBudget": 1,
        "lastPlan": {"chosen": "exact", "budget": 1},
        "placement": {"strategy": "SAM", "pods": 2},
    }
    assert bench.sized(done, SAM2)
    stale = {"type": "Ready", "status": "False", "reason": "StaleMetrics", "message": ""}
    assert bench.sized({**done, "conditions": [stale]}, SAM2)  # Auto's next pass waits for a window
    assert not bench.sized({**done, "pending": {"budget": 1}}, SAM2)  # still applying
    assert not bench.sized({**done, "appliedBudget": 0}, SAM2)  # the sizing's budget not verified yet
    assert not bench.sized({**done, "lastPlan": {"chosen": "combined", "budget": 1}}, SAM2)  # a budget plan
    assert not bench.sized(done, bench.Strategy("MBA", "SAM", 2))
    assert not bench.sized(done, DEFAULT1)  # a placement where the run has none
    assert bench.sized({**done, "placement": None}, DEFAULT1)


def row(strategy: bench.Strategy, pods: int, measured: float, **kw: object) -> bench.Row:
    fields: dict[str, object] = {
        "strategy": strategy,
        "target": 30.0,
        "before": 13.0,
        "sized_units": 7,
        "units": {"1": 1, "2": 2, "3": 3, "4": 1},
        "exact_units": 7,
        "optimum": bench.Optimum({"1": 1, "2": 2, "3": 3, "4": 1}, 4, 3),
        "sizing_pods": 4,
        "placement_pods": pods,
        "replicas": pods,
        "supervisors": pods,
        "pod_cpu_cores": pods * 0.2 * strategy.slots_per_pod,
        "measured": measured,
        "received_cores": 1.1,
        "sized_after": 7,
    }
    fields.update(kw)
    return bench.Row(**fields)  # type: ignore[arg-type]


def test_the_table_shows_each_run_and_the_ratio_against_the_one_slot_run_of_the_same_sizing() -> None:
    rows = [row(SAM2, 4, 36.0), row(DEFAULT1, 7, 33.0), row(bench.Strategy("MBA", "SAM", 2), 4, 30.0)]
    text = bench.table(rows)
    assert "| Exact / SAM K=2 | 30 | 13.0 | 7 | 7 (7) | 3 | 4 | 4 | 4 | 1.60 | 36.0 | 1.20 |" in text
    assert "| Exact / default K=1 | 30 | 13.0 | 7 | 7 (7) | 3 | 7 | 7 | 7 | 1.40 | 33.0 | 1.10 |" in text
    lines = bench.ratios(rows)
    assert lines == [
        "Exact: Exact / SAM K=2 / Exact / default K=1: pods 4/7 = 0.57, pods' CPU 1.14×, measured 1.09×"
    ]  # MBA has no one-slot run here: no ratio
    assert rows[0].pods_agree
    assert not row(SAM2, 4, 36.0, supervisors=3).pods_agree
    assert "pods agree: NO" in bench.details([row(SAM2, 4, 36.0, supervisors=3)])[0]


def test_a_target_that_is_not_a_rate_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--target", "0"])
    assert exit_.value.code == 2
    assert "--target: a rate > 0 tuples/s, got 0" in capsys.readouterr().err


def test_each_bolts_capacity_is_shown_with_where_its_busy_time_came_from() -> None:
    confidence = ProfileConfidence(
        components={
            "2": ComponentConfidence(capacity_source="pod-cpu"),
            "3": ComponentConfidence(capacity_source="execute-latency"),
        }
    )
    shown = bench.capacities(MeasuredProfile(LINEAR, 500.0, 0.0, confidence))
    assert shown == {"2": "400.0/s pod-cpu", "3": "250.0/s execute-latency", "4": "900.0/s ?"}  # no spout


def test_saved_records_re_render_as_the_run_printed_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [row(SAM2, 4, 36.0, spout_fractions={"1→2": 0.82}), row(DEFAULT1, 7, 33.0)]
    saved = tmp_path / "target.json"
    saved.write_text(
        json.dumps({"rows": [bench._jsonable(r) for r in rows], "failed": ["MBA / SAM K=2: boom"]})
    )
    assert [bench.row_of(r) for r in json.loads(saved.read_text())["rows"]] == rows
    assert bench.main(["--from-json", str(saved)]) == 0
    out = capsys.readouterr().out
    assert bench.table(rows) in out
    assert "the baseline profile's spout edges: 1→2 0.820" in out
    assert "FAILED MBA / SAM K=2: boom" in out
    saved.write_text("[]")
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--from-json", str(saved)])
    assert exit_.value.code == 2
    assert "not a record of this benchmark" in capsys.readouterr().err


def test_the_spout_edges_fractions_are_read_from_the_profile() -> None:
    assert bench.spout_fractions(MeasuredProfile(LINEAR, 500.0, 0.0)) == {"1→2": 1.0}
