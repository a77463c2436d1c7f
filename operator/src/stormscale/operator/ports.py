"""Ports: the side effects reconcile needs, each behind a small protocol, and the values they return.

Adapters implement them against the real Kubernetes API, Nimbus and Prometheus; unit tests use
recording fakes. Every port raises :class:`UnavailableError` (try again later) or :class:`RefusedError` (the
request itself is wrong) and nothing else, but for the status writer's :class:`SupersededError` (the
resource is no longer the one the pass read: stop).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from stormscale.operator.policy import PlacementKind, ProfileSource
from stormscale.operator.status import PendingApply, PlacementStatus, Reason, StormTopologyStatus
from stormscale.planner import DemandDistribution, ProfileConfidence, Topology
from stormscale.storm.model import Executor, is_system
from stormscale.storm.samples import Pod

#: A placement as the rebalance carries it: pods in order, each its workers in order, each component
#: -> executors (system components included, ``__system`` never): docs/operator/design.md, "Placement".
Layout = Sequence[Sequence[Mapping[str, int]]]
#: Storm adds one of these to every worker itself; a placement never lists it.
UNPLACED = "__system"


class UnavailableError(RuntimeError):
    """A dependency cannot answer now (down, timing out, not the leader): retry with backoff."""


class RefusedError(RuntimeError):
    """A dependency refused the request (not found, invalid, forbidden): retrying will not help."""


class GoneError(RefusedError):
    """The object asked for does not exist (a 404): for the StormTopology itself, deleted meanwhile."""


class SupersededError(RuntimeError):
    """The StormTopology is no longer the one the pass read: another writer stored a newer version
    since (a 409 Conflict on a conditional status write), or, on the re-read before an act, it was
    deleted or is being deleted, created again, or its spec changed (a new ``generation``).

    Neither a refusal nor an outage: the pass stops where it is, acts on nothing more, saves nothing
    and sets no condition; the next pass reads the resource afresh (one log line says so)."""


class TooLargeError(RefusedError):
    """An answer over one of the operator's caps (a Prometheus answer's bytes, series or points per
    series); the message names the cap and its environment variable. Reconcile reports it as
    ``MetricsTooLarge``: the same query gives the same answer until the topology, the window or the
    cap changes."""


class StaleMetricsError(UnavailableError):
    """The newest samples are older than the spec's ``metrics.maxAge``, or too few."""


class UnsteadyWindowError(StaleMetricsError):
    """The window's rates moved (the load changed within it): not a steady state yet. The window
    moves one ``metrics.step`` at a time, so a step later it may be."""


class SettlingError(StaleMetricsError):
    """Too few steady intervals since a change the samples show (a rebalance, a restarted worker),
    though samples still arrive: their newest is ``newest_age_s`` old. Reconcile reports it as
    ``Settling`` (nothing is wrong) when that age is within ``metrics.maxAge``, else as stale."""

    def __init__(self, message: str, newest_age_s: float) -> None:
        super().__init__(message)
        self.newest_age_s = newest_age_s


class UnknownDemandError(UnavailableError):
    """A spout is throttled (a component downstream is saturated) and nothing outside Storm says what
    it is offered: its emitted rate is the bottleneck's, so nothing can be sized on it."""


@dataclass(frozen=True)
class Workers:
    """The worker Deployment as reconcile needs it."""

    replicas: int
    cpu_limit_millicores: int | None
    hpa: str | None = None  # name of an HPA that targets the Deployment, if any
    #: Field managers other than the operator's that own ``spec.replicas`` (by name, sorted).
    replicas_owners: tuple[str, ...] = ()


