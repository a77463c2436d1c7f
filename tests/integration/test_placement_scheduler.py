"""Stormscale's scheduler on real Storm: a placement runs exactly (executor -> worker -> Supervisor pod).

The session's Nimbus runs the scheduler (tests/harness/storm/scheduler.py); the Supervisors are the
replicas of a worker Deployment (the pod runner, 2 slots each, each pod announcing its Supervisor's
hostname as its IP), and a JVM linear topology (1 -> 2 -> 3 -> 4) goes through, in one run:

(a) submitted with a placement (pods pinned crosswise): it runs exactly that, read back from Nimbus;
(b) a rebalance with a new, unpinned placement and one more executor: exactly that, on our pods;
(e) a rebalance to three pods while two exist: nothing of it is assigned while it waits, then the
    third pod starts and the placement runs exactly;
(f) a placement delivered to the scheduler's endpoint (the topology's conf untouched) and a rebalance
    of one bolt: only the worker holding that bolt restarts, the two others keep running;
(d) a rebalance whose placement does not cover the executors: one log line, DefaultScheduler runs it,
    Nimbus stays up;
(c) a topology without a placement: DefaultScheduler, as before; a rebalance of one bolt restarts
    only that bolt's worker (the scheduler keeps the others on their slots).
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stormscale.storm import NimbusClient, RebalanceRequest
from stormscale.storm.delivery import PLACEMENTS_PATH, PlacementEndpoint
from stormscale.storm.model import TopologyInfo
from stormscale.storm.placement import PLACEMENT_KEY, Placement, layout_problems, rebalance_request
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.pod_runner import Command, PodRunner, Replica
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.topology import kill, submit
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.storm]

LABEL = "stormscale.io/storm-workers"
SELECTOR = "placement"
SLOTS = 2
DEPLOYMENT = "storm-workers"
NAME = "it-placement"
#: A Supervisor JVM and its workers starting on 2 shared cores.
START_S = 180.0
#: A (re)scheduled topology's workers starting.
PLACED_S = 120.0
#: Nimbus schedules every nimbus.monitor.freq.secs (3 s on the test bed): a wait of this many seconds
#: sees at least 3 rounds.
ROUNDS_S = 10.0
#: How long every worker runs before the delivered rebalance: more than a heartbeat's lag in the
#: uptime Nimbus reports, so a kept worker's uptime after it exceeds the wait.
SETTLED_UPTIME_S = 20.0
#: How long the workers may take to run SETTLED_UPTIME_S together after (e): a rebalance whose conf
#: carries the placement updates the topology's blobs, and on pods of two slots Storm 2.8.3 restarted
#: a worker that exited (code 254) and was launched again only ~2 minutes later (seen in one run).
SETTLE_S = 300.0
#: executors: spout "1" 1, bolts "2" 2, "3" 2, "4" 1 (no ackers: the JVM linear shape sets none)
OVERRIDES = {"topology.name": NAME, "c1.rate": 5, "c2.executors": 2, "c3.executors": 2, "topology.workers": 3}


@pytest.fixture(scope="module")
def two_slot_pods(storm_cluster: StormCluster, pod_runner_factory: Callable[..., PodRunner]) -> PodRunner:
    """A pod runner whose replicas are Supervisors with 2 slots, announcing their hostname as pod IP."""

    def launch(replica: Replica) -> Command:
        spec = storm_cluster.launcher(replica, slots=SLOTS)
        return Command(list(spec.argv), dict(spec.env), spec.cwd, pod_ip=str(spec.extra["host"]))

    return pod_runner_factory(launcher=launch, label_selector=f"{LABEL}={SELECTOR}", stop_grace_s=10)


@pytest.fixture
def namespace(control_plane: ControlPlane, storm_cluster: StormCluster) -> Iterator[str]:
    """A namespace for the worker Deployment; afterwards its Supervisors stop and Nimbus forgets them
    (so later tests' topologies never land on their slots)."""
    name = f"placement-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "deployment", DEPLOYMENT, "-n", name, "--ignore-not-found")
    control_plane.kubectl("delete", "namespace", name, "--wait=false")
    ours = {storm_cluster.launcher.host_for(f"{name}-{DEPLOYMENT}-{i}") for i in range(3)}
    wait_for(
        lambda: not ours & {s.host for s in storm_cluster.nimbus.cluster_summary().supervisors},
        60,
        "Nimbus to forget the namespace's Supervisors",
        every_s=1.0,
        raise_on_timeout=False,
    )


def workers(replicas: int) -> str:
    labels = {"app": DEPLOYMENT}
    container = {"name": "supervisor", "image": "storm:2.8.3", "resources": {"limits": {"cpu": "1"}}}
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": DEPLOYMENT, "labels": {LABEL: SELECTOR}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        }
    )


