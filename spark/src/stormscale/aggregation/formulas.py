"""The estimators' arithmetic, shared by the Spark job and the single-process implementation.

Every function works on floats, NumPy arrays and Spark columns alike (only ``+ - * /``), so each
formula is written once. Conditionals (counter resets) are spelled per backend next to a reference
to the formula here.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

X = TypeVar("X")


def counter_increase(
    previous: npt.NDArray[np.float64], current: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Increase of a cumulative counter over one interval, across resets (Prometheus ``increase``)::

    Δ = v − v_prev   if v ≥ v_prev
    Δ = v            otherwise (a worker restart reset the counter to 0, then it counted v)
    """
    return np.where(current >= previous, current - previous, current)


def rate(increase: X, seconds: X) -> X:
    """Window rate of a counter: ``r = ΣΔ / Σdt`` (time-weighted, robust to uneven scrapes)."""
    return increase / seconds  # type: ignore[operator, no-any-return]


def busy_from_counter(busy_seconds: X, seconds: X) -> X:
    """Busy fraction of one executor over an interval from its busy-time counter::

    b = Δbusy_seconds / dt

    ``Δbusy_seconds`` is the counter's increase (:func:`counter_increase`), so it covers exactly the
    interval, however long ago the executor started.
    """
    return busy_seconds / seconds  # type: ignore[operator, no-any-return]


def busy_from_cpu(cpu_seconds: X, seconds: X, limit_cores: X) -> X:
    """Busy fraction of one executor over an interval from its pod's CPU (source ``pod-cpu``)::

    b = Δcpu_seconds / dt / limit_cores

    ``Δcpu_seconds`` is the increase of the CPU the pod's container used (cAdvisor's
    ``container_cpu_usage_seconds_total``) and ``limit_cores`` its CPU limit: a unit is busy when its
    container uses its whole quota. Both are the executor's share when k executors of one component
    share a pod (each /k), so ``b`` is the pod's busy fraction. It counts everything the container
    runs for the component (a multilang subprocess, the worker's own threads), and does not depend
    on where a tuple waits, which Storm's execute latency does.
    """
    return cpu_seconds / seconds / limit_cores  # type: ignore[operator, no-any-return]


def busy_disagrees(busy_cpu: float, busy_storm: float) -> bool:
    """Whether the pod's CPU and Storm's own busy time tell different stories about a component::

    |b_cpu − b_storm| > DISAGREE_ABSOLUTE  and  |b_cpu − b_storm| / max(b_cpu, b_storm) > DISAGREE_RELATIVE

    ``b`` are the busiest executors' fractions. The absolute floor (0.15 of a unit) leaves room for
    what the container runs besides ``execute`` (the worker's JVM, its transfer and acker threads, a
    multilang process's serialisation), which puts the CPU's figure above Storm's on any bolt; the
    relative floor (25 %, i.e. capacities more than 4/3 apart) keeps two readings of a saturated bolt
    (0.8 against 1.0) from being flagged. What is left is the case that matters: a bolt Storm reads
    as nearly idle while its pod works (a multilang bolt's hand-off latency), whose capacity from
    Storm would be several times too high.
    """
    gap = abs(busy_cpu - busy_storm)
    larger = max(busy_cpu, busy_storm)
    return gap > DISAGREE_ABSOLUTE and larger > 0 and gap / larger > DISAGREE_RELATIVE


#: :func:`busy_disagrees`'s thresholds: a gap of more than 0.15 of a unit ...
DISAGREE_ABSOLUTE = 0.15
#: ... and of more than 25 % of the larger busy fraction.
DISAGREE_RELATIVE = 0.25


def span_rate(increase_in_span: X, seconds_in_span: X) -> X:
    """Window rate of a counter over whole periods of its own updates::

        r = Σ_{t1 < t ≤ t2} Δ / Σ_{t1 < t ≤ t2} dt

    ``t1`` and ``t2`` are the first and last interval ends in the window at which the counter moved
    (Δ > 0); with fewer than two such moves, every interval counts (``r = ΣΔ / Σdt``). Storm's
    counters move at heartbeats (``executor.metrics.frequency.secs``, 60 s by default), each
    executor's at its own time, while scrapes come every few seconds: over a window that is not a
    whole number of heartbeats, ``ΣΔ / Σdt`` counts one heartbeat more or less of one counter than
    of another (emitted against executed, a child's executed against its parent's emitted, counts
    against the kubelet's CPU), up to one period over the window (a third over a 3-minute window).
    Between two of its own moves a counter holds exactly the counts of that time, so ratios of rates
    (selectivity, edge fractions, capacity) no longer depend on how the heartbeats fall. The
    conditionals (which intervals are in the span) are spelled per backend.
    """
    return increase_in_span / seconds_in_span  # type: ignore[operator, no-any-return]


