"""Node selection and operator scale-out (the multi-level elasticity paper's Algorithm 2).

Algorithm 2 as written (``Selection.LITERAL``)::

    node ← argmin_{n ∈ nodes} totalCPU(n)
    if isOverloaded(node): node ← deployNode(); deployContainerHierarchy(node)   # 1 worker + 1 executor
    else:                  deployOptimalContainer(node)                         # listing's "retNode": typo

It tests only the least-CPU node, so a memory-overloaded least-CPU node means a new pod even when
another node is fine. The prose asks for "the least loaded node with sufficient resources";
``Selection.RECOMMENDED`` (our reading of that prose) filters first::

    eligible = {n : totalCPU(n) ≤ θ_cpu ∧ totalMem(n) ≤ θ_mem ∧ executors(n) < vCPU(n)}
    node     = argmin_{n ∈ eligible} totalCPU(n)        (ties: oldest pod, lowest ordinal)
    eligible = ∅ ⇒ a new pod

Storm's ``deployOptimalContainer`` (§4): a new executor with one task in the pod's existing worker;
a second worker on a pod is never deployed. A pod without a worker (not reachable
under these rules) gets the hierarchy: worker + executor. ``executors(op) = numTasks(op)`` refuses
with a task-cap alert. A pod budget (``max_pods``) is ours: the paper's cloud has no limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from stormscale.planner.elasticity.health import PAPER_THRESHOLDS, Thresholds, is_congested, is_overloaded
from stormscale.planner.elasticity.model import (
    AddExecutor,
    AddPod,
    AddWorker,
    Alert,
    AlertReason,
    Provision,
)
from stormscale.planner.elasticity.observation import OperatorObservation, PodObservation


class Selection(StrEnum):
    """Which reading of Algorithm 2's node choice."""

    LITERAL = "literal"
    RECOMMENDED = "recommended"


def select_pod_literal(
    pods: Sequence[PodObservation], thresholds: Thresholds = PAPER_THRESHOLDS
) -> int | None:
    """Algorithm 2 as written: the least-CPU pod (ties: oldest), ``None`` (a new pod) if it is overloaded."""
    if not pods:
        return None
    node = min(pods, key=lambda p: (p.cpu, p.pod))
    return None if is_overloaded(node.cpu, node.mem, thresholds) else node.pod


def is_eligible(pod: PodObservation, thresholds: Thresholds = PAPER_THRESHOLDS) -> bool:
    """``cpu ≤ θ_cpu ∧ mem ≤ θ_mem ∧ executors < vCPU`` (the recommended reading)."""
    return not is_overloaded(pod.cpu, pod.mem, thresholds) and pod.executors < pod.vcpus


def select_pod_recommended(
    pods: Sequence[PodObservation], thresholds: Thresholds = PAPER_THRESHOLDS
) -> int | None:
    """The least-CPU eligible pod (ties: oldest), ``None`` (a new pod) when none is eligible."""
    eligible = [p for p in pods if is_eligible(p, thresholds)]
    return min(eligible, key=lambda p: (p.cpu, p.pod)).pod if eligible else None


def select_pod(
    pods: Sequence[PodObservation], selection: Selection, thresholds: Thresholds = PAPER_THRESHOLDS
) -> int | None:
    if selection is Selection.LITERAL:
        return select_pod_literal(pods, thresholds)
    return select_pod_recommended(pods, thresholds)


def optimal_container(component: str, pod: PodObservation) -> tuple[AddWorker | AddExecutor, ...]:
    """Storm's ``deployOptimalContainer``: an executor in the existing worker, else worker + executor."""
    if pod.workers >= 1:
        return (AddExecutor(component, pod.pod),)
    return (AddWorker(pod.pod), AddExecutor(component, pod.pod))


def new_pod_hierarchy(component: str, ordinal: int) -> tuple[AddPod, AddWorker, AddExecutor]:
    """``deployNode`` + ``deployContainerHierarchy``: a pod, its one worker, one executor (§4)."""
    return (AddPod(ordinal), AddWorker(ordinal), AddExecutor(component, ordinal))


def scale_out(
    operator: OperatorObservation,
    pods: Sequence[PodObservation],
    selection: Selection = Selection.RECOMMENDED,
    thresholds: Thresholds = PAPER_THRESHOLDS,
    max_pods: int | None = None,
) -> tuple[Provision | Alert, ...]:
    """Algorithm 2 ``SCALEOUT(op)``: exactly one new instance of ``op``, or one alert.

    ``pods`` must be every pod of the layout, ordinals ``0 … n-1``; a new pod is ordinal ``n``.
    """
    if operator.executors >= operator.tasks:
        return (Alert(AlertReason.TASK_CAP, f"{operator.component}: {operator.tasks} tasks"),)
    chosen = select_pod(pods, selection, thresholds)
    if chosen is not None:
        return optimal_container(operator.component, next(p for p in pods if p.pod == chosen))
    if max_pods is not None and len(pods) >= max_pods:
        return (Alert(AlertReason.POD_LIMIT, f"{operator.component}: {max_pods} pods"),)
    return new_pod_hierarchy(operator.component, len(pods))


def first_congested(
    operators: Sequence[OperatorObservation], min_health: float = PAPER_THRESHOLDS.min_health
) -> OperatorObservation | None:
    """Algorithm 1's ``find i ∈ sortedInstances``: the congested operator closest to the sources.

    Sorted by ``dist`` (upstream bottlenecks starve the downstream, §3.1), ties by lowest health
    (ours), then component id. Health is per operator (Storm has no per-destination emitted count).
    """
    congested = [o for o in operators if is_congested(o.health, min_health)]
    if not congested:
        return None
    return min(congested, key=lambda o: (o.distance, o.health, o.component))
