"""On the real API server: sizing for a target rate, placements on pods of two slots and the
container level of each new unit, through the operator's own Thrift client against the fake Nimbus
(which keeps every rebalance's conf overrides and lays executors out as their placement says, as
Stormscale's scheduler does). The metrics are a recording fake (the pods' CPU given per host).
Recommend mode shows the sizing and the placement in the status and changes nothing. The same path
on real Storm: tests/e2e/test_operator_e2e.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from stormscale.operator import handlers
from stormscale.operator.adapters.nimbus import NimbusPort
from stormscale.operator.policy import Policy
from stormscale.operator.ports import PodLoad, Ports
from stormscale.storm import Endpoint, NimbusClient
from stormscale.storm.placement import PLACEMENT_KEY, parse
from tests.harness.fakes import nimbus as fake_nimbus
from tests.harness.fakes.ports import FakeProfiler, with_fakes
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.fixtures import scratch_namespace
from tests.harness.waiting import wait_for
from tests.integration.test_operator_api import (
    LINEAR,
    condition,
    deployment,
    events,
    get,
    operator,
    printed,
    replicas,
)

pytestmark = pytest.mark.integration

TASKS = {"1": 1, "2": 8, "3": 8, "4": 8}


@pytest.fixture
def namespace(control_plane: ControlPlane, stormtopology_crd: Path) -> Iterator[str]:
    with scratch_namespace(control_plane, "sz") as name:
        yield name


@pytest.fixture
def fleet() -> Iterator[fake_nimbus.Fleet]:
    """A fake Nimbus with 8 Supervisors of two slots, running the thesis's linear topology."""
    with fake_nimbus.serving(lambda port: fake_nimbus.Fleet("127.0.0.1", port, supervisors=8, slots=2)) as f:
        f.submit("linear", LINEAR, TASKS)
        yield f


@pytest.fixture
def profiler(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    fleet: fake_nimbus.Fleet,
    monkeypatch: pytest.MonkeyPatch,
) -> FakeProfiler:
    """Real Kubernetes ports and the real Nimbus port on the fake Nimbus; a recording profiler."""
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    monkeypatch.setattr(handlers, "_API", kube_api)
    measured = FakeProfiler(LINEAR)

    def ports(policy: Policy, namespace: str, body: Any) -> Ports:
        real = handlers.default_ports(policy, namespace, body)
        nimbus = NimbusPort(NimbusClient(Endpoint("127.0.0.1", fleet.port)))
        return with_fakes(real, nimbus, measured)

    monkeypatch.setattr(handlers, "PORTS_FACTORY", ports)
    return measured


def resource(namespace: str, workers: dict[str, Any], **scaling: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "stormscale.io/v1alpha1",
            "kind": "StormTopology",
            "metadata": {"name": "linear", "namespace": namespace},
            "spec": {
                "topologyName": "linear",
                "nimbus": {"host": "127.0.0.1"},
                "workers": {"deployment": "linear-workers", **workers},
                "metrics": {"prometheus": "http://127.0.0.1:9090"},
                "scaling": {"flowModel": "Drop", **scaling},
            },
        }
    )


def applied(control_plane: ControlPlane, namespace: str, budget: int) -> dict[str, Any]:
    return wait_for(
        lambda: (
            r
            if (r := get(control_plane, namespace)).get("status", {}).get("appliedBudget") == budget
            and condition(r, "Ready") == ("True", "Applied")
            else None
        ),
        60,
        f"budget {budget} applied",
    )


def last_placement(fleet: fake_nimbus.Fleet) -> list[list[dict[str, int]]]:
    request = fleet.requests[-1]
    return [[w.counts for w in pod.workers] for pod in parse(request.conf_overrides[PLACEMENT_KEY]).pods]


def hosts(fleet: fake_nimbus.Fleet) -> dict[str, str]:
    """Where each user component's single executor runs now (component -> host)."""
    info = NimbusClient(Endpoint("127.0.0.1", fleet.port)).topology_info("linear")
    return {e.component: e.host for e in info.user_executors()}


REFUSALS = [
    ({}, {"targetRate": 800}, "Manual mode applies scaling.budget only"),
    ({}, {"mode": "Auto", "sizing": "Greedy"}, 'Unsupported value: "Greedy"'),
    ({"placement": "PDeployer", "slotsPerPod": 2}, {}, "PDeployer packs pods of one slot"),
    ({"placement": "Anywhere"}, {}, 'Unsupported value: "Anywhere"'),
    ({}, {"mode": "Auto", "targetRate": 0}, "should be greater than 0"),
]


