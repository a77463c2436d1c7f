"""The aggregation benchmark still runs end to end on a tiny input (no timing is asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import aggregation as bench

pytestmark = pytest.mark.spark


def test_tiny_benchmark_runs_both_engines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench, "OUT", tmp_path)
    assert bench.main(["--sizes", "2000", "--hours", "0.25"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines if line.startswith(("local ", "spark "))][-2:] == [
        "local",
        "spark",
    ]
    assert (tmp_path / "aggregation.png").stat().st_size > 10_000
    assert len(list((tmp_path / "structures-2000-0.25h").glob("t*.json"))) == 1


def test_tiny_fleet_benchmark_compares_the_grouped_engine_with_the_single_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three topologies, one hour: the grouped engine's row has its three profiles, the whole process
    tree's CPU (the Python workers' included: more than none) and its time over the single process's."""
    from bench import fleet_spark

    monkeypatch.setattr(fleet_spark, "OUT", tmp_path)
    args = [
        "--topologies",
        "3",
        "--hours",
        "1",
        "--engines",
        "spark-grouped",
        "local",
        "--data",
        str(tmp_path),
    ]
    assert fleet_spark.main(args) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "spark grouped" in line]
    hours, samples, _, _, _wall, cpu, peak, _rate, ratio, profiles = rows[-1]
    assert (hours, samples, profiles) == ("1", f"{fleet_spark.rows_in(tmp_path, 1):,}", "3")
    assert float(cpu) > 0
    assert float(ratio) > 0
    assert float(peak.replace(",", "")) > 500  # the JVM and its Python workers, not the driver alone
