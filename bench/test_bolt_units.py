"""Units are real: a saturated CPU-bound bolt runs about twice as fast at 1000m as at 500m.

The only Supervisor of a cluster of this module's own is the one replica of a worker Deployment, so
the linear topology's worker, its JVM and its Python multilang processes all run in that replica's
cgroup. Bolt "2" burns ``COST_US`` of CPU per tuple and the spout offers more than it can take even
at 1000m, so the bolt is saturated throughout. Its executed tuples/s, read from Nimbus, are measured
at 500m, 1000m and 500m again; the limit is changed in place through the Deployment (the pod runner
rewrites the running cgroup's quota), without resubmitting the topology.

A measurement with assertions, run by ``make bench-units`` (``pytest -p tests.conftest`` for the test
bed's fixtures), not by ``make test``: on CI's budget the end-to-end test's per-pod quota checks and
``tests/integration/test_pod_runner.py``'s CPU-time ratio cover what it shows.
"""

from __future__ import annotations

import json
import secrets
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from tests.harness.bed.measure import rate_over
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.pod_runner import Command, PodRunner, Replica, RunningReplica
from tests.harness.process import new_run_dir
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.topology import Topology, kill, submit, wait_for_stats
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.storm]

LABEL = "stormscale.io/bolt-units"
DEPLOYMENT = "storm-workers"
BOLT = "2"
COST_US = 10_000  # CPU per tuple of the bolt under test: 100 tuples/s per core at most
TASKS = 2  # per bolt: two bolt "2" processes can use a whole core between them
OVERRIDES: dict[str, object] = {
    "topology.name": "it-bolt-units",
    "topology.workers": 1,
    "max.tasks": TASKS,
    "c1.tasks": 1,
    "c1.executors": 1,
    "c1.rate": 2 * 1_000_000 // COST_US,  # twice what the bolt could do with a whole core
    "c2.cost_us": COST_US,
    "c3.cost_us": 50,
    "c4.cost_us": 50,
}
# Worker settings from the Supervisor's storm.yaml (they apply where the topology sets none). With
# Storm's defaults idle bolts park-spin up to 1000 times between tuples and the spout polls until a
# 32768-tuple queue is full (minutes here): measured, the worker JVM then took 140-280m and the
# spout 15-70m of the pod, work that does not scale with the bolt's. Idle executors now sleep at
# once, and a short queue makes the spout wait on backpressure.
WORKER_CONF: dict[str, object] = {
    "topology.bolt.wait.progressive.level2.count": 0,
    "topology.backpressure.wait.progressive.level2.count": 0,
    "topology.executor.receive.buffer.size": 1024,
}
LIMITS_MILLIS = (500, 1000, 500)  # 500m on both sides of 1000m cancels a linear drift of the machine
FIRST_TUPLES_TIMEOUT_S = 240.0
WARM_UP_S = 45.0  # JIT compilation and start-up work of the worker burn CPU the bolt does not get
SETTLE_S = 10.0
WINDOW_S = 45.0
QUOTA_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Window:
    """One measurement: the limit, the bolt's executed tuples/s, CFS periods throttled meanwhile, and
    the CPU seconds per wall second the pod's cgroup received (its usage counter)."""

    millis: int
    rate: float
    throttled: int
    cpu: float


def workers(cpu: str) -> str:
    """A one-replica worker Deployment with CPU limit ``cpu`` (the pod runner makes it a Supervisor)."""
    labels = {"app": DEPLOYMENT}
    container = {"name": "supervisor", "image": "storm:2.8.3", "resources": {"limits": {"cpu": cpu}}}
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": DEPLOYMENT, "labels": {LABEL: "yes"}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        }
    )


@pytest.fixture(scope="module")
def cluster(storm_home: Path) -> Iterator[StormCluster]:
    """ZooKeeper + Nimbus of this module only, with no Supervisor of their own."""
    storm = StormCluster(new_run_dir("storm-") / "bolt-units", storm_home)
    storm.launcher.extra_conf.update(WORKER_CONF)
    with storm:
        yield storm


@pytest.fixture(scope="module")
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace, deleted (without waiting) at the end of the module."""
    name = f"units-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false")


@pytest.fixture(scope="module")
def runner(cluster: StormCluster, kube_api: client.ApiClient) -> Iterator[PodRunner]:
    """A pod runner that starts this module's Supervisors; stopped before the cluster."""

    def launch(replica: Replica) -> Command:
        spec = cluster.launcher(replica)
        return Command(list(spec.argv), dict(spec.env), spec.cwd)

    run_dir = cluster.endpoints.storm_dir.parent / "pods"
    pods = PodRunner(kube_api, run_dir, launcher=launch, label_selector=f"{LABEL}=yes", stop_grace_s=10)
    pods.start()
    try:
        yield pods
    finally:
        pods.stop()


