"""The pod runner turns labelled Deployments into processes in CPU cgroups that follow scaling."""

from __future__ import annotations

import json
import math
import os
import secrets
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from stormscale.operator.adapters.kube import pods_from
from stormscale.storm.samples.reader import SampleReader
from stormscale.storm.samples.reader import Window as SampleWindow
from tests.harness.kubernetes import cadvisor, cpuspin
from tests.harness.kubernetes.cgroups import CpuCgroup, QuotaUse, cpu_root, daemons_group, is_v2
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.pod_runner import Command, PodRunner, Replica, RunningReplica
from tests.harness.process import pid_gone
from tests.harness.prometheus.server import Prometheus, StaticJob
from tests.harness.waiting import wait_for

pytestmark = pytest.mark.integration

SCALE_TIMEOUT_S = 30
LABEL = {"stormscale.io/pod-runner": "true"}


def deployment(name: str, replicas: int, cpu: str, mode: str, fork: int = 0) -> dict[str, Any]:
    """A Deployment whose container command runs tests/harness/kubernetes/cpuspin.py."""
    command = [sys.executable, cpuspin.__file__, mode, f"--fork={fork}"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": LABEL},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "none",
                            "command": command,
                            "resources": {"limits": {"cpu": cpu}},
                        }
                    ]
                },
            },
        },
    }


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace, deleted (without waiting) after the test."""
    name = f"pr-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false")


def cgroup_dir(namespace: str, name: str, index: int) -> Path:
    return cpu_root() / "stormscale" / f"{namespace}-{name}-{index}"


def live(runner: PodRunner, namespace: str, name: str) -> list[RunningReplica]:
    return [r for r in runner.replicas(namespace, name) if r.proc.poll() is None]


def cgroup_of(pid: int) -> str:
    """The cgroup path of ``pid`` in the cpu hierarchy (v1) or the unified one (v2)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (is_v2() and controllers == "") or "cpu" in controllers.split(","):
            return path
    raise AssertionError(f"no cpu cgroup for {pid}")


def ready_replicas(kube_api: client.ApiClient, namespace: str, name: str) -> int:
    status = client.AppsV1Api(kube_api).read_namespaced_deployment_status(name, namespace).status
    return int((status and status.ready_replicas) or 0)


def test_replicas_follow_scaling_in_their_cgroups(
    control_plane: ControlPlane, pod_runner: PodRunner, kube_api: client.ApiClient, namespace: str
) -> None:
    name = "spin"
    control_plane.kubectl(
        "apply", "-n", namespace, "-f", "-", stdin=json.dumps(deployment(name, 2, "500m", "sleep", 1))
    )
    wait_for(lambda: len(live(pod_runner, namespace, name)) == 2, SCALE_TIMEOUT_S, "2 replicas", every_s=0.2)
    for replica in live(pod_runner, namespace, name):
        group = replica.cgroup
        assert group.path == cgroup_dir(namespace, name, replica.replica.index)
        assert group.limit() == (50_000, 100_000)
        wait_for(
            lambda group=group: len(group.pids()) == 2,  # type: ignore[misc]
            10,
            "the replica and its forked child",
            every_s=0.2,
        )
        for pid in group.pids():
            assert cgroup_of(pid) == f"/stormscale/{group.path.name}"
    wait_for(
        lambda: ready_replicas(kube_api, namespace, name) == 2,
        SCALE_TIMEOUT_S,
        "readyReplicas 2",
        every_s=0.2,
    )

    control_plane.kubectl("scale", "-n", namespace, f"deployment/{name}", "--replicas=3")
    wait_for(lambda: len(live(pod_runner, namespace, name)) == 3, SCALE_TIMEOUT_S, "3 replicas", every_s=0.2)
    assert CpuCgroup(cgroup_dir(namespace, name, 2), is_v2()).limit() == (50_000, 100_000)
    newest = pod_runner.replicas(namespace, name)[2].cgroup
    wait_for(lambda: len(newest.pids()) == 2, 10, "the new replica and its forked child", every_s=0.2)

    # to 1: as a kubelet, the runner stops the replicas whose Pods the ReplicaSet removed
    before = pod_runner.replicas(namespace, name)
    pids = {r.replica.index: r.cgroup.pids() for r in before}
    assert sum(len(p) for p in pids.values()) == 6
    control_plane.kubectl("scale", "-n", namespace, f"deployment/{name}", "--replicas=1")
    wait_for(
        lambda: len(pod_runner.replicas(namespace, name)) == 1, SCALE_TIMEOUT_S, "1 replica", every_s=0.2
    )
    (survivor,) = pod_runner.replicas(namespace, name)
    listed = kube_api.sanitize_for_serialization(client.CoreV1Api(kube_api).list_namespaced_pod(namespace))
    assert survivor.pod in [
        p["metadata"]["name"] for p in listed["items"] if "deletionTimestamp" not in p["metadata"]
    ]
    kept = survivor.replica.index
    assert cgroup_dir(namespace, name, kept).is_dir()
    assert all(not cgroup_dir(namespace, name, i).exists() for i in pids if i != kept)
    doomed_pids = [pid for i, group in pids.items() if i != kept for pid in group]
    wait_for(
        lambda: all(pid_gone(pid) for pid in doomed_pids),
        5,
        "stopped replicas' processes to end",
        every_s=0.2,
    )
    wait_for(
        lambda: ready_replicas(kube_api, namespace, name) == 1,
        SCALE_TIMEOUT_S,
        "readyReplicas 1",
        every_s=0.2,
    )

    control_plane.kubectl("delete", "-n", namespace, f"deployment/{name}")
    wait_for(
        lambda: not cgroup_dir(namespace, name, kept).exists(),
        SCALE_TIMEOUT_S,
        "the last cgroup to go",
        every_s=0.2,
    )


