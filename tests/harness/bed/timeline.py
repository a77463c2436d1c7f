"""What Auto mode did under a moving load: one observation every few seconds, and the figures the
end-to-end test asserts on (pure: the recording lives in the runner, these read a list of ticks).

A :class:`Tick` is what was seen at one moment: the load generator's rate and count, the sinks'
executed tuples/s since the previous tick (Nimbus), the consumer group's lag (Prometheus), and the
operator's status (applied budget, the budget Auto wants, the units that run). From a list of them:

* :func:`applied_changes`: when ``status.appliedBudget`` moved, and to what;
* :func:`reaction_s`: from a load change to the first applied change after it;
* :func:`converged_at`: the first moment from which the sinks keep up with the produced rate, i.e.
  ``sink ≥ (1 − tolerance) · produced`` for ``hold`` consecutive ticks;
* :func:`lag_peak` and :func:`drained_at`: the lag's highest value and when it fell back below a
  small floor after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Tick:
    """One observation (``at``: Unix seconds)."""

    at: float
    produced_rate: float
    produced: int
    sink_rate: float | None
    lag: float | None
    applied_budget: int | None
    desired_budget: int | None
    units: Mapping[str, int] = field(default_factory=dict)
    reason: str = ""
    #: ``status.autoscaler.scaleInSince`` as Unix seconds: since when Auto has wanted fewer units.
    scale_in_since: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def applied_changes(ticks: Sequence[Tick]) -> list[tuple[float, int]]:
    """(when, budget) each time the applied budget changed. The topology starts at its baseline
    (budget 0) whether or not the operator has written ``appliedBudget`` yet: on a slow machine its
    first fresh profile can come after the load has risen, and its first write is then the scale-out
    itself (``None → 2``); ticks without a reading are skipped."""
    changes, last = [], 0
    for tick in ticks:
        if tick.applied_budget is None:
            continue
        if tick.applied_budget != last:
            changes.append((tick.at, tick.applied_budget))
        last = tick.applied_budget
    return changes


def reaction_s(ticks: Sequence[Tick], load_change_at: float) -> float | None:
    """Seconds from a load change to the first applied budget change after it (None: none)."""
    after = [at for at, _ in applied_changes(ticks) if at >= load_change_at]
    return after[0] - load_change_at if after else None


def changes_between(ticks: Sequence[Tick], start: float, end: float) -> list[tuple[float, int]]:
    """The applied changes in ``[start, end]``."""
    return [(at, b) for at, b in applied_changes(ticks) if start <= at <= end]


def converged_at(ticks: Sequence[Tick], after: float, tolerance: float = 0.1, hold: int = 3) -> float | None:
    """The first tick at or after ``after`` from which, for ``hold`` ticks in a row, the sinks ran at
    least ``1 − tolerance`` of the produced rate (None: never)."""
    window = [t for t in ticks if t.at >= after]
    for i in range(len(window) - hold + 1):
        run = window[i : i + hold]
        if all(t.sink_rate is not None and t.sink_rate >= (1 - tolerance) * t.produced_rate for t in run):
            return run[0].at
    return None


def lag_peak(ticks: Sequence[Tick], start: float, end: float) -> float:
    """The highest lag in ``[start, end]`` (0 without lag readings)."""
    return max((t.lag for t in ticks if start <= t.at <= end and t.lag is not None), default=0.0)


def lag_peak_at(ticks: Sequence[Tick], start: float, end: float) -> float | None:
    """When the lag was highest in ``[start, end]`` (the first such tick; None without readings)."""
    window = [t for t in ticks if start <= t.at <= end and t.lag is not None]
    return max(window, key=lambda t: t.lag or 0.0).at if window else None


def drained_at(ticks: Sequence[Tick], after: float, floor: float) -> float | None:
    """The first tick after the lag's peak (from ``after`` on) whose lag is at most ``floor``."""
    window = [t for t in ticks if t.at >= after and t.lag is not None]
    if not window:
        return None
    peak = max(range(len(window)), key=lambda i: window[i].lag or 0.0)
    return next((t.at for t in window[peak:] if t.lag is not None and t.lag <= floor), None)


def wished_in_since(ticks: Sequence[Tick], start: float, end: float) -> list[float]:
    """The distinct moments, recorded in ``[start, end]``, from which Auto wanted to scale in."""
    return sorted({t.scale_in_since for t in ticks if start <= t.at <= end and t.scale_in_since is not None})


def scaled_in(ticks: Sequence[Tick], fall_at: float) -> bool:
    """The newest tick comes after the fall and its applied budget is below the highest applied before."""
    if not ticks or ticks[-1].at < fall_at or ticks[-1].applied_budget is None:
        return False
    highest = max((b for t in ticks[:-1] if (b := t.applied_budget) is not None), default=0)
    return ticks[-1].applied_budget < highest
