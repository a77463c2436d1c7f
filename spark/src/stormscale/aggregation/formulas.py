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
