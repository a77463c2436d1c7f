"""Reconcile with recording fakes: every branch, including failures between the two writes."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stormscale.operator.decision.planning import InvalidProfileError, planning_model, planning_start
from stormscale.operator.packing import first_problems
from stormscale.operator.policy import InvalidSpecError, Policy, parse_spec
from stormscale.operator.ports import (
    RefusedError,
    SettlingError,
    StaleMetricsError,
    UnavailableError,
    UnsteadyWindowError,
)
from stormscale.operator.reconcile import Resource, reconcile
from stormscale.operator.status import StormTopologyStatus
from stormscale.planner import load_profile, parse_profile
from tests.harness.fakes.ports import FakeCluster, FakeNimbus, FakeProfiler, World

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"
LINEAR = load_profile(PROFILES / "thesis-linear.json")  # 1 → 2 → 3 → 4, one unit each
T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
RESOURCE = Resource("streaming", "linear", generation=1)


def policy(**scaling: Any) -> Policy:
    return parse_spec(
        {
            "topologyName": "linear",
            "nimbus": {"host": "nimbus"},
            "workers": {"deployment": "linear-workers", "slotsPerPod": scaling.pop("slotsPerPod", 1)},
            "metrics": {"prometheus": "http://prometheus:9090"},
            "scaling": {"budget": 2, "flowModel": "Drop", "strategy": "Combined", **scaling},
        }
    )


def world(**nimbus: Any) -> World:
    executors = nimbus.pop("executors", {"1": 1, "2": 1, "3": 1, "4": 1})
    tasks = nimbus.pop("tasks", dict.fromkeys(executors, 8))
    return World(FakeCluster(replicas=4), FakeNimbus(executors, tasks, **nimbus), FakeProfiler(LINEAR))


@dataclass(frozen=True)
class Pass:
    """A pass's outcome with its status as the API server stores it (camelCase JSON)."""

    status: dict[str, Any]
    retry_after: float | None


def run(
    w: World,
    p: Policy,
    status: dict[str, Any] | None = None,
    minutes: float = 0,
    generation: int | None = None,
) -> Pass:
    """One pass at ``minutes`` after T0; ``generation``: the resource's, when the spec changed."""
    stored = StormTopologyStatus.from_json(status)
    resource = RESOURCE if generation is None else replace(RESOURCE, generation=generation)
    outcome = reconcile(resource, p, stored, w.ports, T0 + timedelta(minutes=minutes))
    return Pass(outcome.status.to_json(), outcome.retry_after)


def conditions(outcome: Pass) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in outcome.status["conditions"]}


#: The status fields a Manual pass saves with its intent, before its first write.
MANUAL_INTENT = [
    "baseline",
    "conditions",
    "lastPlan",
    "observed",
    "observedGeneration",
    "pending",
    "unitCPU",
]


def test_budget_is_planned_applied_and_verified_with_one_event() -> None:
    w = world()
    first = run(w, policy())
    assert w.journal == [  # intent (with the baseline a resumed pass needs) is saved before the first write
        ("save", MANUAL_INTENT),
        ("scale", 6),
        ("rebalance", {"1": 1, "2": 2, "3": 2, "4": 1}),
    ]
    assert w.nimbus.calls[-1] == ("rebalance", ({"1": 1, "2": 2, "3": 2, "4": 1}, 6))
    assert conditions(first)["Progressing"] == ("True", "RebalanceRequested")
    assert first.retry_after is not None
    assert w.events.posted == []
    second = run(w, policy(), first.status, minutes=1)
    assert conditions(second)["Ready"] == ("True", "Applied")
    assert second.status["units"] == {"1": 1, "2": 2, "3": 2, "4": 1}
    assert second.status["appliedBudget"] == 2
    assert second.status["totalUnits"] == 6
    assert "pending" not in second.status
    assert [e[:2] for e in w.events.posted] == [("Normal", "ScalingApplied")]
    assert "predicted 250 → 500" in w.events.posted[0][2]


