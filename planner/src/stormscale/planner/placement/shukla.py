"""Shukla & Simmhan: resource acquisition and the mappings DSM, RSM and SAM.

A VM of the paper is a pod here, and a resource slot is a Storm worker slot (1 core, one slot's
memory; capacities are 1.00 CPU and 1.00 memory per slot, ``p_j`` of each per VM). A mapping
ℳ: R → S sends every thread r_i^k of the allocation to a slot s_j^l; it is returned as a
:class:`~stormscale.planner.placement.model.Placement` (threads are identical within a task, so
executors per component and slot say everything the paper's ℳ says). Pods are given as their slot
counts ``p_j`` in list order v_1, v_2, …; slots are VM-major: s_1^1, s_1^2, s_2^1, …

Tasks are swept in the allocation's order, which is TasksTopoOrder(𝒢) (the allocators keep it).
A task allocated τ_i = 0 threads (ω_i = 0) still gets one executor, with no demand.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from stormscale.planner.placement.model import Placement, Pod, Slot
from stormscale.planner.sizing.performance import EPS, Allocation, Allocator, TaskAllocation


class MappingError(Exception):
    """ "Error: Insufficient resources for task t_i" (Algorithms 5 and 6): no slot can take the thread(s)."""

    def __init__(self, strategy: str, task: str) -> None:
        super().__init__(f"{strategy}: insufficient resources for task {task!r}")
        self.strategy = strategy
        self.task = task


# --------------------------------------------------------------------------------------------------
# Resource acquisition (§7.1, §8.2)


class Acquisition(StrEnum):
    """How the remainder below one largest VM is covered."""

    SMALLEST_COVER = "smallest-cover"
    """§7.1: the smallest VM with at least the remaining slots (fewer VMs; may waste slots)."""
    EXACT_FIT = "exact-fit"
    """§8.2: "pick a D2 or a D1 VM for the remaining slot(s)": largest-first to the exact count."""


DEFAULT_POD_SIZES = (4, 2, 1)
"""The paper's experiments: D3 = 4, D2 = 2, D1 = 1 slots (sizes are 2^(i−1))."""


