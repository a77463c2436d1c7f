"""The estimators as Spark transforms: each is ``DataFrame → DataFrame`` with explicit parameters.

Pipeline (one topology or hundreds alike; every grouping keeps ``topology``)::

    samples → in_window → with_increments → source_intervals   (the one pass over raw rows)
    source_intervals → change_points → steady_windows;  source_intervals + steady_windows → steady
    steady → executor_intervals → executor_window → component_window ─┐
                                → component_intervals → component_spreads ─┤
                                → demand_steps ────────────────────────────┴→ component_stats
    steady → edge_window, edge_intervals (+ component_intervals) → edge_stats

Raw samples never reach the driver: only the outputs of ``steady_windows``, ``component_stats`` and
``edge_stats`` (a few rows per component) are collected.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 (the PySpark idiom)

from stormscale.aggregation import formulas
from stormscale.aggregation.aggregates import (
    BUSY_COUNTER,
    BUSY_CPU,
    BUSY_GAUGE,
    BUSY_LATENCY,
    DEMAND_COUNTERS,
)
from stormscale.aggregation.schema import TOPOLOGY_GAUGES, USED
from stormscale.aggregation.spark.types import COMPONENT_SCHEMA, EDGE_SCHEMA, SAMPLE_SCHEMA, WINDOW_SCHEMA
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
from stormscale.samples.schema import SERIES

COMPONENT = ("topology", "component")
EXECUTOR = (*COMPONENT, "executor")


def _seconds(ts: str) -> Column:
    return F.unix_micros(F.col(ts)) / 1e6


def _cv(x: str) -> Column:
    """Relative spread of per-interval values: ``stddev_samp(x) / mean(x)``."""
    return F.stddev_samp(x) / F.avg(x)


def in_window(
    samples: DataFrame, topologies: Sequence[str], start_s: float | None, end_s: float | None
) -> DataFrame:
    """The contract's columns (as :data:`SAMPLE_SCHEMA`) of the named topologies, ``start ≤ ts ≤ end``,
    and only the metrics the estimators use (:data:`USED`: acks, failures, transfers and process
    latency are a third of the rows and feed no estimate)."""
    cols = [F.col(f.name).cast(f.dataType).alias(f.name) for f in SAMPLE_SCHEMA.fields]
    out = samples.select(*cols).where(F.col("topology").isin(list(topologies)))
    out = out.where(F.col("metric").isin(list(USED)))
    if start_s is not None:
        out = out.where(_seconds("ts") >= start_s)
    if end_s is not None:
        out = out.where(_seconds("ts") <= end_s)
    return out


def with_increments(samples: DataFrame, counters: Sequence[str] = COUNTERS) -> DataFrame:
    """Each sample with the interval of its series that ends at it (counter → increase)::

        dt = t − t_prev  (s)
        Δ  = v − v_prev if v ≥ v_prev else v      (counters; formulas.counter_increase)
        reset   = counter and v < v_prev
        changed = v ≠ v_prev                        (for gauges)

    A series' first sample has no interval (``dt``, ``increase`` null).
    """
    # The window partitions on a 64-bit hash of the series (sorting on six strings is the job's
    # costliest step); a second, independent 32-bit hash must match too, so two series whose 64-bit
    # hashes collide (odds ~ n²/2⁶⁵) lose their intervals instead of mixing them.
    w = Window.partitionBy("series_id").orderBy("ts")
    value, prev = F.col("value"), F.col("prev_value")
    is_counter = F.col("metric").isin(list(counters))
    has_prev = prev.isNotNull()
    same = F.col("prev_check") == F.col("series_check")
    keyed = samples.select("*", F.xxhash64(*SERIES).alias("series_id"), F.hash(*SERIES).alias("series_check"))
    lags = [F.lag(c).over(w).alias(f"prev_{c}") for c in ("ts", "value")]
    return (
        keyed.select("*", *lags, F.lag("series_check").over(w).alias("prev_check"))
        .withColumn("prev_ts", F.when(same, F.col("prev_ts")))
        .withColumn("prev_value", F.when(same, F.col("prev_value")))
        .drop("series_check", "prev_check")
        .withColumn("dt", _seconds("ts") - _seconds("prev_ts"))
        .withColumn(
            "increase", F.when(is_counter & has_prev, F.when(value >= prev, value - prev).otherwise(value))
        )
        .withColumn("reset", is_counter & has_prev & (value < prev))
        .withColumn("changed", ~is_counter & has_prev & (value != prev))
    )


def source_intervals(
    stepped: DataFrame, system_prefix: str = "__", gauges: Sequence[str] = TOPOLOGY_GAUGES
) -> DataFrame:
    """The only pass over the raw rows: one row per executor, source and interval end ``ts``.

    Increments are summed over streams (``emitted`` and ``executed`` over data streams only: not
    ``__*`` system streams such as ``__ack_ack``, ``__metrics`` or ``__tick``, nor tuples from
    ``__*`` system components), gauges taken as they are; ``start`` is the interval's start
    (``t_prev``), ``change`` marks a counter reset or a change of a gauge in ``gauges``,
    ``duplicates`` counts rows repeating a (series, ts) pair (``dt = 0``). ``source`` is the upstream
    component for ``executed`` and ``""`` for everything else; ``executor = ""`` rows carry
    component-level series (offered, executors, tasks). Everything downstream reads this table, which
    is several times smaller than the input.
    """
    metric = F.col("metric")
    data_stream = ~F.col("stream").startswith(system_prefix)
    data_source = ~F.col("source").startswith(system_prefix)

    def total(condition: Column) -> Column:
        return F.sum(F.when(condition, F.col("increase")))

    def gauge(name: str) -> Column:
        return F.max(F.when(metric == name, F.col("value")))

    change = F.col("reset") | (metric.isin(list(gauges)) & F.col("changed"))
    return stepped.groupBy(*COMPONENT, "executor", "source", "ts").agg(
        F.min(_seconds("prev_ts")).alias("start"),
        F.max(F.when(F.col("increase").isNotNull(), F.col("dt"))).alias("dt"),
        total((metric == EXECUTED) & data_stream & data_source).alias("executed"),
        total((metric == EMITTED) & data_stream).alias("emitted"),
        total(metric == OFFERED).alias("offered"),
        total(metric == BUSY).alias("busy_s"),
        total(metric == CPU_SECONDS).alias("cpu_s"),
        gauge(CPU_LIMIT).alias("cpu_limit"),
        gauge(EXECUTE_LATENCY).alias("latency_ms"),
        gauge(CAPACITY).alias("capacity"),
        gauge(EXECUTORS).alias("executors"),
        gauge(TASKS).alias("tasks"),
        F.coalesce(F.max(change), F.lit(False)).alias("change"),
        F.count(F.when(F.col("dt") == 0, 1)).alias("duplicates"),
    )


def change_points(intervals: DataFrame) -> DataFrame:
    """Per topology: its first and last sample, and the last rebalance or restart::

        changed_at = max{ t : a counter reset at t, or an executors/workers gauge changed at t }

    ``duplicates`` counts samples repeating a (series, ts) pair, which the contract forbids.
    """
    return intervals.groupBy("topology").agg(
        F.min(_seconds("ts")).alias("first_ts"),
        F.max(_seconds("ts")).alias("last_ts"),
        F.max(F.when(F.col("change"), _seconds("ts"))).alias("changed_at"),
        F.sum("duplicates").alias("duplicates"),
    )


def steady_windows(changes: DataFrame, settle_s: float) -> DataFrame:
    """Where the steady state starts: ``steady_start = max(first_ts, changed_at + settle_s)``."""
    return changes.withColumn(
        "steady_start", F.greatest(F.col("first_ts"), F.col("changed_at") + F.lit(settle_s))
    )


def steady(intervals: DataFrame, windows: DataFrame) -> DataFrame:
    """Intervals wholly inside the steady window (``t_prev ≥ steady_start``)."""
    starts = F.broadcast(windows.select("topology", "steady_start"))
    return intervals.join(starts, "topology").where(F.col("start") >= F.col("steady_start"))


def executor_intervals(steady_rows: DataFrame) -> DataFrame:
    """One row per executor and interval (sources summed), with its busy fraction and its source.

    Storm's own busy fraction (``storm_busy``) is ``formulas.busy_from_counter`` where the
    busy-seconds counter has an increase, else ``formulas.busy_fraction`` where the execute latency
    is known, else Storm's ``capacity`` gauge (the last two average the last 10 minutes, so they react
    late). ``busy`` is ``formulas.busy_from_cpu`` where the executor's pod CPU is known (counter
    increase and a positive limit), else ``storm_busy``; ``busy_source`` and ``storm_busy_source``
    say which (:data:`~stormscale.aggregation.aggregates.BUSY_SOURCES`).
    """
    grouped = steady_rows.groupBy(*EXECUTOR, "ts").agg(
        F.max("dt").alias("dt"),
        *(F.sum(c).alias(c) for c in ("executed", "emitted", "offered", "busy_s", "cpu_s")),
        *(F.max(c).alias(c) for c in ("cpu_limit", "latency_ms", "capacity", "executors", "tasks")),
    )
    from_cpu = F.col("cpu_s").isNotNull() & (F.col("cpu_limit") > 0)
    from_counter = F.col("busy_s").isNotNull()
    from_latency = F.col("latency_ms").isNotNull() & F.col("executed").isNotNull()
    storm_busy = (
        F.when(from_counter, formulas.busy_from_counter(F.col("busy_s"), F.col("dt")))
        .when(from_latency, formulas.busy_fraction(F.col("executed"), F.col("latency_ms"), F.col("dt")))
        .otherwise(F.col("capacity"))
    )
    storm_source = F.when(from_counter, BUSY_COUNTER).when(from_latency, BUSY_LATENCY).otherwise(BUSY_GAUGE)
    cpu_busy = formulas.busy_from_cpu(F.col("cpu_s"), F.col("dt"), F.col("cpu_limit"))
    return (
        grouped.withColumn("storm_busy", storm_busy)
        .withColumn("storm_busy_source", storm_source)
        .withColumn("busy", F.when(from_cpu, cpu_busy).otherwise(F.col("storm_busy")))
        .withColumn("busy_source", F.when(from_cpu, BUSY_CPU).otherwise(F.col("storm_busy_source")))
    )


def in_span(x: Column, partition: Sequence[str]) -> Column:
    """Whether an interval counts towards ``x``'s :func:`formulas.span_rate` within ``partition``:
    ``x`` is known and, if ``x`` moved at two interval ends or more, ``t1 < ts ≤ t2`` between the
    first and the last of them."""
    w = Window.partitionBy(*partition)
    moved = F.when(x > 0, F.col("ts"))
    first, last = F.min(moved).over(w), F.max(moved).over(w)
    two_moves = first.isNotNull() & (first < last)
    return x.isNotNull() & (~two_moves | ((F.col("ts") > first) & (F.col("ts") <= last)))


def _span_rate(x: Column, keep: Column) -> Column:
    """``formulas.span_rate`` of ``x`` over the intervals ``keep`` (from :func:`in_span`) marks."""
    return formulas.span_rate(F.sum(F.when(keep, x)), F.sum(F.when(keep, F.col("dt"))))


def executor_window(intervals: DataFrame) -> DataFrame:
    """Window rates and busy fractions per executor, each over whole periods of its own updates
    (``formulas.span_rate``): ``r = ΣΔ / Σdt`` and ``b = Σ(b_i·dt_i) / Σdt_i`` over the span."""
    busy_s = {c: F.col(c) * F.col("dt") for c in ("busy", "storm_busy")}
    spans = intervals.select(
        "*",
        *(in_span(F.col(c), EXECUTOR).alias(f"in_{c}") for c in ("executed", "emitted", "offered")),
        *(in_span(x, EXECUTOR).alias(f"in_{c}") for c, x in busy_s.items()),
    )
    return spans.groupBy(*EXECUTOR).agg(
        *(
            _span_rate(F.col(c), F.col(f"in_{c}")).alias(f"{c}_rate")
            for c in ("executed", "emitted", "offered")
        ),
        *(_span_rate(x, F.col(f"in_{c}")).alias(c) for c, x in busy_s.items()),
        *(
            F.min(F.when(F.col(c).isNotNull(), F.col(f"{c}_source"))).alias(f"{c}_source")
            for c in ("busy", "storm_busy")
        ),
        # constant in the steady window: a change of the executors gauge would have moved its start
        F.max("executors").alias("units"),
        F.max("tasks").alias("tasks"),
    )


def component_window(executors: DataFrame) -> DataFrame:
    """Per component: rates summed over executors, the busiest executor's and the mean busy fraction."""
    has_data = (F.col("executor") != "") & (
        F.col("executed_rate").isNotNull() | F.col("emitted_rate").isNotNull()
    )
    return executors.groupBy(*COMPONENT).agg(
        F.count(F.when(has_data, 1)).alias("executors_seen"),
        F.max("units").alias("units"),
        F.max("tasks").alias("tasks"),
        F.sum("executed_rate").alias("executed_rate"),
        F.sum("emitted_rate").alias("emitted_rate"),
        F.sum("offered_rate").alias("offered_rate"),
        F.max("busy").alias("busy_max"),
        F.avg("busy").alias("busy_mean"),
        F.coalesce(F.min("busy_source"), F.lit(BUSY_GAUGE)).alias("busy_source"),
        F.max("storm_busy").alias("storm_busy_max"),
        F.coalesce(F.min("storm_busy_source"), F.lit(BUSY_GAUGE)).alias("storm_busy_source"),
    )


