"""The sample reader's pure parts: queries per schema metric, rows, uniqueness, Parquet schema."""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stormscale.samples import SCHEMA, Sample, table, write_parquet
from stormscale.storm.samples.__main__ import seconds
from stormscale.storm.samples.queries import QUERIES, SeriesQuery, escape
from stormscale.storm.samples.reader import PrometheusError, Window, check_unique, samples_from_result

EXECUTED = next(q for q in QUERIES if q.metric == "executed_total")
SCHEMA_METRICS = {
    "emitted_total", "transferred_total", "executed_total", "acked_total", "failed_total", "offered_total",
    "busy_seconds_total",
    "capacity", "execute_latency_ms", "process_latency_ms", "executors", "tasks", "workers",
}  # fmt: skip


def test_every_schema_metric_has_exactly_one_query() -> None:
    assert sorted(q.metric for q in QUERIES) == sorted(SCHEMA_METRICS)


def test_queries_aggregate_by_exactly_the_schema_labels() -> None:
    assert EXECUTED.promql("lin") == (
        "max by (topology, component, executor, source, stream) "
        '(storm_component_executed_total{topology="lin"})'
    )
    offered = next(q for q in QUERIES if q.metric == "offered_total")
    assert (
        offered.promql("lin")
        == 'sum by (topology, component) (stormscale_spout_offered_total{topology="lin"})'
    )


def test_busy_seconds_are_read_per_executor_like_the_other_counters() -> None:
    busy = next(q for q in QUERIES if q.metric == "busy_seconds_total")
    assert busy.promql("lin") == (
        'max by (topology, component, executor) (storm_component_busy_seconds_total{topology="lin"})'
    )
    labels = {"topology": "lin", "component": "b", "executor": "[2-2]"}
    rows = samples_from_result(busy, [{"metric": labels, "values": [[1700000000, "12.5"]]}])
    assert rows == [Sample(1_700_000_000_000, "lin", "b", "[2-2]", "busy_seconds_total", "", "", 12.5)]


def test_topology_names_are_escaped() -> None:
    assert escape('a"b\\c') == 'a\\"b\\\\c'
    assert '{topology="a\\"b"}' in SeriesQuery("m", "s", ("topology",)).promql('a"b')


def test_matrix_to_rows_with_missing_labels_empty() -> None:
    labels = {"topology": "t", "component": "b", "executor": "[1-1]", "source": "s", "stream": "default"}
    result = [
        {"metric": labels, "values": [[1700000000, "3"], [1700000005.5, "NaN"]]},
        {"metric": {"topology": "t"}, "values": [[1700000000, "2"]]},
    ]
    rows = samples_from_result(EXECUTED, result)
    assert rows[0] == Sample(1_700_000_000_000, "t", "b", "[1-1]", "executed_total", "default", "s", 3.0)
    assert rows[1].ts_ms == 1_700_000_005_500
    assert rows[1].value != rows[1].value  # NaN is kept, as Prometheus returned it
    assert rows[2] == Sample(1_700_000_000_000, "t", "", "", "executed_total", "", "", 2.0)


def test_duplicates_are_refused() -> None:
    row = Sample(1, "t", "c", "", "tasks", "", "", 1.0)
    check_unique([row, Sample(2, "t", "c", "", "tasks", "", "", 1.0)])
    with pytest.raises(ValueError, match="duplicate sample"):
        check_unique([row, Sample(1, "t", "c", "", "tasks", "", "", 2.0)])


def test_windows_are_checked() -> None:
    assert Window(0, 120, 5).end == 120
    with pytest.raises(PrometheusError, match="step"):  # the reader's own "refused" kind
        Window(10, 0, 5)
    with pytest.raises(PrometheusError, match="points per series"):
        Window(0, 20_000, 1)


def test_parquet_has_the_schema_of_the_contract(tmp_path: Path) -> None:
    rows = [Sample(1_700_000_000_000, "t", "c", "[1-1]", "capacity", "", "", 0.25)]
    assert table(rows).schema.equals(SCHEMA)
    back = pq.read_table(write_parquet(rows, tmp_path / "x" / "s.parquet"))
    assert back.schema.equals(SCHEMA)
    assert str(back.schema.field("ts").type) == "timestamp[ms, tz=UTC]"
    assert back.to_pylist()[0]["value"] == 0.25


def test_durations() -> None:
    assert [seconds(t) for t in ("90s", "2m", "1h")] == [90, 120, 3600]
    for text in ("2 minutes", "120", "1d", "-5s"):  # the CRD's grammar: a number and s, m or h
        with pytest.raises(argparse.ArgumentTypeError, match="not a duration"):
            seconds(text)
