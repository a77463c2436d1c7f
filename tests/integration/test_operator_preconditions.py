"""On the real API server (etcd + kube-apiserver), two passes over the same resource version: the first
writes and acts, the second gets 409 Conflict on its first status write and acts on nothing; a
resource deleted (or being deleted) between two steps of an apply is not acted on any further.

The passes are the operator's own (``reconcile_and_save`` on the Kubernetes adapters), without Kopf;
Storm and the metrics are recording fakes, one per pass, each as its pass observed it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from stormscale.operator.adapters.kube import KubeConfigMaps, KubeDeployments, KubeStatus
from stormscale.operator.handlers import reconcile_and_save
from stormscale.operator.policy import parse_spec
from stormscale.operator.ports import Ports, SupersededError
from stormscale.operator.realizer import StormRealizer
from stormscale.operator.reconcile import Resource
from stormscale.operator.status import StormTopologyStatus
from tests.harness.fakes.ports import FakeEvents, FakeNimbus, FakeProfiler
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.fixtures import scratch_namespace
from tests.integration.test_operator_api import LINEAR, deployment, get, manifest, replicas

pytestmark = pytest.mark.integration

TARGET = {"1": 1, "2": 2, "3": 2, "4": 1}  # budget 2 on the linear profile


@pytest.fixture
def namespace(control_plane: ControlPlane, stormtopology_crd: Path) -> Iterator[str]:
    with scratch_namespace(control_plane, "pre") as name:
        control_plane.kubectl("apply", "-f", "-", stdin=deployment(name))
        control_plane.kubectl("apply", "-f", "-", stdin=manifest(name))
        yield name


def storm() -> FakeNimbus:
    return FakeNimbus(dict.fromkeys("1234", 1), dict.fromkeys("1234", 8))


class Pass:
    """One operator pass over the resource as it loads it now (its own memory of what is stored)."""

    def __init__(self, api: client.ApiClient, namespace: str, deployments: Any = None) -> None:
        self.namespace = namespace
        self.store = KubeStatus(api)
        self.found = self.store.load(namespace, "linear")
        self.nimbus = storm()
        workers = deployments or KubeDeployments(api)
        self.ports = Ports(
            deployments=workers,
            nimbus=self.nimbus,
            profiler=FakeProfiler(LINEAR),
            status=self.store,
            events=FakeEvents(),
            published=KubeConfigMaps(api),
            realizer=StormRealizer(workers, self.nimbus),
        )

    def run(self) -> StormTopologyStatus:
        resource = Resource(self.namespace, "linear", int(self.found["metadata"]["generation"]))
        policy = parse_spec(self.found["spec"])
        status = StormTopologyStatus.from_json(self.found.get("status"))
        return reconcile_and_save(resource, policy, status, self.ports, datetime.now(UTC)).status

    def rebalances(self) -> list[Any]:
        return [c for c in self.nimbus.calls if c[0] == "rebalance"]


def test_two_passes_on_the_same_version_write_once_and_the_second_acts_on_nothing(
    control_plane: ControlPlane, kube_api: client.ApiClient, namespace: str
) -> None:
    first, second = Pass(kube_api, namespace), Pass(kube_api, namespace)
    assert first.found["metadata"]["resourceVersion"] == second.found["metadata"]["resourceVersion"]
    done = first.run()
    assert done.pending is not None
    assert first.rebalances() == [("rebalance", (TARGET, 6))]
    version = get(control_plane, namespace)["metadata"]["resourceVersion"]
    with pytest.raises(SupersededError, match="409"):
        second.run()
    assert second.rebalances() == []  # no rebalance, and
    assert replicas(control_plane, namespace) == 6  # only the first pass's scale
    after = get(control_plane, namespace)
    assert after["metadata"]["resourceVersion"] == version  # nothing written by the second
    assert after["status"]["pending"]["units"] == TARGET


class DeletingDeployments(KubeDeployments):
    """The worker Deployment, and the StormTopology deleted right after the first scale."""

    def __init__(self, api: client.ApiClient, plane: ControlPlane, namespace: str) -> None:
        super().__init__(api)
        self.plane, self.namespace = plane, namespace
        self.scales: list[int] = []

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        super().scale(namespace, name, replicas)
        self.scales.append(replicas)
        self.plane.kubectl("delete", "stormtopology/linear", "-n", self.namespace, "--wait=false")


@pytest.mark.parametrize("finalizer", [False, True], ids=["deleted", "being deleted"])
def test_a_resource_deleted_between_two_steps_is_not_acted_on_any_further(
    control_plane: ControlPlane, kube_api: client.ApiClient, namespace: str, finalizer: bool
) -> None:
    """With a finalizer (as Kopf keeps one) the resource stays, with a deletionTimestamp."""
    if finalizer:
        hold = json.dumps({"metadata": {"finalizers": ["stormscale.io/test-hold"]}})
        control_plane.kubectl("patch", "stormtopology/linear", "-n", namespace, "--type=merge", "-p", hold)
    deployments = DeletingDeployments(kube_api, control_plane, namespace)
    one = Pass(kube_api, namespace, deployments)
    try:
        with pytest.raises(SupersededError, match="being deleted" if finalizer else "was deleted"):
            one.run()
        assert deployments.scales == [6]  # the scale up, then nothing: no rebalance, no scale back
        assert one.rebalances() == []
    finally:
        if finalizer:
            release = json.dumps({"metadata": {"finalizers": None}})
            control_plane.kubectl(
                "patch", "stormtopology/linear", "-n", namespace, "--type=merge", "-p", release
            )
