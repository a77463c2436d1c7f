"""Multi-level elasticity's container level for the units a plan adds or removes, on pods of K slots.

The controller (:mod:`.controller`) replays a benchmarked table. An operator that has its units from a
budget plan or a sizing instead needs, for each unit a component gains, the cheapest container that
helps, and for each unit it loses, the last one provisioned (§2.3.4, §3.1; Algorithm 2's node choice
with the eligibility filter of :func:`.selection.select_pod_recommended`)::

    a unit added to op (one at a time, in the caller's order):
        pods   = every pod of the layout, its measured CPU plus what this pass added (below)
        chosen = select_pod(pods)                       if cpu ≤ θ_cpu ∧ mem ≤ θ_mem ∧ executors < vCPU,
                                                        then the least CPU (ties: the oldest pod)
        chosen runs a worker  → EXECUTOR: a new executor in that worker      (deployOptimalContainer, §4)
        chosen runs none      → WORKER:   a new worker in a free slot, with the executor
        nothing eligible      → POD:      a new pod with one worker and the executor    (deployNode)
    a unit taken from op: LIFO (§3.1)
        the last executor of op on the stack of provisioned units, else op's executor in the last
        pod (then its last worker) that runs one; a worker goes with its last executor, a pod with its
        last worker, and the pods after it move up one ordinal

A pod of K slots has K units of CPU (one unit = limit / K), so the vCPU cap is K executors. The
executor goes into the chosen pod's worker that already runs ``op`` (locality), else into its worker
with the fewest executors (ties: the first). Executors are one task each in the paper; here a unit is
an executor, and the caller keeps units within the task count.

Where we choose (the paper is silent):

* **CPU a pass's own changes add.** The pods' CPU is measured once per pass; each unit placed adds
  ``load_op / K`` to its pod (``load_op``: the busy fraction of one of ``op``'s executors at the
  target units, given by the caller), each unit removed takes it off (never below 0). A new pod
  starts at its one executor's share.
* **A pod without a measurement** (no CPU series) is not eligible: its headroom is unknown.
* **Memory is not measured** (``mem = 0``): only CPU decides, against θ_cpu.
* **The worker level** is reached only for a pod of the layout that runs no worker of the topology
  (a second worker in a pod that has one only costs memory, §2.3.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from stormscale.planner.elasticity.health import PAPER_THRESHOLDS, Thresholds, is_overloaded
from stormscale.planner.elasticity.model import AddExecutor, AddPod, AddWorker, Alert, Level
from stormscale.planner.elasticity.observation import OperatorObservation, PodObservation
from stormscale.planner.elasticity.selection import Selection, is_eligible, scale_out

SHOWN_PODS = 4
"""A reason names at most this many pods (then "…")."""


@dataclass(frozen=True)
class SlotPod:
    """One pod: its workers in order (executors per component, user components only) and its CPU."""

    workers: tuple[Mapping[str, int], ...]
    #: totalCPU_T: its CPU use over its limit (1.0 = the limit); ``None``: not measured.
    cpu: float | None = None

    @property
    def executors(self) -> int:
        return sum(n for worker in self.workers for n in worker.values())

    def runs(self, component: str) -> int:
        return sum(worker.get(component, 0) for worker in self.workers)


@dataclass(frozen=True)
class Provisioned:
    """A unit this layout added beyond its base: the executor of ``component`` in ``pod``'s ``worker``."""

    component: str
    pod: int
    worker: int


@dataclass(frozen=True)
class Choice:
    """Where one unit went (or came from, ``released``), the container level that changed, and why."""

    component: str
    level: Level
    pod: int
    worker: int
    reason: str
    released: bool = False


@dataclass(frozen=True)
class ContainerPlan:
    """The layout after the changes, the stack of provisioned units (oldest first) and each choice."""

    pods: tuple[SlotPod, ...]
    stack: tuple[Provisioned, ...]
    choices: tuple[Choice, ...] = field(default=())

    def executors(self) -> dict[str, int]:
        """Executors per component over every pod."""
        total: dict[str, int] = {}
        for pod in self.pods:
            for worker in pod.workers:
                for component, n in worker.items():
                    total[component] = total.get(component, 0) + n
        return total


