"""Value objects for what Nimbus reports, independent of the Thrift classes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from stormscale.storm.errors import redact

ALL_TIME = ":all-time"
TEN_MINUTES = "600"
SYSTEM_PREFIX = "__"
#: Storm's per-worker system component: one in every worker, never set by a rebalance or a placement.
SYSTEM_COMPONENT = "__system"


def is_system(name: str) -> bool:
    """Storm's system components and streams (``__acker``, ``__system``, ``__metrics``, ...)."""
    return name.startswith(SYSTEM_PREFIX)


@dataclass(frozen=True)
class Endpoint:
    """A Nimbus Thrift address."""

    host: str
    port: int = 6627

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        """``host:port`` or ``host`` (port 6627)."""
        host, sep, port = text.rpartition(":")
        if not sep:
            return cls(text)
        if not host or not port.isdigit():
            raise ValueError(f"not a Nimbus address (host:port): {text!r}")
        return cls(host, int(port))

    def __str__(self) -> str:
        """``host:port``, any userinfo in the host (``user:password@``) redacted: how every message
        names a Nimbus."""
        return redact(f"{self.host}:{self.port}")

    def __repr__(self) -> str:
        return f"Endpoint({redact(self.host)!r}, {self.port})"


@dataclass(frozen=True)
class NimbusHost:
    """One Nimbus daemon of the cluster."""

    endpoint: Endpoint
    is_leader: bool
    version: str
    uptime_s: int


@dataclass(frozen=True)
class TopologySummary:
    """A topology as the cluster summary lists it."""

    id: str
    name: str
    status: str
    workers: int
    executors: int
    tasks: int
    uptime_s: int


@dataclass(frozen=True)
class SupervisorSummary:
    """One Supervisor: its worker slots and how many are used."""

    id: str
    host: str
    slots: int
    used_slots: int
    uptime_s: int


@dataclass(frozen=True)
class ClusterSummary:
    """Nimbus daemons, topologies and Supervisors."""

    nimbuses: tuple[NimbusHost, ...]
    topologies: tuple[TopologySummary, ...]
    supervisors: tuple[SupervisorSummary, ...]

    @property
    def slots(self) -> int:
        """Worker slots of all Supervisors."""
        return sum(s.slots for s in self.supervisors)

    @property
    def leader(self) -> NimbusHost | None:
        """The leader Nimbus, if one is elected."""
        return next((n for n in self.nimbuses if n.is_leader), None)


@dataclass(frozen=True, order=True)
class StreamId:
    """An input stream of a bolt: the upstream component and its stream (Storm's GlobalStreamId)."""

    component: str
    stream: str


class Kind(Enum):
    """Which kind of component an executor runs."""

    SPOUT = "spout"
    BOLT = "bolt"


@dataclass(frozen=True)
class WindowStats:
    """One executor's counts and mean latencies over one window (bolt-only maps are empty for spouts)."""

    emitted: Mapping[str, int] = field(default_factory=dict)
    transferred: Mapping[str, int] = field(default_factory=dict)
    acked: int = 0
    failed: int = 0
    executed: Mapping[StreamId, int] = field(default_factory=dict)
    execute_ms_avg: Mapping[StreamId, float] = field(default_factory=dict)
    process_ms_avg: Mapping[StreamId, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Executor:
    """One executor: its task range, where it runs, and its stats (None until it has reported)."""

    component: str
    task_start: int
    task_end: int
    host: str
    port: int
    uptime_s: int
    kind: Kind | None = None
    windows: Mapping[str, WindowStats] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The executor id as Storm prints it, ``[start-end]``."""
        return f"[{self.task_start}-{self.task_end}]"

    @property
    def tasks(self) -> int:
        """How many tasks the executor runs."""
        return self.task_end - self.task_start + 1

    def window(self, name: str) -> WindowStats:
        """Stats over window ``name`` (empty when the executor has not reported)."""
        return self.windows.get(name, WindowStats())


@dataclass(frozen=True)
class TopologyInfo:
    """A topology's executors with their stats (``getTopologyInfo``)."""

    id: str
    name: str
    status: str
    uptime_s: int
    executors: tuple[Executor, ...]
    #: What the scheduler says about the topology (Storm's ``sched_status``; empty when it says nothing).
    sched_status: str = ""

    def user_executors(self) -> tuple[Executor, ...]:
        """Executors of user components (no ``__acker``, ``__system``, ...)."""
        return tuple(e for e in self.executors if not is_system(e.component))


@dataclass(frozen=True)
class ComponentAggregate:
    """One component's aggregates over a window, as the UI's topology page shows them."""

    component: str
    kind: Kind
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
    complete_latency_ms: float = 0.0


@dataclass(frozen=True)
class TopologyPage:
    """The UI's topology page (``getTopologyPageInfo``) over one window."""

    id: str
    name: str
    status: str
    uptime_s: int
    workers: int
    window: str
    components: Mapping[str, ComponentAggregate]


@dataclass(frozen=True)
class ComponentSpec:
    """A component of the submitted topology: its inputs (stream → grouping) and output streams."""

    id: str
    kind: Kind
    inputs: Mapping[StreamId, str]
    streams: tuple[str, ...]
    parallelism_hint: int | None


@dataclass(frozen=True)
class TopologyStructure:
    """The submitted topology's graph (``getUserTopology``)."""

    components: Mapping[str, ComponentSpec]

    def children(self, component: str) -> tuple[str, ...]:
        """Components that consume any stream of ``component``, sorted."""
        return tuple(
            sorted(c.id for c in self.components.values() if any(s.component == component for s in c.inputs))
        )


@dataclass(frozen=True)
class RebalanceRequest:
    """Set executors per component and the worker count in one rebalance (None leaves it as is), and
    merge ``conf_overrides`` (JSON values) into the topology conf, e.g. the operator's placement
    (``stormscale.storm.placement.rebalance_request`` builds the whole request from one)."""

    wait_secs: int = 0
    workers: int | None = None
    executors: Mapping[str, int] = field(default_factory=dict)
    conf_overrides: Mapping[str, Any] = field(default_factory=dict)
