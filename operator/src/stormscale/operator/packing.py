"""Where executors run (``spec.workers.placement``): the layout the operator asks Nimbus for. Pure.

A layout is pods in order, each its workers (slots) in order, each component -> executors. The
rebalance carries it as the topology conf's ``stormscale.placement`` (:mod:`stormscale.storm.placement`,
which Stormscale's scheduler on Nimbus obeys), with ``num_workers`` = its workers, and the worker
Deployment gets one replica per pod.

* ``SAM``, ``PDeployer``: the planner packs the target units afresh on every apply
  (:func:`stormscale.planner.placement.units.place_units`: seed 001's Slot Aware Mapping on pods of
  ``slotsPerPod`` slots, or seed 003's Algorithm 1 on pods of one slot). Empty slots and pods are
  left out.
* ``MultiLevel``: the layout that runs changes one unit at a time
  (:func:`stormscale.planner.elasticity.units.change_units`: seed 004's container level, executor in
  an existing worker of a pod with CPU headroom, else a new worker, else a new pod; scale-in LIFO).
  The pods' CPU is what the profiler measured (their cAdvisor CPU over their limits); the layout that
  runs is the last one applied when Storm still runs it exactly (``status.placement``, with its LIFO
  stack), else the one Nimbus reports (executors grouped by host, then port; no stack).

Storm's own executors (``__acker``, ``__eventlogger``…) must be placed too (the scheduler places
exactly what the placement lists). They are not planned: each goes to the next worker in order (pods,
then their workers), the way Storm's default gives one acker to each worker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from stormscale.operator.policy import PlacementKind
from stormscale.operator.ports import Layout, PodLoad, StormTopologyState
from stormscale.operator.status import PlacementStatus, PodLayout, ProvisionedUnit, UnitChoice, timestamp
from stormscale.planner import Topology
from stormscale.planner.elasticity.model import Level
from stormscale.planner.elasticity.units import Choice, Provisioned, SlotPod, change_units
from stormscale.planner.placement.model import Placement as PlannedPods
from stormscale.planner.placement.strategies import PlacementStrategy
from stormscale.planner.placement.units import executor_loads, place_units
from stormscale.planner.sizing.strategies import check_units_fit_a_slot
from stormscale.storm.model import TopologyInfo, is_system
from stormscale.storm.placement import Placement, expected_workers, layout_problems

#: ``workers.placement`` -> the planner's strategy (MultiLevel is not a packing).
PACKERS = {PlacementKind.SAM: PlacementStrategy.SAM, PlacementKind.PDEPLOYER: PlacementStrategy.PDEPLOYER}
LEVELS: Mapping[Level, Literal["Executor", "Worker", "Pod"]] = {
    Level.EXECUTOR: "Executor",
    Level.WORKER: "Worker",
    Level.POD: "Pod",
}

Pods = tuple[tuple[dict[str, int], ...], ...]


@dataclass(frozen=True)
class Planned:
    """A layout of the user components' executors, how it came about, and (MultiLevel) its LIFO stack."""

    kind: PlacementKind
    pods: Pods
    stack: tuple[Provisioned, ...] = ()
    choices: tuple[Choice, ...] = ()

    @property
    def workers(self) -> int:
        return sum(len(pod) for pod in self.pods)


@dataclass(frozen=True)
class Running:
    """The layout that runs (user executors), each pod's host (``None``: not known) and the stack."""

    pods: Pods
    hosts: tuple[str | None, ...]
    stack: tuple[Provisioned, ...] = ()


def pack(kind: PlacementKind, model: Topology, target: Mapping[str, int], slots_per_pod: int) -> Planned:
    """``SAM`` or ``PDeployer``: the planner's packing of exactly ``target`` executors per component."""
    result = place_units(model, target, PACKERS[kind], slots_per_pod)
    return Planned(kind, used(result.placement))


def used(placement: PlannedPods) -> Pods:
    """The planner's pods and slots without the empty ones."""
    pods = []
    for pod in placement.pods:
        workers = tuple(dict(slot.executors) for slot in pod.slots if slot.executors)
        if workers:
            pods.append(workers)
    return tuple(pods)


def observed(storm: StormTopologyState) -> Running:
    """What Nimbus reports: user executors grouped by host (a pod), then port (a worker), both sorted.

    Without an assignment (not known), every executor is its own worker and pod, host unknown.
    """
    user = [e for e in storm.assignment if not is_system(e.component)]
    if not user:
        alone: Pods = tuple(({cid: 1},) for cid, n in sorted(storm.executors.items()) for _ in range(n))
        return Running(alone, (None,) * len(alone))
    by_host: dict[str, dict[int, dict[str, int]]] = {}
    for e in user:
        worker = by_host.setdefault(e.host, {}).setdefault(e.port, {})
        worker[e.component] = worker.get(e.component, 0) + 1
    hosts = tuple(sorted(by_host))
    pods = tuple(tuple(by_host[h][port] for port in sorted(by_host[h])) for h in hosts)
    return Running(pods, hosts)