def test_no_rebalance_until_nimbus_has_a_slot_for_every_worker() -> None:
    """Budget 2 needs 6 workers; the topology holds 4 slots. With 1 free slot (one new pod's
    Supervisor has not registered yet) the pods are scaled but Storm is not rebalanced."""
    w = world(free_slots=1)
    first = run(w, policy())
    assert ("scale", 6) in w.journal
    assert not [c for c in w.nimbus.calls if c[0] == "rebalance"]
    assert conditions(first)["Progressing"] == ("True", "WaitingForSlots")
    assert any("6 slots needed, 1 free + 4 held" in c["message"] for c in first.status["conditions"])
    assert first.retry_after is not None
    w.nimbus.free_slots = 2
    second = run(w, policy(), first.status, minutes=1)
    assert w.nimbus.calls[-1] == ("rebalance", ({"1": 1, "2": 2, "3": 2, "4": 1}, 6))
    assert conditions(second)["Progressing"] == ("True", "RebalanceRequested")


def test_status_shows_every_strategy_side_by_side() -> None:
    w = world()
    plan = run(w, policy()).status["lastPlan"]
    assert set(plan["alternatives"]) == {"stela", "predictive", "combined", "optimal", "best"}
    assert plan["chosen"] == "predictive"
    assert plan["allocation"] == {"2": 1, "3": 1}
    assert plan["predicted"] == {"before": 250.0, "after": 500.0}


def test_by_default_the_status_names_the_strategy_whose_plan_won() -> None:
    w = world()
    default = parse_spec(
        {**policy().spec.model_dump(by_alias=True), "scaling": {"budget": 2, "flowModel": "Drop"}}
    )
    plan = run(w, default).status["lastPlan"]
    assert (plan["strategy"], plan["chosen"]) == ("best", "optimal")
    assert plan["alternatives"]["best"] == max(plan["alternatives"].values()) == 500.0
    assert plan["allocation"] == {"2": 1, "3": 1}
    assert "note" not in plan


def test_reapplying_the_same_spec_changes_nothing() -> None:
    w = world()
    status = run(w, policy()).status
    status = run(w, policy(), status, minutes=1).status
    calls_before = (len(w.cluster.calls), len(w.nimbus.calls), w.profiler.calls, len(w.events.posted))
    again = run(w, policy(), status, minutes=2)
    assert conditions(again)["Ready"] == ("True", "Applied")
    assert [c for c in w.cluster.calls[calls_before[0] :] if c[0] == "scale"] == []
    assert [c for c in w.nimbus.calls[calls_before[1] :] if c[0] == "rebalance"] == []
    assert w.profiler.calls == calls_before[2]  # no new profile, no new plan
    assert len(w.events.posted) == calls_before[3]
    assert again.retry_after is None


def test_a_failure_between_the_two_writes_resumes_the_same_plan() -> None:
    w = world()
    w.nimbus.fail_rebalance = UnavailableError("nimbus: connection refused")
    broken = run(w, policy())
    assert w.cluster.replicas == 6  # the first write happened
    assert conditions(broken)["Degraded"] == ("True", "ApplyUnavailable")
    assert broken.status["pending"]["units"] == {"1": 1, "2": 2, "3": 2, "4": 1}
    w.nimbus.fail_rebalance = None
    w.profiler.topology = load_profile(PROFILES / "thesis-diamond.json")  # metrics moved meanwhile: no matter
    resumed = run(w, policy(), broken.status, minutes=1)
    assert w.profiler.calls == 1  # not re-planned
    assert w.nimbus.executors == {"1": 1, "2": 2, "3": 2, "4": 1}
    done = run(w, policy(), resumed.status, minutes=2)
    assert done.status["appliedBudget"] == 2
    assert [e[1] for e in w.events.posted] == ["ApplyUnavailable", "ScalingApplied"]