def component_intervals(intervals: DataFrame) -> DataFrame:
    """Per component and interval, the same quantities as the window estimates (for their spread)::

    rate_t = executed_t/dt (bolts) or emitted_t/dt (spouts)
    sel_t  = emitted_t / executed_t
    cap_t  = (executed_t/dt) / (n · max_e b_e,t)
    """
    grouped = intervals.groupBy(*COMPONENT, "ts").agg(
        F.max("dt").alias("dt"),
        F.sum("executed").alias("executed"),
        F.sum("emitted").alias("emitted"),
        F.sum("offered").alias("offered"),
        F.max("busy").alias("busy_max"),
        F.coalesce(F.max("executors"), F.count("busy")).alias("units"),
    )
    dt = F.col("dt")
    executed_rate = F.col("executed") / dt
    return grouped.select(
        *COMPONENT,
        "ts",
        "dt",
        "emitted",
        F.coalesce(executed_rate, F.col("emitted") / dt).alias("rate_t"),
        formulas.selectivity(F.col("emitted"), F.col("executed")).alias("selectivity_t"),
        formulas.capacity_per_unit(executed_rate, F.col("units"), F.col("busy_max")).alias("capacity_t"),
        (F.col("offered") / dt).alias("offered_t"),
        (F.col("emitted") / dt).alias("emitted_t"),
    )