def running(previous: PlacementStatus | None, storm: StormTopologyState, topology: str) -> Running:
    """The last applied layout (and its stack) while Storm runs it exactly, else :func:`observed`."""
    if previous is None or not storm.assignment:
        return observed(storm)
    placement = as_placement(previous.counts())
    if problems(placement, storm, topology):
        return observed(storm)
    per_worker = expected_workers(placement, storm.assignment)
    hosts: list[str | None] = []
    index = 0
    for pod in placement.pods:
        found = {e.host for worker in per_worker[index : index + len(pod.workers)] for e in worker}
        hosts.append(found.pop() if len(found) == 1 else None)
        index += len(pod.workers)
    pods = tuple(
        tuple(user for worker in pod if (user := {c: n for c, n in worker.items() if not is_system(c)}))
        for pod in previous.counts()
    )
    stack = tuple(Provisioned(s.component, s.pod, s.worker) for s in previous.stack)
    return Running(pods, tuple(hosts), stack)


def grow(
    now: Running,
    target: Mapping[str, int],
    model: Topology,
    loads: Sequence[PodLoad],
    slots_per_pod: int,
) -> Planned:
    """``MultiLevel``: the units ``target`` adds or removes, each at seed 004's container level.

    Each pod's CPU is the measured one of the pod whose IP or name its Supervisor announces; the
    Deployment's measured pods that run none of the topology's executors come last, as pods without a
    worker (a unit there is a new worker). A pod never measured has no known headroom. A unit holding
    more memory than a slot is refused, as the other placements refuse it.
    """
    check_units_fit_a_slot(model)
    by_host = {h: load for load in loads for h in load.hosts}
    pods = [SlotPod(workers, _cpu(by_host, host)) for workers, host in zip(now.pods, now.hosts, strict=True)]
    known = {h for h in now.hosts if h is not None}
    idle = [load for load in loads if load.cpu is not None and not known & set(load.hosts)]
    pods += [SlotPod((), load.cpu) for load in sorted(idle, key=lambda p: p.name)]
    current: dict[str, int] = {}
    for pod in now.pods:
        for worker in pod:
            for component, n in worker.items():
                current[component] = current.get(component, 0) + n
    changes = {c: target.get(c, 0) - current.get(c, 0) for c in sorted(set(target) | set(current))}
    order = [model.components[v].id for v in model.order]
    plan = change_units(
        pods,
        now.stack,
        {c: d for c, d in changes.items() if d},
        order=order,
        load=executor_loads(model, target),
        slots_per_pod=slots_per_pod,
    )
    last = max((i for i, pod in enumerate(plan.pods) if pod.workers), default=-1)
    kept = tuple(tuple(dict(w) for w in pod.workers) for pod in plan.pods[: last + 1])
    return Planned(PlacementKind.MULTI_LEVEL, kept, plan.stack, plan.choices)


def _cpu(by_host: Mapping[str, PodLoad], host: str | None) -> float | None:
    load = by_host.get(host) if host is not None else None
    return load.cpu if load is not None else None


def with_system(pods: Pods, system: Mapping[str, int]) -> Pods:
    """``pods`` with Storm's own executors added, one to each worker in turn (pods, then workers)."""
    out = [[dict(w) for w in pod] for pod in pods]
    slots = [worker for pod in out for worker in pod]
    if not slots:
        return pods
    turn = 0
    for component, n in sorted(system.items()):
        for _ in range(n):
            worker = slots[turn % len(slots)]
            worker[component] = worker.get(component, 0) + 1
            turn += 1
    return tuple(tuple(pod) for pod in out)


def as_placement(pods: Layout) -> Placement:
    """The layout as the placement value the rebalance carries (checked: every count ≥ 1)."""
    return Placement.of(pods)


def problems(placement: Placement, storm: StormTopologyState, topology: str) -> list[str]:
    """How what Nimbus reports differs from ``placement`` (empty: applied exactly)."""
    info = TopologyInfo(id="", name=topology, status=storm.status, uptime_s=0, executors=storm.assignment)
    return layout_problems(placement, info)


def summary(
    planned: Planned, system: Mapping[str, int], slots_per_pod: int, now: datetime
) -> PlacementStatus:
    """``status.placement`` for ``planned`` with Storm's executors (:func:`with_system`)."""
    pods = with_system(planned.pods, system)
    return PlacementStatus(
        strategy=planned.kind.value,
        slots_per_pod=slots_per_pod,
        pods=len(pods),
        workers=planned.workers,
        layout=[PodLayout(workers=[dict(w) for w in pod]) for pod in pods],
        choices=[
            UnitChoice(
                component=c.component,
                action="Removed" if c.released else "Added",
                level=LEVELS[c.level],
                pod=c.pod,
                worker=c.worker,
                reason=c.reason,
            )
            for c in planned.choices
        ],
        stack=[ProvisionedUnit(component=s.component, pod=s.pod, worker=s.worker) for s in planned.stack],
        at=timestamp(now),
    )


def choices_text(placement: PlacementStatus) -> str:
    """The placement in one phrase for an event: pods and workers, and each unit's container."""
    text = f"{placement.strategy}: {placement.pods} pods, {placement.workers} workers"
    moves = [
        f"{c.component} {'−' if c.action == 'Removed' else '+'}{c.level.lower()} (pod {c.pod}: {c.reason})"
        for c in placement.choices
    ]
    return text + ("; " + "; ".join(moves) if moves else "")
