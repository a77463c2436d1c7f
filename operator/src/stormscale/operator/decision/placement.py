"""Where executors run (``spec.workers.placement``): the layout the operator asks for. Pure.

A layout is pods in order, each its workers (slots) in order, each component -> executors. The
rebalance carries it (the realizer, through :mod:`stormscale.operator.packing`), with as many
workers as it has, and the worker Deployment gets one replica per pod.

* ``SAM``, ``PDeployer``: the planner packs the target units afresh on every apply
  (:func:`stormscale.planner.place_units`: Shukla & Simmhan's Slot Aware Mapping on pods of
  ``slotsPerPod`` slots, or P-Deployer's bin packing on pods of one slot). Empty slots and pods are
  left out.
* ``MultiLevel``: the layout that runs changes one unit at a time
  (:func:`stormscale.planner.change_units`: multi-level elasticity's container level, executor in
  an existing worker of a pod with CPU headroom, else a new worker, else a new pod; scale-in LIFO).
  The pods' CPU is what the profiler measured (their cAdvisor CPU over their limits); the layout that
  runs (:class:`Running`) is observed by the pass.

Storm's own executors (``__acker``, ``__eventlogger``…) must be placed too (the scheduler places
exactly what the placement lists). They are not planned: each goes to the next worker in order (pods,
then their workers), the way Storm's default gives one acker to each worker.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from stormscale.operator.policy import PlacementKind
from stormscale.operator.ports import PodLoad
from stormscale.operator.status import PlacementStatus, PodLayout, ProvisionedUnit, UnitChoice, timestamp
from stormscale.planner import (
    Choice,
    Level,
    PlacementStrategy,
    Provisioned,
    SlotPod,
    Topology,
    change_units,
    check_units_fit_a_slot,
    executor_loads,
    place_units,
)
from stormscale.planner import Placement as PlannedPods

#: ``workers.placement`` -> the planner's strategy (MultiLevel is not a packing).
PACKERS = {PlacementKind.SAM: PlacementStrategy.SAM, PlacementKind.PDEPLOYER: PlacementStrategy.PDEPLOYER}
LEVELS: Mapping[Level, Literal["Executor", "Worker", "Pod"]] = {
    Level.EXECUTOR: "Executor",
    Level.WORKER: "Worker",
    Level.POD: "Pod",
}
#: Storm adds this component to every worker itself; a layout never lists it.
UNPLACED = "__system"

Pods = tuple[tuple[dict[str, int], ...], ...]


class LayoutError(ValueError):
    """A layout the rebalance could not carry (an empty pod or worker, a count below one)."""


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


def grow(
    now: Running,
    target: Mapping[str, int],
    model: Topology,
    loads: Sequence[PodLoad],
    slots_per_pod: int,
) -> Planned:
    """``MultiLevel``: the units ``target`` adds or removes, each at multi-level elasticity's container level.

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


def check_layout(pods: Sequence[Sequence[Mapping[str, int]]]) -> None:
    """Raise :class:`LayoutError` unless every pod holds a worker and every worker at least one
    executor of each component it names (the checks a rebalance's placement passes)."""
    if not pods:
        raise LayoutError("the layout has no pods")
    for i, pod in enumerate(pods):
        if not pod:
            raise LayoutError(f"pods[{i}] has no workers")
        for j, worker in enumerate(pod):
            if not worker:
                raise LayoutError(f"pods[{i}].workers[{j}] runs nothing")
            for component, count in worker.items():
                if not component or component == UNPLACED:
                    raise LayoutError(f"pods[{i}].workers[{j}]: {component!r} is never placed")
                if type(count) is not int or count < 1:
                    raise LayoutError(
                        f"pods[{i}].workers[{j}]: {component!r} needs executors >= 1, got {count}"
                    )


def replicas_for(units: Mapping[str, int], slots_per_pod: int) -> int:
    """Worker pods needed: one slot per unit, ``slots_per_pod`` slots per pod."""
    return math.ceil(sum(units.values()) / slots_per_pod)


def replicas(target: Mapping[str, int], placement: PlacementStatus | None, slots_per_pod: int) -> int:
    """Worker pods: the placement's, else one slot per unit and ``slotsPerPod`` slots per pod."""
    return placement.pods if placement is not None else replicas_for(target, slots_per_pod)
