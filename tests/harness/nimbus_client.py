"""A small typed Nimbus Thrift client for the test bed (readiness, topology stats, kill).

The Storm UI is not available here (``storm-webapp`` does not resolve on the reachable Maven Central
mirror), so the test bed reads Nimbus directly, as ``storm list`` and the UI do. The IDL is the
project's own minimal ``thrift/nimbus.thrift``; each call opens a fresh framed connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import thriftpy2
from thriftpy2.rpc import make_client
from thriftpy2.transport import TFramedTransportFactory

IDL = Path(__file__).resolve().parent / "thrift" / "nimbus.thrift"
_THRIFT: Any = thriftpy2.load(str(IDL), module_name="stormscale_nimbus_thrift")
ALL_TIME = ":all-time"

NotAliveError: type[Exception] = _THRIFT.NotAliveException


@dataclass(frozen=True)
class SupervisorInfo:
    """One Supervisor as Nimbus sees it (num_workers = slots)."""

    supervisor_id: str
    host: str
    num_workers: int
    num_used_workers: int
    uptime_secs: int


@dataclass(frozen=True)
class TopologyInfo:
    """One topology's summary."""

    id: str
    name: str
    status: str
    num_workers: int
    num_executors: int
    num_tasks: int
    uptime_secs: int


@dataclass(frozen=True)
class ClusterInfo:
    """Supervisors, topologies and whether some Nimbus is leader."""

    supervisors: list[SupervisorInfo]
    topologies: list[TopologyInfo]
    has_leader: bool


@dataclass(frozen=True)
class ComponentStats:
    """Aggregate counts of one component over a window (bolt-only fields are 0 for spouts)."""

    component: str
    kind: str
    executors: int
    tasks: int
    emitted: int
    transferred: int
    acked: int
    failed: int
    executed: int = 0
    capacity: float = 0.0
    execute_latency_ms: float = 0.0
    process_latency_ms: float = 0.0


def _supervisor(raw: Any) -> SupervisorInfo:
    return SupervisorInfo(raw.supervisor_id, raw.host, raw.num_workers, raw.num_used_workers, raw.uptime_secs)


def _topology(raw: Any) -> TopologyInfo:
    return TopologyInfo(
        raw.id, raw.name, raw.status, raw.num_workers, raw.num_executors, raw.num_tasks, raw.uptime_secs
    )


def _component(name: str, kind: str, raw: Any) -> ComponentStats:
    common = raw.common_stats or _THRIFT.CommonAggregateStats()
    bolt = raw.specific_stats.bolt if raw.specific_stats and raw.specific_stats.bolt else None
    return ComponentStats(
        component=name,
        kind=kind,
        executors=common.num_executors or 0,
        tasks=common.num_tasks or 0,
        emitted=common.emitted or 0,
        transferred=common.transferred or 0,
        acked=common.acked or 0,
        failed=common.failed or 0,
        executed=(bolt.executed or 0) if bolt else 0,
        capacity=(bolt.capacity or 0.0) if bolt else 0.0,
        execute_latency_ms=(bolt.execute_latency_ms or 0.0) if bolt else 0.0,
        process_latency_ms=(bolt.process_latency_ms or 0.0) if bolt else 0.0,
    )


class NimbusClient:
    """Calls to one Nimbus at ``host:port`` (framed transport, binary protocol: thriftpy2's default)."""

    def __init__(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        self.host = host
        self.port = port
        self.timeout_ms = int(timeout_s * 1000)

    def _call(self, method: str, *args: Any) -> Any:
        client = make_client(
            _THRIFT.Nimbus,
            self.host,
            self.port,
            trans_factory=TFramedTransportFactory(),
            timeout=self.timeout_ms,
        )
        try:
            return getattr(client, method)(*args)
        finally:
            client.close()

    def cluster_info(self) -> ClusterInfo:
        """Supervisors, topologies and leadership."""
        raw = self._call("getClusterInfo")
        return ClusterInfo(
            supervisors=[_supervisor(s) for s in raw.supervisors],
            topologies=[_topology(t) for t in raw.topologies],
            has_leader=any(n.isLeader for n in raw.nimbuses),
        )

    def topology(self, name: str) -> TopologyInfo | None:
        """The running topology called ``name``, if any."""
        return next((t for t in self.cluster_info().topologies if t.name == name), None)

    def component_stats(self, topology_id: str, window: str = ALL_TIME) -> dict[str, ComponentStats]:
        """Per-component aggregates (user components only) over ``window``."""
        page = self._call("getTopologyPageInfo", topology_id, window, False)
        spouts = {n: _component(n, "spout", s) for n, s in (page.id_to_spout_agg_stats or {}).items()}
        bolts = {n: _component(n, "bolt", s) for n, s in (page.id_to_bolt_agg_stats or {}).items()}
        return spouts | bolts

    def kill(self, name: str, wait_secs: int = 0) -> None:
        """Kill the topology called ``name`` (no error if it is already gone)."""
        try:
            self._call("killTopologyWithOpts", name, _THRIFT.KillOptions(wait_secs=wait_secs))
        except NotAliveError:
            return
