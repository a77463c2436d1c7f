"""A pass with a target rate and a sizing, the placement on pods of several slots, and the
container level of each new unit (recording fakes; tests/integration/test_operator_sizing.py runs the
same on the real API server and a Thrift Nimbus)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from stormscale.operator.observe import placement_drift, slots_problem
from stormscale.operator.policy import InvalidSpecError, Policy, parse_spec
from stormscale.operator.ports import PodLoad, StormTopologyState
from stormscale.planner import Topology
from stormscale.planner.placement.strategies import PlacementStrategy
from stormscale.planner.placement.units import place_units
from stormscale.planner.sizing.exact import scaled_to
from stormscale.storm.model import Executor
from tests.harness.fakes.ports import World

from .test_reconcile import LINEAR, Pass, conditions, run, world

LINEAR_UNITS = {"1": 1, "2": 2, "3": 2, "4": 1}  # demand 500/s: ⌈500/400⌉, ⌈500/250⌉ (the exact minimum)


def spec(workers: dict[str, Any] | None = None, **scaling: Any) -> Policy:
    return parse_spec(
        {
            "topologyName": "linear",
            "nimbus": {"host": "nimbus"},
            "workers": {"deployment": "linear-workers", **(workers or {})},
            "metrics": {"prometheus": "http://prometheus:9090"},
            "scaling": {"budget": 2, "flowModel": "Drop", **scaling},
        }
    )


def rebalances(w: World) -> list[Any]:
    return [c[1] for c in w.nimbus.calls if c[0] == "rebalance"]


def placements(w: World) -> list[Any]:
    return [c[1] for c in w.nimbus.calls if c[0] == "placement"]


def converge(w: World, p: Policy, passes: int = 3) -> Pass:
    outcome = run(w, p)
    for minute in range(1, passes):
        outcome = run(w, p, outcome.status, minutes=minute)
    return outcome


# --- the spec -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("workers", "scaling", "message"),
    [
        ({}, {"targetRate": 800}, "scaling.targetRate: Manual mode applies scaling.budget only"),
        ({"placement": "PDeployer", "slotsPerPod": 2}, {}, "PDeployer packs pods of one slot"),
        (
            {},
            {"sizing": "Greedy"},
            "spec.scaling.sizing: Input should be 'Exact', 'LSA', 'MBA' or 'PDeployer'",
        ),
        ({"placement": "RoundRobin"}, {}, "spec.workers.placement: Input should be 'SAM'"),
        ({}, {"mode": "Auto", "targetRate": -5}, "spec.scaling.targetRate: Input should be greater than 0"),
    ],
)
def test_invalid_combinations_are_refused_naming_the_field(
    workers: dict[str, Any], scaling: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidSpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        spec(workers, **scaling)


def test_without_the_new_fields_nothing_changes() -> None:
    w = world()
    done = converge(w, spec())
    assert "sizing" not in done.status
    assert "placement" not in done.status
    assert placements(w) == []  # the rebalance carries no placement: Storm's scheduler places
    assert rebalances(w) == [({"1": 1, "2": 2, "3": 2, "4": 1}, 6)]
    assert w.cluster.replicas == 6


def topology_state(hosts: dict[str, int], assigned: tuple[str, ...] = ()) -> StormTopologyState:
    assignment = tuple(Executor("2", i, i, host, 6700, 60) for i, host in enumerate(assigned, start=1))
    executors, tasks = dict.fromkeys("1234", 1), dict.fromkeys("1234", 8)
    return StormTopologyState("ACTIVE", executors, tasks, 4, None, assignment, hosts)


def test_slots_per_pod_is_judged_on_the_topologys_supervisors_else_on_any() -> None:
    assert slots_problem(topology_state({"h0": 1, "h1": 2}), 2) is None  # h1 can run a pod's workers
    assert "Supervisor h0" in (slots_problem(topology_state({"h0": 1, "h1": 1}), 2) or "")
    assert "Supervisor h0" in (slots_problem(topology_state({"h0": 1, "h1": 2}, ("h0",)), 2) or "")
    assert slots_problem(topology_state({"h0": 1, "h1": 2}, ("h1",)), 2) is None
    assert slots_problem(topology_state({"h0": 4, "h1": 8}, ("h0", "h1")), 2) is None  # more is room
    assert slots_problem(topology_state({"h0": 1, "h1": 4}), 2) is None


def test_no_placement_drift_without_a_placement_asked_and_applied() -> None:
    storm = topology_state({"h0": 2})
    sam = spec({"placement": "SAM", "slotsPerPod": 2})
    assert placement_drift(None, storm, sam) is None  # asked, nothing applied yet


def test_more_slots_per_pod_than_a_supervisor_offers_is_invalid_and_nothing_is_done() -> None:
    w = world(system={"__acker": 1}, supervisor_slots={f"h{i}": 1 for i in range(5)})
    outcome = run(w, spec({"slotsPerPod": 2}))
    assert conditions(outcome)["Degraded"] == ("True", "InvalidSpec")
    message = next(c["message"] for c in outcome.status["conditions"] if c["type"] == "Degraded")
    assert message.startswith("spec.workers.slotsPerPod 2 exceeds the 1 slot(s) of Supervisor h0")
    assert w.journal == []
    assert [e[:2] for e in w.events.posted] == [("Warning", "InvalidSpec")]


# --- item 1: the target rate and the sizing -------------------------------------------------------


def test_manual_mode_shows_the_sizing_for_the_measured_demand_beside_the_budget_plan() -> None:
    w = world()
    done = converge(w, spec(sizing="MBA", budget=1))
    sizing = done.status["sizing"]
    assert (sizing["strategy"], sizing["source"], sizing["targetRate"]) == ("mba", "demand", 500.0)
    assert sizing["units"] == LINEAR_UNITS  # MBA under the stated mapping: the exact minimum
    assert (sizing["budget"], sizing["exactUnits"], sizing["applied"]) == (2, 6, False)
    assert sizing["predicted"] == 500.0
    assert done.status["units"] == {"1": 1, "2": 1, "3": 2, "4": 1}  # budget 1: the budget plan is applied


def test_recommend_mode_sizes_for_the_target_rate_and_applies_nothing() -> None:
    w = world()
    outcome = run(w, spec(mode="Recommend", targetRate=1000))
    sizing = outcome.status["sizing"]
    assert (sizing["strategy"], sizing["source"], sizing["sizedRate"]) == ("exact", "targetRate", 1000.0)
    assert sizing["units"] == {"1": 1, "2": 3, "3": 4, "4": 2}  # the spout offering twice as much
    assert sizing["predicted"] == 1000.0
    assert conditions(outcome)["Ready"] == ("True", "Recommended")
    assert w.journal == []


def test_auto_mode_applies_the_sizings_units_for_the_target_rate() -> None:
    w = world()
    auto = spec(mode="Auto", budget=0, maxUnits=8, targetRate=750, sizing="Exact")
    first = run(w, auto)
    assert conditions(first)["ScalingLimited"] == ("False", "WithinLimits")  # the apply's own pass too
    done = run(w, auto, run(w, auto, first.status, minutes=1).status, minutes=2)
    assert rebalances(w) == [({"1": 1, "2": 2, "3": 3, "4": 1}, 7)]  # ⌈750/400⌉, ⌈750/250⌉, ⌈750/900⌉
    assert done.status["appliedBudget"] == 3
    assert done.status["sizing"]["applied"] is True
    plan = done.status["lastPlan"]
    assert (plan["chosen"], plan["allocation"], plan["unallocated"]) == ("exact", {"2": 1, "3": 2}, 0)
    # Beside it, every budget strategy planned the same 3 units (2 and 3 decongested: 250 → 500/s).
    assert plan["alternatives"] == dict.fromkeys(
        ["stela", "predictive", "combined", "optimal", "best", "exact"], 500.0
    )
    assert conditions(done)["ScalingLimited"] == ("False", "WithinLimits")
    assert "(exact)" in w.events.posted[-1][2]


def test_auto_mode_sizes_for_the_measured_demand_over_the_target_utilization() -> None:
    w = world()
    done = converge(w, spec(mode="Auto", budget=0, sizing="Exact", targetUtilization=0.5))
    assert done.status["sizing"]["targetRate"] == 1000.0
    assert done.status["units"] == {"1": 1, "2": 3, "3": 4, "4": 2}


def test_a_sizing_above_max_units_is_held_there_by_the_budget_strategy_and_said() -> None:
    w = world()
    done = converge(w, spec(mode="Auto", budget=0, maxUnits=3, targetRate=1000))
    assert done.status["appliedBudget"] == 3
    assert sum(done.status["units"].values()) == 7  # 10 sized, 3 removed by predictive scale-in
    assert conditions(done)["ScalingLimited"] == ("True", "MaxUnitsReached")
    limited = next(c["message"] for c in done.status["conditions"] if c["type"] == "ScalingLimited")
    assert "the sizing's budget 6 is outside [0, 3]" in limited
    assert "moved -3 units to hold scaling.maxUnits 3" in limited
    assert "could not be moved" not in limited  # every unit found a place to come from


def test_a_sizing_above_max_units_says_so_on_the_pass_that_applies_it() -> None:
    first = run(world(), spec(mode="Auto", budget=0, maxUnits=3, targetRate=1000))
    assert conditions(first)["ScalingLimited"] == ("True", "MaxUnitsReached")


def test_a_sizing_below_min_units_is_raised_there_by_the_budget_strategy_and_said() -> None:
    w = world()
    done = converge(
        w, spec(mode="Auto", budget=8, minUnits=8, maxUnits=10, targetRate=1000, strategy="Combined")
    )
    assert done.status["appliedBudget"] == 8
    limited = next(c["message"] for c in done.status["conditions"] if c["type"] == "ScalingLimited")
    # the second unit adds nothing: trimmed, said as not moved
    assert "predictive moved +1 units to hold scaling.minUnits 8; 1 units could not be moved" in limited


def test_a_sizing_that_moves_units_lists_those_taken_away_as_negative() -> None:
    """Baseline 1, 3, 3, 1 (8 units); 500/s needs 1, 2, 2, 1 and budget 0 keeps 8: the budget strategy
    gives the two left to the spout (1,000/s offered) and bolt 3; no delay holds the scale-in back.
    Bolt 2 gave one up: lastPlan says −1."""
    w = world(executors={"1": 1, "2": 3, "3": 3, "4": 1})
    auto = spec(
        mode="Auto", budget=4, maxUnits=8, targetRate=500, sizing="Exact", scaleInDelay="0s", cooldown="0s"
    )
    plan = run(w, auto).status["lastPlan"]
    assert (plan["chosen"], plan["allocation"]) == ("exact", {"1": 1, "2": -1})
    assert rebalances(w) == [({"1": 2, "2": 2, "3": 3, "4": 1}, 8)]


#: The linear topology with bolt 2's unit holding 1.5 slots' memory: no sizing can place it.
TOO_HEAVY = Topology(
    LINEAR.name,
    tuple(dataclasses.replace(c, memory_per_unit=1.5) if c.id == "2" else c for c in LINEAR.components),
)


@pytest.mark.parametrize(
    "scaling", [{"mode": "Manual"}, {"mode": "Recommend", "targetRate": 1000}], ids=["manual", "recommend"]
)
def test_a_sizing_that_fails_beside_a_budget_plan_is_dropped_and_takes_nothing_from_it(
    scaling: dict[str, Any],
) -> None:
    """Manual and Recommend show a sizing beside the budget plan: when it fails, ``status.sizing`` is
    dropped and the budget plan stands, neither Degraded nor PlanningFailed."""
    w = world()
    w.profiler.topology = TOO_HEAVY
    outcome = run(w, spec(sizing="Exact", **scaling))
    assert "sizing" not in outcome.status
    assert outcome.status["lastPlan"]["allocation"] == {"2": 1, "3": 1}
    assert conditions(outcome)["Degraded"] == ("False", "Healthy")


def test_auto_mode_with_a_sizing_that_fails_is_degraded_and_does_nothing() -> None:
    w = world()
    w.profiler.topology = TOO_HEAVY
    outcome = run(w, spec(mode="Auto", budget=0, maxUnits=8, targetRate=750, sizing="Exact"))
    assert conditions(outcome)["Degraded"] == ("True", "PlanningFailed")
    said = next(c["message"] for c in outcome.status["conditions"] if c["type"] == "Degraded")
    assert said.startswith("sizing exact: '2': memoryPerUnit 1.5 is above one slot's memory")
    assert w.journal == []


@pytest.mark.parametrize(("placement", "slots"), [("SAM", 2), ("PDeployer", 1), ("MultiLevel", 2)])
def test_a_placement_that_fails_is_degraded_and_does_nothing(placement: str, slots: int) -> None:
    w = world(system={"__acker": 1})
    w.profiler.topology = TOO_HEAVY
    outcome = run(w, spec({"placement": placement, "slotsPerPod": slots}))
    assert conditions(outcome)["Degraded"] == ("True", "PlanningFailed")
    said = next(c["message"] for c in outcome.status["conditions"] if c["type"] == "Degraded")
    assert said.startswith(f"workers.placement {placement}: '2': memoryPerUnit 1.5 is above one slot's")
    assert w.journal == []


def test_a_target_beyond_the_task_counts_is_sized_at_the_most_they_sustain() -> None:
    w = world(tasks={"1": 1, "2": 8, "3": 4, "4": 8})  # bolt 3: at most 4 units of 250/s
    done = converge(w, spec(mode="Auto", budget=0, maxUnits=16, targetRate=2000))
    sizing = done.status["sizing"]
    assert (sizing["targetRate"], sizing["sizedRate"]) == (2000.0, 1000.0)
    assert done.status["units"]["3"] == 4
    assert conditions(done)["ScalingLimited"] == ("True", "MaxUnitsReached")
    assert "sized for 1000 tuples/s" in sizing["message"]


# --- item 3: several slots per pod, packed by SAM or P-Deployer ------------------------------------


def test_sam_packs_the_units_on_pods_of_two_slots_and_the_rebalance_carries_it() -> None:
    w = world(system={"__acker": 1})
    first = run(w, spec({"placement": "SAM", "slotsPerPod": 2}))
    assert w.cluster.replicas == 4  # fewer pods: lowered once Storm runs the placement
    ((executors, workers),) = rebalances(w)
    assert (executors, workers) == ({"1": 1, "2": 2, "3": 2, "4": 1}, 6)
    (layout,) = placements(w)
    assert [len(pod) for pod in layout] == [2, 2, 2]
    assert sum(worker.get("__acker", 0) for pod in layout for worker in pod) == 1  # Storm's own, placed
    assert first.status["pending"]["placement"]["layout"] == [{"workers": pod} for pod in layout]
    assert conditions(first)["Progressing"] == ("True", "RebalanceRequested")
    assert conditions(first)["Ready"] == ("False", "RebalanceRequested")  # not ready until verified
    done = run(w, spec({"placement": "SAM", "slotsPerPod": 2}), first.status, minutes=1)
    assert conditions(done)["Ready"] == ("True", "Applied")
    assert w.cluster.replicas == 3  # six executors, no two partly busy ones fit one slot: 3 pods of 2
    assert (done.status["placement"]["strategy"], done.status["placement"]["pods"]) == ("SAM", 3)
    assert "SAM: 3 pods, 6 workers" in w.events.posted[-1][2]
    again = run(w, spec({"placement": "SAM", "slotsPerPod": 2}), done.status, minutes=2)
    assert conditions(again)["Ready"] == ("True", "Applied")
    assert len(rebalances(w)) == 1  # converged: Storm runs the placement


def test_a_sizing_is_packed_at_the_rate_it_was_sized_for_not_at_the_measured_demand() -> None:
    """Auto sizes the thesis's linear topology (500/s offered) for 1000/s: 3, 4 and 2 units of bolts 2,
    3 and 4. At 1000/s they run 83 %, 100 % and 56 % busy, so no two share a slot and SAM needs 10
    slots, 5 pods of 2 (as the planner places the sizing for its rate). Packed at the 500/s measured
    now (42 %, 50 %, 28 % busy) they would share slots, 3 pods, too few for the target."""
    w = world(system={"__acker": 1})
    auto = spec(
        {"placement": "SAM", "slotsPerPod": 2}, mode="Auto", budget=0, targetRate=1000, sizing="Exact"
    )
    done = converge(w, auto)
    units = {"1": 1, "2": 3, "3": 4, "4": 2}
    assert done.status["units"] == units
    at_target = place_units(scaled_to(LINEAR, 1000), units, PlacementStrategy.SAM, 2).placement
    at_demand = place_units(LINEAR, units, PlacementStrategy.SAM, 2).placement
    assert (at_target.pod_count, at_demand.pod_count) == (5, 3)  # the case this test is about
    assert done.status["placement"]["pods"] == w.cluster.replicas == 5
    assert done.status["placement"]["workers"] == 10


def test_pdeployer_packs_executors_of_several_components_into_one_worker_per_pod() -> None:
    w = world(system={"__acker": 1})
    done = converge(w, spec({"placement": "PDeployer"}))
    (layout,) = placements(w)
    assert all(len(pod) == 1 for pod in layout)
    assert w.cluster.replicas == len(layout) == done.status["placement"]["pods"]
    assert done.status["placement"]["workers"] == len(layout)


def test_a_placement_nimbus_ignores_is_waited_for_then_degraded_never_sent_twice() -> None:
    w = world(system={"__acker": 1}, honours_placement=False)
    sam = spec({"placement": "SAM", "slotsPerPod": 2})
    status = run(w, sam).status
    w.nimbus.sched_status = "stormscale.placement: pods[2] finds no Supervisor with 2 free slots"
    waiting = run(w, sam, status, minutes=1)
    assert conditions(waiting)["Progressing"] == ("True", "WaitingForPlacement")
    said = next(c["message"] for c in waiting.status["conditions"] if c["type"] == "Progressing")
    assert said.startswith(
        "waiting for Nimbus to assign the placement: the scheduler says: stormscale.placement"
    )
    late = run(w, sam, waiting.status, minutes=4)
    assert conditions(late)["Degraded"] == ("True", "PlacementNotApplied")
    message = next(c["message"] for c in late.status["conditions"] if c["type"] == "Degraded")
    assert "is Stormscale's scheduler Nimbus's storm.scheduler" in message
    assert "appliedBudget" not in late.status
    run(w, sam, late.status, minutes=5)
    assert len(rebalances(w)) == 1


def test_changing_the_placement_strategy_repacks_the_same_units() -> None:
    w = world(system={"__acker": 1})
    sam = converge(w, spec({"placement": "SAM", "slotsPerPod": 2}))
    pdeployer = spec({"placement": "PDeployer"})
    status = run(w, pdeployer, sam.status, minutes=5).status
    status = run(w, pdeployer, status, minutes=6).status
    assert [r[0] for r in rebalances(w)] == [LINEAR_UNITS, LINEAR_UNITS]
    assert status["placement"]["strategy"] == "PDeployer"


@pytest.mark.parametrize("workers", [{}, {"placement": "SAM", "slotsPerPod": 2}])
def test_a_deployment_scaled_by_hand_is_set_back_without_a_second_rebalance(workers: dict[str, Any]) -> None:
    w = world(system={"__acker": 1})
    p = spec(workers)
    done = converge(w, p)
    pods = w.cluster.replicas
    w.cluster.replicas = pods + 4  # kubectl scale, or another controller
    run(w, p, done.status, minutes=5)
    assert (w.journal[-1], w.cluster.replicas) == (("scale", pods), pods)
    assert len(rebalances(w)) == 1  # Storm still runs the units: only the Deployment is set back


# --- item 4: the container level of each new unit -------------------------------------------------

#: Storm's own scheduler ran the baseline one executor per pod: h0 the spout, h1 … h3 bolts 2 … 4.
BASE_CPU = {"h0": 0.30, "h1": 0.50, "h2": 0.95, "h3": 0.20}


def multilevel_world(cpu: dict[str, float] = BASE_CPU) -> World:
    w = world(system={"__acker": 1}, supervisor_slots={f"h{i}": 2 for i in range(6)})
    w.profiler.pods = tuple(PodLoad(f"workers-{h}", h, c) for h, c in cpu.items())
    return w


def test_a_new_unit_joins_the_worker_of_the_least_loaded_pod_with_headroom() -> None:
    w = multilevel_world()
    multilevel = spec({"placement": "MultiLevel", "slotsPerPod": 2})
    done = converge(w, multilevel)
    choices = done.status["placement"]["choices"]
    assert [(c["component"], c["action"], c["level"], c["pod"]) for c in choices] == [
        ("2", "Added", "Executor", 3),  # h3 at 20 %: bolt 2's new executor joins bolt 4's worker
        ("3", "Added", "Executor", 0),  # h3 is full now (2 of 2): h0 at 30 %, h2 at 95 % is not
    ]
    assert choices[0]["reason"].startswith("pod 3 has headroom (20% CPU ≤ 90%, 1 of 2 executors)")
    assert w.cluster.replicas == 4  # no new pod
    (layout,) = placements(w)
    assert layout[3] == [{"2": 1, "4": 1}]
    assert layout[0][0] == {"1": 1, "3": 1, "__acker": 1}
    event = w.events.posted[-1][2]
    assert "2 +executor (pod 3: pod 3 has headroom" in event


def test_without_headroom_anywhere_a_new_unit_is_a_new_pod() -> None:
    w = multilevel_world(dict.fromkeys(BASE_CPU, 0.95))
    done = converge(w, spec({"placement": "MultiLevel", "slotsPerPod": 2}))
    levels = [(c["level"], c["pod"]) for c in done.status["placement"]["choices"]]
    assert levels == [("Pod", 4), ("Executor", 4)]  # the new pod: bolt 2's executor at 62.5 % of a slot
    assert w.cluster.replicas == 5
    assert done.status["placement"]["choices"][0]["reason"].startswith(
        "no pod has headroom (pod 0 at 95% CPU"
    )


def test_scale_in_releases_the_last_provisioned_units_first() -> None:
    w = multilevel_world(dict.fromkeys(BASE_CPU, 0.95))
    grown = converge(w, spec({"placement": "MultiLevel", "slotsPerPod": 2}))
    assert len(grown.status["placement"]["stack"]) == 2
    back = spec({"placement": "MultiLevel", "slotsPerPod": 2}, budget=0)
    status = run(w, back, grown.status, minutes=10).status
    done = run(w, back, status, minutes=11)
    choices = done.status["placement"]["choices"]
    assert [(c["component"], c["action"], c["level"], c["pod"]) for c in choices] == [
        ("2", "Removed", "Executor", 4),  # the new pod's executors, the last provisioned of each
        ("3", "Removed", "Pod", 4),  # and the pod with its last one
    ]
    assert all(c["reason"].startswith("LIFO: the last executor of") for c in choices)
    assert done.status["placement"]["stack"] == []
    assert done.status["units"] == {"1": 1, "2": 1, "3": 1, "4": 1}
    assert w.cluster.replicas == 4


def test_a_placement_storm_stops_running_is_reported_not_rebalanced_again() -> None:
    w = world(system={"__acker": 1})
    sam = spec({"placement": "SAM", "slotsPerPod": 2})
    done = converge(w, sam)
    assert w.nimbus.placement is not None
    w.nimbus.placement = [*w.nimbus.placement[1:], w.nimbus.placement[0]]  # a pod's workers moved away
    drifted = run(w, sam, done.status, minutes=10)
    assert conditions(drifted)["Degraded"] == ("True", "PlacementNotApplied")
    assert "Nimbus no longer runs status.placement" in drifted.status["conditions"][2]["message"]
    assert len(rebalances(w)) == 1
    w.nimbus.placement = [[dict(w_) for w_ in pod["workers"]] for pod in done.status["placement"]["layout"]]
    back = run(w, sam, drifted.status, minutes=11)
    assert conditions(back)["Ready"] == ("True", "Applied")
    assert len(rebalances(w)) == 1
