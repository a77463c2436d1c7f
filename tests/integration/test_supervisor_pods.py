"""Worker pods are Storm Supervisors: a Deployment's replicas become Supervisors Nimbus sees, in cgroups.

The control plane, the pod runner and Storm are all real; the pod runner launches each replica of a
labelled worker Deployment as a Supervisor (one slot) in a cgroup whose quota is the CPU limit.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator

import pytest

from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.pod_runner import Command, PodRunner, Replica
from tests.harness.storm.cluster import StormCluster
from tests.harness.waiting import seconds_until, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.storm]

LABEL = "stormscale.io/storm-workers"
FOLLOW_S = 30.0  # the bound for following a scale change


@pytest.fixture(scope="module")
def supervisor_runner(storm_cluster: StormCluster, pod_runner_factory: Callable[..., PodRunner]) -> PodRunner:
    def launch(replica: Replica) -> Command:
        spec = storm_cluster.launcher(replica)
        return Command(list(spec.argv), dict(spec.env), spec.cwd)

    return pod_runner_factory(launcher=launch, label_selector=f"{LABEL}=yes", stop_grace_s=10)


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    name = f"sup-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false")


def workers(replicas: int, cpu: str) -> str:
    labels = {"app": "storm-workers"}
    container = {"name": "supervisor", "image": "storm:2.8.3", "resources": {"limits": {"cpu": cpu}}}
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "storm-workers", "labels": {LABEL: "yes"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        }
    )


def supervisors_of(storm_cluster: StormCluster, runner: PodRunner, namespace: str) -> set[str]:
    """Storm hostnames of this Deployment's replicas that Nimbus lists now."""
    ours = {storm_cluster.launcher.host_for(f"{namespace}-storm-workers-{i}") for i in range(8)}
    listed = {s.host for s in storm_cluster.endpoints.nimbus(timeout_s=10).cluster_summary().supervisors}
    return ours & listed


def test_worker_replicas_become_supervisors_and_scaling_is_followed(
    control_plane: ControlPlane, storm_cluster: StormCluster, supervisor_runner: PodRunner, namespace: str
) -> None:
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", stdin=workers(2, "500m"))
    # Two JVMs boot on 2 shared cores at half a core each: allow them the readiness timeout, not 30 s.
    wait_for(
        lambda: len(supervisors_of(storm_cluster, supervisor_runner, namespace)) == 2, 180, "2 Supervisors"
    )
    quotas = {r.cgroup.limit() for r in supervisor_runner.replicas(namespace, "storm-workers")}
    assert quotas == {(50_000, 100_000)}  # 500m, enforced by the kernel
    control_plane.kubectl("scale", "deployment/storm-workers", "-n", namespace, "--replicas=3")
    wait_for(
        lambda: len(supervisors_of(storm_cluster, supervisor_runner, namespace)) == 3, 120, "3 Supervisors"
    )
    control_plane.kubectl("scale", "deployment/storm-workers", "-n", namespace, "--replicas=1")
    took = seconds_until(
        lambda: len(supervisors_of(storm_cluster, supervisor_runner, namespace)) == 1, FOLLOW_S, "back to 1"
    )
    assert took <= FOLLOW_S
    assert len(supervisor_runner.replicas(namespace, "storm-workers")) == 1