def test_replicas_are_set_not_added_when_a_pass_repeats() -> None:
    w = world(applies_rebalance=False)  # Storm accepts the rebalance but lags behind
    status = run(w, policy()).status
    status = run(w, policy(), status, minutes=1).status
    assert [c for c in w.cluster.calls if c[0] == "scale"] == [("scale", 6)]  # second pass: already 6
    assert [c[0] for c in w.nimbus.calls].count("rebalance") == 2  # set again, same target
    assert status["pending"]["units"] == {"1": 1, "2": 2, "3": 2, "4": 1}


def test_lowering_the_budget_scales_in_from_the_baseline() -> None:
    w = world()
    status = run(w, policy(budget=4)).status  # 3 would leave a unit that adds nothing unallocated
    status = run(w, policy(budget=4), status, minutes=1).status
    assert status["units"] == {"1": 2, "2": 2, "3": 3, "4": 1}
    status = run(w, policy(budget=1), status, minutes=2).status
    status = run(w, policy(budget=1), status, minutes=3).status
    assert status["units"] == {"1": 1, "2": 1, "3": 2, "4": 1}  # baseline + the budget-1 plan, not 3 − 2
    assert w.cluster.replicas == 5


def test_recommend_mode_only_writes_the_plan() -> None:
    w = world()
    outcome = run(w, policy(mode="Recommend"))
    assert outcome.status["lastPlan"]["allocation"] == {"2": 1, "3": 1}
    assert conditions(outcome)["Ready"] == ("True", "Recommended")
    assert w.journal == []
    assert "units" not in outcome.status


def test_hpa_on_the_deployment_blocks_every_action_and_warns_once() -> None:
    w = world()
    w.cluster.hpa = "linear-workers-hpa"
    first = run(w, policy())
    second = run(w, policy(), first.status, minutes=1)
    assert conditions(second)["Degraded"] == ("True", "HPAConflict")
    assert w.journal == []
    assert [e[:2] for e in w.events.posted] == [("Warning", "HPAConflict")]


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (lambda w: setattr(w.profiler, "age_s", 600.0), "StaleMetrics"),
        (
            lambda w: setattr(w.profiler, "fail", StaleMetricsError("only 2 samples in 5m")),
            "StaleMetrics",
        ),
        (
            lambda w: setattr(w.profiler, "fail", UnavailableError("prometheus: timeout")),
            "MetricsUnavailable",
        ),
        (lambda w: setattr(w.nimbus, "status", "INACTIVE"), "TopologyNotActive"),
        (
            lambda w: setattr(w.nimbus, "fail_describe", RefusedError("topology linear not found")),
            "TopologyNotFound",
        ),
        (lambda w: setattr(w.nimbus, "fail_describe", UnavailableError("nimbus down")), "NimbusUnavailable"),
        (lambda w: setattr(w.cluster, "cpu_limit_millicores", None), "NoCPULimit"),
        (lambda w: setattr(w.cluster, "fail_read", RefusedError("deployment not found")), "WorkersNotFound"),
        (
            lambda w: setattr(w.profiler, "topology", load_profile(PROFILES / "thesis-topology-10.json")),
            "InvalidProfile",
        ),
        (lambda w: setattr(w.status, "fail", UnavailableError("apiserver: 503")), "KubernetesUnavailable"),
    ],
)
def test_bad_or_missing_inputs_mean_no_action(setup: Any, reason: str) -> None:
    w = world()
    setup(w)
    outcome = run(w, policy())
    assert conditions(outcome)["Degraded"] == ("True", reason)
    assert conditions(outcome)["Ready"][0] == "False"
    assert [j for j in w.journal if j[0] in {"scale", "rebalance"}] == []
    assert [e[:2] for e in w.events.posted] == [("Warning", reason)]


def test_an_unsteady_window_is_degraded_and_looked_at_again_one_metrics_step_later() -> None:
    """A load change inside the window: no action, StaleMetrics, and the next look when the window has
    moved by one step (the spec's 10 s), not the stale-metrics wait of 30 s."""
    w = world()
    w.profiler.fail = UnsteadyWindowError("rates of 1, 4 are not steady over the window")
    outcome = run(w, policy())
    assert conditions(outcome)["Degraded"] == ("True", "StaleMetrics")
    assert outcome.retry_after == 10
    assert [j for j in w.journal if j[0] in {"scale", "rebalance"}] == []
    w.profiler.fail = StaleMetricsError("only 2 samples in 5m")
    assert run(w, policy(), outcome.status).retry_after == 30


