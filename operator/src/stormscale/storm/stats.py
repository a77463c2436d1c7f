"""Pure arithmetic on Nimbus's stats: per-executor capacity and latency, per-component counts, checks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from stormscale.storm.errors import RequestRejectedError
from stormscale.storm.model import (
    ALL_TIME,
    SYSTEM_COMPONENT,
    TEN_MINUTES,
    Executor,
    RebalanceRequest,
    StreamId,
    TopologyInfo,
    WindowStats,
)

CAPACITY_WINDOW_S = 600


def weighted_mean(counts: Mapping[StreamId, int], means: Mapping[StreamId, float]) -> float:
    """The count-weighted mean of per-stream means (0 when nothing was counted)."""
    total = sum(counts.get(s, 0) for s in means)
    if total <= 0:
        return 0.0
    return sum(counts.get(s, 0) * m for s, m in means.items()) / total


def capacity(stats: WindowStats, uptime_s: int) -> float:
    """Storm's capacity: Σ executed × mean execute latency over the 10-minute window, per ms of uptime."""
    window_ms = min(max(uptime_s, 0), CAPACITY_WINDOW_S) * 1000
    if window_ms <= 0:
        return 0.0
    busy_ms = sum(stats.executed.get(s, 0) * m for s, m in stats.execute_ms_avg.items())
    return busy_ms / window_ms


def busy_seconds(stats: WindowStats) -> float:
    """Time spent executing tuples over a window, in seconds, to the millisecond::

        busy_s = round(Σ_s executed_s · execute_ms_avg_s) / 1000

    Storm records whole-millisecond latencies and counts sampled tuples ``1/sample_rate`` times, so
    the product is (rate × Σ latencies): a number of milliseconds that only grows. Rounding to whole
    milliseconds removes the floating-point noise that could make it step back, which a counter
    reader would take for a reset.
    """
    busy_ms = sum(stats.executed.get(s, 0) * m for s, m in stats.execute_ms_avg.items())
    return round(busy_ms) / 1000.0


def executor_busy_seconds(executor: Executor) -> float:
    """All-time busy seconds of one bolt executor: a counter that restarts at 0 with the executor."""
    return busy_seconds(executor.window(ALL_TIME))


def executor_capacity(executor: Executor) -> float:
    """Capacity of one bolt executor, as the UI computes it."""
    return capacity(executor.window(TEN_MINUTES), executor.uptime_s)


def execute_latency_ms(executor: Executor) -> float:
    """Mean execute latency over the 10-minute window."""
    stats = executor.window(TEN_MINUTES)
    return weighted_mean(stats.executed, stats.execute_ms_avg)


def process_latency_ms(executor: Executor) -> float:
    """Mean process latency over the 10-minute window."""
    stats = executor.window(TEN_MINUTES)
    return weighted_mean(stats.executed, stats.process_ms_avg)


def executors_per_component(info: TopologyInfo) -> dict[str, int]:
    """How many executors each user component runs."""
    return dict(Counter(e.component for e in info.user_executors()))


def tasks_per_component(info: TopologyInfo) -> dict[str, int]:
    """How many tasks each user component has (its executors' task ranges together)."""
    tasks: Counter[str] = Counter()
    for e in info.user_executors():
        tasks[e.component] += e.tasks
    return dict(tasks)


def rebalance_tasks(info: TopologyInfo) -> dict[str, int]:
    """Tasks per component a rebalance may set executors of: user components and Storm's system ones
    (``__acker``, ``__eventlogger``, ...), but not ``__system`` (Storm runs one in every worker)."""
    tasks: Counter[str] = Counter()
    for e in info.executors:
        if e.component != SYSTEM_COMPONENT:
            tasks[e.component] += e.tasks
    return dict(tasks)


def rebalance_problems(request: RebalanceRequest, tasks: Mapping[str, int]) -> list[str]:
    """Why ``request`` cannot be applied to a topology with ``tasks`` per component (empty if it can)."""
    problems = []
    for component, count in sorted(request.executors.items()):
        if component not in tasks:
            problems.append(f"unknown component {component!r} (known: {', '.join(sorted(tasks))})")
        elif not 1 <= count <= tasks[component]:
            problems.append(
                f"{component!r}: {count} executors outside 1..{tasks[component]} (its task count)"
            )
    if request.workers is not None and request.workers < 1:
        problems.append(f"{request.workers} workers: at least 1 is needed")
    return problems


def check_rebalance(
    name: str, request: RebalanceRequest, tasks: Mapping[str, int], more: Sequence[str] = ()
) -> None:
    """Raise RequestRejectedError naming every problem of ``request`` (and the ``more`` found elsewhere)."""
    problems = [*rebalance_problems(request, tasks), *more]
    if problems:
        raise RequestRejectedError(f"rebalance of {name} refused: " + "; ".join(problems))
