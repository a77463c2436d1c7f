"""Health and overload predicates (the multi-level elasticity paper's §2.2, §3.1, §4).

::

    health_T(c)     = processed_T(c) / received_T(c)                   (§2.2)
    received_T(op)  = Σ_{p ∈ pred(op)} emitted_T(p → op)               (§4; × k_op for allGrouping)
    health_T(spout) = emitted_T(spout) / (targetRate · T)              (§5.4, CoMD; inferred formula)
    congested(c)    ⇔ health_T(c) < minHealth                          (strict; minHealth = 0.9)
    overloaded(n)   ⇔ totalCPU_T(n) > θ_cpu ∨ totalMem_T(n) > θ_mem     (strict; θ = 0.9)

Health is undefined (``None``: no decision) when fewer than ``minSamples`` tuples were received
(default 100; a window that received nothing, too).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MIN_HEALTH = 0.9
CPU_THRESHOLD = 0.9
MEM_THRESHOLD = 0.9
MIN_SAMPLES = 100.0


@dataclass(frozen=True)
class Thresholds:
    """``minHealth``, ``θ_cpu``, ``θ_mem`` (0.9 in the paper) and ``minSamples`` (ours)."""

    min_health: float = MIN_HEALTH
    cpu: float = CPU_THRESHOLD
    mem: float = MEM_THRESHOLD
    min_samples: float = MIN_SAMPLES


PAPER_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Stream:
    """Tuples a predecessor emitted during T on a stream ``op`` subscribes to (system streams excluded)."""

    emitted: float
    all_grouping: bool = False


def received(streams: Iterable[Stream], instances: int) -> float:
    """``received_T(op) = Σ emitted_T(p → op)``; allGrouping reaches each of the ``k_op`` instances."""
    return sum(s.emitted * (instances if s.all_grouping else 1) for s in streams)


def health(processed: float, received_: float, min_samples: float = MIN_SAMPLES) -> float | None:
    """``processed / received``, or ``None`` when ``received < max(minSamples, 1)``."""
    if received_ < max(min_samples, 1.0):
        return None
    return processed / received_


def instance_health(executed: float, operator_received: float, instances: int) -> float | None:
    """Diagnostics only (Storm counts no emits per destination): ``executed_i / (received_T(op) / k_op)``,
    assuming §3's even partition."""
    share = operator_received / instances
    return executed / share if share > 0 else None


def spout_health(emitted: float, target_rate: float, period: float) -> float:
    """``emitted_T(spout) / (targetRate · T)`` (§5.4; e.g. 18000 / (500 · 60) = 0.6)."""
    return emitted / (target_rate * period)


def is_congested(health_: float | None, min_health: float = MIN_HEALTH) -> bool:
    """``health < minHealth`` (strict); undefined health is never congested."""
    return health_ is not None and health_ < min_health


def is_overloaded(cpu: float, mem: float, thresholds: Thresholds = PAPER_THRESHOLDS) -> bool:
    """``isOverloaded(n) ⇔ totalCPU(n) > θ_cpu ∨ totalMem(n) > θ_mem`` (§3.1, strict)."""
    return cpu > thresholds.cpu or mem > thresholds.mem
