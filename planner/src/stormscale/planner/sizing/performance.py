"""Shukla & Simmhan: the per-task performance model 𝒫_i, the DAG rates ω_i, and allocations.

The paper profiles every task alone on **one slot** (Algorithm 1) and keeps, per tested thread count
τ, the peak stable input rate ω and the incremental CPU c and memory m at that rate:
``𝒫_i: τ → ⟨ω, c, m⟩``. This module holds that output as data (Algorithm 1 itself runs
trials on a cluster and is not planner code), the functions derived from it (ℐ_i, 𝒞_i, ℳ_i, 𝒯_i,
ω̄_i, ω̂_i, τ̂_i), GetRate over the DAG (§6), and the allocation that LSA and MBA return.

Units: CPU and memory are **fractions of one slot** (1.0 = one core, or one slot's memory), as in the
algorithms (MBA adds 1.00 per full slot) and in :class:`~stormscale.planner.placement.model.Slot`.
The paper's tables are in percent: 85 % is ``0.85`` here. Rates are tuples/s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

from stormscale.planner.model import Topology

EPS = 1e-9
"""Float tolerance of the allocation loops and ceilings: ``ceil(x − 1e-9)``."""


def ceil_slots(amount: float) -> int:
    """``⌈x⌉`` that forgives float drift: ``ceil(x − 1e-9)``, so 7.0000000001 → 7."""
    return max(0, math.ceil(amount - EPS))


# --------------------------------------------------------------------------------------------------
# 𝒫_i: the per-task performance model


@dataclass(frozen=True, slots=True)
class ModelPoint:
    """One measured entry of 𝒫_i: τ threads on one slot sustain ``peak_rate`` ω using ``cpu`` c and
    ``memory`` m (fractions of a slot, above the base load)."""

    threads: int
    peak_rate: float
    cpu: float
    memory: float


@dataclass(frozen=True)
class PerformanceModel:
    """𝒫_i: τ → ⟨ω, c, m⟩ for one task on one slot, as Algorithm 1 returns it.

    Only the measured points are stored (``threads`` strictly increasing, ≥ 1). Between measured τ the
    three curves are **piecewise-linear** and clamped to the first and last points;
    ``ℐ_i(0) = 𝒞_i(0) = ℳ_i(0) = 0`` (no thread, no rate, no load).
    """

    points: tuple[ModelPoint, ...]

    def __post_init__(self) -> None:
        if not self.points:
            raise ValueError("points: a performance model needs at least one measured thread count")
        previous = 0
        for k, p in enumerate(self.points):
            where = f"points[{k}]"
            if not isinstance(p.threads, int) or p.threads <= previous:
                raise ValueError(f"{where}.threads: must be an integer above {previous} (increasing)")
            previous = p.threads
            if not (math.isfinite(p.peak_rate) and p.peak_rate > 0):
                raise ValueError(f"{where}.peakRate: must be a finite number > 0")
            for name, value in (("cpu", p.cpu), ("memory", p.memory)):
                if not (math.isfinite(value) and value >= 0):
                    raise ValueError(f"{where}.{name}: must be a finite number ≥ 0")

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> PerformanceModel:
        """Load ``{"points": [{"threads": 1, "peakRate": 310, "cpu": 0.85, "memory": 0.2298}, …]}``.

        ``cpu`` and ``memory`` are fractions of one slot. Errors name the field (``ValueError``).
        """
        raw = document.get("points")
        if not isinstance(raw, list):
            raise ValueError("points: must be a list of {threads, peakRate, cpu, memory}")
        points = []
        for k, item in enumerate(raw):
            if not isinstance(item, Mapping):
                raise ValueError(f"points[{k}]: must be an object")
            points.append(
                ModelPoint(
                    threads=_int_field(item, "threads", k),
                    peak_rate=_number_field(item, "peakRate", k),
                    cpu=_number_field(item, "cpu", k),
                    memory=_number_field(item, "memory", k),
                )
            )
        return cls(tuple(points))

    def to_dict(self) -> dict[str, Any]:
        """The inverse of :meth:`from_dict`."""
        return {
            "points": [
                {"threads": p.threads, "peakRate": p.peak_rate, "cpu": p.cpu, "memory": p.memory}
                for p in self.points
            ]
        }

    def rate(self, q: float) -> float:
        """ℐ_i(q): peak input rate of q threads on one slot (interpolated; ℐ_i(0) = 0)."""
        return self._interpolate(q, lambda p: p.peak_rate)

    def cpu(self, q: float) -> float:
        """𝒞_i(q): incremental CPU of q threads on one slot at their peak rate."""
        return self._interpolate(q, lambda p: p.cpu)

    def memory(self, q: float) -> float:
        """ℳ_i(q): incremental memory of q threads on one slot at their peak rate."""
        return self._interpolate(q, lambda p: p.memory)

    @property
    def single_rate(self) -> float:
        """ω̄_i = ℐ_i(1): peak rate of one thread on one slot."""
        return self.rate(1)

    @cached_property
    def peak_rate(self) -> float:
        """ω̂_i = max_j ℐ_i(j): the best rate any thread count reaches on one slot (measured points)."""
        return max(p.peak_rate for p in self.points)

    @cached_property
    def peak_threads(self) -> int:
        """τ̂_i = 𝒯_i(ω̂_i): the full bundle, the fewest measured threads reaching ω̂_i."""
        return self.threads_for(self.peak_rate)

    def threads_for(self, omega: float, *, interpolate: bool = False) -> int:
        """𝒯_i(ω): the smallest thread count q with ``ℐ_i(q) ≥ ω`` (0 for ω ≤ 0).

        Default: the smallest **measured** τ (conservative, the paper's
        "over-estimate"); ``interpolate=True`` searches every integer up to the last measured τ on
        the interpolated ℐ_i. ``ValueError`` when ω > ω̂_i: one slot cannot sustain it.
        """
        if omega <= 0:
            return 0
        need = omega - EPS * max(omega, 1.0)
        if interpolate:
            found = next((q for q in range(1, self.points[-1].threads + 1) if self.rate(q) >= need), None)
        else:
            found = next((p.threads for p in self.points if p.peak_rate >= need), None)
        if found is None:
            raise ValueError(f"𝒯(ω): ω = {omega} is above the peak rate ω̂ = {self.peak_rate} of one slot")
        return found

    def _interpolate(self, q: float, value: Callable[[ModelPoint], float]) -> float:
        """Piecewise-linear in τ between measured points, clamped at both ends; 0 at q ≤ 0."""
        if q <= 0:
            return 0.0
        pts = self.points
        if q <= pts[0].threads:
            return value(pts[0])
        for lo, hi in itertools.pairwise(pts):
            if q <= hi.threads:
                a, b = value(lo), value(hi)
                return a + (b - a) * (q - lo.threads) / (hi.threads - lo.threads)
        return value(pts[-1])


def models_from_dict(document: Mapping[str, Any]) -> dict[str, PerformanceModel]:
    """Load ``{task id: {"points": […]}}``; errors name the task and the field."""
    out: dict[str, PerformanceModel] = {}
    for task, item in document.items():
        if not isinstance(item, Mapping):
            raise ValueError(f"{task}: must be an object with points")
        try:
            out[str(task)] = PerformanceModel.from_dict(item)
        except ValueError as err:
            raise ValueError(f"{task}.{err}") from None
    return out


def _int_field(item: Mapping[str, Any], key: str, k: int) -> int:
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"points[{k}].{key}: must be an integer")
    return value


def _number_field(item: Mapping[str, Any], key: str, k: int) -> float:
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"points[{k}].{key}: must be a number")
    return float(value)


# --------------------------------------------------------------------------------------------------
# 𝒢 = ⟨𝕋, 𝔼⟩ and GetRate


@dataclass(frozen=True)
class TaskGraph:
    """The DAG 𝒢 = ⟨𝕋, 𝔼⟩: task ids and edges ``(t_i, t_j, σ_ij)``.

    Duplicate semantics on outputs: a task with k out-edges sends ``ω_i · σ_ij`` on **each** edge.
    """

    tasks: tuple[str, ...]
    edges: tuple[tuple[str, str, float], ...] = ()
    _parents: dict[str, list[tuple[str, float]]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError("tasks: a task id repeats")
        parents: dict[str, list[tuple[str, float]]] = {t: [] for t in self.tasks}
        for k, (src, dst, sigma) in enumerate(self.edges):
            if src not in parents or dst not in parents:
                raise ValueError(f"edges[{k}]: unknown task {src if src not in parents else dst!r}")
            if not (math.isfinite(sigma) and sigma >= 0):
                raise ValueError(f"edges[{k}]: selectivity σ must be a finite number ≥ 0")
            parents[dst].append((src, sigma))
        object.__setattr__(self, "_parents", parents)
        _ = self.order  # rejects cycles now

    @classmethod
    def from_topology(cls, topology: Topology) -> TaskGraph:
        """The profile's DAG: ``σ_ij = selectivity_i · fraction_{i→j}`` (a spout passes Ω on: σ = fraction).

        Departure: a bolt's ``externalInput`` is ignored; a task without in-edges receives Ω (GetRate).
        """
        edges = tuple(
            (c.id, child, (1.0 if c.is_spout else c.selectivity) * fraction)
            for c in topology.components
            for child, fraction in c.children
        )
        return cls(tuple(c.id for c in topology.components), edges)

    @cached_property
    def order(self) -> tuple[str, ...]:
        """TasksTopoOrder(𝒢): Kahn's algorithm, ties by position in ``tasks``."""
        position = {t: k for k, t in enumerate(self.tasks)}
        indegree = {t: len(self._parents[t]) for t in self.tasks}
        children: dict[str, list[str]] = {t: [] for t in self.tasks}
        for src, dst, _ in self.edges:
            children[src].append(dst)
        ready = sorted((t for t in self.tasks if indegree[t] == 0), key=position.__getitem__, reverse=True)
        out: list[str] = []
        while ready:
            t = ready.pop()
            out.append(t)
            for c in children[t]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    ready.append(c)
            ready.sort(key=position.__getitem__, reverse=True)
        if len(out) != len(self.tasks):
            raise ValueError("edges: the task graph has a cycle")
        return tuple(out)

    def input_rates(self, omega: float) -> dict[str, float]:
        """GetRate for every task::

        ω_j = Ω                              if no e_ij ∈ 𝔼  (every source gets the full Ω)
        ω_j = Σ_{e_ij ∈ 𝔼} ω_i · σ_ij        otherwise
        """
        rates: dict[str, float] = {}
        for t in self.order:
            parents = self._parents[t]
            rates[t] = omega if not parents else sum(rates[p] * sigma for p, sigma in parents)
        return rates