@pytest.mark.parametrize(("workers", "scaling", "message"), REFUSALS, ids=[m for *_, m in REFUSALS])
def test_the_api_server_refuses_invalid_sizing_and_placement(
    control_plane: ControlPlane,
    namespace: str,
    workers: dict[str, Any],
    scaling: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(RuntimeError) as err:
        control_plane.kubectl("apply", "-f", "-", stdin=resource(namespace, workers, **scaling))
    assert message in str(err.value)


def test_sam_packs_two_slot_pods_and_the_rebalance_carries_the_placement(
    control_plane: ControlPlane, namespace: str, profiler: FakeProfiler, fleet: fake_nimbus.Fleet
) -> None:
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    sam = resource(namespace, {"placement": "SAM", "slotsPerPod": 2}, budget=2)
    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=sam)
        done = applied(control_plane, namespace, 2)
    assert runner.exception is None
    assert replicas(control_plane, namespace) == 3  # 6 executors: no two partly busy ones share a slot
    assert len(fleet.requests) == 1
    request = fleet.requests[0]
    assert request.executors == {"1": 1, "2": 2, "3": 2, "4": 1}
    assert request.workers == 6
    layout = last_placement(fleet)
    assert [len(pod) for pod in layout] == [2, 2, 2]
    assert sum(w.get("__acker", 0) for pod in layout for w in pod) == 1  # Storm's own executor placed too
    assert [{"workers": pod} for pod in layout] == done["status"]["placement"]["layout"]
    (event,) = events(control_plane, namespace, "ScalingApplied")
    assert "SAM: 3 pods, 6 workers" in event["message"]
    row = printed(control_plane, namespace)
    assert (row["UNITS"], row["PODS"], row["TARGET"]) == ("6", "3", "")


def test_multilevel_adds_executors_where_a_pod_has_headroom_and_scales_in_lifo(
    control_plane: ControlPlane, namespace: str, profiler: FakeProfiler, fleet: fake_nimbus.Fleet
) -> None:
    where = hosts(fleet)
    cpu = {"1": 0.95, "2": 0.95, "3": 0.95, "4": 0.20}  # only bolt 4's pod has headroom
    profiler.pods = tuple(PodLoad(f"workers-{c}", h, cpu[c]) for c, h in where.items())
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    multilevel = {"placement": "MultiLevel", "slotsPerPod": 2}
    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=resource(namespace, multilevel, budget=2))
        grown = applied(control_plane, namespace, 2)
        control_plane.kubectl("apply", "-f", "-", stdin=resource(namespace, multilevel, budget=0))
        shrunk = applied(control_plane, namespace, 0)
        # the budget-0 event is posted after the status it follows: wait for it before the operator stops
        wait_for(
            lambda: len(events(control_plane, namespace, "ScalingApplied")) >= 2,
            30,
            "the second ScalingApplied event",
            raise_on_timeout=False,
        )
    assert runner.exception is None
    added = [(c["component"], c["level"]) for c in grown["status"]["placement"]["choices"]]
    assert added == [("2", "Executor"), ("3", "Pod")]  # bolt 4's pod takes one, then it is full
    assert "has headroom (20% CPU" in grown["status"]["placement"]["choices"][0]["reason"]
    removed = [(c["component"], c["level"]) for c in shrunk["status"]["placement"]["choices"]]
    assert removed == [("2", "Executor"), ("3", "Pod")]  # LIFO: the new pod goes with its executor
    assert shrunk["status"]["placement"]["stack"] == []
    assert replicas(control_plane, namespace) == 4
    assert len(fleet.requests) == 2
    said = sorted(e["message"] for e in events(control_plane, namespace, "ScalingApplied"))
    assert len(said) == 2  # one per budget
    assert "2 +executor (pod" in said[1]
    assert "3 +pod (pod" in said[1]
    assert "2 −executor" in said[0]
    assert "3 −pod" in said[0]


def test_auto_mode_applies_the_sizing_for_the_target_rate(
    control_plane: ControlPlane, namespace: str, profiler: FakeProfiler, fleet: fake_nimbus.Fleet
) -> None:
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    auto = resource(namespace, {}, mode="Auto", budget=0, maxUnits=8, targetRate=750, sizing="Exact")
    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=auto)
        done = applied(control_plane, namespace, 3)
    assert runner.exception is None
    assert done["status"]["units"] == {"1": 1, "2": 2, "3": 3, "4": 1}
    sizing = done["status"]["sizing"]
    assert (sizing["strategy"], sizing["targetRate"], sizing["applied"]) == ("exact", 750.0, True)
    assert fleet.requests[-1].executors == {"1": 1, "2": 2, "3": 3, "4": 1}
    assert PLACEMENT_KEY not in fleet.requests[-1].conf_overrides  # no placement asked: Storm's scheduler
    row = printed(control_plane, namespace)
    assert (row["MODE"], row["UNITS"], row["PODS"], row["TARGET"]) == ("Auto", "7", "", "750")


