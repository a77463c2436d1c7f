"""The benchmarks still run: smoke runs of their small grids (no timing is asserted), and the accuracy
benchmark's rendering of saved reports (no test bed)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench import planner as bench
from bench.accuracy_steps import Step
from stormscale.planner import FlowModel


def test_quick_benchmark_runs_and_optimal_bounds_every_heuristic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench, "OUT", tmp_path)
    rows = bench.timing_table([10], [1, 5], list(FlowModel), time_limit=10)
    shares = bench.share_tables(5, list(FlowModel))
    bench.plot(rows, shares)
    assert {(r.size, r.budget) for r in rows} == {(10, 1), (10, 5)}
    assert shares
    assert all(0.0 <= s.share <= 1 + 1e-6 for s in shares)
    assert (tmp_path / "planner.png").stat().st_size > 10_000
    assert "Share of the optimum's gain" in capsys.readouterr().out


def test_quick_sizing_benchmark_runs_and_no_heuristic_beats_the_exact_minimum_or_the_pod_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import sizing

    monkeypatch.setattr(sizing, "OUT", tmp_path)
    rows = sizing.timing_table([10, 30], skip_rsm_above=20)
    ratios = sizing.ratio_tables(5)
    path = sizing.plot(rows, ratios)
    assert [r.size for r in rows] == [10, 30]
    assert {r.strategy for r in ratios} == set(sizing.HEURISTICS)
    assert all(r.units >= 1 - 1e-9 for r in ratios)
    assert all(r.pods >= 1 - 1e-9 for r in ratios)  # the CPU lower bound holds for every placement
    assert path.stat().st_size > 10_000
    assert "Units against the exact minimum, pods against the CPU lower bound" in capsys.readouterr().out
    packed = sizing.packing_table(5)
    assert all(r.bound <= r.sam <= r.default and r.bound_one <= r.pdeployer <= r.one_per_pod for r in packed)
    assert "Placing the units a plan runs" in capsys.readouterr().out


def _step(budget: int, measured: float, operator: dict[str, float], fit: float | None, **kw: Any) -> Step:
    """A step as ``run_budget_steps`` records it; the drop fit is far off (the summary must not use it)."""
    fitted = {"drop": 3 * measured} if fit is None else {"backpressure": fit, "drop": 3 * measured}
    return Step(
        budget, {}, {}, 4 + budget, 4 + budget, 1, measured, {"3": budget}, operator, fitted=fitted, **kw
    )


def test_accuracy_benchmark_renders_saved_reports_counts_honestly_and_plots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import accuracy
    from bench.accuracy_steps import Report
    from tests.harness.kubernetes.cgroups import QuotaUse

    harness = {"backpressure": {"combined": 104.0, "stela": 90.0}, "drop": {"combined": 130.0}}
    linear = Report(
        "linear",
        [
            _step(0, 100.0, {"combined": 100.0}, 104.0, pods={"w-0": QuotaUse(0.2, 0.19, 0.8)}),
            replace(
                _step(1, 100.0, {"combined": 112.0, "stela": 100.0}, 95.0, predicted=harness),  # +12 %
                component_measured={"2": 40.0, "3": 20.0},
                component_predicted={"backpressure": {"2": 42.0, "3": 16.0}, "drop": {"2": 1.0}},
                component_fitted={"backpressure": {"2": 40.0, "3": 22.0}},
            ),
            _step(2, 200.0, {"combined": 205.0}, None, predicted=harness),  # +2.5 %, no fit
        ],
    )
    diamond = Report(
        "diamond",
        [
            _step(0, 50.0, {"stela": 50.0}, 60.0),  # fit +20 %
            _step(1, 50.0, {}, 57.0),  # no prediction; fit +14 %
            _step(2, 50.0, {"combined": 50.0, "stela": 80.0}, 50.0),  # the operator ran stela: +60 %
        ],
        strategy="stela",
    )
    files = []
    for report in (linear, diamond):
        files.append(tmp_path / f"accuracy-{report.scenario}.json")
        files[-1].write_text(json.dumps(report.to_json()))
    monkeypatch.setattr(accuracy, "OUT", tmp_path / "out")

    loaded = [accuracy.load(f) for f in files]
    path = accuracy.render(loaded)

    assert loaded == [linear, diamond]
    out = capsys.readouterr().out
    assert "| linear | 0 | 100.0 | – | – | 104.0 | +4.0% |" in out  # budget 0: a fit, no prediction
    assert "| linear | 1 | 100.0 | 112.0 | +12.0% | 95.0 | -5.0% |" in out
    assert "| linear | 2 | 200.0 | 205.0 | +2.5% | – | – |" in out
    assert "| diamond | 1 | 50.0 | – | – | 57.0 | +14.0% |" in out
    assert "| diamond | 2 | 50.0 | 80.0 | +60.0% | 50.0 | +0.0% |" in out
    # predictions at budgets > 0 (not budget 0, not the missing one): +12 %, +2.5 %, +60 %
    assert "within 10 %: 1 of 3 predictions; within 15 %: 2 of 3" in out
    # fits at every budget (backpressure, not drop): +4, -5, +20, +14, 0 %
    assert "within 10 %: 3 of 5 fits; within 15 %: 4 of 5" in out
    # the per-scenario prediction table: stela, predictive, combined, optimal, best, the error of combined
    assert "| 1 | 3+1 | 100.0 | backpressure | 90.0 | – | 104.0 | – | – | +4.0% |" in out
    # per bolt: linear's step 1 predicted 2 at +5 % and 3 at -20 %; fits +0 % and +10 %
    assert "| 1 | 2 | 40.0 | 42.0 | +5.0% | 40.0 | +0.0% |" in out
    assert "within 10 %: 1 of 2 bolt predictions; within 15 %: 1 of 2" in out
    assert "within 10 %: 2 of 2 bolt fits; within 15 %: 2 of 2" in out
    assert path == tmp_path / "out" / "accuracy.png"
    assert path.stat().st_size > 10_000


def test_accuracy_benchmark_tells_how_one_scaled_component_grows_with_its_units() -> None:
    from bench import accuracy
    from bench.accuracy_steps import Report

    def step(budget: int, units: dict[str, int], measured: float) -> Step:
        return Step(budget, units, units, 4 + budget, 4 + budget, 1, measured, {}, {})

    scaling = Report(
        "scaling",
        [
            step(b, {"1": 1, "2": 1, "3": u, "4": 1}, m)
            for b, (u, m) in enumerate([(1, 12.0), (2, 24.0), (3, 33.0), (4, 48.0)])
        ],
    )
    assert accuracy.scaled_component(scaling) == "3"
    table = accuracy.linearity_table(scaling, "3")
    assert "| 3 | 33.0 | 2.75 | 3.00 | -8.3% |" in table
    assert "| 4 | 48.0 | 4.00 | 4.00 | +0.0% |" in table
    both = Report(
        "linear",
        [step(0, {"2": 1, "3": 1}, 12.0), step(1, {"2": 1, "3": 2}, 18.0), step(2, {"2": 2, "3": 2}, 23.0)],
    )
    assert accuracy.scaled_component(both) is None  # 2 and 3 both scaled: no one component's curve


def test_the_fleet_benchmark_runs_and_stops_a_single_process_past_its_memory_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three topologies, one hour, the single process only (no JVM): once within its cap, once with a
    cap it must pass (30 MB), where the table says where it was stopped instead of a time."""
    from bench import fleet_spark

    monkeypatch.setattr(fleet_spark, "OUT", tmp_path)
    data = tmp_path / "fleet"
    args = ["--topologies", "3", "--hours", "1", "--engines", "local", "--data", str(data)]
    assert fleet_spark.main(args) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "single process" in line]
    assert rows[-1].split()[:2] == ["1", f"{fleet_spark.rows_in(data, 1):,}"]
    assert rows[-1].split()[-1] == "3"  # three profiles
    assert len(list((data / "structures").glob("t*.json"))) == 3
    assert (tmp_path / "fleet-spark.png").stat().st_size > 10_000
    assert fleet_spark.main([*args, "--memory-cap", "0.03"]) == 0
    capped = [line for line in capsys.readouterr().out.splitlines() if "single process" in line]
    assert "RSS passed 0.03 GB" in capped[-1]


def test_the_fleet_benchmark_reads_the_export_s_partitions_of_the_same_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same three topologies' hour split into topology=/hour= partitions: one file per topology,
    the same rows, and the single process profiles every topology from them."""
    import pyarrow.parquet as pq

    from bench import fleet_spark

    monkeypatch.setattr(fleet_spark, "OUT", tmp_path)
    data = tmp_path / "fleet"
    args = ["--topologies", "3", "--hours", "1", "--engines", "local", "--data", str(data)]
    assert fleet_spark.main([*args, "--layout", "partitioned"]) == 0
    parts = sorted((data / "partitioned").glob("topology=*/hour=00/samples.parquet"))
    assert [p.parent.parent.name for p in parts] == ["topology=t00000", "topology=t00001", "topology=t00002"]
    assert sum(pq.read_metadata(p).num_rows for p in parts) == fleet_spark.rows_in(data, 1)
    assert fleet_spark.files(data, 1, "partitioned") == [str(data / "partitioned")]
    rows = [line for line in capsys.readouterr().out.splitlines() if "single process partitioned" in line]
    assert rows[-1].split()[-1] == "3"  # three profiles
