"""Fewer pods: Storm is rebalanced on the pods there are, then the pods left without a worker are
marked to go first and the replicas lowered, so that the ReplicaSet removes no pod that runs one.

The recording fakes: the fake Nimbus runs every executor alone on host ``h<i>`` (in order), the fake
Deployment's pod ``h<i>`` announces host ``h<i>``, and its ReplicaSet removes the marked pods first,
then the first by name, that is, pods running workers.
"""

from __future__ import annotations

from typing import Any

from stormscale.operator.ports import StormTopologyState
from stormscale.operator.realizer import pods_to_release
from stormscale.storm.model import Executor
from stormscale.storm.samples import Pod
from tests.harness.fakes.ports import FakeCluster, FakeNimbus, FakeProfiler, RefusedError, World

from .test_reconcile import LINEAR, Pass, conditions, policy, run

WIDE = {"1": 1, "2": 3, "3": 3, "4": 1}  # 8 workers, one per pod
PODS = [f"h{i}" for i in range(8)]


def wide_world() -> World:
    """Storm runs :data:`WIDE` on 8 pods; the spec's budget 0 asks for the 4 baseline units."""
    cluster = FakeCluster(replicas=8, pod_names=list(PODS))
    nimbus = FakeNimbus(dict(WIDE), dict.fromkeys(WIDE, 8), system={})
    return World(cluster, nimbus, FakeProfiler(LINEAR))


def writes(w: World) -> list[tuple[str, Any]]:
    return [j for j in w.journal if j[0] != "save"]


def scale_in(w: World) -> tuple[Pass, Pass]:
    spec = policy(budget=0)
    first = run(w, spec, {"baseline": dict.fromkeys("1234", 1), "appliedBudget": 4})
    return first, run(w, spec, first.status, minutes=1)


def test_storm_is_rebalanced_before_a_pod_goes_and_only_pods_without_workers_go() -> None:
    w = wide_world()
    _, second = scale_in(w)
    # rebalanced on the 8 pods there are; once Storm runs the 4 executors (on h0..h3), the 4 pods
    # without one are marked to go first, then 4 replicas
    assert writes(w) == [
        ("rebalance", {"1": 1, "2": 1, "3": 1, "4": 1}),
        ("remove_first", ["h4", "h5", "h6", "h7"]),
        ("scale", 4),
    ]
    assert w.cluster.pod_names == ["h0", "h1", "h2", "h3"]  # every pod that runs a worker kept
    assert conditions(second)["Ready"] == ("True", "Applied")


def test_a_pod_the_operator_may_not_mark_leaves_the_choice_to_the_replica_set() -> None:
    w = wide_world()
    w.cluster.fail_mark = RefusedError("pods is forbidden: cannot patch")
    _, second = scale_in(w)
    assert [j[0] for j in writes(w)] == ["rebalance", "remove_first", "scale"]
    assert w.cluster.replicas == 4
    assert conditions(second)["Ready"] == ("True", "Applied")


def test_more_pods_are_added_before_the_rebalance() -> None:
    w = World(
        FakeCluster(replicas=4),
        FakeNimbus(dict.fromkeys("1234", 1), dict.fromkeys("1234", 8)),
        FakeProfiler(LINEAR),
    )
    run(w, policy(budget=2))
    assert [j[0] for j in writes(w)] == ["scale", "rebalance"]


def executor(host: str) -> Executor:
    return Executor("2", 1, 1, host, 6700, 60)


def test_the_pods_to_release_run_no_worker_are_alive_and_are_at_most_the_surplus() -> None:

    storm = StormTopologyState(
        "ACTIVE", {"2": 2}, {"2": 2}, 2, assignment=(executor("10.0.0.1"), executor("b"))
    )
    pods = [
        Pod("a", "10.0.0.1", "worker", None),  # runs a worker, known by its IP
        Pod("b", "10.0.0.2", "worker", None),  # runs a worker, known by its name
        Pod("c", "10.0.0.3", "worker", None),
        Pod("d", "10.0.0.4", "worker", None, terminating=True),  # already going
        Pod("e", "10.0.0.5", "worker", None),
    ]
    assert pods_to_release(pods, storm, 3) == ["c", "e"]
    assert pods_to_release(pods, storm, 1) == ["c"]
    assert pods_to_release(pods, storm, 0) == []
    unknown = StormTopologyState("ACTIVE", {"2": 2}, {"2": 2}, 2)  # Storm's assignment not known
    assert pods_to_release(pods, unknown, 3) == []