def test_auto_with_a_look_ahead_sizes_for_the_schedule_and_keeps_its_history_in_status(
    control_plane: ControlPlane, namespace: str, profiler: FakeProfiler, fleet: fake_nimbus.Fleet
) -> None:
    """A schedule at 750/s from a minute ago: Auto sizes for it as for ``targetRate: 750`` above
    (the profile offers 500/s), and the status the API server keeps holds the forecast's line and
    the window's demand point (the CRD's schema prunes nothing of them)."""
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    ahead = {"forecast": "Schedule", "schedule": {"start": start, "steps": [{"offset": "0s", "rate": 750}]}}
    auto = resource(namespace, {}, mode="Auto", budget=0, maxUnits=8, sizing="Exact", lookAhead=ahead)
    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=auto)
        done = applied(control_plane, namespace, 3)
    assert runner.exception is None
    assert done["status"]["units"] == {"1": 1, "2": 2, "3": 3, "4": 1}
    autoscaler = done["status"]["autoscaler"]
    assert autoscaler["forecast"] == "750/s by schedule, max over the next 120s (current 500/s)"
    assert [p["rate"] for p in autoscaler["demandHistory"]] == [500.0]
    assert "sized ahead for 750/s" in done["status"]["lastPlan"]["demand"]


def test_slots_per_pod_above_the_supervisors_slots_is_degraded_and_nothing_is_done(
    control_plane: ControlPlane, namespace: str, profiler: FakeProfiler, fleet: fake_nimbus.Fleet
) -> None:
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    with operator(namespace):
        control_plane.kubectl("apply", "-f", "-", stdin=resource(namespace, {"slotsPerPod": 3}, budget=2))
        degraded = wait_for(
            lambda: (
                r
                if condition(r := get(control_plane, namespace), "Degraded") == ("True", "InvalidSpec")
                else None
            ),
            60,
            "Degraded InvalidSpec",
        )
    message = next(c["message"] for c in degraded["status"]["conditions"] if c["type"] == "Degraded")
    assert "spec.workers.slotsPerPod 3 exceeds the 2 slot(s) of Supervisor" in message
    assert replicas(control_plane, namespace) == 4
    assert fleet.requests == []


def test_recommend_mode_writes_the_sizing_and_placement_and_scales_nothing(
    control_plane: ControlPlane, namespace: str, profiler: FakeProfiler, fleet: fake_nimbus.Fleet
) -> None:
    """Recommend with a target rate and SAM on pods of two slots: the status holds the budget plan,
    the sizing for the target (its budget, units and predicted rate, not applied) and the placement
    it would ask for; ``Ready`` is ``True/Recommended`` and ``Progressing`` ``False/Recommended``;
    the Deployment keeps its replicas, Nimbus is never asked to rebalance, no ``ScalingApplied``."""
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    recommend = resource(
        namespace,
        {"placement": "SAM", "slotsPerPod": 2},
        mode="Recommend",
        budget=2,
        targetRate=750,
        sizing="Exact",
    )
    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=recommend)
        done = wait_for(
            lambda: (
                r
                if condition(r := get(control_plane, namespace), "Ready") == ("True", "Recommended")
                and r["status"].get("sizing")
                else None
            ),
            30,
            "Ready True/Recommended with a sizing",
        )
        time.sleep(2 * handlers.INTERVAL_S)  # a timer pass more: still nothing applied
        again = get(control_plane, namespace)
    assert runner.exception is None
    status = again["status"]
    assert condition(again, "Progressing") == ("False", "Recommended")
    plan = status["lastPlan"]
    assert plan["budget"] == 2
    assert sum(plan["allocation"].values()) == 2
    assert plan["predicted"]["after"] > plan["predicted"]["before"] > 0
    sizing = status["sizing"]
    assert (sizing["strategy"], sizing["targetRate"], sizing["applied"]) == ("exact", 750.0, False)
    assert sizing["units"] == {"1": 1, "2": 2, "3": 3, "4": 1}  # what Auto applies for this target
    assert (sizing["totalUnits"], sizing["budget"]) == (7, 3)
    # Θ at the sinks for 750/s offered at the spout, at the sized units: above the 6 units' plan
    assert sizing["predicted"] >= plan["predicted"]["after"]
    placement = status["placement"]
    assert (placement["strategy"], placement["slotsPerPod"]) == ("SAM", 2)
    assert (placement["pods"], placement["workers"]) == (3, 6)  # the budget plan's 6 units laid out
    laid = [w for pod in placement["layout"] for w in pod["workers"]]
    assert sum(n for w in laid for c, n in w.items() if c != "__acker") == 6
    assert status.get("appliedBudget") in (None, 0)  # nothing applied
    assert not status.get("pending")
    assert "units" not in status
    first = {k: v for k, v in done["status"]["sizing"].items() if k != "at"}
    assert first == {k: v for k, v in sizing.items() if k != "at"}  # later passes recommend the same
    assert replicas(control_plane, namespace) == 4
    assert fleet.requests == []  # no rebalance sent
    assert events(control_plane, namespace, "ScalingApplied") == []