def test_a_window_still_settling_after_a_change_waits_without_a_warning() -> None:
    """Too few steady intervals since a rebalance, the samples fresh: Settling, not Degraded."""
    w = world()
    w.profiler.fail = SettlingError("3 steady intervals after the last change (+2m settling)", 5.0)
    waiting = run(w, policy())
    assert conditions(waiting)["Degraded"] == ("False", "Settling")
    assert conditions(waiting)["Progressing"] == ("True", "Settling")
    assert conditions(waiting)["Ready"] == ("False", "Settling")
    assert waiting.retry_after == 15  # as a rebalance in flight
    assert [j for j in w.journal if j[0] in {"scale", "rebalance"}] == []
    assert w.events.posted == []
    w.profiler.fail = None
    applied = run(w, policy(), run(w, policy(), waiting.status, minutes=1).status, minutes=2)
    assert conditions(applied)["Ready"] == ("True", "Applied")
    w.profiler.fail = SettlingError("0 steady intervals after the last change (+2m settling)", 5.0)
    again = run(w, policy(budget=3), applied.status, minutes=3, generation=2)
    assert conditions(again)["Ready"] == ("True", "Applied")  # budget 2 still runs
    assert conditions(again)["Progressing"] == ("True", "Settling")
    assert w.events.posted[1:] == []  # only the first apply's ScalingApplied


def test_a_settling_window_whose_samples_stopped_is_stale() -> None:
    """The change explains too few intervals only while samples still arrive (within maxAge)."""
    w = world()
    w.profiler.fail = SettlingError("2 steady intervals after the last change (+2m settling)", 600.0)
    outcome = run(w, policy())
    assert conditions(outcome)["Degraded"] == ("True", "StaleMetrics")
    assert [e[:2] for e in w.events.posted] == [("Warning", "StaleMetrics")]
    assert "600s old" in w.events.posted[0][2]


def test_a_refused_rebalance_scales_back_and_holds_until_the_spec_changes() -> None:
    w = world()
    w.nimbus.fail_rebalance = RefusedError("component 3: 9 executors above its 8 tasks")
    first = run(w, policy())
    assert conditions(first)["Degraded"] == ("True", "ApplyRefused")
    assert "pending" not in first.status
    assert first.retry_after is None
    assert w.cluster.replicas == 4  # back to the pods the units Storm runs need
    assert [j for j in w.journal if j[0] != "save"] == [
        ("scale", 6),
        ("rebalance", {"1": 1, "2": 2, "3": 2, "4": 1}),
        ("scale", 4),
    ]
    since = next(c for c in first.status["conditions"] if c["type"] == "Degraded")["lastTransitionTime"]
    status = first.status
    for minute in (1, 2, 3):  # the timer's passes: no re-plan, no write, no second Warning
        status = run(w, policy(), status, minutes=minute).status
    assert w.profiler.calls == 1
    assert [j for j in w.journal if j[0] != "save"][3:] == []
    assert [e[:2] for e in w.events.posted] == [("Warning", "ApplyRefused")]
    assert conditions(Pass(status, None))["Degraded"] == ("True", "ApplyRefused")
    degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
    assert degraded["lastTransitionTime"] == since
    assert "9 executors above its 8 tasks" in degraded["message"]
    w.nimbus.fail_rebalance = None  # the spec changes (a new generation): planned and applied again
    changed = run(w, policy(), status, minutes=4, generation=2)
    assert w.nimbus.executors == {"1": 1, "2": 2, "3": 2, "4": 1}
    assert changed.status.get("pending") is not None