def acquire_pods(
    slots: int, sizes: Sequence[int] = DEFAULT_POD_SIZES, rule: Acquisition = Acquisition.SMALLEST_COVER
) -> tuple[int, ...]:
    """Pods (slot counts p_j) for ρ slots (§7.1, §8.2)::

        n = ⌊ρ / p̂⌋ pods of the largest size p̂,  then the remainder r = ρ − n·p̂ by ``rule``

    The paper's waste bound "2^(p̂−1) − 1" is garbled; for power-of-two sizes it is p̂/2 − 1.
    """
    ordered = sorted(set(sizes), reverse=True)
    if not ordered or ordered[-1] < 1:
        raise ValueError("sizes: need at least one pod size ≥ 1")
    largest = ordered[0]
    pods = [largest] * (max(slots, 0) // largest)
    left = max(slots, 0) - len(pods) * largest
    if rule is Acquisition.EXACT_FIT:
        for size in ordered[1:]:
            while left >= size:
                pods.append(size)
                left -= size
    if left > 0:
        pods.append(min(s for s in ordered if s >= left))
    return tuple(pods)


# --------------------------------------------------------------------------------------------------
# The slots while a mapping runs


@dataclass
class _SlotState:
    """One slot during a mapping: its executors, the CPU and memory charged to it, closed by a full bundle."""

    executors: dict[str, int] = field(default_factory=dict)
    cpu: float = 0.0
    memory: float = 0.0
    closed: bool = False

    def put(self, task: str, threads: int, cpu: float, memory: float) -> None:
        self.executors[task] = self.executors.get(task, 0) + threads
        self.cpu += cpu
        self.memory += memory


def _empty(pods: Sequence[int]) -> list[list[_SlotState]]:
    if any(p < 1 for p in pods):
        raise ValueError("pods: every pod needs at least one slot")
    return [[_SlotState() for _ in range(p)] for p in pods]


def _freeze(strategy: str, state: list[list[_SlotState]], notes: tuple[str, ...] = ()) -> Placement:
    return Placement(
        strategy=strategy,
        pods=tuple(Pod(tuple(Slot(dict(s.executors), s.cpu, s.memory) for s in pod)) for pod in state),
        notes=notes,
    )


def _average(task: TaskAllocation) -> tuple[float, float]:
    """Planned per-thread demand ``(c_i/τ_i, m_i/τ_i)`` (0 for a task without threads)."""
    return (task.cpu / task.threads, task.memory / task.threads) if task.threads else (0.0, 0.0)


# --------------------------------------------------------------------------------------------------
# Algorithm 4: Default Storm Mapping (DSM)


def round_robin(threads: Sequence[tuple[str, int]], pods: Sequence[int]) -> list[list[dict[str, int]]]:
    """MapDSM(R, S): thread k (0-based, task by task) → S'[k mod |S|], slots VM-major (§7.2).

    The pseudocode starts at ``n = 1``, which would skip the first slot; the paper's own example
    (Fig. 4) starts at s_1^1, so we count from 0.
    """
    state = _empty(pods)
    slots = [s for pod in state for s in pod]
    if not slots and any(count for _, count in threads):
        raise MappingError("dsm", next(task for task, count in threads if count))
    k = 0
    for task, count in threads:
        for _ in range(count):
            slots[k % len(slots)].put(task, 1, 0.0, 0.0)
            k += 1
    return [[dict(s.executors) for s in pod] for pod in state]


def map_dsm(allocation: Allocation, pods: Sequence[int]) -> Placement:
    """Default Storm Mapping (Algorithm 4): round robin, not resource-aware, never fails.

    A slot's ``cpu``/``memory`` is the allocation's planned per-thread average ``c_i/τ_i`` summed over
    its threads: what the plan expects there, not a promise (it may exceed 1.00).
    """
    layout = round_robin([(t.task, t.executors) for t in allocation.tasks], pods)
    demand = {t.task: _average(t) for t in allocation.tasks}
    state = [
        [
            _SlotState(
                ex,
                sum(n * demand[t][0] for t, n in ex.items()),
                sum(n * demand[t][1] for t, n in ex.items()),
            )
            for ex in pod
        ]
        for pod in layout
    ]
    return _freeze("dsm", state)


# --------------------------------------------------------------------------------------------------
# Algorithm 5: R-Storm Mapping (RSM)


class RsmDemand(StrEnum):
    """The per-thread demand ⟨c̄_i, m̄_i⟩ RSM packs with."""

    SINGLE_THREAD = "single-thread"
    """Paper-literal: 𝒞_i(1), ℳ_i(1), one thread's use at its peak rate."""
    ALLOCATION_AVERAGE = "allocation-average"
    """``(c_i/τ_i, m_i/τ_i)``: the allocation's average; the only way MBA's 470 Blob threads fit."""


@dataclass(frozen=True, slots=True)
class RsmWeights:
    """w_M, w_C, w_N of RSM's distance and NWDist to another VM (one rack: 0.5)."""

    memory: float = 1.0
    cpu: float = 1.0
    network: float = 1.0
    other_vm: float = 0.5


def rsm_distance(
    free: tuple[float, float], demand: tuple[float, float], nw_dist: float, weights: RsmWeights
) -> float:
    """Distance of a thread ⟨c̄_i, m̄_i⟩ (``demand``) to VM v_j with ⟨C_j, M_j⟩ free, as printed::

    d = w_M · (M_j − m̄_i)² + w_C · (C_j − c̄_i)² + w_N · NWDist(v̂, v_j)

    No square root over the sum and NWDist not squared: the paper's formula, kept.
    """
    (free_cpu, free_memory), (cpu, memory) = free, demand
    return (
        weights.memory * (free_memory - memory) ** 2
        + weights.cpu * (free_cpu - cpu) ** 2
        + weights.network * nw_dist
    )


def rsm_thread_demand(task: TaskAllocation, mode: RsmDemand) -> tuple[float, float]:
    """⟨c̄_i, m̄_i⟩ of one thread under ``mode`` (a fixed source or sink: its own demand)."""
    if task.threads == 0:
        return 0.0, 0.0
    if mode is RsmDemand.SINGLE_THREAD:
        return task.single_cpu, task.single_memory
    return _average(task)


def map_rsm(
    allocation: Allocation,
    pods: Sequence[int],
    *,
    demand: RsmDemand | None = None,
    weights: RsmWeights = RsmWeights(),
) -> Placement:
    """R-Storm Mapping (Algorithm 5, §7.3): one thread per task per sweep, in topological order.

    For each thread, VMs are sorted by :func:`rsm_distance` (stable, then VM index) from the last VM
    used v̂ (initially v_1); the first VM with ``C_j ≥ c̄_i`` (CPU of the **VM**) and a slot with
    ``M_j^l ≥ m̄_i`` (memory of the **slot**) takes it, in its first such slot. CPU is checked per
    VM on purpose ("the CPU% available across slots is assumed to be usable by any thread placed in
    that VM" [P §7.3]), so one slot may hold more than 1.00 CPU. ``demand`` defaults to the
    allocation's average for MBA and to the single-thread values for LSA.
    ``MappingError`` when no VM fits.
    """
    mba = allocation.allocator is Allocator.MBA
    mode = demand or (RsmDemand.ALLOCATION_AVERAGE if mba else RsmDemand.SINGLE_THREAD)
    vms = _RsmVms(_empty(pods), [float(p) for p in pods], [float(p) for p in pods])
    left = {t.task: t.executors for t in allocation.tasks}
    wants = {t.task: rsm_thread_demand(t, mode) for t in allocation.tasks}
    last = 0  # v̂
    while any(left.values()):
        for t in allocation.tasks:
            if not left[t.task]:
                continue
            cpu, mem = wants[t.task]
            spot = vms.find((cpu, mem), last, weights)
            if spot is None:
                raise MappingError("rsm", t.task)
            j, k = spot
            vms.slots[j][k].put(t.task, 1, cpu, mem)
            vms.cpu[j] -= cpu
            vms.memory[j] -= mem
            left[t.task] -= 1
            last = j
    return _freeze("rsm", vms.slots, (f"demand: {mode}",))


@dataclass
class _RsmVms:
    """RSM's state: the slots, and C_j, M_j (unmapped CPU and memory) per VM."""

    slots: list[list[_SlotState]]
    cpu: list[float]
    memory: list[float]

    def find(self, demand: tuple[float, float], last: int, weights: RsmWeights) -> tuple[int, int] | None:
        """GetSortedVMs(V, t_i, v̂), then the first VM with ``C_j ≥ c̄_i`` and a slot with ``M_j^l ≥ m̄_i``."""
        cpu, mem = demand

        def distance(j: int) -> float:
            nw = 0.0 if j == last else weights.other_vm
            return rsm_distance((self.cpu[j], self.memory[j]), demand, nw, weights)

        for j in sorted(range(len(self.slots)), key=distance):
            if self.cpu[j] < cpu - EPS:
                continue
            for k, s in enumerate(self.slots[j]):
                if 1.0 - s.memory >= mem - EPS:
                    return j, k
        return None


# --------------------------------------------------------------------------------------------------
# Algorithm 6: Slot Aware Mapping (SAM)


class SamBundles(StrEnum):
    """What SAM counts as a full bundle."""

    ALLOCATION = "allocation"
    """Default: exactly MBA's n_full_i bundles of τ̂_i threads, then one partial bundle (τ'_i, c'_i, m'_i)."""
    LITERAL = "literal"
    """The pseudocode's test ``τ_i ≥ τ̂_i``: with τ̂_i = 1 every thread takes a whole slot."""


@dataclass
class _SamTask:
    """SAM's per-task counters: threads τ_i, full bundles and c_i, m_i still to map."""

    alloc: TaskAllocation
    threads: int
    full: int
    cpu: float
    memory: float


def map_sam(
    allocation: Allocation, pods: Sequence[int], *, bundles: SamBundles = SamBundles.ALLOCATION
) -> Placement:
    """Slot Aware Mapping (Algorithm 6, §7.4): whole slots to full bundles, best fit for partial ones.

    Per sweep over the tasks in topological order, a task with a full bundle left puts τ̂_i threads
    on GetNextFullSlot (charged 1.00 CPU and 1.00 memory: the slot is closed); otherwise its remaining
    threads go, as one partial bundle demanding (c_i, m_i), to GetBestFitSlot. No slot ever exceeds
    1.00 CPU or 1.00 memory. ``MappingError`` when no slot fits.

    Departure (our main correction of the paper): by default the full bundles are MBA's n_full_i, not
    the literal ``τ_i ≥ τ̂_i`` (with τ̂_i = 1 the literal test gives every residual thread a whole
    slot; ``bundles=SamBundles.LITERAL`` keeps it). In literal mode a partial demand left negative by
    the 1.00 decrements is clamped at 0.
    A slot given a full bundle is closed: the paper sets its C, M to 0, so no partial bundle with a
    positive demand fits; we also keep out partials whose demand is below the float tolerance
    (zero-demand threads of a task with ω_i = 0, or a vanishing residual), which would otherwise join
    a full bundle and change its thread count.
    """
    state = _empty(pods)
    tasks = [_sam_task(t) for t in allocation.tasks]
    last = 0  # the last mapped VM
    while any(t.threads for t in tasks):
        for t in tasks:
            if not t.threads:
                continue
            tau_hat = t.alloc.bundle_threads
            full = t.full > 0 if bundles is SamBundles.ALLOCATION else t.threads >= tau_hat
            if full:
                spot = _next_full_slot(state, last)
                if spot is None:
                    raise MappingError("sam", t.alloc.task)
                state[spot[0]][spot[1]].put(t.alloc.task, tau_hat, 1.0, 1.0)
                state[spot[0]][spot[1]].closed = True
                t.threads -= tau_hat
                t.full -= 1
                t.cpu -= 1.0
                t.memory -= 1.0
            else:
                cpu, mem = max(t.cpu, 0.0), max(t.memory, 0.0)
                spot = _best_fit_slot(state, cpu, mem)
                if spot is None:
                    raise MappingError("sam", t.alloc.task)
                state[spot[0]][spot[1]].put(t.alloc.task, t.threads, cpu, mem)
                t.threads, t.cpu, t.memory = 0, 0.0, 0.0
            last = spot[0]
    mixed = sum(1 for pod in state for s in pod if len(s.executors) > 1)
    return _freeze("sam", state, (f"bundles: {bundles}", f"slots shared by several tasks: {mixed}"))


def _sam_task(t: TaskAllocation) -> _SamTask:
    """Counters for one task; the partial bundle's demand is MBA's residual (c'_i, m'_i) itself."""
    if t.threads == 0:
        return _SamTask(t, 1, 0, 0.0, 0.0)
    partial = t.residual
    full_cpu = t.full_bundles * 1.0
    cpu = full_cpu + (partial.cpu if partial else 0.0)
    memory = full_cpu + (partial.memory if partial else 0.0)
    return _SamTask(t, t.threads, t.full_bundles, cpu, memory)


def _next_full_slot(state: Sequence[Sequence[_SlotState]], last: int) -> tuple[int, int] | None:
    """GetNextFullSlot: the first empty slot in the last mapped VM, else in the next VMs (wrapping)."""
    n = len(state)
    for j in itertools.chain(range(last, n), range(last)):
        for k, s in enumerate(state[j]):
            if not s.executors:
                return j, k
    return None


def _best_fit_slot(
    state: Sequence[Sequence[_SlotState]], cpu: float, memory: float
) -> tuple[int, int] | None:
    """GetBestFitSlot: the slot with the least ``C_j^l + M_j^l`` still ≥ (c, m); ties by VM, then slot.

    C_j^l = 1 − CPU charged, M_j^l = 1 − memory charged; empty slots (2.0) come last; slots closed by
    a full bundle are not candidates.
    """
    best: tuple[float, int, int] | None = None
    for j, pod in enumerate(state):
        for k, s in enumerate(pod):
            if s.closed:
                continue
            free_cpu, free_mem = 1.0 - s.cpu, 1.0 - s.memory
            if free_cpu >= cpu - EPS and free_mem >= memory - EPS:
                key = (free_cpu + free_mem, j, k)
                if best is None or key < best:
                    best = key
    return None if best is None else (best[1], best[2])


# --------------------------------------------------------------------------------------------------
# Mapping failure handling (§8.4)

Mapper = Callable[[Allocation, Sequence[int]], Placement]


@dataclass(frozen=True)
class Mapped:
    """A mapping that succeeded on ρ + ``extra_slots`` slots acquired as ``pods``."""

    placement: Placement
    pods: tuple[int, ...]
    extra_slots: int


def map_until_fits(
    allocation: Allocation,
    mapper: Mapper,
    *,
    sizes: Sequence[int] = DEFAULT_POD_SIZES,
    rule: Acquisition = Acquisition.SMALLEST_COVER,
    max_extra: int | None = None,
) -> Mapped:
    """ "We incrementally increase the number of slots by 1 until the mapping is successful" [P §8.4].

    Pods are re-acquired for ρ + k slots (k = 0, 1, …) and the mapper re-run (skipped when the pods
    are those that just failed: acquisition may round ρ + k up to the same VMs). ``max_extra`` defaults
    to the number of executors (enough for SAM and RSM whenever one thread's demand fits a slot);
    beyond it the last ``MappingError`` is raised.
    """
    limit = max_extra if max_extra is not None else sum(t.executors for t in allocation.tasks)
    error: MappingError | None = None
    tried: tuple[int, ...] | None = None
    for extra in range(limit + 1):
        pods = acquire_pods(allocation.slots + extra, sizes, rule)
        if pods == tried:  # the same pods as for ρ + k − 1: the same (deterministic) failure
            continue
        tried = pods
        try:
            return Mapped(mapper(allocation, pods), pods, extra)
        except MappingError as err:
            error = err
    assert error is not None
    raise error