def pods_by_ip(control_plane: ControlPlane, namespace: str) -> dict[str, str]:
    """Pod IP -> pod name of the namespace's running pods (the API server's view)."""
    out = control_plane.kubectl("get", "pods", "-n", namespace, "-o", "json")
    return {
        p["status"]["podIP"]: p["metadata"]["name"]
        for p in json.loads(out)["items"]
        if p["status"].get("podIP")
    }


def assigned(info: TopologyInfo) -> list[str]:
    """``component[task]@host:port`` of every executor Nimbus reports assigned (``__system`` aside)."""
    return [
        f"{e.component}[{e.task_start}]@{e.host}:{e.port}"
        for e in info.executors
        if e.component != "__system"
    ]


def nimbus_log_lines(cluster: StormCluster, *fragments: str) -> list[str]:
    """Lines of Nimbus's log that contain every fragment."""
    text = (Path(cluster.endpoints.storm_dir) / "logs" / "nimbus.log").read_text(errors="replace")
    return [line for line in text.splitlines() if all(f in line for f in fragments)]


def test_placements_run_exactly_wait_for_slots_and_fall_back(
    control_plane: ControlPlane, storm_cluster: StormCluster, two_slot_pods: PodRunner, namespace: str
) -> None:
    ep = storm_cluster.endpoints
    assert ep.scheduler_jar, (
        "the session's Nimbus runs Storm's own scheduler (STORMSCALE_NIMBUS_SCHEDULER=storm)"
    )
    nimbus = ep.nimbus(timeout_s=20)
    host = [storm_cluster.launcher.host_for(f"{namespace}-{DEPLOYMENT}-{i}") for i in range(3)]
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", stdin=workers(2))
    wait_for(
        lambda: {host[0], host[1]} <= {s.host for s in nimbus.cluster_summary().supervisors},
        START_S,
        "2 pods",
        every_s=1.0,
    )

    def runs(placement: Placement) -> Callable[[], bool]:
        return lambda: not layout_problems(placement, nimbus.topology_info(NAME))

    try:
        # (a) at submit: pod 0 pinned to the second pod, pod 1 to the first; "3" and "4" share a worker
        a = Placement.of([[{"1": 1}, {"2": 2}], [{"3": 2, "4": 1}]], supervisors=[host[1], host[0]])
        submit(ep, "linear", OVERRIDES, conf={PLACEMENT_KEY: a.to_json()}, language="jvm")
        wait_for(runs(a), PLACED_S, f"placement (a) {a.to_json()}", every_s=1.0)
        info = nimbus.topology_info(NAME)
        wait_for(
            lambda: {host[0], host[1]} <= set(pods_by_ip(control_plane, namespace)),
            60,
            "pod IPs",
            every_s=1.0,
        )
        pod_of = pods_by_ip(control_plane, namespace)  # a Supervisor's hostname is its pod's IP
        first, second = pod_of[host[0]], pod_of[host[1]]
        assert {(e.component, pod_of[e.host]) for e in info.executors if e.component != "__system"} == {
            ("1", second),
            ("2", second),
            ("3", first),
            ("4", first),
        }
        assert info.sched_status.startswith(f"placed as {PLACEMENT_KEY} says"), info.sched_status

        # (b) unpinned, two workers per pod, bolt "2" 2 -> 3 executors: only our 2-slot pods fit
        b = Placement.of([[{"1": 1, "2": 1}, {"2": 2}], [{"3": 2}, {"4": 1}]])
        nimbus.rebalance(NAME, rebalance_request(b))
        wait_for(runs(b), PLACED_S, f"placement (b) {b.to_json()}", every_s=1.0)
        assert {e.host for e in nimbus.topology_info(NAME).executors} == {host[0], host[1]}

        # (e) three pods, the third pinned to a pod that does not exist yet: nothing is assigned
        c = Placement.of(
            [[{"1": 1, "2": 1}], [{"2": 2}], [{"3": 2, "4": 1}]], supervisors=[host[0], host[1], host[2]]
        )
        nimbus.rebalance(NAME, rebalance_request(c))
        assert_waits(nimbus, f"pods[2] needs 1 free slot on the Supervisor on {host[2]}")
        control_plane.kubectl("scale", f"deployment/{DEPLOYMENT}", "-n", namespace, "--replicas=3")
        wait_for(
            runs(c), START_S + PLACED_S, f"placement (e) {c.to_json()} once the third pod runs", every_s=1.0
        )

        # (f) delivered to the scheduler's endpoint, the conf untouched
        only_the_changed_worker_restarts(storm_cluster, host)

        # (d) a placement that leaves bolt "4" out: one log line, DefaultScheduler, Nimbus up
        d = Placement.of([[{"1": 1, "2": 3}], [{"3": 3}]])
        nimbus.rebalance(
            NAME, RebalanceRequest(workers=2, conf_overrides={PLACEMENT_KEY: d.to_json()}), False
        )
        problem = "component '4': 0 executors placed, the topology has 1; scheduled by DefaultScheduler"

        def by_default(info: TopologyInfo) -> bool:
            return info.sched_status.endswith(problem) and len(assigned(info)) == 8

        wait_for(
            lambda: by_default(nimbus.topology_info(NAME)), PLACED_S, "DefaultScheduler runs (d)", every_s=1.0
        )
        time.sleep(ROUNDS_S)
        info = nimbus.topology_info(NAME)
        assert by_default(info), (info.sched_status, assigned(info))
        assert len({(e.host, e.port) for e in info.executors}) == 2, assigned(info)
        assert len(nimbus_log_lines(storm_cluster, "WARN", NAME, problem)) == 1
        assert nimbus.cluster_summary().leader is not None
    finally:
        kill(ep, NAME)

    # (c) no placement: DefaultScheduler, as before
    runs_by_default(storm_cluster)


