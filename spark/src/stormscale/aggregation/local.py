"""The same estimators in a single process (pyarrow + NumPy), for small inputs and as a baseline.

Each step mirrors its Spark twin in :mod:`stormscale.aggregation.spark.estimators` (same names, same formulas
from :mod:`stormscale.aggregation.formulas`) and yields the same aggregates, which
:mod:`stormscale.aggregation.profiles` turns into the same profile. Everything is held in memory: the
input must fit, which is the limit the Spark job removes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from stormscale.aggregation import formulas
from stormscale.aggregation.aggregates import (
    BUSY_COUNTER,
    BUSY_CPU,
    BUSY_GAUGE,
    BUSY_LATENCY,
    DEMAND_COUNTERS,
    Aggregates,
    ComponentStats,
    EdgeStats,
    WindowStats,
    from_row,
    no_demand_steps,
)
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import profiles
from stormscale.aggregation.schema import (
    TOPOLOGY_GAUGES,
    USED,
    AggregationError,
    check_columns,
    parquet_files,
)
from stormscale.aggregation.structure import Structure
from stormscale.planner import Profile, read_profile
from stormscale.samples.names import (
    BUSY,
    CAPACITY,
    COUNTERS,
    CPU_LIMIT,
    CPU_SECONDS,
    EMITTED,
    EXECUTE_LATENCY,
    EXECUTED,
    EXECUTORS,
    OFFERED,
    TASKS,
)
from stormscale.samples.schema import SCHEMA, SERIES

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
COMPONENT = ("topology", "component")
#: Arrow's own variable naming its default allocator; where it is set, the user has chosen.
ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def use_system_allocator(environ: Mapping[str, str] = os.environ) -> str:
    """Arrow's buffers from the C library's ``malloc`` rather than the bundled mimalloc, unless
    :data:`ARROW_POOL_ENV` names one; the allocator's name in use is returned.

    For a long-running process that builds many small tables on a pool of threads (the operator's
    passes): mimalloc keeps the pages each thread freed for that thread's next use, as RSS. Eighty
    profiles on eight threads left 204 MiB with mimalloc and 161 MiB with ``malloc`` (both with
    ``MALLOC_ARENA_MAX=2``); the small tables are not measurably slower."""
    if ARROW_POOL_ENV not in environ:
        pa.set_memory_pool(pa.system_memory_pool())
    return pa.default_memory_pool().backend_name


@dataclass(frozen=True)
class Codes:
    """The string columns as integer codes into per-column dictionaries."""

    codes: dict[str, I64]
    names: dict[str, list[str]]

    def mask(self, column: str, values: Sequence[str]) -> B:
        wanted = [i for i, name in enumerate(self.names[column]) if name in values]
        return np.isin(self.codes[column], wanted)

    def starts_with(self, column: str, prefix: str) -> B:
        hits = [i for i, name in enumerate(self.names[column]) if name.startswith(prefix)]
        return np.isin(self.codes[column], hits)


@dataclass(frozen=True)
class Stepped:
    """``with_increments``: samples sorted by series and time, with the interval ending at each."""

    codes: Codes
    ts: F64
    value: F64
    prev_ts: F64
    dt: F64
    increase: F64
    counter: B
    reset: B
    changed: B


def read(paths: Sequence[str], topologies: Sequence[str], params: Params) -> pa.Table:
    """The window's samples of the named topologies (the contract's columns), as one Arrow table."""
    # Imported here: the operator profiles from tables it builds in memory and never reads Parquet;
    # pyarrow.dataset brings the Parquet reader, about 10 MiB of the operator's RSS.
    import pyarrow.dataset as pds  # noqa: PLC0415

    names = sorted(topologies)
    if not names:
        raise AggregationError("structure: at least one topology structure is needed")
    files = parquet_files(paths, names)
    if not files:  # every file names another topology: none of this group's rows is there
        return SCHEMA.empty_table().select(["ts", *SERIES, "value"])
    # The series' labels read as dictionaries: each file's few distinct names decoded once, not per
    # row (:func:`encode` takes their codes as they are).
    parquet = pds.ParquetFileFormat(read_options=pds.ParquetReadOptions(dictionary_columns=list(SERIES)))
    try:
        dataset = pds.dataset(files, format=parquet)
    except (OSError, pa.ArrowInvalid) as err:
        raise AggregationError(f"samples: cannot read {', '.join(paths)}: {err}") from None
    check_columns(((f.name, str(_stored(f.type))) for f in dataset.schema), arrow=True)
    # The range is implied by the set; said apart, it lets Parquet's row-group statistics skip what
    # lies outside it (pyarrow prunes on comparisons, not on is_in): a fleet task reads its group only.
    condition = (pc.field("topology") >= names[0]) & (pc.field("topology") <= names[-1])
    condition &= pc.field("topology").isin(names) & pc.field("metric").isin(list(USED))
    if params.start is not None:
        condition &= pc.field("ts") >= pa.scalar(params.start, pa.timestamp("ms", tz="UTC"))
    if params.end is not None:
        condition &= pc.field("ts") <= pa.scalar(params.end, pa.timestamp("ms", tz="UTC"))
    return dataset.to_table(columns=["ts", *SERIES, "value"], filter=condition)


def _stored(kind: pa.DataType) -> pa.DataType:
    """A column's type as stored: a label read as a dictionary is its values' type."""
    return kind.value_type if pa.types.is_dictionary(kind) else kind


def encode(table: pa.Table) -> Codes:
    codes, names = {}, {}
    for column in SERIES:
        encoded: Any = pc.dictionary_encode(table[column]).combine_chunks()
        codes[column] = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        names[column] = encoded.dictionary.to_pylist()
    return Codes(codes, names)


def mixed_radix(columns: Sequence[I64], radices: Sequence[int], what: str) -> I64:
    """One integer per row from integer codes, k = (…(k₁·m₂ + k₂)·m₃ + …) with mᵢ the radix of
    column i (its codes are below it): equal rows get equal keys, and one 1-D sort orders them."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    bound = 1
    for column, radix in zip(columns, radices, strict=True):
        bound *= radix
        if bound >= 2**62:
            raise AggregationError(f"samples: too many distinct {what} for the single-process engine")
        key = key * radix + column
    return key