def component_spreads(per_interval: DataFrame) -> DataFrame:
    """Sample count and relative spread of every per-interval quantity, per component."""
    names = ("rate", "selectivity", "capacity", "offered", "emitted")
    aggs = [F.count(f"{n}_t").alias(f"{n}_n") for n in names] + [
        _cv(f"{n}_t").alias(f"{n}_cv") for n in names
    ]
    return per_interval.groupBy(*COMPONENT).agg(*aggs)


def demand_steps(intervals: DataFrame) -> DataFrame:
    """Per component, the distribution of its offered and emitted rates over the window's steps.

    Per series (executor; ``""`` for the component-level ``offered_total``) and step ``ts``,
    ``formulas.period_rate``: the increase at the first move at or after ``ts`` over the time since
    the last move before it. Per component and step, the sum over its series, kept where every
    series of the component has a rate; per component, the median, 95th percentile (Spark's exact
    ``percentile``: linear interpolation, as NumPy's) and maximum of those sums and their count
    (``*_steps``), and ``step_s``, the median ``dt`` of its intervals.
    """
    w = Window.partitionBy(*EXECUTOR).orderBy("ts")
    ahead = w.rowsBetween(Window.currentRow, Window.unboundedFollowing)
    behind = w.rowsBetween(Window.unboundedPreceding, -1)
    seconds = _seconds("ts")
    parts = []
    for counter in DEMAND_COUNTERS:
        x = F.col(counter)
        moved = x > 0
        rate = formulas.period_rate(
            F.first(F.when(moved, x), ignorenulls=True).over(ahead),
            F.first(F.when(moved, seconds), ignorenulls=True).over(ahead)
            - F.last(F.when(moved, seconds), ignorenulls=True).over(behind),
        )
        rated = intervals.select(*EXECUTOR, "ts", x.alias("x"), rate.alias("rate"))
        series = (
            rated.where(F.col("x").isNotNull())
            .groupBy(*COMPONENT)
            .agg(F.countDistinct("executor").alias("series"))
        )
        steps = (
            rated.where(F.col("rate").isNotNull())
            .groupBy(*COMPONENT, "ts")
            .agg(F.sum("rate").alias("rate"), F.count("rate").alias("known"))
            .join(series, list(COMPONENT))
            .where(F.col("known") == F.col("series"))
        )
        parts.append(
            steps.groupBy(*COMPONENT).agg(
                F.expr("percentile(rate, 0.5)").alias(f"{counter}_p50"),
                F.expr("percentile(rate, 0.95)").alias(f"{counter}_p95"),
                F.max("rate").alias(f"{counter}_max"),
                F.count("rate").alias(f"{counter}_steps"),
            )
        )
    lengths = intervals.where(F.col("dt").isNotNull()).groupBy(*COMPONENT)
    out = lengths.agg(F.expr("percentile(dt, 0.5)").alias("step_s"))
    for part in parts:
        out = out.join(part, list(COMPONENT), "left")
    return out.fillna(0, [f"{c}_steps" for c in DEMAND_COUNTERS])