@dataclass(frozen=True)
class Window:
    """One limit's measurement: CPU seconds the cgroup received per wall second, loop iterations/s."""

    millis: int
    cpu: float
    iterations: float


def spin_counts(log: Path, start: float, end: float) -> list[tuple[float, int]]:
    """The spin loop's ``(monotonic time, count)`` reports between ``start`` and ``end``."""
    samples = []
    for line in log.read_text().splitlines():
        stamp, _, count = line.partition(" ")
        if count.isdigit() and start <= float(stamp) <= end:
            samples.append((float(stamp), int(count)))
    return samples


def measure_window(replica: RunningReplica, millis: int, window_s: float) -> Window:
    """The cgroup's CPU usage over wall time and the loop's iterations/s over the next ``window_s``."""
    start, used = time.monotonic(), replica.cgroup.usage_us()
    time.sleep(window_s)
    end, used = time.monotonic(), replica.cgroup.usage_us() - used
    samples = spin_counts(replica.replica.log_path, start, end)
    assert len(samples) >= 4 * window_s * 0.8, f"too few samples in {replica.replica.log_path}: {samples}"
    (t0, n0), (t1, n1) = samples[0], samples[-1]
    return Window(millis, used / 1e6 / (end - start), (n1 - n0) / (t1 - t0))


def test_a_1000m_limit_gives_twice_the_cpu_of_500m(
    control_plane: ControlPlane, pod_runner: PodRunner, namespace: str
) -> None:
    """One spin loop, its limit switched 500m/1000m four times through the Deployment (5 s per limit).

    A CPU limit governs CPU time, so the check is on the CPU time the cgroup received (its usage
    counter over wall time): each 500m window is paired with the 1000m window right after it and the
    median of the four ratios must be within [1.8, 2.2]. Loop iterations per second are printed, not
    checked: how much work a CPU second buys depends on the machine (a throttled loop, cold again after
    every throttled period, does less per CPU second; CI saw iteration ratios of 2.18 to 2.65).
    """
    name = "units"
    control_plane.kubectl(
        "apply", "-n", namespace, "-f", "-", stdin=json.dumps(deployment(name, 1, "500m", "spin"))
    )
    wait_for(lambda: len(live(pod_runner, namespace, name)) == 1, SCALE_TIMEOUT_S, "the replica", every_s=0.2)
    replica = live(pod_runner, namespace, name)[0]
    wait_for(
        lambda: spin_counts(replica.replica.log_path, 0, math.inf), 10, "the loop's first count", every_s=0.2
    )
    pairs = [
        (
            measure_at(control_plane, namespace, name, replica, 500),
            measure_at(control_plane, namespace, name, replica, 1000),
        )
        for _ in range(4)
    ]
    assert live(pod_runner, namespace, name)[0].proc.pid == replica.proc.pid  # the same loop throughout
    cpu_ratios = [full.cpu / half.cpu for half, full in pairs]
    loop_ratios = [full.iterations / half.iterations for half, full in pairs]
    figures = [(round(half.cpu, 3), round(full.cpu, 3)) for half, full in pairs]
    loops = [round(r, 2) for r in loop_ratios]
    print(
        f"CPU s per s (500m, 1000m): {figures}; median ratio {statistics.median(cpu_ratios):.2f}; "
        f"iterations/s ratios {loops}, median {statistics.median(loop_ratios):.2f}"
    )
    assert 1.8 <= statistics.median(cpu_ratios) <= 2.2, f"CPU ratios {[round(r, 2) for r in cpu_ratios]}"