@dataclass
class _Layout:
    """The layout while it changes (mutable copies of the pods' workers)."""

    workers: list[list[dict[str, int]]]
    cpu: list[float | None]
    stack: list[Provisioned]
    slots: int
    choices: list[Choice] = field(default_factory=list)

    def frozen(self) -> ContainerPlan:
        pods = tuple(
            SlotPod(tuple(dict(w) for w in ws), cpu) for ws, cpu in zip(self.workers, self.cpu, strict=True)
        )
        return ContainerPlan(pods, tuple(self.stack), tuple(self.choices))

    def count(self, pod: int) -> int:
        return sum(n for worker in self.workers[pod] for n in worker.values())

    def observation(self, pod: int) -> PodObservation:
        cpu = self.cpu[pod]
        return PodObservation(
            pod,
            cpu=math.inf if cpu is None else cpu,
            mem=0.0,
            workers=len(self.workers[pod]),
            executors=self.count(pod),
            vcpus=self.slots,
        )

    def shift(self, pod: int, share: float) -> None:
        cpu = self.cpu[pod]
        if cpu is not None:
            self.cpu[pod] = max(0.0, cpu + share)


def change_units(
    pods: Sequence[SlotPod],
    stack: Sequence[Provisioned],
    changes: Mapping[str, int],
    *,
    order: Sequence[str],
    load: Mapping[str, float],
    slots_per_pod: int,
    thresholds: Thresholds = PAPER_THRESHOLDS,
) -> ContainerPlan:
    """Apply ``changes`` (component → units to add, or to remove when negative) to the layout, one
    unit at a time: every removal first (LIFO), then the additions in ``order`` (module docstring).

    ``load[op]`` is the busy fraction of one executor of ``op`` at the target units (0 … 1).
    Raises ``ValueError`` when a removal asks for an executor the layout does not run.
    """
    if slots_per_pod < 1:
        raise ValueError(f"slots per pod must be at least 1, got {slots_per_pod}")
    layout = _Layout(
        [[dict(w) for w in pod.workers] for pod in pods],
        [pod.cpu for pod in pods],
        list(stack),
        slots_per_pod,
    )
    ranked = [c for c in order if c in changes] + sorted(c for c in changes if c not in order)
    for component in ranked:
        for _ in range(max(0, -changes[component])):
            _release(layout, component, load.get(component, 0.0))
    for component in ranked:
        for _ in range(max(0, changes[component])):
            _provision(layout, component, load.get(component, 0.0), thresholds)
    return layout.frozen()


def _provision(layout: _Layout, component: str, load: float, thresholds: Thresholds) -> None:
    """One new executor of ``component`` where Algorithm 2 (the eligible least-CPU pod) puts it."""
    pods = [layout.observation(p) for p in range(len(layout.workers))]
    running = _count(layout, component)
    # the task cap is the caller's: its units never exceed the task count
    operator = OperatorObservation(component, distance=0, health=None, executors=running, tasks=running + 1)
    actions = scale_out(operator, pods, Selection.RECOMMENDED, thresholds)
    share = load / layout.slots
    match actions:
        case (AddExecutor(pod=p),):
            workers = layout.workers[p]
            w = _worker_for(workers, component)
            workers[w][component] = workers[w].get(component, 0) + 1
            level = Level.EXECUTOR
            before = pods[p]
            reason = (
                f"pod {p} has headroom ({_cpu(before.cpu)} CPU ≤ {thresholds.cpu:.0%}, "
                f"{before.executors} of {layout.slots} executors): an executor in its worker {w}"
            )
        case (AddWorker(pod=p), AddExecutor()):
            layout.workers[p].append({component: 1})
            w, level = len(layout.workers[p]) - 1, Level.WORKER
            before = pods[p]
            reason = (
                f"pod {p} has headroom ({_cpu(before.cpu)} CPU, {before.executors} of {layout.slots} "
                f"executors) and runs no worker: a new worker in a free slot"
            )
        case (AddPod(pod=p), AddWorker(), AddExecutor()):
            layout.workers.append([{component: 1}])
            layout.cpu.append(0.0)
            w, level = 0, Level.POD
            reason = f"no pod has headroom ({_why_not(pods, thresholds)}): a new pod"
        case _:  # an Alert: the task cap is the caller's (units never exceed the task count)
            alert = next(a for a in actions if isinstance(a, Alert))
            raise ValueError(f"{component}: {alert.reason} {alert.detail}")
    layout.shift(p, share)
    layout.stack.append(Provisioned(component, p, w))
    layout.choices.append(Choice(component, level, p, w, reason))


