"""Shukla & Simmhan, Algorithm 3: Model Based Allocation (MBA).

MBA fills whole slots first: a **full bundle** of τ̂_i threads sustains the best single-slot rate
ω̂_i and is charged the whole slot (1.00 CPU, 1.00 memory), because "that particular task cannot make
use of additional CPU or memory resources available in that slot due to a resource contention"
[P §6.2]. The rate left below ω̂_i goes to a partial bundle of τ'_i = 𝒯_i(ω) threads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial

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


def residual_bundle(model: PerformanceModel, omega: float, *, interpolate: bool = False) -> Bundle:
    """The partial bundle for a trailing rate 0 < ω < ω̂_i (Algorithm 3, after the loop)::

        τ'_i = 𝒯_i(ω)
        τ'_i > 1:  c'_i = 𝒞_i(τ'_i),           m'_i = ℳ_i(τ'_i)             (model value, NOT scaled by rate)
        τ'_i = 1:  c'_i = 𝒞_i(1) · ω/ℐ_i(1),   m'_i = ℳ_i(1) · ω/ℐ_i(1)     (one thread: scaled down)

    The unscaled charge for τ'_i > 1 over-estimates on purpose; we keep it.
    """
    threads = model.threads_for(omega, interpolate=interpolate)
    if threads > 1:
        return Bundle(threads, model.cpu(threads), model.memory(threads))
    scale = omega / model.rate(1)
    return Bundle(threads, model.cpu(1) * scale, model.memory(1) * scale)


def mba_task(
    task: str, model: PerformanceModel, omega: float, *, interpolate: bool = False
) -> TaskAllocation:
    """Algorithm 3 for one task at input rate ω_i::

        while ω_i ≥ ω̂_i:  τ_i += τ̂_i;  ω_i −= ω̂_i;  c_i += 1.00;  m_i += 1.00     (n_full_i times)
        if ω_i > 0:       add the partial bundle (τ'_i, c'_i, m'_i)               (residual_bundle)

    n_full_i is ``⌊ω_i/ω̂_i + 1e-9⌋`` rather than repeated subtraction (no float drift); an exact
    multiple of ω̂_i leaves no residual (the loop's ``≥``). ``interpolate`` selects the integer-
    interpolated 𝒯_i for the residual; the default is the measured grid.
    """
    hat_omega, hat_tau = model.peak_rate, model.peak_threads
    full = math.floor(omega / hat_omega + EPS) if omega > 0 else 0
    left = omega - full * hat_omega
    residual = residual_bundle(model, left, interpolate=interpolate) if left > EPS * omega else None
    threads = full * hat_tau + (residual.threads if residual else 0)
    return TaskAllocation(
        task=task,
        rate=omega,
        threads=threads,
        cpu=full * 1.0 + (residual.cpu if residual else 0.0),
        memory=full * 1.0 + (residual.memory if residual else 0.0),
        full_bundles=full,
        bundle_threads=hat_tau,
        residual=residual,
        single_cpu=model.cpu(1),
        single_memory=model.memory(1),
    )


def allocate_mba(
    graph: TaskGraph,
    omega: float,
    models: Mapping[str, PerformanceModel],
    fixed: Mapping[str, tuple[float, float]] | None = None,
    *,
    interpolate: bool = False,
) -> Allocation:
    """AllocateMBA(𝒢, Ω): ⟨τ_i, c_i, m_i⟩ per task and ρ = max(⌈Σ c_i⌉, ⌈Σ m_i⌉).

    ``fixed`` maps the source and sink to their (CPU, memory), mapped but not part of ρ.
    """
    size = partial(mba_task, interpolate=interpolate)
    return allocate_each(Allocator.MBA, graph, omega, models, fixed=fixed or {}, size=size)