def _series_key(codes: Codes) -> I64:
    columns = [codes.codes[column] for column in SERIES]
    return mixed_radix(columns, [max(len(codes.names[column]), 1) for column in SERIES], "series")


def with_increments(table: pa.Table, counters: Sequence[str] = COUNTERS) -> Stepped:
    """See :func:`stormscale.aggregation.spark.estimators.with_increments` (same definitions)."""
    raw = encode(table)
    ts = table["ts"].combine_chunks().cast(pa.int64()).to_numpy().astype(np.float64) / 1000.0
    value = table["value"].combine_chunks().to_numpy(zero_copy_only=False)
    key = _series_key(raw)
    order = np.lexsort((ts, key))
    key, ts, value = key[order], ts[order], value[order]
    codes = Codes({c: a[order] for c, a in raw.codes.items()}, raw.names)
    has_prev = np.concatenate([[False], key[1:] == key[:-1]])
    prev_ts = np.where(has_prev, np.roll(ts, 1), np.nan)
    prev_value = np.where(has_prev, np.roll(value, 1), np.nan)
    counter = codes.mask("metric", counters)
    increase = np.where(counter & has_prev, formulas.counter_increase(prev_value, value), np.nan)
    return Stepped(
        codes=codes,
        ts=ts,
        value=value,
        prev_ts=prev_ts,
        dt=ts - prev_ts,
        increase=increase,
        counter=counter,
        reset=counter & has_prev & (value < prev_value),
        changed=~counter & has_prev & (value != prev_value),
    )


def _nullable(values: F64, valid: B | None = None) -> pa.Array[Any]:
    mask = ~np.isfinite(values) if valid is None else ~valid | ~np.isfinite(values)
    return pa.array(values, mask=mask)


def _group(columns: dict[str, Any], keys: list[str], aggs: list[tuple[str, str, str]]) -> pa.Table:
    """Hash aggregation; ``aggs`` are (column, function, output name); nulls are skipped."""
    table = pa.table(columns)
    specs: list[Any] = []
    for column, function, _ in aggs:
        if function == "stddev":
            specs.append((column, "stddev", pc.VarianceOptions(ddof=1)))
        elif function in ("sum", "min", "max", "mean"):
            specs.append((column, function, pc.ScalarAggregateOptions(min_count=1)))
        else:
            specs.append((column, function))
    out = table.group_by(keys, use_threads=True).aggregate(specs)
    renames = {f"{column}_{function}": name for column, function, name in aggs}
    return out.rename_columns([renames.get(n, n) for n in out.column_names])