def _count(layout: _Layout, component: str) -> int:
    return sum(worker.get(component, 0) for pod in layout.workers for worker in pod)


def _worker_for(workers: Sequence[Mapping[str, int]], component: str) -> int:
    """The worker that runs ``component`` already (the first), else the one with fewest executors."""
    for w, worker in enumerate(workers):
        if worker.get(component, 0):
            return w
    return min(range(len(workers)), key=lambda w: (sum(workers[w].values()), w))


def _release(layout: _Layout, component: str, load: float) -> None:
    """Take one executor of ``component`` away, LIFO; empty workers and pods go with it."""
    spot = _last_provisioned(layout, component)
    if spot is not None:
        p, w = spot
        reason = f"LIFO: the last executor of {component} provisioned (pod {p}, worker {w})"
    else:
        found = _last_running(layout, component)
        if found is None:
            raise ValueError(f"{component}: no executor left to remove")
        p, w = found
        reason = f"LIFO: {component}'s executor in the last pod that runs one (pod {p}, worker {w})"
    worker = layout.workers[p][w]
    worker[component] -= 1
    if not worker[component]:
        del worker[component]
    level = Level.EXECUTOR
    layout.shift(p, -load / layout.slots)
    if not worker:
        del layout.workers[p][w]
        layout.stack = [
            Provisioned(s.component, s.pod, s.worker - 1) if s.pod == p and s.worker > w else s
            for s in layout.stack
        ]
        level = Level.WORKER
        if not layout.workers[p]:
            del layout.workers[p]
            del layout.cpu[p]
            layout.stack = [
                Provisioned(s.component, s.pod - 1, s.worker) if s.pod > p else s for s in layout.stack
            ]
            level = Level.POD
    layout.choices.append(Choice(component, level, p, w, reason, released=True))


def _last_provisioned(layout: _Layout, component: str) -> tuple[int, int] | None:
    """The newest stack entry of ``component`` that the layout still runs (stale entries dropped)."""
    while True:
        index = next(
            (i for i in reversed(range(len(layout.stack))) if layout.stack[i].component == component), None
        )
        if index is None:
            return None
        entry = layout.stack.pop(index)
        p, w = entry.pod, entry.worker
        if p < len(layout.workers) and w < len(layout.workers[p]) and layout.workers[p][w].get(component, 0):
            return p, w


def _last_running(layout: _Layout, component: str) -> tuple[int, int] | None:
    for p in reversed(range(len(layout.workers))):
        for w in reversed(range(len(layout.workers[p]))):
            if layout.workers[p][w].get(component, 0):
                return p, w
    return None


def _cpu(value: float) -> str:
    return "unmeasured" if math.isinf(value) else f"{value:.0%}"


def _why_not(pods: Sequence[PodObservation], thresholds: Thresholds) -> str:
    """Why each pod is not eligible, in one short phrase (at most :data:`SHOWN_PODS` pods)."""
    if not pods:
        return "there is none"
    phrases = []
    for pod in pods[:SHOWN_PODS]:
        if math.isinf(pod.cpu):
            phrases.append(f"pod {pod.pod} not measured")
        elif is_overloaded(pod.cpu, pod.mem, thresholds):
            phrases.append(f"pod {pod.pod} at {pod.cpu:.0%} CPU")
        elif not is_eligible(pod, thresholds):
            phrases.append(f"pod {pod.pod} full ({pod.executors} of {pod.vcpus} executors)")
    more = ", …" if len(pods) > SHOWN_PODS else ""
    return ", ".join(phrases) + more
