"""The aggregation job: extract (Parquet samples) → transforms (estimators) → load (profile JSON).

``run`` is orchestration only; the maths is in :mod:`stormscale.aggregation.spark.estimators` and
:mod:`stormscale.aggregation.formulas`, the profile assembly in :mod:`stormscale.aggregation.profiles`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from stormscale.aggregation.aggregates import Aggregates, ComponentStats, EdgeStats, WindowStats, from_row
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import profiles
from stormscale.aggregation.schema import AggregationError, check_columns, parquet_files
from stormscale.aggregation.spark import estimators as est
from stormscale.aggregation.spark.types import SAMPLE_SCHEMA
from stormscale.aggregation.structure import Structure


def session(
    master: str = "local[*]",
    shuffle_partitions: int = 8,
    app: str = "stormscale-aggregation",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A Spark session; ``local[*]`` needs no external service, any ``--master`` URL reaches a cluster.

    Outside spark-submit, loopback only and no UI (``SPARK_LOCAL_IP`` defaults to 127.0.0.1). On a
    ``local`` master the Python workers run this interpreter (``PYSPARK_PYTHON`` defaults to it, not
    to the ``python3`` on PATH, which may lack the job's packages); a cluster's executors run theirs.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.ansi.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    if master:
        builder = builder.master(master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def read_samples(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """The samples at ``paths`` (Parquet files or directories), checked against the contract."""
    files = parquet_files(paths)
    try:
        frame = spark.read.parquet(*files)
        columns = frame.dtypes
    except Exception as err:  # any failure to open or read the footers: missing path, not Parquet
        raise AggregationError(f"samples: cannot read {', '.join(paths)}: {_first_line(err)}") from None
    check_columns(columns, arrow=False)
    return frame.select(*[f.name for f in SAMPLE_SCHEMA.fields])


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def aggregate(samples: DataFrame, topologies: Sequence[str], params: Params) -> Aggregates:
    """Run the estimators and collect their small outputs."""
    # x/0 is null (skipped by aggregates), as the single-process engine's inf/nan: an idle interval
    # has no selectivity, not an error. Spark 4 defaults to ANSI mode, which would raise.
    samples.sparkSession.conf.set("spark.sql.ansi.enabled", "false")
    start = params.start.timestamp() if params.start else None
    end = params.end.timestamp() if params.end else None
    selected = est.in_window(samples, topologies, start, end)
    if selected.isEmpty():  # one short job (it stops at a row), where the estimators would run ~40
        raise AggregationError("samples: no rows for the named topologies in the window")
    stepped = est.with_increments(selected)
    intervals = est.source_intervals(stepped, params.system_stream_prefix)
    cached = [intervals.persist(StorageLevel.MEMORY_AND_DISK)]
    try:
        windows = est.steady_windows(est.change_points(intervals), params.settle_s)
        cached.append(windows.persist())
        steady = est.steady(intervals, windows)
        executors = est.executor_intervals(steady)
        cached.append(executors.persist(StorageLevel.MEMORY_AND_DISK))
        per_interval = est.component_intervals(executors)
        cached.append(per_interval.persist(StorageLevel.MEMORY_AND_DISK))
        components = est.component_stats(
            est.component_window(est.executor_window(executors)),
            est.component_spreads(per_interval),
            est.demand_steps(executors),
        )
        edges = est.edge_stats(est.edge_window(steady), est.edge_intervals(steady), per_interval)
        window_rows = est.window_stats(windows, per_interval).collect()
        component_rows = components.collect()
        edge_rows = edges.collect()
    finally:
        for frame in cached:
            frame.unpersist()
    return _collected(window_rows, component_rows, edge_rows)


def _collected(
    window_rows: Sequence[Any], component_rows: Sequence[Any], edge_rows: Sequence[Any]
) -> Aggregates:
    windows = {r["topology"]: from_row(WindowStats, r.asDict()) for r in window_rows}
    components: dict[str, dict[str, ComponentStats]] = {}
    for r in component_rows:
        stats = from_row(ComponentStats, r.asDict())
        components.setdefault(stats.topology, {})[stats.component] = stats
    edges: dict[str, list[EdgeStats]] = {}
    for r in edge_rows:
        edge = from_row(EdgeStats, r.asDict())
        edges.setdefault(edge.topology, []).append(edge)
    return Aggregates(windows, components, edges)


def run(
    spark: SparkSession, paths: Sequence[str], structures: Sequence[Structure], params: Params
) -> list[dict[str, Any]]:
    """Samples at ``paths`` → one profile per structure (nothing is written here)."""
    if not structures:
        raise AggregationError("structure: at least one topology structure is needed")
    samples = read_samples(spark, paths)
    aggregates = aggregate(samples, [s.topology for s in structures], params)
    return profiles(structures, aggregates, params)
