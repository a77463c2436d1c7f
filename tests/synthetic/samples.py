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

Also optional, for the profile's busy time and rates: per-executor CPU of the bolts' pods
(``cpu_components``: ``cpu_seconds_total`` growing at the true busy fraction × ``cpu_limit_cores``,
as :mod:`stormscale.storm.samples.cpu` writes them), Storm-side busy time that lies
(``storm_busy_scale``: a multilang bolt's execute latency is the hand-off into its pipe, so latency,
busy counter and capacity gauge read that factor of the truth), Storm's acking and metrics streams
(``acking``: ``__ack_init`` and ``__ack_ack`` emitted; ``metrics_streams``: ``__metrics`` emitted
and ``__tick`` executed from ``__system``) and bolts' emitted counters that move only at heartbeats
of their own (``emitted_period_s``/``emitted_phase_s``: the value at ``t`` is the count at the last
``phase + k·period ≤ t``), out of step with their executed counters; and a load that bursts
(``load_wave``: every counter's rate times a per-step multiplier, repeated).
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
    CPU_LIMIT,
    CPU_SECONDS,
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
    cpu_components: tuple[str, ...] = ()
    cpu_limit_cores: float = 0.5
    storm_busy_scale: Mapping[str, float] = field(default_factory=dict)
    acking: bool = False
    metrics_streams: bool = False
    emitted_period_s: float | None = None
    emitted_phase_s: float = 0.0
    #: Per-step multipliers of every counter's rate, repeated over the window (a bursty source whose
    #: load the whole topology follows); empty: a constant load.
    load_wave: tuple[float, ...] = ()
    #: Only the spouts' ``offered_total`` follows ``load_wave`` (a queue in front of the spout takes
    #: the bursts; the topology runs at the base rate).
    wave_offered_only: bool = False
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
    stepped: list[bool] = field(default_factory=list)

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
        stepped: bool = False,
    ) -> None:
        self.component.append(component)
        self.executor.append(executor)
        self.metric.append(metric)
        self.stream.append(stream)
        self.source.append(source)
        self.level.append(level)
        self.counter.append(counter)
        self.transient.append(transient)
        self.stepped.append(stepped)


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
                if scenario.acking:
                    series.add(comp.id, e, EMITTED, out, counter=True, stream="__ack_init", transient=1.4)
                if scenario.metrics_streams:
                    series.add(comp.id, e, EMITTED, 0.5, counter=True, stream="__metrics")
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
            stepped = scenario.emitted_period_s is not None
            for metric in (EMITTED, TRANSFERRED):
                out = executed * comp.selectivity
                series.add(
                    comp.id, e, metric, out, counter=True, stream="default", transient=1.4, stepped=stepped
                )
            if scenario.system_stream or scenario.acking:
                series.add(comp.id, e, EMITTED, executed, counter=True, stream="__ack_ack", transient=1.4)
            if scenario.metrics_streams:
                series.add(comp.id, e, EMITTED, 0.5, counter=True, stream="__metrics")
                ticks = float(tasks[comp.id]) / n  # a tick a second per task (tick.tuple.freq.secs 1)
                series.add(comp.id, e, EXECUTED, ticks, counter=True, stream="__tick", source="__system")
            series.add(comp.id, e, ACKED, executed, counter=True, transient=1.4)
            series.add(comp.id, e, FAILED, 0.0, counter=True)
            _busy_series(
                series,
                comp.id,
                e,
                true_busy=executed * latency_ms / 1000.0,
                latency_ms=latency_ms,
                scenario=scenario,
            )
    series.add("", "", WORKERS, sum(units.values()), counter=False)
    return series