@dataclass(frozen=True)
class StormTopologyState:
    """A topology as Nimbus reports it."""

    status: str  # ACTIVE, INACTIVE, REBALANCING, KILLED
    executors: Mapping[str, int]  # user components only
    tasks: Mapping[str, int]
    workers: int
    #: Worker slots no topology uses, over every Supervisor Nimbus lists (None: not known).
    free_slots: int | None = None
    #: Every executor with its worker's host and port (system ones included); empty: not known.
    assignment: tuple[Executor, ...] = ()
    #: Each Supervisor's slots (``supervisor.slots.ports``) by the host it announces; empty: not known.
    supervisor_slots: Mapping[str, int] = field(default_factory=dict)
    #: What Nimbus's scheduler says of the topology (``sched_status``; empty: nothing).
    sched_status: str = ""
    #: The topology's conf from Nimbus (``None``: not read).
    conf: Mapping[str, Any] | None = None
    #: The groupings of each user component's inputs (``None``: not read).
    groupings: Mapping[str, frozenset[str]] | None = None

    @property
    def system_executors(self) -> dict[str, int]:
        """Executors of Storm's own components a placement must place (``__acker``, …; not ``__system``)."""
        counts = Counter(e.component for e in self.assignment if is_system(e.component))
        counts.pop(UNPLACED, None)
        return dict(sorted(counts.items()))

    def slots_for(self, workers: int) -> bool:
        """Whether a rebalance to ``workers`` workers finds a slot for each: the free ones plus those
        this topology holds now (a rebalance schedules it from scratch). Unknown counts as yes."""
        return self.free_slots is None or self.free_slots + self.workers >= workers

    @property
    def active(self) -> bool:
        return self.status == "ACTIVE"


@dataclass(frozen=True)
class PodLoad:
    """A worker pod's CPU over the profile's window: its use over its limit (``None``: not measured),
    and the hosts a Supervisor in it may announce (its IP, its name)."""

    name: str
    ip: str | None
    cpu: float | None

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(h for h in (self.ip, self.name) if h)


@dataclass(frozen=True)
class MeasuredProfile:
    """The aggregation's profile (units = executors when measured) and its observed throughput."""

    topology: Topology
    throughput: float
    age_s: float
    #: The profile's confidence (steadiness, window, notes) and each component's (where each number
    #: came from, executed rate, the demand's cross-check).
    confidence: ProfileConfidence = field(default_factory=ProfileConfidence)
    #: The worker Deployment's pods and their CPU (empty: not measured).
    pods: tuple[PodLoad, ...] = ()
    #: Measured in this pass (``InProcess``) or read from the fleet job's ConfigMap (``Published``).
    source: ProfileSource = ProfileSource.IN_PROCESS
    #: The published profile's window (``start/end``); ``None``: the spec's ``metrics.window`` to now.
    window: str | None = None
    #: Each spout's demand over the window's steps (``demandPerUnit``), by id; empty: means only.
    demand: Mapping[str, DemandDistribution] = field(default_factory=dict)
    #: Which demand the topology's spouts offer (``None``: the window's mean, as measured), e.g.
    #: ``demand p95 of 5m00s (30 steps of 10s): 23.4/s (mean 18.1/s)``; set by Auto's choice.
    demand_used: str | None = None
    #: When a profile kept from an earlier pass was measured (``None``: measured in this pass, or
    #: published: its window says when).
    measured_at: datetime | None = None


class WorkerDeployments(Protocol):
    def read(self, namespace: str, name: str) -> Workers: ...

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        """Set (never add to) the replica count, as the operator's field manager."""

    def pods(self, namespace: str, name: str) -> Sequence[Pod]:
        """The Deployment's pods now (terminating ones flagged)."""

    def remove_first(self, namespace: str, pods: Sequence[str]) -> None:
        """Have the next scale-down remove these pods before any other."""


class Nimbus(Protocol):
    def describe(self, topology: str) -> StormTopologyState: ...

    def rebalance(
        self,
        topology: str,
        executors: Mapping[str, int],
        workers: int,
        wait_secs: int,
        placement: Layout | None = None,
    ) -> None:
        """Set every component's executors and the worker count in one rebalance, and with
        ``placement`` which executors share a worker and a pod (the topology conf's
        ``stormscale.placement``, which Stormscale's scheduler on Nimbus obeys)."""


class Profiler(Protocol):
    def profile(self, topology: str, window_s: float) -> MeasuredProfile: ...