def _np(table: pa.Table, column: str) -> F64:
    return table[column].combine_chunks().to_numpy(zero_copy_only=False).astype(np.float64)


def source_intervals(stepped: Stepped, system_prefix: str) -> pa.Table:
    """See :func:`stormscale.aggregation.spark.estimators.source_intervals` (the one pass over raw rows)."""
    c = stepped.codes
    m = c.codes["metric"]

    def code(name: str) -> int:
        return c.names["metric"].index(name) if name in c.names["metric"] else -1

    inc, value = stepped.increase, stepped.value
    data = ~c.starts_with("stream", system_prefix)
    data_source = ~c.starts_with("source", system_prefix)
    change = stepped.reset | (c.mask("metric", TOPOLOGY_GAUGES) & stepped.changed)
    columns: dict[str, Any] = {k: c.codes[k] for k in ("topology", "component", "executor", "source")}
    columns["ts"] = stepped.ts
    columns["start"] = _nullable(stepped.prev_ts)
    columns["dt"] = _nullable(stepped.dt, np.isfinite(inc))
    columns["executed"] = _nullable(inc, (m == code(EXECUTED)) & data & data_source)
    columns["emitted"] = _nullable(inc, (m == code(EMITTED)) & data)
    columns["offered"] = _nullable(inc, m == code(OFFERED))
    columns["busy_s"] = _nullable(inc, m == code(BUSY))
    columns["cpu_s"] = _nullable(inc, m == code(CPU_SECONDS))
    gauges = (
        ("cpu_limit", CPU_LIMIT),
        ("latency_ms", EXECUTE_LATENCY),
        ("capacity", CAPACITY),
        ("executors", EXECUTORS),
        ("tasks", TASKS),
    )
    for name, metric_name in gauges:
        columns[name] = _nullable(value, m == code(metric_name))
    columns["change"] = change.astype(np.int64)
    columns["dup"] = (stepped.dt == 0).astype(np.int64)
    aggs = [("start", "min", "start"), ("dt", "max", "dt")]
    aggs += [(n, "sum", n) for n in ("executed", "emitted", "offered", "busy_s", "cpu_s")]
    aggs += [(n, "max", n) for n, _ in gauges]
    aggs += [("change", "max", "change"), ("dup", "sum", "duplicates")]
    return _group(columns, ["topology", "component", "executor", "source", "ts"], aggs)


def change_points(intervals: pa.Table, settle_s: float) -> pa.Table:
    """``change_points`` and ``steady_windows`` of the Spark job, per topology code."""
    ts = _np(intervals, "ts")
    changed = intervals["change"].to_numpy(zero_copy_only=False) > 0
    columns = {"topology": intervals["topology"], "ts": ts, "changed": _nullable(ts, changed)}
    columns["duplicates"] = intervals["duplicates"]
    aggs = [("ts", "min", "first_ts"), ("ts", "max", "last_ts"), ("changed", "max", "changed_at")]
    out = _group(columns, ["topology"], [*aggs, ("duplicates", "sum", "duplicates")])
    start = np.fmax(_np(out, "first_ts"), _np(out, "changed_at") + settle_s)
    return out.append_column("steady_start", pa.array(start))


def steady(intervals: pa.Table, windows: pa.Table) -> pa.Table:
    """Intervals wholly inside the steady window (``t_prev ≥ steady_start``)."""
    codes = intervals["topology"].to_numpy()
    lookup = np.full(int(codes.max(initial=0)) + 1, np.inf)
    lookup[windows["topology"].to_numpy()] = _np(windows, "steady_start")
    start = np.nan_to_num(_np(intervals, "start"), nan=-np.inf)
    return intervals.filter(pa.array(start >= lookup[codes]))


