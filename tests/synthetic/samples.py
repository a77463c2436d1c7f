"""Synthetic metric samples generated from a known profile (tests and the benchmark).

The measured rates are the planner's **backpressure** model rates for the profile (a congested bolt
processes exactly its capacity, its upstream and the spout are throttled), while ``offered_total``
carries the spout's true offered rate, as the rate-controlled spout exports it. Each executor's
execute latency is its service time, and its ``busy_seconds_total`` counter grows by executed ×
latency, so busy time reveals capacity even where rates are capped. ``busy_counter=False`` writes
samples as they were before that counter existed; ``gauge_scale`` makes the 10-minute gauges
(latency, capacity) under-read busy time, as Storm's do for up to 10 minutes after a start.

Optional: a rebalance (new executor counts, new executor ids, counters reset by the worker restart;
with no new counts, a restart: the same executor ids, counters reset)
followed by a transient in which rates overshoot and latencies double, multiplicative noise on every
interval, skew between the executors of a component, and a system stream (``__ack_ack``) that must
not count as data output. Generation is vectorised (NumPy → Arrow), a few million rows per second.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from stormscale.planner import FlowModel, Topology, evaluate
from stormscale.samples.names import (
    ACKED,
    BUSY,
    CAPACITY,
    EMITTED,
    EXECUTE_LATENCY,
    EXECUTED,
    EXECUTORS,
    FAILED,
    OFFERED,
    PROCESS_LATENCY,
    TASKS,
    TRANSFERRED,
    WORKERS,
)
from stormscale.samples.schema import SCHEMA

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Scenario:
    """What to simulate. Times are seconds from ``start``."""

    duration_s: float = 1800.0
    step_s: float = 10.0
    rebalance_at_s: float | None = None
    units_after: Mapping[str, int] = field(default_factory=dict)
    transient_s: float = 90.0
    noise: float = 0.01
    skew: float = 0.0
    offered_scale: float = 1.0
    offered_metric: bool = True
    default_tasks: int = 16
    system_stream: bool = True
    busy_counter: bool = True
    gauge_scale: float = 1.0
    seed: int = 0
    start: datetime = EPOCH
    name: str | None = None


@dataclass
class _Series:
    """Columns of the series of one phase (one entry per series), and their per-second levels."""

    component: list[str] = field(default_factory=list)
    executor: list[str] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    stream: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    level: list[float] = field(default_factory=list)
    counter: list[bool] = field(default_factory=list)
    transient: list[float] = field(default_factory=list)

    def add(
        self,
        component: str,
        executor: str,
        metric: str,
        level: float,
        *,
        counter: bool,
        stream: str = "",
        source: str = "",
        transient: float = 1.0,
    ) -> None:
        self.component.append(component)
        self.executor.append(executor)
        self.metric.append(metric)
        self.stream.append(stream)
        self.source.append(source)
        self.level.append(level)
        self.counter.append(counter)
        self.transient.append(transient)


def tasks_of(topology: Topology, scenario: Scenario) -> dict[str, int]:
    """Task count per component: its ``maxUnits``, or ``default_tasks`` when unbounded."""
    units_after = {c.id: scenario.units_after.get(c.id, c.units) for c in topology.components}
    out = {}
    for c in topology.components:
        bound = c.max_units if c.max_units is not None else scenario.default_tasks
        out[c.id] = max(bound, c.units, units_after[c.id], 1)
    return out


def executor_ids(first_task: int, tasks: int, executors: int) -> list[str]:
    """Storm's executor ids: ``tasks`` consecutive task ids split into contiguous ranges, larger first.

    >>> executor_ids(3, 5, 2)
    ['[3-5]', '[6-7]']
    """
    base, extra = divmod(tasks, executors)
    out, task = [], first_task
    for i in range(executors):
        size = base + (1 if i < extra else 0)
        out.append(f"[{task}-{task + size - 1}]")
        task += size
    return out


def scaled(topology: Topology, offered_scale: float) -> Topology:
    """The topology with every spout's ``outputPerUnit`` multiplied by ``offered_scale``."""
    comps = tuple(
        dataclasses.replace(c, output_per_unit=c.output_per_unit * offered_scale) if c.is_spout else c
        for c in topology.components
    )
    return Topology(topology.name, comps)


def _weights(n: int, skew: float) -> npt.NDArray[np.float64]:
    raw = np.ones(n)
    raw[0] += skew
    weights: npt.NDArray[np.float64] = raw / raw.sum()
    return weights