def only_the_changed_worker_restarts(storm_cluster: StormCluster, host: list[str]) -> None:
    """Bolt "3" 2 -> 3 executors with the placement delivered to the scheduler's endpoint: the one
    worker that holds it restarts; the other two keep running (their JVMs' uptime grows)."""
    nimbus = storm_cluster.endpoints.nimbus(timeout_s=20)
    f = Placement.of(
        [[{"1": 1, "2": 1}], [{"2": 2}], [{"3": 3, "4": 1}]], supervisors=[host[0], host[1], host[2]]
    )
    wait_for(
        lambda: min(worker_uptimes(nimbus.topology_info(NAME)).values()) >= SETTLED_UPTIME_S,
        SETTLE_S,
        f"every worker up for {SETTLED_UPTIME_S:.0f} s",
        every_s=1.0,
    )
    before = worker_uptimes(nimbus.topology_info(NAME))
    asked = time.monotonic()
    deliver(storm_cluster, f)
    nimbus.rebalance(NAME, RebalanceRequest(workers=f.workers, executors=dict(f.executors())))
    wait_for(
        lambda: not layout_problems(f, nimbus.topology_info(NAME)),
        PLACED_S,
        f"placement (f) {f.to_json()}",
        every_s=1.0,
    )
    after = worker_uptimes(nimbus.topology_info(NAME))
    waited = time.monotonic() - asked
    # a worker started before the request has run longer than the wait (its uptime, reported by
    # heartbeats, lags by a few seconds: it had run SETTLED_UPTIME_S before); one started after, less
    kept = {w for w in before if after.get(w, 0) >= waited}
    restarted = {w for w in after if after[w] < waited}
    assert {h for h, _ in kept} == {host[0], host[1]}, (before, after, waited)
    assert len(kept) == 2, (before, after)
    assert {h for h, _ in restarted} == {host[2]}, (after, waited)
    status = nimbus.topology_info(NAME).sched_status
    assert status.startswith(f"placed as {PLACEMENT_KEY} says"), status
    withdraw(storm_cluster)  # the conf's placement speaks again


