"""Recording fakes of the reconcile ports: they keep state like the real systems and log every call."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stormscale.operator.ports import (
    Layout,
    MeasuredProfile,
    Nimbus,
    PodLoad,
    Ports,
    Profiler,
    RefusedError,
    StormTopologyState,
    SupersededError,
    UnavailableError,
    Workers,
)
from stormscale.operator.realizer import StormRealizer
from stormscale.operator.status import StormTopologyStatus, status_patch
from stormscale.planner import FlowModel, ProfileConfidence, Topology, throughput
from stormscale.storm.model import Executor
from stormscale.storm.samples import Pod

Journal = list[tuple[str, Any]]


@dataclass
class FakeCluster:
    replicas: int = 3
    cpu_limit_millicores: int | None = 500
    hpa: str | None = None
    #: Other field managers owning ``spec.replicas`` (``Workers.replicas_owners``).
    replicas_owners: tuple[str, ...] = ()
    calls: list[tuple[str, Any]] = field(default_factory=list)
    fail_scale: BaseException | None = None
    fail_read: Exception | None = None
    journal: Journal = field(default_factory=list)

    def read(self, namespace: str, name: str) -> Workers:
        self.calls.append(("read", name))
        if self.fail_read:
            raise self.fail_read
        return Workers(self.replicas, self.cpu_limit_millicores, self.hpa, self.replicas_owners)

    #: Pods marked to be removed first; with ``pod_names``, the pods as a ReplicaSet keeps them: a
    #: scale-down removes the marked ones first, then the first by name, a scale-up adds ``p<i>``.
    marked: list[str] = field(default_factory=list)
    pod_names: list[str] | None = None
    fail_mark: BaseException | None = None

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        self.calls.append(("scale", replicas))
        self.journal.append(("scale", replicas))
        if self.fail_scale:
            raise self.fail_scale
        if self.pod_names is not None:
            self.pod_names = self.replica_set(self.pod_names, replicas)
            self.marked = [p for p in self.marked if p in self.pod_names]
        self.replicas = replicas
        self.replicas_owners = ()  # a forced apply takes the field from every other manager

    def replica_set(self, pods: list[str], replicas: int) -> list[str]:
        """The pods a ReplicaSet keeps: removing the marked ones first, then the first by name (the
        fake Nimbus's first hosts: a choice that stops workers); adding ``p<i>`` names not taken."""
        removal = sorted(p for p in pods if p in self.marked) + sorted(
            p for p in pods if p not in self.marked
        )
        kept = sorted(removal[max(0, len(pods) - replicas) :])
        free = (f"p{i}" for i in range(len(pods) + replicas + 1) if f"p{i}" not in kept)
        return kept + [next(free) for _ in range(max(0, replicas - len(kept)))]

    def pods(self, namespace: str, name: str) -> list[Pod]:
        """Pod ``h<i>`` announces host ``h<i>`` (the fake Nimbus's hosts); one per replica unless
        ``pod_names`` says which."""
        self.calls.append(("pods", name))
        names = self.pod_names if self.pod_names is not None else [f"h{i}" for i in range(self.replicas)]
        return [Pod(n, None, "worker", None) for n in names]

    def remove_first(self, namespace: str, pods: Sequence[str]) -> None:
        self.calls.append(("remove_first", list(pods)))
        self.journal.append(("remove_first", list(pods)))
        if self.fail_mark:
            raise self.fail_mark
        self.marked = sorted({*self.marked, *pods})


@dataclass
class FakeNimbus:
    executors: dict[str, int]
    tasks: dict[str, int]
    status: str = "ACTIVE"
    calls: list[tuple[str, Any]] = field(default_factory=list)
    fail_rebalance: BaseException | None = None
    fail_describe: Exception | None = None
    applies_rebalance: bool = True  # False: Storm accepts but the executors are not there yet (or never)
    journal: Journal = field(default_factory=list)
    free_slots: int | None = None  # None: Nimbus's slot count is not known
    describe_delay_s: float = 0.0  # a slow Nimbus: each describe takes this long
    #: Report where executors run: Storm's system executors (``{"__acker": 1}``) and each Supervisor's
    #: slots; without a placement every worker is alone on host ``h<i>``. None: no assignment reported.
    system: dict[str, int] | None = None
    supervisor_slots: dict[str, int] = field(default_factory=dict)
    honours_placement: bool = True  # False: Nimbus runs Storm's own scheduler, the placement is ignored
    placement: list[list[dict[str, int]]] | None = None  # the last one applied
    sched_status: str = ""  # what Nimbus's scheduler says of the topology
    #: Workers Storm runs (None: one per executor); a rebalance that applies sets the count asked for,
    #: less ``workers_short`` (a Supervisor lost meanwhile: fewer slots than workers).
    workers: int | None = None
    workers_short: int = 0

    def describe(self, topology: str) -> StormTopologyState:
        self.calls.append(("describe", topology))
        time.sleep(self.describe_delay_s)
        if self.fail_describe:
            raise self.fail_describe
        workers = sum(self.executors.values()) if self.workers is None else self.workers
        return StormTopologyState(
            self.status,
            dict(self.executors),
            dict(self.tasks),
            workers,
            self.free_slots,
            self.assignment(),
            dict(self.supervisor_slots),
            self.sched_status,
        )

    def assignment(self) -> tuple[Executor, ...]:
        """Every executor with its host and port: as the placement says, else one worker per host."""
        if self.system is None:
            return ()
        counts = {**self.executors, **self.system}
        queues = {c: list(storm_ranges(c, n, self.tasks.get(c, n))) for c, n in sorted(counts.items())}
        layout = self.placement if self.placement is not None and self.honours_placement else None
        if layout is None:
            layout = [[{c: 1}] for c, q in sorted(queues.items()) for _ in q]
        out = []
        for i, pod in enumerate(layout):
            for j, worker in enumerate(pod):
                for component, n in sorted(worker.items()):
                    for start, end in queues[component][:n]:
                        out.append(Executor(component, start, end, f"h{i}", 6700 + j, 60))
                    del queues[component][:n]
        return tuple(out)

    def rebalance(
        self,
        topology: str,
        executors: Mapping[str, int],
        workers: int,
        wait_secs: int,
        placement: Layout | None = None,
    ) -> None:
        layout = None if placement is None else [[dict(w) for w in pod] for pod in placement]
        self.calls.append(("rebalance", (dict(executors), workers)))
        self.journal.append(("rebalance", dict(executors)))
        if layout is not None:
            self.calls.append(("placement", layout))
        if self.fail_rebalance:
            raise self.fail_rebalance
        if self.applies_rebalance:
            self.executors = dict(executors)
            self.workers = workers - self.workers_short
            self.placement = layout


def storm_ranges(component: str, executors: int, tasks: int) -> list[tuple[int, int]]:
    """Storm's split of a component's tasks over its executors (contiguous, larger first), task ids
    from an offset per component so that ranges of different components never meet."""
    first = 1000 * (sum(map(ord, component)) % 97)
    base, extra = divmod(max(tasks, executors), executors)
    out, task = [], first
    for i in range(executors):
        size = base + (1 if i < extra else 0)
        out.append((task, task + size - 1))
        task += size
    return out


@dataclass
class FakeProfiler:
    topology: Topology
    age_s: float = 5.0
    calls: int = 0
    fail: Exception | None = None
    #: The worker pods' CPU over their limits, by pod (host): what MultiLevel's choices read.
    pods: tuple[PodLoad, ...] = ()
    #: The profile's confidence as the profiler gives it (each component's demand check…).
    confidence: ProfileConfidence = field(default_factory=ProfileConfidence)

    def profile(self, topology: str, window_s: float) -> MeasuredProfile:
        self.calls += 1
        if self.fail:
            raise self.fail
        theta = throughput(self.topology, self.topology.units, FlowModel.BACKPRESSURE)
        return MeasuredProfile(self.topology, theta, self.age_s, self.confidence, pods=self.pods)


@dataclass
class FakeStatus:
    """Stores statuses like the Kubernetes adapter: each save sends the merge patch from the last one.

    ``superseded``: why the resource is no longer the one the pass read (deleted, a new spec, another
    writer's status); set, every save and every check (the re-read before an act) raises
    :class:`SupersededError` with it, as the adapter does on a 409 or on what it re-reads."""

    stored: dict[str, Any] = field(default_factory=dict)
    saved: list[dict[str, Any]] = field(default_factory=list)  # the patches sent
    journal: Journal = field(default_factory=list)
    fail: Exception | None = None
    superseded: str | None = None
    checks: int = 0

    def hold(self, namespace: str, name: str, found: Mapping[str, Any]) -> None:
        """The version the next save is conditional on (the adapter's; nothing to hold here)."""

    def check(self, namespace: str, name: str) -> None:
        self.checks += 1
        if self.superseded:
            raise SupersededError(f"StormTopology {namespace}/{name}: {self.superseded}")

    def save(self, namespace: str, name: str, status: StormTopologyStatus) -> None:
        if self.fail:
            raise self.fail
        if self.superseded:
            raise SupersededError(f"status of StormTopology {namespace}/{name} not saved: {self.superseded}")
        new = status.to_json()
        patch = status_patch(self.stored, new)
        self.stored = new
        if patch:
            self.saved.append(patch)
            self.journal.append(("save", sorted(patch)))


@dataclass
class FakeEvents:
    posted: list[tuple[str, str, str]] = field(default_factory=list)

    def normal(self, reason: str, message: str) -> None:
        self.posted.append(("Normal", reason, message))

    def warning(self, reason: str, message: str) -> None:
        self.posted.append(("Warning", reason, message))


@dataclass
class FakePublished:
    """ConfigMaps by (namespace, name): their data, as the Kubernetes adapter returns it."""

    data: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    fail: Exception | None = None

    def read(self, namespace: str, name: str) -> dict[str, str] | None:
        self.calls.append((namespace, name))
        if self.fail:
            raise self.fail
        found = self.data.get((namespace, name))
        return None if found is None else dict(found)


@dataclass
class World:
    cluster: FakeCluster
    nimbus: FakeNimbus
    profiler: FakeProfiler
    status: FakeStatus = field(default_factory=FakeStatus)
    events: FakeEvents = field(default_factory=FakeEvents)
    journal: Journal = field(default_factory=list)
    published: FakePublished = field(default_factory=FakePublished)

    def __post_init__(self) -> None:
        for part in (self.cluster, self.nimbus, self.status):
            part.journal = self.journal

    @property
    def ports(self) -> Ports:
        realizer = StormRealizer(self.cluster, self.nimbus)
        return Ports(
            self.cluster, self.nimbus, self.profiler, self.status, self.events, self.published, realizer
        )


def with_fakes(real: Ports, nimbus: Nimbus, profiler: Profiler) -> Ports:
    """``real`` ports with a fake Nimbus and profiler, and the realizer built on them as the operator
    builds it."""
    realizer = StormRealizer(real.deployments, nimbus)
    return dataclasses.replace(real, nimbus=nimbus, profiler=profiler, realizer=realizer)


__all__ = [
    "FakeCluster",
    "FakeEvents",
    "FakeNimbus",
    "FakeProfiler",
    "FakePublished",
    "FakeStatus",
    "RefusedError",
    "SupersededError",
    "UnavailableError",
    "World",
    "with_fakes",
]