def _phase_series(
    topology: Topology, units: Mapping[str, int], tasks: Mapping[str, int], scenario: Scenario
) -> _Series:
    """Every series of one phase with its rate (counters, tuples/s) or value (gauges)."""
    state = evaluate(topology, tuple(units[c.id] for c in topology.components), FlowModel.BACKPRESSURE)
    outputs = {c.id: f.output for c, f in zip(topology.components, state.components, strict=True)}
    series = _Series()
    first_task = 1
    for v, comp in enumerate(topology.components):
        n = units[comp.id]
        ids = executor_ids(first_task, tasks[comp.id], n)
        first_task += tasks[comp.id]
        w = _weights(n, scenario.skew)
        series.add(comp.id, "", EXECUTORS, n, counter=False)
        series.add(comp.id, "", TASKS, tasks[comp.id], counter=False)
        if comp.is_spout:
            if scenario.offered_metric:
                series.add(comp.id, "", OFFERED, n * comp.output_per_unit, counter=True)
            for e, share in zip(ids, w, strict=True):
                out = outputs[comp.id] * share
                for metric in (EMITTED, TRANSFERRED):
                    series.add(comp.id, e, metric, out, counter=True, stream="default", transient=1.4)
                series.add(comp.id, e, ACKED, out, counter=True, transient=1.4)
                series.add(comp.id, e, FAILED, 0.0, counter=True)
            continue
        latency_ms = 1000.0 / (comp.capacity_per_unit * n * float(w.max()))
        for e, share in zip(ids, w, strict=True):
            executed = 0.0
            for p, fraction in topology.parents[v]:
                parent = topology.components[p].id
                rate = outputs[parent] * fraction * share
                executed += rate
                series.add(
                    comp.id, e, EXECUTED, rate, counter=True, stream="default", source=parent, transient=1.4
                )
            for metric in (EMITTED, TRANSFERRED):
                out = executed * comp.selectivity
                series.add(comp.id, e, metric, out, counter=True, stream="default", transient=1.4)
            if scenario.system_stream:
                series.add(comp.id, e, EMITTED, executed, counter=True, stream="__ack_ack", transient=1.4)
            series.add(comp.id, e, ACKED, executed, counter=True, transient=1.4)
            series.add(comp.id, e, FAILED, 0.0, counter=True)
            busy = executed * latency_ms / 1000.0  # busy seconds per second
            if scenario.busy_counter:
                series.add(comp.id, e, BUSY, busy, counter=True, transient=1.4 * 2.0)
            gauge = scenario.gauge_scale
            series.add(comp.id, e, EXECUTE_LATENCY, latency_ms * gauge, counter=False, transient=2.0)
            series.add(comp.id, e, PROCESS_LATENCY, latency_ms * 1.1, counter=False, transient=2.0)
            series.add(comp.id, e, CAPACITY, busy * gauge, counter=False)
    series.add("", "", WORKERS, sum(units.values()), counter=False)
    return series


def _phase_values(
    series: _Series,
    times: npt.NDArray[np.float64],
    transient_until: float,
    scenario: Scenario,
    rng: np.random.Generator,
) -> npt.NDArray[np.float64]:
    """Values, shape (series, times): counters integrate noisy rates from 0, gauges are noisy levels."""
    level = np.asarray(series.level)[:, None]
    boost = np.where(times[None, :] < transient_until, np.asarray(series.transient)[:, None], 1.0)
    noisy = level * boost * (1.0 + scenario.noise * rng.standard_normal((len(series.level), len(times))))
    counter = np.asarray(series.counter)[:, None]
    steps = np.diff(times, prepend=times[0])[None, :]
    increments = np.clip(noisy, 0.0, None) * steps
    counters = np.cumsum(increments, axis=1)
    exact = np.isin(np.asarray(series.metric), [EXECUTORS, TASKS, WORKERS])[:, None]
    gauges = np.where(exact, level, np.clip(noisy, 0.0, None))
    values: npt.NDArray[np.float64] = np.where(counter, counters, gauges)
    return values


def _strings(values: list[str], repeat: int) -> pa.Array[Any]:
    uniques, codes = np.unique(np.asarray(values, dtype=object), return_inverse=True)
    indices: Any = pa.array(np.repeat(codes.astype(np.int32), repeat), pa.int32())
    return pa.DictionaryArray.from_arrays(indices, pa.array(list(uniques), pa.string())).cast(pa.string())


def _table(
    name: str,
    series: _Series,
    times: npt.NDArray[np.float64],
    values: npt.NDArray[np.float64],
    start: datetime,
) -> pa.Table:
    k = len(times)
    ms = (start.timestamp() + times) * 1000.0
    ts = pa.array(np.tile(ms.round().astype(np.int64), len(series.level)), pa.timestamp("ms", tz="UTC"))
    columns: dict[str, Any] = {
        "ts": ts,
        "topology": _strings([name] * len(series.level), k),
        "component": _strings(series.component, k),
        "executor": _strings(series.executor, k),
        "metric": _strings(series.metric, k),
        "stream": _strings(series.stream, k),
        "source": _strings(series.source, k),
        "value": pa.array(values.reshape(-1)),
    }
    return pa.table(columns, schema=SCHEMA)


def generate(topology: Topology, scenario: Scenario) -> pa.Table:
    """Samples of ``topology`` (a planner profile) under ``scenario``, in the contract's Arrow schema."""
    rng = np.random.default_rng(scenario.seed)
    truth = scaled(topology, scenario.offered_scale)
    tasks = tasks_of(topology, scenario)
    before = {c.id: c.units for c in topology.components}
    after = {**before, **scenario.units_after}
    end = scenario.duration_s
    cut = scenario.rebalance_at_s if scenario.rebalance_at_s is not None else end + scenario.step_s
    phases = [(0.0, min(cut, end + scenario.step_s), before, -1.0)]
    if cut <= end:
        phases.append((cut, end + scenario.step_s, after, cut + scenario.transient_s))
    tables = []
    for begin, stop, units, transient_until in phases:
        times = np.arange(begin, stop - 1e-9, scenario.step_s)
        series = _phase_series(truth, units, tasks, scenario)
        values = _phase_values(series, times, transient_until, scenario, rng)
        tables.append(_table(scenario.name or topology.name, series, times, values, scenario.start))
    return pa.concat_tables(tables)


def structure(topology: Topology, scenario: Scenario) -> dict[str, Any]:
    """The structure document (samples.md) of ``topology`` as the scenario deploys it."""
    tasks = tasks_of(topology, scenario)
    return {
        "topology": scenario.name or topology.name,
        "components": [
            {
                "id": c.id,
                "kind": c.kind.value,
                "children": [cid for cid, _ in c.children],
                "tasks": tasks[c.id],
            }
            for c in topology.components
        ],
    }