@pytest.fixture(scope="module")
def worker_pod(
    control_plane: ControlPlane, cluster: StormCluster, runner: PodRunner, namespace: str
) -> RunningReplica:
    """The Deployment's one replica at 500m, once Nimbus lists its Supervisor."""
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", stdin=workers("500m"))
    wait_for(lambda: len(runner.replicas(namespace, DEPLOYMENT)) == 1, 30, "the replica")
    replica = runner.replicas(namespace, DEPLOYMENT)[0]
    host = cluster.launcher.host_for(replica.replica.name)
    nimbus = cluster.endpoints.nimbus(timeout_s=10)
    wait_for(lambda: any(s.host == host for s in nimbus.cluster_summary().supervisors), 180, "Supervisor")
    return replica


@pytest.fixture(scope="module")
def topology(cluster: StormCluster, worker_pod: RunningReplica) -> Iterator[Topology]:
    """The linear topology with an expensive bolt "2", killed at the end."""
    submitted = submit(cluster.endpoints, "linear", OVERRIDES)
    try:
        yield submitted
    finally:
        kill(cluster.endpoints, submitted.name)


def executed(cluster: StormCluster, topology: Topology) -> int:
    """Tuples bolt ``BOLT`` has executed so far, as Nimbus shows them now."""
    stats = cluster.endpoints.nimbus(timeout_s=10).topology_page(topology.id).components
    return stats[BOLT].executed if BOLT in stats else 0


def set_limit(control_plane: ControlPlane, namespace: str, replica: RunningReplica, millis: int) -> None:
    """Set the Deployment's CPU limit and wait until the running cgroup's quota follows."""
    limit = f"--limits=cpu={millis}m"
    control_plane.kubectl("set", "resources", "-n", namespace, f"deployment/{DEPLOYMENT}", limit)
    quota = (millis * 100, 100_000)
    wait_for(lambda: replica.cgroup.limit() == quota, QUOTA_TIMEOUT_S, f"the {millis}m quota")


def measure_at(
    control_plane: ControlPlane, namespace: str, replica: RunningReplica, read: Callable[[], int], millis: int
) -> Window:
    """The bolt's rate with the replica's limit at ``millis``, after a settle period."""
    set_limit(control_plane, namespace, replica, millis)
    time.sleep(SETTLE_S)
    throttled, started, used = replica.cgroup.throttled_periods(), time.monotonic(), replica.cgroup.usage_us()
    rate = rate_over(read, WINDOW_S).rate
    cpu = (replica.cgroup.usage_us() - used) / 1e6 / (time.monotonic() - started)
    assert replica.cgroup.limit() == (millis * 100, 100_000)  # still the quota at the window's end
    return Window(millis, rate, replica.cgroup.throttled_periods() - throttled, cpu)


def bolt_processes(replica: RunningReplica) -> int:
    """How many processes in the replica's cgroup run the CPU-bound multilang bolt."""
    count = 0
    for pid in replica.cgroup.pids():
        try:
            count += b"cpu_bolt.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
    return count


def test_a_saturated_bolt_runs_about_twice_as_fast_at_1000m_as_at_500m(
    control_plane: ControlPlane,
    cluster: StormCluster,
    namespace: str,
    worker_pod: RunningReplica,
    topology: Topology,
) -> None:
    assert worker_pod.cgroup.limit() == (50_000, 100_000)
    wait_for_stats(
        cluster.endpoints, topology.id, lambda s: BOLT in s and s[BOLT].executed > 0, FIRST_TUPLES_TIMEOUT_S
    )
    host = cluster.launcher.host_for(worker_pod.replica.name)
    assert {e.host for e in cluster.nimbus.topology_info(topology.name).user_executors()} == {host}
    assert bolt_processes(worker_pod) == 3 * TASKS, "every bolt task's process runs in the pod's cgroup"
    time.sleep(WARM_UP_S)

    def read() -> int:
        return executed(cluster, topology)

    windows = [measure_at(control_plane, namespace, worker_pod, read, m) for m in LIMITS_MILLIS]
    half = statistics.mean(w.rate for w in windows if w.millis == 500)
    full = statistics.mean(w.rate for w in windows if w.millis == 1000)
    ratio = full / half
    cpu_ratio = statistics.mean(w.cpu for w in windows if w.millis == 1000) / statistics.mean(
        w.cpu for w in windows if w.millis == 500
    )
    summary = ", ".join(
        f"{w.millis}m {w.rate:.1f}/s, {w.cpu:.3f} CPU s/s, {w.rate / w.cpu:.0f} tuples per CPU s "
        f"(throttled {w.throttled})"
        for w in windows
    )
    print(f"bolt {BOLT}: {summary}; ratio 1000m/500m {ratio:.2f} tuples/s, {cpu_ratio:.2f} CPU time")
    assert all(w.throttled > 0 for w in windows), f"the quota must bind in every window: {summary}"
    assert 1.8 <= cpu_ratio <= 2.2, summary  # the limit governs CPU time
    assert 1.6 <= ratio <= 2.4, summary  # and the bolt's cost is CPU time: its rate follows