# --------------------------------------------------------------------------------------------------
# Allocation: ⟨τ_i, c_i, m_i⟩ per task and ρ


class Allocator(StrEnum):
    """Which algorithm produced an allocation."""

    LSA = "lsa"
    MBA = "mba"
    FIXED = "fixed"


@dataclass(frozen=True, slots=True)
class Bundle:
    """A group of one task's threads meant for one slot: τ threads charged c CPU and m memory."""

    threads: int
    cpu: float
    memory: float


@dataclass(frozen=True, slots=True)
class TaskAllocation:
    """⟨τ_i, c_i, m_i⟩ for one task at rate ω_i, with what the mappings need.

    ``full_bundles`` is n_full_i (MBA's while-loop iterations; 0 for LSA), each of ``bundle_threads``
    τ̂_i threads charged 1.00 CPU and 1.00 memory; ``residual`` is the partial bundle ``(τ'_i, c'_i,
    m'_i)`` (``None`` when there is none). For LSA, ``residual`` holds every thread (τ_i, c_i, m_i).
    ``single_cpu``/``single_memory`` are c̄_i = 𝒞_i(1), m̄_i = ℳ_i(1) (RSM's paper-literal demand).
    ``counted`` is False for the source and sink (fixed demands, mapped but not part of ρ).
    """

    task: str
    rate: float
    threads: int
    cpu: float
    memory: float
    full_bundles: int = 0
    bundle_threads: int = 1
    residual: Bundle | None = None
    single_cpu: float = 0.0
    single_memory: float = 0.0
    counted: bool = True

    @property
    def executors(self) -> int:
        """Storm's parallelism: τ_i, but at least 1 (a task with ω_i = 0 still runs one executor)."""
        return max(1, self.threads)