def measure_at(
    control_plane: ControlPlane, namespace: str, name: str, replica: RunningReplica, millis: int
) -> Window:
    """Set the Deployment's CPU limit, wait for the cgroup's quota, measure the loop for 1.25 s."""
    limit = f"--limits=cpu={millis}m"
    control_plane.kubectl("set", "resources", "-n", namespace, f"deployment/{name}", limit)
    quota = (millis * 100, 100_000)
    wait_for(lambda: replica.cgroup.limit() == quota, SCALE_TIMEOUT_S, f"the {millis}m quota", every_s=0.2)
    throttled_before = replica.cgroup.throttled_periods()
    window = measure_window(replica, millis, 1.25)
    if millis < 1000:
        assert replica.cgroup.throttled_periods() > throttled_before  # the quota really bites
    return window


def test_a_custom_launcher_gets_the_replica_and_its_limit(
    control_plane: ControlPlane,
    pod_runner: PodRunner,
    pod_runner_factory: Callable[..., PodRunner],
    namespace: str,
    tmp_path: Path,
) -> None:
    seen: list[Replica] = []

    def launcher(replica: Replica) -> Command:
        seen.append(replica)
        return Command(
            [sys.executable, "-c", "import os, time; print(os.environ['MARK']); time.sleep(3600)"],
            {"MARK": "m"},
        )

    runner = pod_runner_factory(
        launcher=launcher, label_selector="stormscale.io/custom=yes", run_dir=tmp_path
    )
    manifest = deployment("custom", 1, "250m", "sleep")
    manifest["metadata"]["labels"] = {"stormscale.io/custom": "yes"}
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(manifest))
    wait_for(
        lambda: len(live(runner, namespace, "custom")) == 1,
        SCALE_TIMEOUT_S,
        "the custom replica",
        every_s=0.2,
    )
    assert [(r.index, r.cpu_millis, r.container["name"]) for r in seen] == [(0, 250, "main")]
    replica = live(runner, namespace, "custom")[0]
    assert replica.cgroup.limit() == (25_000, 100_000)
    weight_file, weight = ("cpu.weight", "10") if is_v2() else ("cpu.shares", "256")  # request = limit
    assert (replica.cgroup.path / weight_file).read_text().strip() == weight
    wait_for(
        lambda: replica.replica.log_path.read_text() == "m\n",
        10,
        "the launcher's command output",
        every_s=0.2,
    )
    assert live(pod_runner, namespace, "custom") == []  # the default runner ignores other labels
    runner.stop()
    assert not replica.cgroup.path.exists()
    assert pid_gone(replica.proc.pid)


def test_a_replica_that_dies_is_restarted_in_its_cgroup(
    control_plane: ControlPlane, pod_runner: PodRunner, namespace: str
) -> None:
    name = "crashy"
    control_plane.kubectl(
        "apply", "-n", namespace, "-f", "-", stdin=json.dumps(deployment(name, 1, "200m", "sleep"))
    )
    wait_for(lambda: len(live(pod_runner, namespace, name)) == 1, SCALE_TIMEOUT_S, "the replica", every_s=0.2)
    first = live(pod_runner, namespace, name)[0]
    old_pid = first.proc.pid
    os.kill(old_pid, signal.SIGKILL)
    wait_for(
        lambda: [r.proc.pid for r in live(pod_runner, namespace, name)] not in ([], [old_pid]),
        SCALE_TIMEOUT_S,
        "a new process",
        every_s=0.2,
    )
    again = live(pod_runner, namespace, name)[0]
    assert again.restarts == 1
    assert again.cgroup.path == cgroup_dir(namespace, name, 0)
    wait_for(
        lambda: again.proc.pid in again.cgroup.pids(), 5, "the new process in the same cgroup", every_s=0.2
    )
    control_plane.kubectl("delete", "-n", namespace, f"deployment/{name}")
    wait_for(
        lambda: not cgroup_dir(namespace, name, 0).exists(), SCALE_TIMEOUT_S, "the cgroup to go", every_s=0.2
    )


