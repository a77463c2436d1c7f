"""Each estimator on a handful of hand-written rows, against values worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from stormscale.aggregation.aggregates import BUSY_COUNTER, BUSY_GAUGE, BUSY_LATENCY
from stormscale.aggregation.spark import estimators as est
from stormscale.aggregation.spark.types import SAMPLE_SCHEMA

pytestmark = pytest.mark.spark

T0 = datetime(2026, 1, 1, tzinfo=UTC)
S0 = T0.timestamp()


def frame(spark: SparkSession, rows: list[tuple[float, str, str, str, str, str, float]]) -> DataFrame:
    """Rows of (seconds, component, executor, metric, stream, source, value) of topology "t"."""
    data = [(T0 + timedelta(seconds=s), "t", c, e, m, st, so, v) for s, c, e, m, st, so, v in rows]
    return spark.createDataFrame(data, SAMPLE_SCHEMA)


@pytest.mark.parametrize(
    ("metric", "stream", "source"), [("executed_total", "default", "s"), ("busy_seconds_total", "", "")]
)
def test_counter_increments_survive_a_reset(
    spark: SparkSession, metric: str, stream: str, source: str
) -> None:
    values = [100.0, 110.0, 120.0, 5.0, 15.0]
    df = frame(spark, [(10.0 * i, "a", "[1-1]", metric, stream, source, v) for i, v in enumerate(values)])
    got = est.with_increments(df).where("increase IS NOT NULL").select("dt", "increase", "reset")
    expected = [
        Row(dt=10.0, increase=x, reset=r)
        for x, r in [(10.0, False), (10.0, False), (5.0, True), (10.0, False)]
    ]
    assertDataFrameEqual(got, expected)


def test_a_busy_counter_reset_is_a_change_point_like_any_counter_reset(spark: SparkSession) -> None:
    # the executed counter carries on (as if from another exporter); only the busy counter restarts
    rows = [(10.0 * i, "a", "[1-1]", "executed_total", "default", "s", 100.0 * i) for i in range(10)]
    rows += [
        (10.0 * i, "a", "[1-1]", "busy_seconds_total", "", "", 5.0 * (i if i < 4 else i - 4))
        for i in range(10)
    ]
    intervals = est.source_intervals(est.with_increments(frame(spark, rows)))
    (window,) = est.steady_windows(est.change_points(intervals), settle_s=15.0).collect()
    assert (window.changed_at, window.steady_start) == (S0 + 40, S0 + 55)


def test_the_steady_window_starts_after_the_last_change_plus_settling(spark: SparkSession) -> None:
    rows = [(10.0 * i, "a", "", "executors", "", "", 1.0 if i < 3 else 2.0) for i in range(10)]
    rows += [(10.0 * i, "a", "[1-1]", "emitted_total", "default", "", 50.0 * i) for i in range(10)]
    intervals = est.source_intervals(est.with_increments(frame(spark, rows)))
    windows = est.steady_windows(est.change_points(intervals), settle_s=25.0)
    expected = [
        Row(
            topology="t", first_ts=S0, last_ts=S0 + 90, changed_at=S0 + 30, duplicates=0, steady_start=S0 + 55
        )
    ]
    assertDataFrameEqual(windows, expected)


def test_busy_time_comes_from_the_counter_then_latency_then_the_capacity_gauge(spark: SparkSession) -> None:
    rows = []
    for i in range(3):
        rows.append((10.0 * i, "a", "[1-1]", "executed_total", "default", "s", 400.0 * i))  # 40/s
        rows.append((10.0 * i, "a", "[1-1]", "busy_seconds_total", "", "", 3.0 * i))  # 0.3 busy
        rows.append((10.0 * i, "a", "[1-1]", "execute_latency_ms", "", "", 5.0))  # lagging: 0.2
        rows.append((10.0 * i, "a", "[2-2]", "executed_total", "default", "s", 400.0 * i))  # 40/s
        rows.append((10.0 * i, "a", "[2-2]", "execute_latency_ms", "", "", 5.0))  # no counter: 0.2
        rows.append((10.0 * i, "a", "[3-3]", "executed_total", "default", "s", 200.0 * i))  # 20/s
        rows.append((10.0 * i, "a", "[3-3]", "capacity", "", "", 0.5))  # no latency: the gauge
    stepped = est.with_increments(frame(spark, rows))
    intervals = est.executor_intervals(est.source_intervals(stepped).where("start IS NOT NULL"))
    window = est.executor_window(intervals).select("executor", "executed_rate", "busy", "busy_source")
    expected = [
        Row(executor="[1-1]", executed_rate=40.0, busy=0.3, busy_source=BUSY_COUNTER),
        Row(executor="[2-2]", executed_rate=40.0, busy=0.2, busy_source=BUSY_LATENCY),
        Row(executor="[3-3]", executed_rate=20.0, busy=0.5, busy_source=BUSY_GAUGE),
    ]
    assertDataFrameEqual(window, expected)


def test_a_component_reports_the_worst_busy_source_of_its_executors(spark: SparkSession) -> None:
    rows = []
    for i in range(3):
        rows.append((10.0 * i, "a", "[1-1]", "executed_total", "default", "s", 400.0 * i))
        rows.append((10.0 * i, "a", "[1-1]", "busy_seconds_total", "", "", 3.0 * i))
        rows.append((10.0 * i, "a", "[2-2]", "executed_total", "default", "s", 400.0 * i))
        rows.append((10.0 * i, "a", "[2-2]", "execute_latency_ms", "", "", 5.0))
        rows.append((10.0 * i, "b", "[3-3]", "executed_total", "default", "s", 400.0 * i))
        rows.append((10.0 * i, "b", "[3-3]", "busy_seconds_total", "", "", 3.0 * i))
    stepped = est.with_increments(frame(spark, rows))
    intervals = est.executor_intervals(est.source_intervals(stepped).where("start IS NOT NULL"))
    got = est.component_window(est.executor_window(intervals)).select("component", "busy_max", "busy_source")
    expected = [
        Row(component="a", busy_max=0.3, busy_source=BUSY_LATENCY),
        Row(component="b", busy_max=0.3, busy_source=BUSY_COUNTER),
    ]
    assertDataFrameEqual(got, expected)


def test_the_busiest_executor_bounds_the_component(spark: SparkSession) -> None:
    executors = spark.createDataFrame(
        [
            ("t", "a", "[1-1]", 30.0, 0.6, BUSY_COUNTER),
            ("t", "a", "[2-2]", 10.0, 0.2, BUSY_COUNTER),
            ("t", "a", "", None, None, None),
        ],
        "topology string, component string, executor string, executed_rate double, busy double, "
        "busy_source int",
    )
    executors = executors.selectExpr(
        "*",
        "NULL AS emitted_rate",
        "NULL AS offered_rate",
        "DOUBLE(2) AS units",
        "DOUBLE(NULL) AS tasks",
        "busy AS storm_busy",
        "busy_source AS storm_busy_source",
    )
    (row,) = est.component_window(executors).collect()
    assert (row.executors_seen, row.executed_rate, row.busy_max) == (2, 40.0, 0.6)
    # c = R / (n · max b) = 40 / (2 · 0.6): the component saturates when executor 1 does (66.7/s in all)
    assert row.executed_rate / (row.units * row.busy_max) == pytest.approx(33.333, rel=1e-4)