def fixed_task(task: str, cpu: float, memory: float) -> TaskAllocation:
    """A source or sink: one thread with a fixed demand, mapped but not counted in ρ.

    The paper's experiments use 0.10 CPU / 0.15 memory for the source, 0.10 / 0.20 for the sink.
    """
    return TaskAllocation(
        task=task,
        rate=0.0,
        threads=1,
        cpu=cpu,
        memory=memory,
        residual=Bundle(1, cpu, memory),
        single_cpu=cpu,
        single_memory=memory,
        counted=False,
    )


@dataclass(frozen=True)
class Allocation:
    """The output of LSA or MBA for a target rate Ω: tasks in TasksTopoOrder(𝒢), and ρ."""

    allocator: Allocator
    omega: float
    tasks: tuple[TaskAllocation, ...]

    @property
    def total_cpu(self) -> float:
        """Σ c_i over the counted tasks."""
        return sum(t.cpu for t in self.tasks if t.counted)

    @property
    def total_memory(self) -> float:
        """Σ m_i over the counted tasks."""
        return sum(t.memory for t in self.tasks if t.counted)

    @property
    def slots(self) -> int:
        """ρ = max(⌈Σ c_i⌉, ⌈Σ m_i⌉) (Algorithm 3; LSA too); source and sink excluded."""
        return max(ceil_slots(self.total_cpu), ceil_slots(self.total_memory))

    @property
    def total_threads(self) -> int:
        """Σ τ_i over the counted tasks."""
        return sum(t.threads for t in self.tasks if t.counted)

    def threads(self) -> dict[str, int]:
        """τ_i per task (every task, counted or not)."""
        return {t.task: t.threads for t in self.tasks}

    def executors(self) -> dict[str, int]:
        """Storm parallelism per task: ``max(1, τ_i)``."""
        return {t.task: t.executors for t in self.tasks}

    def task(self, task: str) -> TaskAllocation:
        """The allocation of one task (``KeyError`` if absent)."""
        for t in self.tasks:
            if t.task == task:
                return t
        raise KeyError(task)

    def with_fixed(
        self, before: Sequence[TaskAllocation] = (), after: Sequence[TaskAllocation] = ()
    ) -> Allocation:
        """The same allocation with fixed tasks (source first, sink last) for the mappings."""
        return Allocation(self.allocator, self.omega, (*before, *self.tasks, *after))


