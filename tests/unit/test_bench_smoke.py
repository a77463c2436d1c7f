"""The planner benchmark still runs (a smoke run of its small grid; no timing is asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import planner as bench
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
