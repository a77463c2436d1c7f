"""Malformed, empty or insufficient input: one clear error naming the problem, and no profile."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from stormscale.aggregation import cli, engines, local
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import profiles
from stormscale.aggregation.schema import AggregationError, UnsettledWindowError
from stormscale.aggregation.spark import job
from stormscale.aggregation.structure import Structure, load_structure, parse_structure
from stormscale.samples.schema import SCHEMA
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import thesis

pytestmark = pytest.mark.spark

LINEAR = thesis("linear")
SCENARIO = synthetic.Scenario(name="linear", duration_s=300, noise=0.0)
STRUCTURE = parse_structure(synthetic.structure(LINEAR, SCENARIO))
Runner = Callable[[Sequence[str], Sequence[Structure], Params], list[dict[str, Any]]]


@pytest.fixture(params=["spark", "spark-grouped", "local"])
def run(request: pytest.FixtureRequest, spark: SparkSession) -> Runner:
    if request.param == "local":
        return local.run
    if request.param == "spark-grouped":

        def grouped(
            paths: Sequence[str], structures: Sequence[Structure], params: Params
        ) -> list[dict[str, Any]]:
            names = [s.topology for s in structures]
            found = engines.aggregate(paths, names, params, engine="spark-grouped")
            return profiles(structures, found, params)

        return grouped

    def on_spark(
        paths: Sequence[str], structures: Sequence[Structure], params: Params
    ) -> list[dict[str, Any]]:
        return job.run(spark, paths, structures, params)

    return on_spark


def samples(tmp_path: Path, table: pa.Table | None = None) -> list[str]:
    path = tmp_path / "samples.parquet"
    pq.write_table(synthetic.generate(LINEAR, SCENARIO) if table is None else table, path)
    return [str(path)]


def fails(
    run: Runner, paths: list[str], match: str, structure: Structure = STRUCTURE, **params: Any
) -> AggregationError:
    with pytest.raises(AggregationError, match=match) as info:
        run(paths, [structure], Params(**params))
    assert "\n" not in str(info.value)
    return info.value


def test_a_missing_column_is_named(run: Runner, tmp_path: Path) -> None:
    table = synthetic.generate(LINEAR, SCENARIO).drop_columns(["source"])
    fails(run, samples(tmp_path, table), "missing column 'source'")


def test_a_wrong_type_is_named(run: Runner, tmp_path: Path) -> None:
    table = synthetic.generate(LINEAR, SCENARIO)
    table = table.set_column(7, "value", pc.cast(table["value"], pa.string()))
    fails(run, samples(tmp_path, table), "column 'value' must be double, got string")


def test_a_missing_path_is_named(run: Runner, tmp_path: Path) -> None:
    fails(run, [str(tmp_path / "nowhere.parquet")], "samples: cannot read .*nowhere.parquet")


def test_a_file_that_is_not_parquet_is_named(run: Runner, tmp_path: Path) -> None:
    path = tmp_path / "notes.parquet"
    path.write_text("not parquet", encoding="utf-8")
    fails(run, [str(path)], "samples: cannot read .*notes.parquet")


def test_empty_samples_are_an_error(run: Runner, tmp_path: Path) -> None:
    fails(run, samples(tmp_path, SCHEMA.empty_table()), "no rows for (topology 'linear'|the named)")


def test_samples_of_another_topology_are_an_error(run: Runner, tmp_path: Path) -> None:
    other = synthetic.generate(LINEAR, synthetic.Scenario(name="other", duration_s=300))
    fails(run, samples(tmp_path, other), "no rows for (topology 'linear'|the named)")


def test_a_window_ending_right_after_a_rebalance_is_not_guessed(run: Runner, tmp_path: Path) -> None:
    late = synthetic.Scenario(name="linear", duration_s=600, rebalance_at_s=550, units_after={"3": 2})
    error = fails(
        run, samples(tmp_path, synthetic.generate(LINEAR, late)), "steady intervals after the last change"
    )
    assert isinstance(error, UnsettledWindowError)  # the operator waits: nothing is wrong


def test_too_few_intervals_without_a_change_is_not_settling(run: Runner, tmp_path: Path) -> None:
    """Samples that end (an exporter gone) leave few intervals but show no change to wait out."""
    short = synthetic.Scenario(name="linear", duration_s=30)
    error = fails(run, samples(tmp_path, synthetic.generate(LINEAR, short)), "steady intervals")
    assert not isinstance(error, UnsettledWindowError)


def test_duplicate_rows_are_an_error(run: Runner, tmp_path: Path) -> None:
    table = synthetic.generate(LINEAR, SCENARIO)
    fails(run, samples(tmp_path, pa.concat_tables([table, table])), "repeating a \\(series, ts\\) pair")


def test_a_component_without_samples_is_named(run: Runner, tmp_path: Path) -> None:
    document = synthetic.structure(LINEAR, SCENARIO)
    document["components"].append({"id": "ghost", "kind": "bolt", "children": []})
    document["components"][-2]["children"] = ["ghost"]
    fails(run, samples(tmp_path), "component 'ghost' has no samples", parse_structure(document))


def test_a_bolt_that_executed_nothing_has_no_capacity(run: Runner, tmp_path: Path) -> None:
    table = synthetic.generate(LINEAR, SCENARIO)
    pairs = zip(table["component"].to_pylist(), table["metric"].to_pylist(), strict=True)
    keep = [not (c == "4" and m == "executed_total") for c, m in pairs]
    fails(run, samples(tmp_path, table.filter(keep)), "'4': no tuples executed")


def test_malformed_structure_files_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"topology": "x", "components": [{"id": "a", "kind": "sink"}]}', encoding="utf-8")
    with pytest.raises(AggregationError, match=r'components\[0\].kind: must be "spout" or "bolt"'):
        load_structure(bad)
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(AggregationError, match="not valid JSON"):
        load_structure(bad)


@pytest.mark.parametrize("engine", ["spark", "spark-grouped", "local"])
def test_cli_exits_2_with_one_line_and_writes_nothing(
    engine: str, spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = synthetic.generate(LINEAR, SCENARIO).drop_columns(["ts"])
    paths = samples(tmp_path, table)
    structure = tmp_path / "linear.json"
    structure.write_text(json.dumps(synthetic.structure(LINEAR, SCENARIO)), encoding="utf-8")
    out = tmp_path / "profiles"
    argv = ["--samples", *paths, "--structure", str(structure), "--output", str(out), "--engine", engine]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err == "stormscale-aggregate: error: samples: missing column 'ts' (see docs/formats/samples.md)\n"
    assert not out.exists()
    assert spark.range(1).count() == 1  # the test session survived the in-process run


def test_a_bolt_whose_pods_never_rose_above_the_overhead_names_it(run: Runner, tmp_path: Path) -> None:
    """The pods' CPU less ``workers.podOverheadCPU`` stayed at 0 (the overhead read while the worker
    JVMs still booted) while the bolt executed tuples: the error says so, not "no samples"."""
    scenario = synthetic.Scenario(name="linear", duration_s=300, noise=0.0, cpu_components=("4",))
    table = synthetic.generate(LINEAR, scenario)
    is_cpu = pc.and_(
        pc.equal(table["component"], pa.scalar("4")),
        pc.equal(table["metric"], pa.scalar("cpu_seconds_total")),
    )
    table = table.set_column(
        table.schema.get_field_index("value"), "value", pc.if_else(is_cpu, 0.0, table["value"])
    )
    fails(run, samples(tmp_path, table), "'4': executed .* tuples/s but its pods' CPU never rose above")