def busy_fraction(executed: X, latency_ms: X, seconds: X) -> X:
    """Busy fraction of one executor over an interval (Storm's ``capacity``, over our own window)::

    b = Δexecuted · execute_latency_ms / 1000 / dt

    The fallback without a busy-time counter: the latency is Storm's 10-minute mean, not the interval's.
    """
    return executed * latency_ms / 1000.0 / seconds  # type: ignore[operator, no-any-return]


def capacity_per_unit(rate_total: X, units: X, busy_max: X) -> X:
    """Tuples/s one unit of a bolt processes when saturated, with skew::

        c = R / (n · max_e b_e)

    ``R`` is the component's executed rate, ``n`` its executors (units) and ``b_e`` the busy
    fraction of executor e. The busiest executor saturates first, at ``R / max_e b_e`` for the whole
    component (its share of the input stays the same), so that is the component's capacity and
    ``c`` its per-unit share. Without skew (every ``b_e = b``) this is each executor's
    ``r_e / b_e``, the DS2 "true processing rate".
    """
    return rate_total / (units * busy_max)  # type: ignore[operator, no-any-return]


def selectivity(emitted_rate: X, executed_rate: X) -> X:
    """Output tuples per processed tuple: ``ρ = emitted / executed`` (data streams only)."""
    return emitted_rate / executed_rate  # type: ignore[operator, no-any-return]


def edge_fraction(child_executed_from_parent: X, parent_emitted: X) -> X:
    """Share of a parent's output its child receives: ``f = executed_{child←parent} / emitted_parent``."""
    return child_executed_from_parent / parent_emitted  # type: ignore[operator, no-any-return]


def output_per_unit(offered_rate: float, units: int) -> float:
    """A spout's offered load per unit: ``s = offered / n`` (demand, even when backpressure throttles it)."""
    return offered_rate / units


def fold_fanout(
    scale: float, fractions: dict[str, float], noise: float = 0.05
) -> tuple[float, dict[str, float], float]:
    """Fold duplication (several subscribers of one stream, all-grouping) into the output.

    The format's fractions split a component's output (Σf ≤ 1). Storm copies a stream to every
    subscriber, so measured fractions can sum above 1. The demand each child sees, ``scale · f_c``,
    is what matters, so with ``F = Σf > 1 + noise`` we write ``scale · F`` and ``f_c / F``. A sum
    just above 1 (``≤ 1 + noise``) is measurement noise on a plain split: only the fractions are
    normalised. Returns the new scale, the new fractions and ``F``.
    """
    total = sum(fractions.values())
    if total <= 1.0:
        return scale, fractions, total
    normalised = {c: f / total for c, f in fractions.items()}
    return (scale if total <= 1.0 + noise else scale * total), normalised, total


def period_rate(increase_at_next_move: X, seconds_between_moves: X) -> X:
    """A counter's rate at one step of the window: the rate of the update period that holds it::

        r_t = Δ_{t2} / (t2 − t1)      t1 < t ≤ t2

    ``t1`` and ``t2`` are the counter's moves (interval ends with Δ > 0) just before ``t`` and at or
    after it, ``Δ_{t2}`` the increase at ``t2``. A counter that moves at every scrape gives each step's
    own ``Δ_t / dt_t``; one that moves at Storm's heartbeats (every 60 s by default, each executor at
    its own time) gives each step the rate of the heartbeat period around it, not ``0, 0, …, 6×``
    on 10-second steps. Steps before a series' first move or after its last have none. A
    component's rate at a step is the sum over its series (executors, or the component-level
    ``offered_total``) where every series has one; the demand's distribution is the median, 95th
    percentile (linear interpolation between order statistics) and maximum of those sums. The window
    choices (which steps, which series) are spelled per backend.
    """
    return increase_at_next_move / seconds_between_moves  # type: ignore[operator, no-any-return]