def executor_intervals(steady_rows: pa.Table) -> pa.Table:
    """See :func:`stormscale.aggregation.spark.estimators.executor_intervals`."""
    sums = ("executed", "emitted", "offered", "busy_s", "cpu_s")
    gauges = ("cpu_limit", "latency_ms", "capacity", "executors", "tasks")
    columns = {k: steady_rows[k] for k in ("topology", "component", "executor", "ts", "dt", *sums, *gauges)}
    aggs = [("dt", "max", "dt")] + [(n, "sum", n) for n in sums] + [(n, "max", n) for n in gauges]
    out = _group(columns, ["topology", "component", "executor", "ts"], aggs)
    dt, busy_s = _np(out, "dt"), _np(out, "busy_s")
    executed, latency = _np(out, "executed"), _np(out, "latency_ms")
    cpu_s, cpu_limit = _np(out, "cpu_s"), _np(out, "cpu_limit")
    from_cpu = np.isfinite(cpu_s) & (np.nan_to_num(cpu_limit) > 0)
    from_counter = np.isfinite(busy_s)
    from_latency = np.isfinite(executed) & np.isfinite(latency)
    storm_busy = np.where(
        from_counter,
        formulas.busy_from_counter(busy_s, dt),
        np.where(from_latency, formulas.busy_fraction(executed, latency, dt), _np(out, "capacity")),
    )
    storm_source = np.where(from_counter, BUSY_COUNTER, np.where(from_latency, BUSY_LATENCY, BUSY_GAUGE))
    busy = np.where(from_cpu, formulas.busy_from_cpu(cpu_s, dt, cpu_limit), storm_busy)
    source = np.where(from_cpu, BUSY_CPU, storm_source)
    return (
        out.append_column("storm_busy", _nullable(storm_busy))
        .append_column("storm_busy_source", pa.array(storm_source))
        .append_column("busy", _nullable(busy))
        .append_column("busy_source", pa.array(source))
    )


def group_ids(keys: Sequence[I64]) -> I64:
    """A dense id per distinct tuple of ``keys`` (non-negative integer codes, one array per column):
    their :func:`mixed_radix` key (radix: the column's largest code + 1) and one 1-D sort (a row-wise
    ``np.unique(axis=0)`` sorts structured rows, ~10× slower); ids are in the order of that key."""
    if not len(keys[0]):
        return np.zeros(0, dtype=np.int64)
    combined = mixed_radix(keys, [int(column.max()) + 1 for column in keys], "groups")
    _, inverse = np.unique(combined, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).reshape(-1)


def in_span(group: I64, ts: F64, x: F64) -> B:
    """See :func:`stormscale.aggregation.spark.estimators.in_span`: per group (:func:`group_ids`),
    whether each interval counts towards ``x``'s ``formulas.span_rate``."""
    if not len(ts):
        return np.zeros(0, dtype=np.bool_)
    size = int(group.max(initial=-1)) + 1
    moved = np.isfinite(x) & (np.nan_to_num(x) > 0)
    first, last = np.full(size, np.inf), np.full(size, -np.inf)
    np.minimum.at(first, group[moved], ts[moved])
    np.maximum.at(last, group[moved], ts[moved])
    two_moves = (first < last)[group]
    inside = (ts > first[group]) & (ts <= last[group])
    known: B = np.isfinite(x) & (~two_moves | inside)
    return known


def _safe_div(a: F64, b: F64) -> F64:
    with np.errstate(divide="ignore", invalid="ignore"):
        out: F64 = a / b
    return out


def executor_window(intervals: pa.Table) -> pa.Table:
    """Window rates and busy fractions per executor, each over whole periods of its own updates (as
    in the Spark job)."""
    dt, ts = _np(intervals, "dt"), _np(intervals, "ts")
    group = group_ids(
        [
            intervals[k].to_numpy(zero_copy_only=False).astype(np.int64)
            for k in ("topology", "component", "executor")
        ]
    )
    columns: dict[str, Any] = {k: intervals[k] for k in ("topology", "component", "executor")}
    values = {n: _np(intervals, n) for n in ("executed", "emitted", "offered")}
    values |= {n: _np(intervals, n) * dt for n in ("busy", "storm_busy")}  # busy seconds
    for name, x in values.items():
        keep = in_span(group, ts, x)
        columns[f"{name}_x"] = _nullable(x, keep)
        columns[f"{name}_dt"] = _nullable(dt, keep)
    for name in ("busy", "storm_busy"):
        sources = intervals[f"{name}_source"].to_numpy(zero_copy_only=False).astype(np.float64)
        columns[f"{name}_source"] = _nullable(sources, np.isfinite(_np(intervals, name)))
    columns["executors"], columns["tasks"] = intervals["executors"], intervals["tasks"]
    sums = [(f"{n}_{s}", "sum", f"{n}_{s}") for n in values for s in ("x", "dt")]
    out = _group(
        columns,
        ["topology", "component", "executor"],
        [
            *sums,
            ("busy_source", "min", "busy_source"),
            ("storm_busy_source", "min", "storm_busy_source"),
            ("executors", "max", "units"),
            ("tasks", "max", "tasks"),
        ],
    )
    rates = {
        (f"{n}_rate" if n not in ("busy", "storm_busy") else n): _nullable(
            formulas.span_rate(_np(out, f"{n}_x"), _np(out, f"{n}_dt"))
        )
        for n in values
    }
    kept = ("topology", "component", "executor", "units", "tasks", "busy_source", "storm_busy_source")
    return pa.table({k: out[k] for k in kept} | rates)