class KeptProfiles(Protocol):
    """The resource's profile kept between passes (:mod:`stormscale.operator.kept_profiles`): what a
    pass may plan on instead of measuring, and what it keeps or forgets."""

    def recall(self, inputs: str, running: Mapping[str, int], now: datetime) -> MeasuredProfile | None:
        """The kept profile if this pass may plan on it (same ``inputs``, the ``running`` executors
        measured, fresh enough), else ``None``."""

    def keep(self, inputs: str, running: Mapping[str, int], profile: MeasuredProfile, now: datetime) -> None:
        """Keep ``profile``, measured now with ``running`` executors."""

    def forget(self) -> None:
        """Drop the kept profile: the topology changes, or measuring failed."""

    def stale(self, inputs: str, running: Mapping[str, int], now: datetime) -> bool:
        """Whether the pass should measure to keep a profile at hand for the next spec change."""


class PublishedProfiles(Protocol):
    def read(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """The data of ConfigMap ``namespace/name`` (the fleet job's profile), or ``None`` when there is
        no such ConfigMap."""


class StatusWriter(Protocol):
    def save(self, namespace: str, name: str, status: StormTopologyStatus) -> None:
        """Store ``status`` now (reconcile records its intent before acting); only what changed since
        the status last loaded or saved is sent, on the condition that the resource is still the
        version the pass last loaded or saved (else :class:`SupersededError`)."""

    def check(self, namespace: str, name: str) -> None:
        """Re-read the resource before an act: :class:`SupersededError` when it is gone, being
        deleted, another object of the same name or of another ``generation`` than the pass last
        loaded or saved (another resource or another intent; a newer ``resourceVersion`` alone is
        not, Kopf's own annotations move it: a rival writer's status is the conditional save's
        409); :class:`UnavailableError` when that cannot be told now (the act waits for a pass that
        can)."""


class Events(Protocol):
    def normal(self, reason: str, message: str) -> None: ...

    def warning(self, reason: str, message: str) -> None: ...


@dataclass(frozen=True)
class Site:
    """Where an intent is realized: the worker Deployment, the topology as the pass observed it, and
    what the status says was applied last."""

    namespace: str
    deployment: str
    topology: str
    slots_per_pod: int
    #: ``spec.workers.placement`` (``None``: Storm's own scheduling).
    placement: PlacementKind | None
    storm: StormTopologyState
    #: Worker pods the Deployment asks for now.
    replicas: int
    #: ``status.units`` and ``status.placement``: what was applied last.
    units: Mapping[str, int] | None
    applied: PlacementStatus | None
    now: datetime


class Progress(StrEnum):
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    APPLIED = "Applied"


@dataclass(frozen=True)
class Realized:
    """How far the realizer got: on the way (``Progressing``), stopped (``Degraded``, its reason and
    message) or applied; the intent as it stands now (``None``: given up), and events to post."""

    progress: Progress
    reason: Reason
    message: str
    intent: PendingApply | None
    events: tuple[tuple[str, Reason, str], ...] = ()
    #: Seconds before the next look, where not the reason's own delay.
    retry_after: float | None = None


#: Called before every act of the realizer (scale, mark pods, rebalance): raises
#: :class:`SupersededError` when the resource is no longer the one the pass read (deleted, being
#: deleted, created again, its spec changed), which stops the pass there.
Check = Callable[[], None]


class Realizer(Protocol):
    def realize(
        self, site: Site, intent: PendingApply, record: Callable[[PendingApply], None], check: Check
    ) -> Realized:
        """Make ``intent`` (``status.pending``) run: the worker pods, the rebalance, its verification.
        ``record`` stores an updated intent before a request that depends on it is made; ``check``
        runs before each act."""

    def give_up(self, site: Site, reason: Reason, message: str, check: Check) -> Realized:
        """Forget the intent for ``reason`` and scale the workers back to what Storm runs (after
        ``check``)."""


@dataclass(frozen=True)
class Ports:
    """Everything reconcile may touch."""

    deployments: WorkerDeployments
    nimbus: Nimbus
    profiler: Profiler
    status: StatusWriter
    events: Events
    published: PublishedProfiles
    #: Built from ``deployments`` and ``nimbus`` (:class:`stormscale.operator.realizer.StormRealizer`).
    realizer: Realizer
    #: The profile kept between passes (``None``: every pass that needs a profile measures one).
    kept: KeptProfiles | None = None
