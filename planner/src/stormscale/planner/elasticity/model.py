"""The container levels, the actions on them and the layout they act on (multi-level elasticity §2–3).

The paper's hierarchy, costliest first, in our terms on Storm over Kubernetes::

    L3  node / VM   → Pod       a Storm supervisor pod (a fixed "flavour": CPU and memory limits)
    L2  process     → Worker    the worker JVM; one per pod (a second one only hurts)
    L1  thread      → Executor  a Storm executor, one task each (R-task: tasks only cap executors)

"A lower container cannot exist outside its parent": an executor needs a worker, a worker a pod.
A layout is the pods in provisioning order (pod ``i`` is the StatefulSet's ordinal ``i``), each with
its worker count (0 or 1) and executors per component. Scale-in is LIFO (§3.1), so the pods are
always ordinals ``0 … n-1`` and only the last one is ever removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from stormscale.planner.placement.model import Placement, Pod, Slot


class Level(IntEnum):
    """Container level; a higher value is costlier and slower to provision (§2.3.4)."""

    EXECUTOR = 1  # the paper's thread (L1)
    WORKER = 2  # the paper's process (L2)
    POD = 3  # the paper's node / VM (L3)


@dataclass(frozen=True)
class AddPod:
    """``deployNode()``: a new supervisor pod, ordinal ``pod``."""

    pod: int
    level: Level = field(default=Level.POD, init=False)


@dataclass(frozen=True)
class AddWorker:
    """The worker (process, L2) of a pod that has none: part of ``deployContainerHierarchy``."""

    pod: int
    level: Level = field(default=Level.WORKER, init=False)


@dataclass(frozen=True)
class AddExecutor:
    """One more executor (thread, L1) of ``component``, with one task, in the worker of ``pod``."""

    component: str
    pod: int
    level: Level = field(default=Level.EXECUTOR, init=False)


@dataclass(frozen=True)
class RemoveExecutor:
    component: str
    pod: int
    level: Level = field(default=Level.EXECUTOR, init=False)


@dataclass(frozen=True)
class RemoveWorker:
    pod: int
    level: Level = field(default=Level.WORKER, init=False)


@dataclass(frozen=True)
class RemovePod:
    pod: int
    level: Level = field(default=Level.POD, init=False)


class AlertReason(StrEnum):
    """Why the planner could not, or would not, follow its table."""

    BEYOND_BENCHMARK = "beyond-benchmark"  # load above every benchmarked level: possible DoS
    ABOVE_FORECAST = "above-forecast"  # §5.3: load above what the proactive forecast expected
    TASK_CAP = "task-cap"  # executors(op) == numTasks(op): one task per executor
    POD_LIMIT = "pod-limit"  # a new pod is needed but the pod budget is spent (ours)


@dataclass(frozen=True)
class Alert:
    reason: AlertReason
    detail: str = ""


Provision = AddPod | AddWorker | AddExecutor
Release = RemovePod | RemoveWorker | RemoveExecutor
Action = Provision | Release | Alert


def inverse(action: Provision) -> Release:
    """The release that undoes a provisioning step (LIFO scale-in pops and inverts)."""
    match action:
        case AddPod(pod=p):
            return RemovePod(p)
        case AddWorker(pod=p):
            return RemoveWorker(p)
        case AddExecutor(component=c, pod=p):
            return RemoveExecutor(c, p)


@dataclass(frozen=True)
class PodLayout:
    """One pod: its workers (0 or 1) and its executors per component."""

    workers: int = 1
    executors: Mapping[str, int] = field(default_factory=dict)

    @property
    def executor_count(self) -> int:
        return sum(self.executors.values())


Layout = tuple[PodLayout, ...]


def minimal_layout(components: Sequence[str]) -> Layout:
    """§3.1's starting point: every operator unparallelised, all on one pod with one worker."""
    return (PodLayout(1, dict.fromkeys(components, 1)),)


def executors_of(layout: Layout, component: str) -> int:
    """``k_op``: executors of ``component`` over every pod."""
    return sum(p.executors.get(component, 0) for p in layout)


def apply(layout: Layout, action: Provision | Release) -> Layout:
    """The layout after one action; ``ValueError`` when it breaks the hierarchy's rules.

    Rules: an executor needs a worker in its pod; at most one worker per pod; a new
    pod is the next ordinal; only the last pod is removed, and only when it is empty.
    """
    pods = list(layout)
    match action:
        case AddPod(pod=p):
            _require(p == len(pods), f"a new pod is ordinal {len(pods)}, not {p}")
            pods.append(PodLayout(0, {}))
        case RemovePod(pod=p):
            _require(p == len(pods) - 1, f"only the last pod ({len(pods) - 1}) can be removed, not {p}")
            _require(pods[p].workers == 0, f"pod {p} still has a worker")
            pods.pop()
        case AddWorker(pod=p):
            _require(0 <= p < len(pods) and pods[p].workers == 0, f"pod {p} is missing or has a worker")
            pods[p] = PodLayout(1, pods[p].executors)
        case RemoveWorker(pod=p):
            _require(0 <= p < len(pods) and pods[p].workers == 1, f"pod {p} has no worker")
            _require(pods[p].executor_count == 0, f"pod {p}'s worker still runs executors")
            pods[p] = PodLayout(0, pods[p].executors)
        case AddExecutor(component=c, pod=p):
            _require(0 <= p < len(pods) and pods[p].workers == 1, f"pod {p} has no worker")
            pods[p] = PodLayout(1, {**pods[p].executors, c: pods[p].executors.get(c, 0) + 1})
        case RemoveExecutor(component=c, pod=p):
            _require(0 <= p < len(pods) and pods[p].executors.get(c, 0) > 0, f"no {c} executor on pod {p}")
            left = {k: n for k, n in pods[p].executors.items() if k != c}
            if pods[p].executors[c] > 1:
                left[c] = pods[p].executors[c] - 1
            pods[p] = PodLayout(pods[p].workers, left)
    return tuple(pods)


def replay(layout: Layout, actions: Sequence[Provision | Release]) -> Layout:
    for action in actions:
        layout = apply(layout, action)
    return layout


def notation(layout: Layout, component: str) -> str:
    """Table 1's ``Σ(VMs, executors)`` of one operator, e.g. ``(1,2)+(1,1)``; pods without it left out."""
    terms = [f"(1,{p.executors[component]})" for p in layout if p.executors.get(component, 0)]
    return "+".join(terms)


def to_placement(layout: Layout) -> Placement:
    """The layout as the planner's placement object: one slot (the worker) per pod that has one."""
    pods = tuple(Pod(slots=(Slot(executors=dict(p.executors)),) if p.workers else ()) for p in layout)
    return Placement(strategy="multilevel", pods=pods)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)