def component_window(executors: pa.Table, empty_executor: int) -> pa.Table:
    executor = executors["executor"].to_numpy()
    has_data = (executor != empty_executor) & (
        np.isfinite(_np(executors, "executed_rate")) | np.isfinite(_np(executors, "emitted_rate"))
    )
    columns = {k: executors[k] for k in executors.column_names} | {"has_data": has_data.astype(np.int64)}
    aggs = [("has_data", "sum", "executors_seen"), ("units", "max", "units"), ("tasks", "max", "tasks")]
    aggs += [(n, "sum", n) for n in ("executed_rate", "emitted_rate", "offered_rate")]
    aggs += [
        ("busy", "max", "busy_max"),
        ("busy", "mean", "busy_mean"),
        ("busy_source", "min", "busy_source"),
        ("storm_busy", "max", "storm_busy_max"),
        ("storm_busy_source", "min", "storm_busy_source"),
    ]
    return _group(columns, ["topology", "component"], aggs)


def component_intervals(intervals: pa.Table) -> pa.Table:
    """Per component and interval (for spreads), as in the Spark job."""
    busy = _np(intervals, "busy")
    columns: dict[str, Any] = {
        k: intervals[k]
        for k in ("topology", "component", "ts", "dt", "executed", "emitted", "offered", "busy", "executors")
    }
    columns["has_busy"] = np.isfinite(busy).astype(np.int64)
    aggs = [
        ("dt", "max", "dt"),
        ("executed", "sum", "executed"),
        ("emitted", "sum", "emitted"),
        ("offered", "sum", "offered"),
    ]
    aggs += [("busy", "max", "busy_max"), ("executors", "max", "units"), ("has_busy", "sum", "busy_count")]
    g = _group(columns, ["topology", "component", "ts"], aggs)
    dt, executed, emitted = _np(g, "dt"), _np(g, "executed"), _np(g, "emitted")
    gauge_units = _np(g, "units")
    units = np.where(np.isfinite(gauge_units), gauge_units, _np(g, "busy_count"))
    executed_rate = _safe_div(executed, dt)
    rate_t = np.where(np.isfinite(executed_rate), executed_rate, _safe_div(emitted, dt))
    return pa.table(
        {
            "topology": g["topology"],
            "component": g["component"],
            "ts": g["ts"],
            "dt": g["dt"],
            "emitted": g["emitted"],
            "rate_t": _nullable(rate_t),
            "selectivity_t": _nullable(_safe_div(emitted, executed)),
            "capacity_t": _nullable(formulas.capacity_per_unit(executed_rate, units, _np(g, "busy_max"))),
            "offered_t": _nullable(_safe_div(_np(g, "offered"), dt)),
            "emitted_t": _nullable(_safe_div(emitted, dt)),
        }
    )


def component_spreads(per_interval: pa.Table) -> dict[tuple[int, int], dict[str, Any]]:
    names = ("rate", "selectivity", "capacity", "offered", "emitted")
    aggs = [(f"{n}_t", fn, f"{n}_{fn}") for n in names for fn in ("count", "mean", "stddev")]
    g = _group({k: per_interval[k] for k in per_interval.column_names}, ["topology", "component"], aggs)
    rows = g.to_pylist()
    out = {}
    for row in rows:
        stats: dict[str, Any] = {}
        for n in names:
            mean, std = row[f"{n}_mean"], row[f"{n}_stddev"]
            stats[f"{n}_n"] = row[f"{n}_count"]
            stats[f"{n}_cv"] = None if mean in (None, 0) or std is None else std / mean
        out[(row["topology"], row["component"])] = stats
    return out