def component_stats(window: DataFrame, spreads: DataFrame, demand: DataFrame) -> DataFrame:
    """The collected per-component rows, in the explicit :data:`COMPONENT_SCHEMA`."""
    joined = window.join(spreads, list(COMPONENT), "left").join(demand, list(COMPONENT), "left")
    joined = joined.fillna(0, [f"{c}_steps" for c in DEMAND_COUNTERS])
    return joined.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in COMPONENT_SCHEMA.fields])


def edge_window(steady_rows: DataFrame) -> DataFrame:
    """Tuples/s each child executed from each parent: ``formulas.span_rate`` per child executor and
    parent, summed over the child's executors (data streams from user components only)."""
    edges = steady_rows.where((F.col("source") != "") & F.col("executed").isNotNull())
    partition = (*EXECUTOR, "source")
    spans = edges.select("*", in_span(F.col("executed"), partition).alias("in_span"))
    per_executor = spans.groupBy(*partition).agg(
        _span_rate(F.col("executed"), F.col("in_span")).alias("rate")
    )
    return per_executor.groupBy(
        "topology", F.col("component").alias("child"), F.col("source").alias("parent")
    ).agg(F.sum("rate").alias("rate"))


def edge_intervals(steady_rows: DataFrame) -> DataFrame:
    """Per edge and interval, the tuples the child executed from the parent."""
    return (
        steady_rows.where((F.col("source") != "") & F.col("executed").isNotNull())
        .groupBy("topology", F.col("component").alias("child"), F.col("source").alias("parent"), "ts")
        .agg(F.sum("executed").alias("received"))
    )