def sized_tasks(
    graph: TaskGraph, models: Mapping[str, PerformanceModel], fixed: Iterable[str] = ()
) -> tuple[str, ...]:
    """The tasks LSA and MBA size, in TasksTopoOrder(𝒢): every task with a model.

    A task with neither a model nor a place in ``fixed`` (source, sink) is an error, so that a
    forgotten model is not silently left out of ρ.
    """
    skip = set(fixed)
    missing = [t for t in graph.order if t not in models and t not in skip]
    if missing:
        raise ValueError(f"models: no performance model for task {missing[0]!r} (and it is not fixed)")
    return tuple(t for t in graph.order if t in models and t not in skip)


SizeTask = Callable[[str, PerformanceModel, float], TaskAllocation]
"""Allocation of one task at its rate ω_i (LSA's or MBA's loop)."""


def allocate_each(
    allocator: Allocator,
    graph: TaskGraph,
    omega: float,
    models: Mapping[str, PerformanceModel],
    *,
    fixed: Mapping[str, tuple[float, float]],
    size: SizeTask,
) -> Allocation:
    """The outer loop of Algorithms 2 and 3: ``for t_i ∈ 𝕋: ω_i = GetRate(𝒢, t_i, Ω); size t_i``.

    Tasks come out in TasksTopoOrder(𝒢), the order RSM and SAM sweep in; fixed tasks (source, sink:
    ``task → (cpu, memory)``) keep their place in that order and stay out of ρ.
    """
    rates = graph.input_rates(omega)
    sized = set(sized_tasks(graph, models, fixed))
    tasks: list[TaskAllocation] = []
    for t in graph.order:
        if t in sized:
            tasks.append(size(t, models[t], rates[t]))
        elif t in fixed:
            tasks.append(fixed_task(t, *fixed[t]))
    return Allocation(allocator, omega, tuple(tasks))
