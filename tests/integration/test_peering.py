"""Two operator replicas with Kopf peering, as the chart runs them, on the real API
server: exactly one is active, the other takes over when it dies, and no budget is applied twice.

Both are real ``kopf run`` processes of the operator's handlers, peered at a namespaced KopfPeering,
each with its identity (the chart gives each pod's name, so each its own Kopf priority) and a
keepalive lifetime of :data:`LIFETIME_S` (the chart's ``peering.lifetimeSeconds``, 60 by default; short
here to keep the test short). Storm and Prometheus are the light fakes of ``tests/harness/fakes``
(one topology; the fake Nimbus records every rebalance it accepts). The test:

1. waits until the replica with the lower priority says it pauses in favour of the other;
2. applies budget 1: the active replica applies it (one rebalance, one ``ScalingApplied``), the
   standby runs no pass at all;
3. SIGKILLs the active replica (no goodbye: its keepalive just stops) and applies budget 2: the
   standby resumes within the lifetime and applies it; in all, one rebalance and one
   ``ScalingApplied`` per budget.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from bench import fleet
from stormscale.operator import handlers
from stormscale.operator.adapters.kube import GROUP, PLURAL, VERSION
from stormscale.planner import load_profile
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.paths import REPO_ROOT
from tests.harness.process import Daemon, LaunchSpec, free_port, http_ok, new_run_dir, signal_group
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.integration]

NAMESPACE = "peered"
PEERING = "stormscale"
NAME = "t-000"  # the fakes' first topology
LIFETIME_S = 15
INTERVAL_S = 5
#: Failover bound: the dead replica's keepalive may have just been renewed (it lasts LIFETIME_S),
#: then the standby's next pass (spec handler at once, or the next timer) and the apply itself.
FAILOVER_BOUND_S = LIFETIME_S + 2 * INTERVAL_S + 20
REPLICAS = ("stormscale-7c9d8-alpha", "stormscale-7c9d8-bravo")
PAUSING = "Pausing operations in favour of"
RESUMING = "Resuming operations after the pause"


@dataclass
class Replica:
    identity: str
    daemon: Daemon

    @property
    def priority(self) -> int:
        return handlers.peering_priority(self.identity)

    def log(self) -> str:
        return self.daemon.spec.log.read_text(errors="replace")

    def passes(self) -> list[fleet.Pass]:
        return fleet.parse_passes(self.log().splitlines(), NAMESPACE)


def daemons(replicas: list[Replica]) -> list[Daemon]:
    """The replicas' processes: a wait fails at once when one of them exits."""
    return [r.daemon for r in replicas]


def start_replica(plane: ControlPlane, run_dir: Path, identity: str) -> Replica:
    port = free_port()
    argv = [sys.executable, "-m", "kopf", "run", "-m", "stormscale.operator.handlers", "--peering", PEERING]
    argv += ["--namespace", NAMESPACE, "--liveness", f"http://127.0.0.1:{port}/healthz"]
    env = {
        **os.environ,
        "KUBECONFIG": str(plane.kubeconfig),
        "STORMSCALE_INTERVAL_SECONDS": str(INTERVAL_S),
        handlers.PEERING_IDENTITY_ENV: identity,
        handlers.PEERING_LIFETIME_ENV: str(LIFETIME_S),
    }
    log = run_dir / f"{identity}.log"
    daemon = Daemon(LaunchSpec(identity, argv, env, REPO_ROOT, log, log))
    daemon.wait_ready(lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), 60, "liveness answers")
    return Replica(identity, daemon)


@dataclass
class Bed:
    plane: ControlPlane
    api: client.ApiClient
    fakes: fleet.Fakes
    replicas: list[Replica]