def edge_stats(window: DataFrame, per_interval: DataFrame, components: DataFrame) -> DataFrame:
    """The collected per-edge rows (:data:`EDGE_SCHEMA`): ``f_t = received_t / emitted_parent,t``."""
    parents = components.select(
        "topology", F.col("component").alias("parent"), "ts", F.col("emitted").alias("parent_emitted")
    )
    fractions = (
        per_interval.join(parents, ["topology", "parent", "ts"])
        .withColumn("fraction_t", formulas.edge_fraction(F.col("received"), F.col("parent_emitted")))
        .groupBy("topology", "child", "parent")
        .agg(F.count("fraction_t").alias("fraction_n"), _cv("fraction_t").alias("fraction_cv"))
    )
    joined = window.join(fractions, ["topology", "child", "parent"], "left").fillna(0, ["fraction_n"])
    return joined.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in EDGE_SCHEMA.fields])


def window_stats(windows: DataFrame, per_interval: DataFrame) -> DataFrame:
    """The collected per-topology rows (:data:`WINDOW_SCHEMA`): intervals = most per component."""
    counts = per_interval.where(F.col("dt").isNotNull()).groupBy("topology", "component").count()
    intervals = counts.groupBy("topology").agg(F.max("count").alias("intervals"))
    joined = windows.join(intervals, "topology", "left").fillna(0, ["intervals"])
    return joined.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in WINDOW_SCHEMA.fields])