def withdraw(cluster: StormCluster) -> None:
    """Delete the topology's delivered placements at the scheduler's endpoint."""
    ep, summary = cluster.endpoints, cluster.nimbus.topology(NAME)
    assert summary is not None
    url = f"http://{ep.host}:{ep.placement_port}{PLACEMENTS_PATH}{summary.id}"
    with urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10) as answer:
        assert answer.status == 204


def worker_uptimes(info: TopologyInfo) -> dict[tuple[str, int], int]:
    """(host, port) -> seconds its worker has run (its youngest executor's uptime)."""
    out: dict[tuple[str, int], int] = {}
    for e in info.executors:
        out[e.host, e.port] = min(out.get((e.host, e.port), e.uptime_s), e.uptime_s)
    return out


def deliver(cluster: StormCluster, placement: Placement) -> None:
    """Hand ``placement`` to the scheduler's endpoint on Nimbus, as the operator does."""
    ep = cluster.endpoints
    summary = cluster.nimbus.topology(NAME)
    assert summary is not None
    PlacementEndpoint(ep.placement_port).deliver(ep.host, summary.id, placement.to_json())


def assert_waits(nimbus: NimbusClient, reason: str) -> None:
    """The topology waits for slots (``reason`` in its status) and nothing of it is assigned for a few
    scheduling rounds."""
    wait_for(
        lambda: nimbus.topology_info(NAME).sched_status.startswith("waiting for slots"),
        60,
        "waiting",
        every_s=1.0,
    )
    deadline = time.monotonic() + ROUNDS_S
    while time.monotonic() < deadline:
        info = nimbus.topology_info(NAME)
        assert assigned(info) == [], f"half-assigned while waiting: {assigned(info)}"
        time.sleep(1)
    assert reason in info.sched_status, info.sched_status


def runs_by_default(cluster: StormCluster) -> None:
    """A topology without a placement: DefaultScheduler spreads it over its 4 workers, no status of
    ours. Then bolt "3" 1 -> 2 executors on 5 workers: the scheduler puts the workers whose executors
    did not change back on their slots (their JVMs keep running) and DefaultScheduler gives bolt "3"'s
    two new executors the other slots; only that worker restarts."""
    nimbus, plain = cluster.endpoints.nimbus(timeout_s=20), "it-placement-none"
    props = {"topology.name": plain, "c1.rate": 5, "topology.workers": 4}
    submit(cluster.endpoints, "linear", props, language="jvm")
    try:
        wait_for(
            lambda: (
                len({(e.host, e.port) for e in nimbus.topology_info(plain).executors}) == 4
                and min(worker_uptimes(nimbus.topology_info(plain)).values()) >= SETTLED_UPTIME_S
            ),
            SETTLE_S,
            f"DefaultScheduler runs (c) and every worker up for {SETTLED_UPTIME_S:.0f} s",
            every_s=1.0,
        )
        info = nimbus.topology_info(plain)
        assert len(assigned(info)) == 4
        assert info.sched_status == ""
        assert nimbus_log_lines(cluster, plain, f"no {PLACEMENT_KEY}; scheduled by DefaultScheduler")
        slot_of = {e.component: (e.host, e.port) for e in info.executors if e.component != "__system"}
        asked = time.monotonic()
        nimbus.rebalance(plain, RebalanceRequest(workers=5, executors={"3": 2}))

        def rebalanced() -> bool:
            after = nimbus.topology_info(plain)
            return sum(e.component == "3" for e in after.executors) == 2 and len(assigned(after)) == 5

        wait_for(rebalanced, PLACED_S, "bolt 3 on two executors", every_s=1.0)
        after = nimbus.topology_info(plain)
        waited = time.monotonic() - asked
        uptimes = worker_uptimes(after)
        for component in ("1", "2", "4"):
            executor = next(e for e in after.executors if e.component == component)
            assert (executor.host, executor.port) == slot_of[component], (component, assigned(after))
            assert uptimes[executor.host, executor.port] >= waited, (component, uptimes, waited)
        assert all(uptimes[e.host, e.port] < waited for e in after.executors if e.component == "3"), uptimes
        assert after.sched_status == ""
    finally:
        kill(cluster.endpoints, plain)