def test_a_refused_scale_is_not_undone_and_holds_too() -> None:
    w = world()
    w.cluster.fail_scale = RefusedError("deployments.apps is forbidden")
    status = run(w, policy()).status
    status = run(w, policy(), status, minutes=1).status
    assert [j for j in w.journal if j[0] != "save"] == [("scale", 6)]  # one try, no scale back
    assert conditions(Pass(status, None))["Degraded"] == ("True", "ApplyRefused")


def test_a_failure_that_repeats_warns_once_and_keeps_its_transition_time() -> None:
    """Each pass sets Healthy before it acts; a pass that then fails the same way must not count as
    a new failure (it used to post a Warning and move lastTransitionTime every pass)."""
    w = world()
    w.nimbus.fail_rebalance = UnavailableError("nimbus: connection refused")
    status = run(w, policy()).status
    since = next(c for c in status["conditions"] if c["type"] == "Degraded")["lastTransitionTime"]
    for minute in (1, 2):
        status = run(w, policy(), status, minutes=minute).status
    assert [e[:2] for e in w.events.posted] == [("Warning", "ApplyUnavailable")]
    assert next(c for c in status["conditions"] if c["type"] == "Degraded")["lastTransitionTime"] == since
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["lastTransitionTime"] == since


def test_never_above_the_task_count() -> None:
    w = world(tasks={"1": 1, "2": 8, "3": 1, "4": 8})  # 3 cannot take a second executor
    status = run(w, policy(budget=3)).status
    assert status["lastPlan"]["allocation"].get("3", 0) == 0
    pending = status.get("pending", {}).get("units", {})  # with 3 the bottleneck, no unit adds anything
    assert all(n <= {"1": 1, "2": 8, "3": 1, "4": 8}[c] for c, n in pending.items())
    assert conditions(run(w, policy(budget=3), status, minutes=1))["ScalingLimited"] == (
        "True",
        "UnitsUnallocated",
    )


def test_the_plan_knows_that_executors_share_a_bolts_input_by_task() -> None:
    """3 executors over 4 tasks run at 2 executors' pace (one holds 2 of the 4 tasks): no plan
    counts on a third unit of 3 that adds nothing, and one more unit is worth two."""
    tasks = {"1": 8, "2": 8, "3": 4, "4": 8}
    model = planning_model(LINEAR, {"1": 1, "2": 2, "3": 3, "4": 1}, tasks, policy())
    three = model.components[model.index["3"]]
    assert three.tasks == 4
    assert [three.capacity(u) for u in (2, 3, 4)] == [500.0, 500.0, 1000.0]
    assert model.max_units[model.index["3"]] == 4


def test_auto_plans_for_the_demand_over_the_target_utilization_unrounded() -> None:
    """ρ = 0.7: the spout offers 500/0.7 = 714.29/s to the plan (not 714); bolts keep their capacity."""
    auto = policy(mode="Auto", budget=0, maxUnits=10, targetUtilization=0.7)
    model = planning_model(LINEAR, dict.fromkeys("1234", 1), dict.fromkeys("1234", 8), auto)
    spout, bolt = model.components[model.index["1"]], model.components[model.index["2"]]
    assert spout.output_per_unit == pytest.approx(500 / 0.7, rel=1e-12)
    assert bolt.capacity_per_unit == 400.0


def test_unit_cpu_is_the_cpu_limit_per_slot() -> None:
    w = world()
    w.cluster.cpu_limit_millicores = 1000
    outcome = run(w, policy(slotsPerPod=2))
    assert outcome.status["unitCPU"] == "500m"
    # 6 units, 2 slots per pod: 3 of the 4 pods, lowered once Storm runs them
    assert [j[0] for j in w.journal] == ["save", "rebalance"]
    run(w, policy(slotsPerPod=2), outcome.status, minutes=1)
    assert w.journal[-1] == ("scale", 3)