@pytest.fixture(scope="module")
def bed(control_plane: ControlPlane, kube_api: client.ApiClient) -> Iterator[Bed]:
    crds = REPO_ROOT / "crds"
    control_plane.apply_crds(crds / "stormtopologies.stormscale.io.yaml", crds / "kopf-peering.yaml")
    control_plane.kubectl("create", "namespace", NAMESPACE)
    peering = {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": PEERING}}
    control_plane.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(peering))
    deployment = fleet.deployment_manifest(NAME, fleet.BASELINE_UNITS)
    control_plane.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(deployment))
    run_dir = new_run_dir("peering-")
    replicas: list[Replica] = []
    try:
        with fleet.fakes(load_profile(fleet.PROFILE), 1, 600.0) as fakes:
            for identity in REPLICAS:
                replicas.append(start_replica(control_plane, run_dir, identity))
            yield Bed(control_plane, kube_api, fakes, replicas)
    finally:
        for r in replicas:
            r.daemon.stop()
        control_plane.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def apply_budget(plane: ControlPlane, fakes: fleet.Fakes, budget: int) -> None:
    body = fleet.storm_topology_manifest(NAME, fakes.nimbus.port, fakes.prometheus_url, budget)
    body["metadata"]["namespace"] = NAMESPACE
    plane.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def applied_budget(api: client.ApiClient) -> int | None:
    custom = client.CustomObjectsApi(api)
    resource = custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
    budget: int | None = (resource.get("status") or {}).get("appliedBudget")
    return budget


def scaling_applied_events(api: client.ApiClient) -> int:
    events = client.CoreV1Api(api).list_namespaced_event(NAMESPACE).items
    return sum(e.count or 1 for e in events if e.reason == "ScalingApplied")


def rebalances(fakes: fleet.Fakes) -> list[int]:
    """The worker counts of the rebalances the fake Nimbus accepted for the topology, in order."""
    with fakes.nimbus.lock:
        return [r.workers for r in fakes.nimbus.requests if r.name == NAME]


def test_one_replica_is_active_and_the_other_takes_over_when_it_dies(bed: Bed) -> None:
    plane, api, fakes, replicas = bed.plane, bed.api, bed.fakes, bed.replicas
    active, standby = sorted(replicas, key=lambda r: r.priority, reverse=True)
    wait_for(lambda: PAUSING in standby.log(), 60, f"{standby.identity} to pause", daemons=daemons(replicas))
    assert PAUSING not in active.log()

    apply_budget(plane, fakes, 1)
    wait_for(lambda: applied_budget(api) == 1, 120, "budget 1 applied", daemons=daemons(replicas))
    time.sleep(2 * INTERVAL_S)  # a standby that acted would have run a pass by now
    assert active.passes(), "the active replica ran no pass"
    assert not standby.passes(), "the paused replica ran a pass"
    assert rebalances(fakes) == [fleet.BASELINE_UNITS + 1]
    assert (
        wait_for(
            lambda: scaling_applied_events(api), 30, "the ScalingApplied event", daemons=daemons(replicas)
        )
        == 1
    )

    signal_group(active.daemon.pid, signal.SIGKILL)
    killed = time.monotonic()
    apply_budget(plane, fakes, 2)
    wait_for(
        lambda: applied_budget(api) == 2, FAILOVER_BOUND_S + 30, "budget 2 applied", daemons=[standby.daemon]
    )
    failover_s = time.monotonic() - killed
    print(f"\nfailover: budget 2 applied {failover_s:.1f} s after the active replica was killed")
    assert RESUMING in standby.log()
    assert failover_s <= FAILOVER_BOUND_S
    assert rebalances(fakes) == [fleet.BASELINE_UNITS + 1, fleet.BASELINE_UNITS + 2]
    wait_for(lambda: scaling_applied_events(api) >= 2, 30, "the second event", daemons=[standby.daemon])
    time.sleep(2 * INTERVAL_S)
    assert rebalances(fakes) == [fleet.BASELINE_UNITS + 1, fleet.BASELINE_UNITS + 2]  # nothing twice
    assert scaling_applied_events(api) == 2