def test_pods_get_their_replicas_address_and_prometheus_scrapes_their_cpu_as_from_a_kubelet(
    control_plane: ControlPlane,
    pod_runner_factory: Callable[..., PodRunner],
    kube_api: client.ApiClient,
    prometheus: Prometheus,
    namespace: str,
) -> None:
    """Two 300m spin loops: each Pod's ``status.podIP`` is its replica's announced address, and the
    product's own cAdvisor reader (the operator's) gets from Prometheus each pod's CPU ≈ its limit."""
    name, label = "kubelet", {"stormscale.io/kubelet": "yes"}

    def launcher(replica: Replica) -> Command:
        argv = [sys.executable, cpuspin.__file__, "spin"]
        return Command(argv, pod_ip=f"127.0.3.{replica.index + 1}")

    runner = pod_runner_factory(launcher=launcher, label_selector="stormscale.io/kubelet=yes")
    manifest = deployment(name, 2, "300m", "spin")
    manifest["metadata"]["labels"] = label
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(manifest))
    core, apps = client.CoreV1Api(kube_api), client.AppsV1Api(kube_api)

    def pods() -> list[dict[str, Any]]:
        listing = core.list_namespaced_pod(namespace, label_selector=f"app={name}")
        return list(kube_api.sanitize_for_serialization(listing)["items"])

    def addressed() -> bool:
        return sorted((p.get("status") or {}).get("podIP", "") for p in pods()) == ["127.0.3.1", "127.0.3.2"]

    wait_for(addressed, SCALE_TIMEOUT_S, "both Pods Ready with their replicas' addresses", every_s=0.2)
    bound = {r.pod: r.command.pod_ip for r in live(runner, namespace, name)}
    assert bound == {p["metadata"]["name"]: p["status"]["podIP"] for p in pods()}

    prometheus.set_jobs([StaticJob("kubelet", [runner.cadvisor_target], cadvisor.PATH)])
    try:
        prometheus.wait_for('up{job="kubelet"} == 1', timeout_s=30)
        start = int(time.time())
        time.sleep(16)
        end = int(time.time())
        found = kube_api.sanitize_for_serialization(apps.read_namespaced_deployment(name, namespace))
        worker_pods = pods_from(found, pods())
        cpu = SampleReader(prometheus.url).pod_cpu(namespace, worker_pods, SampleWindow(start, end, 2))
    finally:
        prometheus.set_jobs([])
    assert set(cpu) == set(bound)
    for pod_name, series in cpu.items():
        (t0, u0), *_, (t1, u1) = sorted(series.usage.items())
        cores = (u1 - u0) / ((t1 - t0) / 1000)
        assert 0.25 <= cores <= 0.33, f"{pod_name}: {cores:.3f} cores at a 300m limit"
        assert set(series.limit.values()) == {0.3}


def test_a_pod_gets_its_quota_while_the_daemons_group_spins_on_every_core(
    control_plane: ControlPlane, pod_runner: PodRunner, namespace: str
) -> None:
    """The bed's guarantee (docs/testbed.md): in the daemons' cgroup two spin loops want both cores,
    and a 500m pod, saturated, still receives ≥ 90 % of its quota. Leaving the group puts this
    process back where it was."""
    name, millis = "guaranteed", 500
    control_plane.kubectl(
        "apply", "-n", namespace, "-f", "-", stdin=json.dumps(deployment(name, 1, f"{millis}m", "spin"))
    )
    wait_for(lambda: len(live(pod_runner, namespace, name)) == 1, SCALE_TIMEOUT_S, "the replica", every_s=0.2)
    group = live(pod_runner, namespace, name)[0].cgroup
    outside = cgroup_of(os.getpid())
    with daemons_group(f"test-{os.getpid()}") as daemons:
        assert cgroup_of(os.getpid()) == f"/stormscale-daemons/{daemons.path.name}"
        spinners = [
            subprocess.Popen([sys.executable, cpuspin.__file__, "spin"], stdout=subprocess.DEVNULL)
            for _ in range(2)
        ]
        try:
            assert all(cgroup_of(p.pid) == cgroup_of(os.getpid()) for p in spinners)
            time.sleep(2.0)
            before, start = group.bandwidth(), time.monotonic()
            busy_before = daemons.usage_us()
            time.sleep(8.0)
            use = QuotaUse.between(before, group.bandwidth(), time.monotonic() - start, millis / 1000)
            daemons_cores = (daemons.usage_us() - busy_before) / 1e6 / 8.0
        finally:
            for p in spinners:
                p.kill()
                p.wait()
    print(f"pod: {use}; daemons' group: {daemons_cores:.2f} cores")
    assert cgroup_of(os.getpid()) == outside
    assert not daemons.path.exists()
    # The competition was real: two loops that want 2 cores spun all along (they got what the pod and
    # the rest of the session left: 1.15 cores alone, 0.90 with the test session's Storm beside).
    assert daemons_cores > 0.5
    assert use.saturated
    assert use.received_share >= 0.9, use