def _busy_series(
    series: _Series, cid: str, e: str, *, true_busy: float, latency_ms: float, scenario: Scenario
) -> None:
    """A bolt executor's busy time as Storm reports it (busy counter, latency and capacity gauges,
    ``storm_busy_scale`` of the truth) and, for ``cpu_components``, as its pod's CPU does."""
    lie = scenario.storm_busy_scale.get(cid, 1.0)
    if scenario.busy_counter:
        series.add(cid, e, BUSY, true_busy * lie, counter=True, transient=1.4 * 2.0)
    gauge = scenario.gauge_scale * lie
    series.add(cid, e, EXECUTE_LATENCY, latency_ms * gauge, counter=False, transient=2.0)
    series.add(cid, e, PROCESS_LATENCY, latency_ms * 1.1, counter=False, transient=2.0)
    series.add(cid, e, CAPACITY, true_busy * gauge, counter=False)
    if cid in scenario.cpu_components:
        limit = scenario.cpu_limit_cores
        series.add(cid, e, CPU_SECONDS, true_busy * limit, counter=True, transient=1.4 * 2.0)
        series.add(cid, e, CPU_LIMIT, limit, counter=False)


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
    if scenario.load_wave:
        wave = np.resize(np.asarray(scenario.load_wave, dtype=np.float64), len(times))
        follows = (
            counter & (np.asarray(series.metric) == OFFERED)[:, None]
            if scenario.wave_offered_only
            else counter
        )
        noisy = np.where(follows, noisy * wave[None, :], noisy)
    steps = np.diff(times, prepend=times[0])[None, :]
    increments = np.clip(noisy, 0.0, None) * steps
    counters = np.cumsum(increments, axis=1)
    if scenario.emitted_period_s is not None and any(series.stepped):
        # counters reported at their own heartbeats: the count at the last phase + k·period ≤ t
        period, phase = scenario.emitted_period_s, scenario.emitted_phase_s
        seen = phase + np.floor((times - phase) / period) * period
        for row in np.flatnonzero(series.stepped):
            counters[row] = np.interp(seen, times, counters[row], left=0.0)
    exact = np.isin(np.asarray(series.metric), [EXECUTORS, TASKS, WORKERS, CPU_LIMIT])[:, None]
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


@dataclass(frozen=True)
class SeriesMatrix:
    """Every series of a scenario without a rebalance, one row of ``values`` per series: the rows
    :func:`generate` writes, before they are flattened into a table (a fake Prometheus serves these)."""

    component: tuple[str, ...]
    executor: tuple[str, ...]
    metric: tuple[str, ...]
    stream: tuple[str, ...]
    source: tuple[str, ...]
    times_s: npt.NDArray[np.float64]  # seconds from ``scenario.start``, every ``step_s``
    values: npt.NDArray[np.float64]  # shape (series, times)

    def labels(self, row: int) -> dict[str, str]:
        """Row ``row``'s schema labels (component, executor, stream, source), empty ones left out."""
        pairs = {
            "component": self.component[row],
            "executor": self.executor[row],
            "stream": self.stream[row],
            "source": self.source[row],
        }
        return {k: v for k, v in pairs.items() if v}


def steady_series(topology: Topology, scenario: Scenario) -> SeriesMatrix:
    """The series of ``topology`` under a ``scenario`` without a rebalance, as a matrix: the same
    values :func:`generate` gives (same seed, same order), in the shape one series at a time is
    needed in."""
    if scenario.rebalance_at_s is not None:
        raise ValueError("steady_series: the scenario has a rebalance (use generate)")
    rng = np.random.default_rng(scenario.seed)
    truth = scaled(topology, scenario.offered_scale)
    units = {c.id: c.units for c in topology.components}
    series = _phase_series(truth, units, tasks_of(topology, scenario), scenario)
    times = np.arange(0.0, scenario.duration_s + scenario.step_s - 1e-9, scenario.step_s)
    values = _phase_values(series, times, -1.0, scenario, rng)
    return SeriesMatrix(
        tuple(series.component),
        tuple(series.executor),
        tuple(series.metric),
        tuple(series.stream),
        tuple(series.source),
        times,
        values,
    )


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