def test_transition_times_move_only_when_a_condition_flips() -> None:
    w = world()
    status = run(w, policy()).status
    status = run(w, policy(), status, minutes=1).status
    ready_since = next(c for c in status["conditions"] if c["type"] == "Ready")["lastTransitionTime"]
    status = run(w, policy(), status, minutes=5).status
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["lastTransitionTime"] == ready_since


def test_metrics_step_and_settle_are_read_and_a_window_must_hold_five_steps() -> None:
    spec: dict[str, Any] = {
        "topologyName": "linear",
        "nimbus": {"host": "nimbus"},
        "workers": {"deployment": "linear-workers"},
        "metrics": {"prometheus": "http://prometheus:9090", "window": "3m", "step": "20s", "settle": "90s"},
    }
    parsed = parse_spec(spec)
    assert (parsed.window_s, parsed.step_s, parsed.settle_s) == (180.0, 20.0, 90.0)
    defaults = parse_spec({**spec, "metrics": {"prometheus": "http://prometheus:9090"}})
    assert (defaults.window_s, defaults.step_s, defaults.settle_s) == (300.0, 10.0, 120.0)
    with pytest.raises(InvalidSpecError, match=r"spec\.metrics.*at least 5 steps"):
        parse_spec({**spec, "metrics": {"prometheus": "http://p:9090", "window": "1m", "step": "20s"}})


@pytest.mark.parametrize(("quantity", "cores"), [("0", 0.0), ("50m", 0.05), ("0.1", 0.1), ("1", 1.0)])
def test_the_pods_overhead_is_a_cpu_quantity(quantity: str, cores: float) -> None:
    spec = {"topologyName": "t", "nimbus": {"host": "n"}, "metrics": {"prometheus": "http://p:9090"}}
    parsed = parse_spec({**spec, "workers": {"deployment": "w", "podOverheadCPU": quantity}})
    assert parsed.spec.workers.pod_overhead_cores == pytest.approx(cores)
    assert parse_spec({**spec, "workers": {"deployment": "w"}}).spec.workers.pod_overhead_cores == 0.0
    with pytest.raises(InvalidSpecError, match=r"spec\.workers\.podOverheadCPU"):
        parse_spec({**spec, "workers": {"deployment": "w", "podOverheadCPU": "50 millicores"}})


def test_before_anything_is_applied_a_plan_starts_from_the_baseline_with_the_whole_budget() -> None:
    baseline = {"1": 1, "2": 1}
    assert planning_start(baseline, StormTopologyStatus(), 3) == ({"1": 1, "2": 1}, 3)
    assert planning_start(baseline, StormTopologyStatus(units={"1": 1, "2": 2}), 3) == ({"1": 1, "2": 1}, 3)


def test_a_topology_resubmitted_with_other_components_plans_from_its_baseline_again() -> None:
    status = StormTopologyStatus(units={"1": 1, "2": 3}, applied_budget=2)  # the old topology's
    assert planning_start({"1": 1, "2": 1, "3": 1}, status, 3) == ({"1": 1, "2": 1, "3": 1}, 3)


@pytest.mark.parametrize(
    ("running", "named"),
    [
        ({"1": 1, "2": 1, "3": 1, "4": 1, "5": 1}, "5"),  # Storm runs a component the profile lacks
        ({"1": 1, "2": 1, "3": 1}, "4"),  # the profile has one Storm does not run
        ({"1": 1, "2": 1, "3": 1, "5": 1}, "5"),  # both: what Storm runs comes first
    ],
)
def test_a_profile_and_topology_that_disagree_name_the_component(running: dict[str, int], named: str) -> None:
    with pytest.raises(InvalidProfileError) as err:
        planning_model(LINEAR, running, dict.fromkeys(running, 8), policy())
    assert str(err.value) == f"profile and topology disagree on components: {named}"


def test_a_bolt_may_shrink_to_one_unit_and_a_fixed_spout_keeps_its_own() -> None:
    model = planning_model(LINEAR, {"1": 1, "2": 3, "3": 3, "4": 1}, dict.fromkeys("1234", 8), policy())
    assert [c.min_units for c in model.components] == [1, 1, 1, 1]


