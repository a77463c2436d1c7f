"""Shukla & Simmhan, Algorithm 2: Linear Scaling Allocation (LSA), the paper's baseline.

LSA assumes a task's rate grows linearly with its threads: every thread sustains ω̄_i = ℐ_i(1) and
costs c̄_i = 𝒞_i(1), m̄_i = ℳ_i(1), whatever else shares its slot. The paper calls it both "Linear
Scaling Allocation" (§6.1) and "Linear Storm Allocation" (§8.2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from stormscale.planner.sizing.performance import (
    EPS,
    Allocation,
    Allocator,
    Bundle,
    PerformanceModel,
    TaskAllocation,
    TaskGraph,
    allocate_each,
)


def lsa_task(task: str, model: PerformanceModel, omega: float) -> TaskAllocation:
    """Algorithm 2 for one task at input rate ω_i, its loop in closed form::

        k = ⌊ω_i / ω̄_i⌋ whole threads            (the while loop: τ += 1, ω −= ω̄, c += c̄, m += m̄)
        r = ω_i − k · ω̄_i > 0  ⇒  one more thread charged c̄ · r/ω̄, m̄ · r/ω̄
        ⇒ τ_i = ⌈ω_i/ω̄_i⌉,  c_i = c̄_i · ω_i/ω̄_i,  m_i = m̄_i · ω_i/ω̄_i

    k is ``⌊ω/ω̄ + 1e-9⌋`` rather than repeated subtraction, so float drift adds no thread.
    ``residual`` holds all τ_i threads as one bundle (LSA has no notion of a full slot).
    """
    bar_omega = model.single_rate
    c_bar, m_bar = model.cpu(1), model.memory(1)
    whole = math.floor(omega / bar_omega + EPS) if omega > 0 else 0
    trailing = omega - whole * bar_omega
    threads = whole + (1 if trailing > EPS * omega else 0)
    cpu = c_bar * omega / bar_omega
    memory = m_bar * omega / bar_omega
    return TaskAllocation(
        task=task,
        rate=omega,
        threads=threads,
        cpu=cpu,
        memory=memory,
        residual=Bundle(threads, cpu, memory) if threads else None,
        single_cpu=c_bar,
        single_memory=m_bar,
    )


def allocate_lsa(
    graph: TaskGraph,
    omega: float,
    models: Mapping[str, PerformanceModel],
    fixed: Mapping[str, tuple[float, float]] | None = None,
) -> Allocation:
    """AllocateLSA(𝒢, Ω): ⟨τ_i, c_i, m_i⟩ for every task with ω_i = GetRate(𝒢, t_i, Ω).

    ``fixed`` maps the source and sink to their (CPU, memory): one thread each, mapped but not part
    of ρ. ρ is ``max(⌈Σ c_i⌉, ⌈Σ m_i⌉)`` (the paper only says "rounded up").
    """
    return allocate_each(Allocator.LSA, graph, omega, models, fixed=fixed or {}, size=lsa_task)