def period_rates(group: I64, ts: F64, x: F64) -> F64:
    """Per row (sorted by ``group`` then ``ts``), ``formulas.period_rate`` of ``x`` in its group: the
    rate of the update period that holds the row, NaN before the group's first move or after its last.
    See :func:`stormscale.aggregation.spark.estimators.demand_steps`."""
    n = len(ts)
    if not n:
        return np.zeros(0)
    rows = np.arange(n)
    moved = np.isfinite(x) & (np.nan_to_num(x) > 0)
    following = np.minimum.accumulate(np.where(moved, rows, n)[::-1])[::-1]  # first move at or after
    preceding = np.concatenate([[-1], np.maximum.accumulate(np.where(moved, rows, -1))[:-1]])  # before
    after, before = np.minimum(following, n - 1), np.maximum(preceding, 0)
    known = (following < n) & (preceding >= 0) & (group[after] == group) & (group[before] == group)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = formulas.period_rate(x[after], ts[after] - ts[before])
    out: F64 = np.where(known, rate, np.nan)
    return out


def sorted_groups(ids: I64, values: F64) -> tuple[I64, F64, I64, I64]:
    """``values`` sorted within each group of ``ids``: the groups' ids in order, the sorted values, and
    each group's first index and size in them."""
    order = np.lexsort((values, ids))
    ids, values = ids[order], values[order]
    first = (
        np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]])) if len(ids) else np.zeros(0, np.int64)
    )
    size = np.diff(np.concatenate([first, [len(ids)]]))
    return ids[first], values, first.astype(np.int64), size.astype(np.int64)


def group_percentile(values: F64, first: I64, size: I64, q: float) -> F64:
    """The ``q``-th percentile of each group of sorted ``values`` (:func:`sorted_groups`), as
    ``np.percentile`` computes it: position ``p = (size − 1)·q/100``, ``t = p − ⌊p⌋``, between
    ``a = v[⌊p⌋]`` and ``b = v[⌊p⌋ + 1]``: ``a + (b − a)·t``, or ``b − (b − a)·(1 − t)`` once ``t ≥ ½``
    (NumPy's two forms, so the values agree to the last bit)."""
    position = (size - 1) * (q / 100.0)
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, size - 1)
    t = position - low
    a, b = values[first + low], values[first + high]
    out: F64 = np.where(t >= 0.5, b - (b - a) * (1 - t), a + (b - a) * t)
    return out