def test_once_applied_a_plan_starts_from_what_runs_and_moves_only_the_difference() -> None:
    status = StormTopologyStatus(units={"1": 1, "2": 3}, applied_budget=2)
    assert planning_start({"1": 1, "2": 1}, status, 3) == ({"1": 1, "2": 3}, 1)
    assert planning_start({"1": 1, "2": 1}, status, 0) == ({"1": 1, "2": 3}, -2)
    assert planning_start({"1": 1, "2": 1}, status, 2) == ({"1": 1, "2": 3}, 0)


def test_a_budget_rise_keeps_every_running_unit_and_adds_the_difference() -> None:
    w = world()
    status = run(w, policy(budget=2)).status
    applied = run(w, policy(budget=2), status, minutes=1).status
    assert applied["appliedBudget"] == 2
    running = dict(applied["units"])
    raised = run(w, policy(budget=4), applied, minutes=2).status  # at 3 the third unit adds nothing
    target = raised["pending"]["units"]
    assert sum(target.values()) == sum(running.values()) + 2
    assert all(target[c] >= running[c] for c in running)
    assert raised["lastPlan"]["budget"] == 4


def test_a_topology_resubmitted_with_other_components_gets_a_fresh_baseline() -> None:
    w = world()
    status = run(w, policy()).status
    status = run(w, policy(), status, minutes=1).status
    assert status["appliedBudget"] == 2
    # Resubmitted with its components renamed (split, count, ...), on one executor each.
    raw = json.loads((PROFILES / "thesis-linear.json").read_text())
    names = {"1": "spout", "2": "split", "3": "count", "4": "sink"}
    for c in raw["components"]:
        c["id"] = names[c["id"]]
        c["children"] = {names[k]: v for k, v in (c.get("children") or {}).items()}
    renamed = parse_profile(raw)
    ids = list(names.values())
    w.nimbus.executors, w.nimbus.tasks = dict.fromkeys(ids, 1), dict.fromkeys(ids, 8)
    w.profiler.topology = renamed
    events = len(w.events.posted)
    fresh = run(w, policy(), status, minutes=2)
    assert fresh.status["baseline"] == dict.fromkeys(ids, 1)
    assert "Degraded" not in {k for k, v in conditions(fresh).items() if v[0] == "True"}
    assert fresh.status["lastPlan"]["start"] == dict.fromkeys(
        ids, 1
    )  # the whole budget, from the new baseline
    assert fresh.status["pending"]["budget"] == 2
    assert set(fresh.status["pending"]["units"]) == set(ids)
    assert [e[:2] for e in w.events.posted[events:]] == [("Normal", "BaselineRefreshed")]
    assert w.events.posted[-1][2] == (
        "Storm runs other components than the baseline's (1, 2, 3, 4): "
        "baseline count=1, sink=1, split=1, spout=1"
    )


def test_auto_mode_holds_a_refused_budget_too() -> None:
    w = world()
    w.nimbus.fail_rebalance = RefusedError("not authorized to rebalance linear")
    auto = policy(mode="Auto", budget=0, minUnits=0, maxUnits=5)
    status = run(w, auto).status
    for minute in (1, 2, 10):  # Auto still wants budget 2: held, not re-applied
        status = run(w, auto, status, minutes=minute).status
    assert [c[0] for c in w.nimbus.calls].count("rebalance") == 1
    assert [j[1] for j in w.journal if j[0] == "scale"] == [6, 4]
    assert [e[:2] for e in w.events.posted] == [("Warning", "ApplyRefused")]


@pytest.mark.parametrize(
    ("count", "said"),
    [
        (0, ""),
        (1, "p1"),
        (3, "p1; p2; p3"),
        (4, "p1; p2; p3; …"),
        (5, "p1; p2; p3; …"),
    ],
)
def test_a_message_names_the_first_three_problems_and_says_when_there_are_more(count: int, said: str) -> None:
    assert first_problems([f"p{i}" for i in range(1, count + 1)]) == said
