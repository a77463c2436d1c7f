"""The product Nimbus client against a real Storm 2.8 Nimbus: reads, structure, refusals, rebalance.

One light ``linear`` topology (bolts with 3 tasks, 1 executor each) serves the whole module; the
rebalance tests run last because they change the topology, the Nimbus crash last of all.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from stormscale.operator.adapters.nimbus import NimbusPort
from stormscale.operator.decision.assumptions import check
from stormscale.operator.ports import RefusedError, StormTopologyState, UnavailableError
from stormscale.storm import (
    NimbusClient,
    RebalanceRequest,
    RequestRejectedError,
    TopologyNotFoundError,
)
from stormscale.storm.model import ALL_TIME, Kind, StreamId, TopologyInfo
from stormscale.storm.stats import executors_per_component
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.topology import Topology, kill, submit
from tests.harness.waiting import wait_for

pytestmark = pytest.mark.storm

NAME = "it-nimbus-client"
PROPS = {"topology.name": NAME, "max.tasks": 3, "c1.tasks": 2, "c1.rate": 20}
COSTS = {"c2.cost_us": 300, "c3.cost_us": 300, "c4.cost_us": 300}
REBALANCE_WAIT_S = 3
SETTLE_S = 30.0
#: Long enough to crash Nimbus inside the wait (the crash follows the request within a second).
RESTART_WAIT_S = 5


@pytest.fixture(scope="module")
def topology(storm_cluster: StormCluster, storm_supervisor: str) -> Iterator[Topology]:
    """The module's running topology (its sink has reported stats: every test, run alone too, starts
    on a topology whose workers run), killed at the end."""
    topo = submit(storm_cluster.endpoints, "linear", {**PROPS, **COSTS})
    try:
        sink_reporting(storm_cluster.endpoints.nimbus(timeout_s=10))
        yield topo
    finally:
        kill(storm_cluster.endpoints, topo.name)


def sink_reporting(client: NimbusClient, timeout_s: float = 120.0) -> TopologyInfo:
    """Wait until the sink's executor has reported executed tuples; the topology's info then."""

    def reporting() -> TopologyInfo | None:
        info = client.topology_info(NAME)
        sink = [e for e in info.user_executors() if e.component == "4"]
        return info if sink and sink[0].window(ALL_TIME).executed else None

    return wait_for(reporting, timeout_s, "the sink's executed tuples on Nimbus", every_s=2.0)


@pytest.fixture(scope="module")
def client(storm_cluster: StormCluster) -> NimbusClient:
    """The product client on the session's Nimbus."""
    return storm_cluster.endpoints.nimbus(timeout_s=10)


def test_cluster_summary_names_the_leader_and_the_topology(client: NimbusClient, topology: Topology) -> None:
    summary = client.cluster_summary()
    assert summary.leader is not None
    assert summary.leader.endpoint.port == client.seeds[0].port
    assert summary.supervisors, "the session's Supervisor is listed"
    assert all(s.host.startswith("127.") and s.id and s.slots >= 1 for s in summary.supervisors)
    assert summary.slots == sum(s.slots for s in summary.supervisors)
    listed = {t.name: t for t in summary.topologies}
    assert listed[NAME].id == topology.id
    assert listed[NAME].status == "ACTIVE"


def test_topology_info_has_executors_tasks_and_per_stream_stats(
    client: NimbusClient, topology: Topology
) -> None:
    info = sink_reporting(client)
    sink = [e for e in info.user_executors() if e.component == "4"]
    assert info.id == topology.id
    assert executors_per_component(info) == {"1": 1, "2": 1, "3": 1, "4": 1}
    assert {e.component: e.tasks for e in info.user_executors()} == {"1": 2, "2": 3, "3": 3, "4": 3}
    assert sink[0].kind is Kind.BOLT
    assert set(sink[0].window(ALL_TIME).executed) == {StreamId("3", "default")}, "keyed by GlobalStreamId"


def test_structure_decodes_inputs_keyed_by_global_stream_id(client: NimbusClient, topology: Topology) -> None:
    structure = client.structure(topology.id)
    assert sorted(structure.components) == ["1", "2", "3", "4"]
    assert structure.components["1"].kind is Kind.SPOUT
    assert structure.components["3"].inputs == {StreamId("2", "default"): "shuffle"}
    assert [structure.children(c) for c in "1234"] == [("2",), ("3",), ("4",), ()]


def test_unknown_topology_is_a_typed_error(client: NimbusClient) -> None:
    with pytest.raises(TopologyNotFoundError, match="no-such-topology"):
        client.topology_info("no-such-topology")


def test_nimbus_refuses_an_unknown_component_itself(client: NimbusClient, topology: Topology) -> None:
    request = RebalanceRequest(wait_secs=REBALANCE_WAIT_S, executors={"nope": 2})
    with pytest.raises(RequestRejectedError, match="refused by Nimbus") as caught:
        client.rebalance(NAME, request, validate=False)
    assert "\n" not in str(caught.value)
    assert client.topology(NAME) is not None
    assert client.topology(NAME).status == "ACTIVE"  # type: ignore[union-attr]


