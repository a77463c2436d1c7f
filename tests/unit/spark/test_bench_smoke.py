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
    assert bench.main(["--sizes", "20000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines if line.startswith(("local ", "spark "))][-2:] == [
        "local",
        "spark",
    ]
    assert (tmp_path / "aggregation.png").stat().st_size > 10_000
    assert len(list((tmp_path / "structures-20000").glob("t*.json"))) == 1
