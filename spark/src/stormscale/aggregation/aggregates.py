"""The small per-topology results both implementations produce, and the only rows the driver collects.

A few rows per component: window rates, busy fractions and, for every estimated field, the number of
intervals it rests on and the spread of its per-interval values. :mod:`stormscale.aggregation.profiles`
turns them into the profile JSON, so the Spark job and the single-process implementation share it.
Nothing here imports PySpark (the operator image uses the single-process engine without it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

T = TypeVar("T")

#: Where a busy fraction came from, best first: the pod's CPU over its limit (where one component
#: runs per pod; it does not depend on where a tuple waits), the busy-seconds counter (exact over any
#: interval, but a multilang bolt's execute time is only the hand-off into its pipe), the
#: execute-latency gauge (Storm's 10-minute mean, which lags a start or a rebalance) or Storm's
#: 10-minute capacity gauge. A component records the worst source any of its intervals used.
BUSY_CPU, BUSY_COUNTER, BUSY_LATENCY, BUSY_GAUGE = 3, 2, 1, 0
BUSY_SOURCES = {
    BUSY_CPU: "pod-cpu",
    BUSY_COUNTER: "busy-counter",
    BUSY_LATENCY: "execute-latency",
    BUSY_GAUGE: "capacity-gauge",
}


@dataclass(frozen=True, slots=True)
class WindowStats:
    """The window of one topology: its samples, the last change, and the steady part after it.

    Times are seconds since the epoch (UTC), so no time zone conversion happens on collect.
    """

    topology: str
    first_ts: float
    last_ts: float
    changed_at: float | None
    steady_start: float
    intervals: int
    duplicates: int


@dataclass(frozen=True, slots=True)
class ComponentStats:
    """Window estimates of one component (rates in tuples/s over the steady window).

    ``*_n`` are the per-interval sample counts and ``*_cv`` the relative spreads (standard deviation
    over mean) of the per-interval values of the same quantity. ``busy_*`` are the busy fractions
    the capacity rests on (the pod's CPU where an executor has it, else Storm's), ``storm_busy_*``
    Storm's alone.
    """

    topology: str
    component: str
    executors_seen: int
    units: float | None
    tasks: float | None
    executed_rate: float | None
    emitted_rate: float | None
    offered_rate: float | None
    busy_max: float | None
    busy_mean: float | None
    busy_source: int
    #: Storm's own busy time (counter, latency or gauge) beside the pod's CPU: the busiest executor's
    #: fraction and its worst source, for the profile's comparison of the two.
    storm_busy_max: float | None
    storm_busy_source: int
    rate_n: int
    rate_cv: float | None
    selectivity_n: int
    selectivity_cv: float | None
    capacity_n: int
    capacity_cv: float | None
    offered_n: int
    offered_cv: float | None
    emitted_n: int
    emitted_cv: float | None
    #: The distribution of the component's offered and emitted rates over the window's steps
    #: (:func:`~stormscale.aggregation.formulas.period_rate`, summed over its series at each step):
    #: the median, the 95th percentile (linear interpolation) and the largest, the steps they rest
    #: on, and the steps' median length in seconds.
    offered_p50: float | None = None
    offered_p95: float | None = None
    offered_max: float | None = None
    offered_steps: int = 0
    emitted_p50: float | None = None
    emitted_p95: float | None = None
    emitted_max: float | None = None
    emitted_steps: int = 0
    step_s: float | None = None


#: The counters whose per-step distribution the aggregates carry (a spout's demand is one of them).
DEMAND_COUNTERS = ("offered", "emitted")
#: The distribution's fields per counter, and their value when a component has no step.
DEMAND_FIELDS = ("p50", "p95", "max", "steps")


def no_demand_steps() -> dict[str, Any]:
    """The distribution's fields of a component without a single step (no counter moved twice)."""
    out: dict[str, Any] = {
        f"{c}_{f}": (0 if f == "steps" else None) for c in DEMAND_COUNTERS for f in DEMAND_FIELDS
    }
    return out | {"step_s": None}


@dataclass(frozen=True, slots=True)
class EdgeStats:
    """Tuples/s the child executed from the parent, and the spread of the per-interval fraction."""

    topology: str
    child: str
    parent: str
    rate: float
    fraction_n: int
    fraction_cv: float | None


@dataclass(frozen=True, slots=True)
class Aggregates:
    """Everything either engine hands to the profile builder: a few rows per component, no raw sample."""

    windows: dict[str, WindowStats]
    components: dict[str, dict[str, ComponentStats]]
    edges: dict[str, list[EdgeStats]]


def from_row(cls: type[T], row: Mapping[str, Any]) -> T:
    """Build an aggregate from a collected row (or a dict with the same keys)."""
    return cls(**{f.name: row[f.name] for f in fields(cls)})  # type: ignore[arg-type]