def test_the_client_refuses_more_executors_than_tasks_before_calling_nimbus(
    client: NimbusClient, topology: Topology
) -> None:
    request = RebalanceRequest(wait_secs=REBALANCE_WAIT_S, executors={"2": 4, "nope": 1})
    with pytest.raises(RequestRejectedError, match=r"'2': 4 executors outside 1\.\.3") as caught:
        client.rebalance(NAME, request)
    assert "unknown component 'nope'" in str(caught.value)
    assert client.topology(NAME).status == "ACTIVE"  # type: ignore[union-attr]


def test_the_port_maps_refusals_and_describes_the_topology(client: NimbusClient, topology: Topology) -> None:
    port = NimbusPort(client)
    state = port.describe(NAME)
    assert state.active
    assert state.executors == {"1": 1, "2": 1, "3": 1, "4": 1}
    assert state.tasks == {"1": 2, "2": 3, "3": 3, "4": 3}
    assert state.workers == 1
    # Submitted without topology.disable.loadaware.messaging: Storm's load-aware shuffle is on.
    assert state.conf is not None
    assert state.groupings is not None
    findings = check(state.conf, state.groupings, {**state.executors, "2": 2}, state.tasks)
    assert [(f.assumption, f.components) for f in findings] == [
        ("load-aware messaging on", ("2", "3", "4")),
        ("units do not divide tasks", ("2",)),
    ]
    with pytest.raises(RefusedError, match="task count"):
        port.rebalance(NAME, {"2": 9}, workers=1, wait_secs=REBALANCE_WAIT_S)
    with pytest.raises(RefusedError, match="not running"):
        port.describe("no-such-topology")


def test_rebalance_from_one_to_three_executors_shows_in_topology_info(
    client: NimbusClient, topology: Topology
) -> None:
    port = NimbusPort(client)
    before = port.describe(NAME)
    (old,) = [e for e in client.topology_info(NAME).user_executors() if e.component == "2"]
    port.rebalance(NAME, {**before.executors, "2": 3}, workers=1, wait_secs=REBALANCE_WAIT_S)

    def rebalanced() -> StormTopologyState | None:
        state = port.describe(NAME)
        return state if state.active and state.executors["2"] == 3 else None

    state = wait_for(rebalanced, REBALANCE_WAIT_S + SETTLE_S, "ACTIVE with 3 executors of 2", every_s=1.0)
    assert state.executors == {"1": 1, "2": 3, "3": 1, "4": 1}
    assert state.tasks == before.tasks
    info = client.topology_info(NAME)
    new = sorted(e.id for e in info.user_executors() if e.component == "2")
    assert new == [f"[{t}-{t}]" for t in range(old.task_start, old.task_end + 1)]


def test_nimbus_itself_silently_caps_executors_at_the_task_count(
    client: NimbusClient, topology: Topology
) -> None:
    """Why the client validates: Nimbus accepts 5 executors for 3 tasks and runs 3."""
    client.rebalance(NAME, RebalanceRequest(wait_secs=1, executors={"2": 5}), validate=False)
    wait_for(
        lambda: (summary := client.topology(NAME)) is not None and summary.status == "ACTIVE",
        SETTLE_S,
        "ACTIVE again after the rebalance",
        every_s=1.0,
    )
    assert executors_per_component(client.topology_info(NAME))["2"] == 3


def test_a_rebalance_survives_a_nimbus_crash_in_its_wait(
    storm_cluster: StormCluster, client: NimbusClient, topology: Topology
) -> None:
    """Nimbus SIGKILLed while a rebalance waits (Storm stores it in ZooKeeper as
    REBALANCING and runs it after the wait from an in-memory timer) and started again. STORM-3516 lost
    such rebalances before Storm 2.1; 2.8 re-arms the wait when the restarted Nimbus leads, so the
    rebalance runs: the operator meanwhile sees Nimbus unavailable (``NimbusUnavailable``, the plan
    kept pending), then REBALANCING, then the executors it asked for, and verifies them. (A Nimbus
    that loses the rebalance anyway is the fake's ``nimbus-restart`` fault: asked again.)"""
    port = NimbusPort(storm_cluster.endpoints.nimbus(timeout_s=5))
    before = port.describe(NAME)
    target = {**before.executors, "2": 2, "3": 3}
    port.rebalance(NAME, target, workers=before.workers, wait_secs=RESTART_WAIT_S)
    assert port.describe(NAME).status == "REBALANCING"
    storm_cluster.kill_nimbus()
    crashed = time.monotonic()
    with pytest.raises(UnavailableError):
        port.describe(NAME)
    leads_s = storm_cluster.restart_nimbus()
    seen: list[str] = []

    def active() -> StormTopologyState | None:
        try:
            state = port.describe(NAME)
        except UnavailableError:  # leading, but not serving the topology's state yet
            seen.append("unavailable")
            return None
        seen.append(state.status)
        return state if state.active else None

    state = wait_for(
        active,
        RESTART_WAIT_S + SETTLE_S,
        "ACTIVE after leading",
        every_s=1.0,
        error=lambda said: AssertionError(f"{said}: {seen}"),
    )
    active_s = time.monotonic() - crashed
    print(
        f"Nimbus led {leads_s:.1f} s after the crash, the topology was ACTIVE after {active_s:.1f} s",
        f"meanwhile: {' '.join(dict.fromkeys(seen))}",
    )
    assert dict(state.executors) == target
    assert state.workers == before.workers
    assert client.topology(NAME).status == "ACTIVE"  # type: ignore[union-attr]
