"""The fleet's engine (``spark-grouped``): Spark tasks over groups of topologies, each aggregated by
the single-process estimators; the same aggregates as the local engine, whatever the grouping."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from stormscale.aggregation import engines
from stormscale.aggregation.aggregates import Aggregates, WindowStats
from stormscale.aggregation.local import group_ids
from stormscale.aggregation.params import Params
from stormscale.aggregation.schema import AggregationError
from stormscale.aggregation.spark.grouped import _cause, merged, topology_groups
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import thesis

pytestmark = pytest.mark.spark

PARAMS = Params(settle_s=0)
SHAPES = ("linear", "diamond", "simple-tree")


def test_group_ids_are_dense_and_equal_exactly_for_equal_key_tuples() -> None:
    a = np.array([0, 1, 0, 1, 0, 2], dtype=np.int64)
    b = np.array([3, 0, 3, 0, 1, 0], dtype=np.int64)
    ids = group_ids([a, b])
    assert ids.tolist() == [1, 2, 1, 2, 0, 3]  # (0,1) < (0,3) < (1,0) < (2,0)
    assert group_ids([np.zeros(0, dtype=np.int64)]).tolist() == []


def test_a_key_space_beyond_62_bits_is_refused_not_wrapped() -> None:
    huge = np.array([2**31], dtype=np.int64)
    with pytest.raises(AggregationError, match="too many distinct groups"):
        group_ids([huge, huge])


def test_groups_are_contiguous_name_ranges_of_nearly_equal_count() -> None:
    names = [f"t{i:02d}" for i in range(10)]
    groups = topology_groups(list(reversed(names)), rows=100, rows_per_task=30, parallelism=1)
    assert groups == [names[0:3], names[3:6], names[6:8], names[8:10]]  # ⌈100/30⌉ = 4


def test_at_least_two_groups_per_core_and_never_more_than_topologies() -> None:
    names = [f"t{i}" for i in range(5)]
    assert len(topology_groups(names, rows=10, rows_per_task=1000, parallelism=2)) == 4
    assert len(topology_groups(names, rows=10**9, rows_per_task=1, parallelism=2)) == 5
    assert topology_groups(names + names, rows=10, rows_per_task=1, parallelism=1) == [[n] for n in names]


def test_a_bound_below_one_row_is_refused() -> None:
    with pytest.raises(AggregationError, match="rows per task: 0"):
        topology_groups(["a"], rows=10, rows_per_task=0, parallelism=1)


def test_a_failed_task_is_said_by_its_python_exceptions_line() -> None:
    worker = RuntimeError(
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        'Traceback (most recent call last):\n  File "local.py", line 3, in read\n'
        "pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer\n"
    )
    assert _cause(worker) == "pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer"
    assert _cause(RuntimeError("Py4J: connection lost\n\tat x")) == "Py4J: connection lost"
    assert _cause(MemoryError()) == "MemoryError"


def test_merging_keeps_every_groups_topologies() -> None:
    wa, wb = (WindowStats(t, 0.0, 60.0, None, 0.0, 6, 0) for t in "ab")
    one = Aggregates({"a": wa}, {"a": {}}, {"a": []})
    two = Aggregates({"b": wb}, {"b": {}}, {})
    assert merged([one, two]) == Aggregates({"a": wa, "b": wb}, {"a": {}, "b": {}}, {"a": []})


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str]]:
    """Nine topologies (three shapes, one in three rebalanced), in two files split by time."""
    tables, names = [], []
    for i in range(9):
        name = f"t{i}"
        scenario = synthetic.Scenario(name=name, duration_s=600, noise=0.02, seed=40 + i)
        topology = thesis(SHAPES[i % 3])
        if i % 3 == 1:
            last = topology.components[-1].id
            scenario = dataclasses.replace(scenario, rebalance_at_s=200.0, units_after={last: 2})
        tables.append(synthetic.generate(topology, scenario))
        names.append(name)
    rows = pa.concat_tables(tables).sort_by([("topology", "ascending"), ("ts", "ascending")])
    middle = rows["ts"][rows.num_rows // 2]
    folder = tmp_path_factory.mktemp("fleet")
    paths = []
    for part, keep in (
        ("a", pa.compute.less(rows["ts"], middle)),
        ("b", pa.compute.greater_equal(rows["ts"], middle)),
    ):
        path = folder / f"{part}.parquet"
        pq.write_table(rows.filter(keep), path, row_group_size=5_000)
        paths.append(str(path))
    return paths, names


def close(got: Any, expected: Any, where: str) -> None:
    """Equal, floats to 1e-9 relative (sums over executors may add in another order), NaN == NaN."""
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), where
        for key, value in expected.items():
            close(got[key], value, f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            close(g, e, f"{where}[{i}]")
    elif isinstance(expected, float) and not isinstance(got, bool):
        assert got == pytest.approx(expected, rel=1e-9, nan_ok=True), where
    else:
        assert got == expected, where


@pytest.mark.parametrize("rows_per_task", [1, 20_000, 10**9])
def test_the_grouped_engine_gives_the_local_engines_aggregates(
    spark: SparkSession, fleet: tuple[list[str], list[str]], rows_per_task: int
) -> None:
    paths, names = fleet
    local = engines.aggregate(paths, names, PARAMS, engine="local")
    grouped = engines.aggregate(paths, names, PARAMS, engine="spark-grouped", rows_per_task=rows_per_task)
    assert set(grouped.windows) == set(names)
    edges = {t: sorted(e, key=lambda x: (x.child, x.parent)) for t, e in grouped.edges.items()}
    expected = {t: sorted(e, key=lambda x: (x.child, x.parent)) for t, e in local.edges.items()}
    close(
        dataclasses.asdict(dataclasses.replace(grouped, edges=edges)),
        dataclasses.asdict(dataclasses.replace(local, edges=expected)),
        "aggregates",
    )


def test_topologies_without_rows_are_an_error_not_an_empty_result(
    spark: SparkSession, fleet: tuple[list[str], list[str]]
) -> None:
    paths, _ = fleet
    with pytest.raises(AggregationError, match="no rows for the named topologies"):
        engines.aggregate(paths, ["nobody"], PARAMS, engine="spark-grouped")


def test_files_without_the_contracts_columns_fail_on_the_driver(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "wrong.parquet"
    pq.write_table(pa.table({"ts": [1, 2], "value": [1.0, 2.0]}), path)
    with pytest.raises(AggregationError, match="samples"):
        engines.aggregate([str(path)], ["t0"], PARAMS, engine="spark-grouped")
    with pytest.raises(AggregationError, match="samples: cannot read"):
        engines.aggregate([str(tmp_path / "missing.parquet")], ["t0"], PARAMS, engine="spark-grouped")