def group_median(values: F64, first: I64, size: I64) -> F64:
    """Each group's median of sorted ``values`` as ``np.median`` computes it: the middle value, or the
    mean of the two middle ones."""
    lower, upper = values[first + (size - 1) // 2], values[first + size // 2]
    out: F64 = np.where(size % 2 == 1, lower, (lower + upper) / 2.0)
    return out


def demand_steps(intervals: pa.Table) -> dict[tuple[int, int], dict[str, Any]]:
    """Per component, the distribution of its offered and emitted rates over the window's steps
    (:class:`~stormscale.aggregation.aggregates.ComponentStats`): :func:`period_rates` per series,
    summed per step where every series of the component has one; ``step_s`` is the median ``dt`` of
    the component's intervals. See :func:`stormscale.aggregation.spark.estimators.demand_steps`."""
    topology, component = (intervals[k].to_numpy(zero_copy_only=False).astype(np.int64) for k in COMPONENT)
    executor = intervals["executor"].to_numpy(zero_copy_only=False).astype(np.int64)
    group = group_ids([topology, component, executor])
    order = np.lexsort((_np(intervals, "ts"), group))
    group, topology, component = group[order], topology[order], component[order]
    ts, dt = _np(intervals, "ts")[order], _np(intervals, "dt")[order]
    out: dict[tuple[int, int], dict[str, Any]] = {}
    radix = int(component.max()) + 1 if len(component) else 1  # (topology, component) as one integer
    for counter in DEMAND_COUNTERS:
        x = _np(intervals, counter)[order]
        rate = period_rates(group, ts, x)
        has = np.isfinite(x)
        series = _group(
            {"topology": topology[has], "component": component[has], "g": group[has]},
            list(COMPONENT),
            [("g", "count_distinct", "series")],
        )
        series_of = np.full(int(topology.max()) * radix + radix if len(topology) else 0, -1, dtype=np.int64)
        series_keys = series["topology"].to_numpy().astype(np.int64) * radix + series["component"].to_numpy()
        series_of[series_keys] = series["series"].to_numpy()
        known = np.isfinite(rate)
        columns = {"topology": topology[known], "component": component[known], "ts": ts[known]}
        per_step = _group(
            columns | {"rate": rate[known]},
            ["topology", "component", "ts"],
            [("rate", "sum", "rate"), ("rate", "count", "known")],
        )
        step_keys = (
            per_step["topology"].to_numpy().astype(np.int64) * radix + per_step["component"].to_numpy()
        )
        complete = per_step["known"].to_numpy().astype(np.int64) == series_of[step_keys]
        key_ids = step_keys[complete]
        ids, values, first, size = sorted_groups(
            key_ids, per_step["rate"].to_numpy().astype(np.float64)[complete]
        )
        p50, p95 = (group_percentile(values, first, size, q) for q in (50.0, 95.0))
        largest = values[first + size - 1]
        for i, key_id in enumerate(ids.tolist()):
            out.setdefault((key_id // radix, key_id % radix), no_demand_steps()).update(
                {
                    f"{counter}_p50": float(p50[i]),
                    f"{counter}_p95": float(p95[i]),
                    f"{counter}_max": float(largest[i]),
                    f"{counter}_steps": int(size[i]),
                }
            )
    finite = np.isfinite(dt)
    ids, values, first, size = sorted_groups(topology[finite] * radix + component[finite], dt[finite])
    medians = group_median(values, first, size)
    median_of = dict(zip(ids.tolist(), medians.tolist(), strict=True))
    for key, stats in out.items():
        stats["step_s"] = median_of.get(key[0] * radix + key[1])
    return out


def edges(steady_rows: pa.Table, c: Codes, per_interval: pa.Table) -> list[dict[str, Any]]:
    """``edge_window``, ``edge_intervals`` and ``edge_stats`` of the Spark job."""
    empty_source = c.names["source"].index("") if "" in c.names["source"] else -1
    edge_rows = (steady_rows["source"].to_numpy() != empty_source) & np.isfinite(_np(steady_rows, "executed"))
    rows = steady_rows.filter(pa.array(edge_rows))
    partition = ("topology", "component", "executor", "source")
    executed, dt = _np(rows, "executed"), _np(rows, "dt")
    group = group_ids([rows[k].to_numpy(zero_copy_only=False).astype(np.int64) for k in partition])
    keep = in_span(group, _np(rows, "ts"), executed)
    per_executor = _group(
        {k: rows[k] for k in partition} | {"executed": _nullable(executed, keep), "dt": _nullable(dt, keep)},
        list(partition),
        [("executed", "sum", "inc"), ("dt", "sum", "dt")],
    )
    rates = formulas.span_rate(_np(per_executor, "inc"), _np(per_executor, "dt"))
    columns = {"topology": per_executor["topology"], "child": per_executor["component"]}
    window = _group(
        columns | {"source": per_executor["source"], "rate": rates},
        ["topology", "child", "source"],
        [("rate", "sum", "rate")],
    )
    columns = {"topology": rows["topology"], "child": rows["component"]}
    received = _group(
        columns | {k: rows[k] for k in ("source", "ts", "executed")},
        ["topology", "child", "source", "ts"],
        [("executed", "sum", "received")],
    )
    # the parent's emitted at the same interval: component codes and source codes differ, map by name
    to_component = np.array(
        [c.names["component"].index(s) if s in c.names["component"] else -1 for s in c.names["source"]]
        or [-1]
    )
    received = received.append_column("parent", pa.array(to_component[received["source"].to_numpy()]))
    parents = per_interval.select(["topology", "component", "ts", "emitted"]).rename_columns(
        ["topology", "parent", "ts", "parent_emitted"]
    )
    joined = received.join(parents, ["topology", "parent", "ts"])
    fraction = formulas.edge_fraction(_np(joined, "received"), _np(joined, "parent_emitted"))
    fr = _group(
        {k: joined[k] for k in ("topology", "child", "source")} | {"f": _nullable(fraction)},
        ["topology", "child", "source"],
        [("f", "count", "n"), ("f", "mean", "mean"), ("f", "stddev", "std")],
    )
    spread = {(r["topology"], r["child"], r["source"]): r for r in fr.to_pylist()}
    out = []
    for r in window.to_pylist():
        s = spread.get((r["topology"], r["child"], r["source"]), {"n": 0, "mean": None, "std": None})
        cv = None if not s["mean"] or s["std"] is None else s["std"] / s["mean"]
        out.append(
            {
                "topology": r["topology"],
                "child": r["child"],
                "parent": r["source"],
                "rate": r["rate"],
                "fraction_n": s["n"],
                "fraction_cv": cv,
            }
        )
    return out


def aggregate(table: pa.Table, params: Params) -> Aggregates:
    """All estimators on an in-memory table; the same aggregates as the Spark job's
    (:func:`stormscale.aggregation.spark.job.aggregate`)."""
    stepped = with_increments(table)
    codes = stepped.codes
    names = codes.names
    sources = source_intervals(stepped, params.system_stream_prefix)
    del stepped  # the raw rows are no longer needed
    windows = change_points(sources, params.settle_s)
    steady_rows = steady(sources, windows)
    intervals = executor_intervals(steady_rows)
    per_interval = component_intervals(intervals)
    empty = names["executor"].index("") if "" in names["executor"] else -1
    window = component_window(executor_window(intervals), empty)
    spreads = component_spreads(per_interval)
    demand = demand_steps(intervals)
    counts = _group(
        {k: per_interval[k] for k in ("topology", "component")} | {"dt": per_interval["dt"]},
        ["topology", "component"],
        [("dt", "count", "n")],
    )
    intervals_by_topology: dict[int, int] = {}
    for r in counts.to_pylist():
        intervals_by_topology[r["topology"]] = max(intervals_by_topology.get(r["topology"], 0), r["n"])
    result = Aggregates({}, {}, {})
    for r in windows.to_pylist():
        name = names["topology"][r["topology"]]
        row = r | {"topology": name, "intervals": intervals_by_topology.get(r["topology"], 0)}
        result.windows[name] = from_row(WindowStats, row)
    for r in window.to_pylist():
        name, comp = names["topology"][r["topology"]], names["component"][r["component"]]
        key = (r["topology"], r["component"])
        row = (
            r
            | spreads.get(key, {})
            | demand.get(key, no_demand_steps())
            | {"topology": name, "component": comp}
        )
        for column in ("busy_source", "storm_busy_source"):
            source = row[column]  # null: no executor had a busy fraction, as Spark's coalesce
            row[column] = BUSY_GAUGE if source is None else round(source)
        row = {
            **{
                f"{n}_{s}": (0 if s == "n" else None)
                for n in ("rate", "selectivity", "capacity", "offered", "emitted")
                for s in ("n", "cv")
            },
            **row,
        }
        result.components.setdefault(name, {})[comp] = from_row(ComponentStats, row)
    for e in edges(steady_rows, codes, per_interval):
        row = e | {
            "topology": names["topology"][e["topology"]],
            "child": names["component"][e["child"]],
            "parent": names["source"][e["parent"]],
        }
        result.edges.setdefault(row["topology"], []).append(from_row(EdgeStats, row))
    return result


def run(paths: Sequence[str], structures: Sequence[Structure], params: Params) -> list[dict[str, Any]]:
    """Samples at ``paths`` → one profile per structure, in this process."""
    if not structures:
        raise AggregationError("structure: at least one topology structure is needed")
    table = read(paths, [s.topology for s in structures], params)
    if table.num_rows == 0:
        raise AggregationError("samples: no rows for the named topologies in the window")
    return profile_table(table, structures, params)[0]


def profile_table(
    table: pa.Table, structures: Sequence[Structure], params: Params
) -> tuple[list[dict[str, Any]], Aggregates]:
    """An in-memory table of samples → one profile per structure, and the aggregates behind them."""
    aggregates = aggregates_of(table, params)
    return profiles(structures, aggregates, params), aggregates


def typed_profile_table(
    table: pa.Table, structures: Sequence[Structure], params: Params
) -> tuple[list[Profile], Aggregates]:
    """:func:`profile_table` as typed values: each profile's :class:`~stormscale.planner.Topology`
    and its confidence (:class:`~stormscale.planner.ProfileConfidence`), read from the documents
    :func:`~stormscale.aggregation.write_profile` writes."""
    documents, aggregates = profile_table(table, structures, params)
    return [read_profile(d) for d in documents], aggregates


def aggregates_of(table: pa.Table, params: Params) -> Aggregates:
    """:func:`aggregate` with division by zero giving null, as in Spark (x/0 → inf/nan → skipped)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return aggregate(table, params)
