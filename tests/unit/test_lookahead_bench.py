"""The look-ahead benchmark's pieces that need no test bed: the schedule it gives the spec, and its
table."""

from __future__ import annotations

from typing import Any

import pytest

from bench.lookahead import LOAD, Row, main, table
from stormscale.operator.decision.lookahead import look_ahead, schedule_forecast
from stormscale.operator.policy import parse_spec
from tests.harness.bed.moving_load import MovingLoad, known_schedule

STARTED = 1_790_000_000.4


def test_the_known_schedule_is_a_valid_spec_and_forecasts_the_rise_a_lead_early() -> None:
    spec = {
        "topologyName": "t",
        "nimbus": {"host": "nimbus"},
        "workers": {"deployment": "t-workers"},
        "metrics": {"prometheus": "http://prometheus:9090"},
        "scaling": {"mode": "Auto", "lookAhead": known_schedule(LOAD, STARTED, lead="2m")},
    }
    raw = parse_spec(spec).spec.scaling.look_ahead
    assert raw is not None
    look = look_ahead(raw)
    start = int(STARTED)
    assert look.start == start
    assert schedule_forecast(LOAD.low, start + LOAD.rise_s - 121, look).rate == LOAD.low
    assert schedule_forecast(LOAD.low, start + LOAD.rise_s - 120, look).rate == LOAD.high
    assert schedule_forecast(LOAD.low, start + LOAD.fall_at_s, look).rate == LOAD.low


def figures(**changed: Any) -> dict[str, Any]:
    base = {
        "first_scale_out_s": 150.0,
        "peak_lag": 2000.0,
        "backlog_s": 300.0,
        "unit_seconds": 4000.0,
        "scale_in_applied_s": 200.0,
        "produced": 8000,
        "missing": 0,
    }
    return {**base, **changed}


def test_the_table_compares_each_way_with_reactive_of_the_same_run() -> None:
    rows = [Row("reactive", figures()), Row("schedule", figures(first_scale_out_s=-60.0, peak_lag=500.0))]
    lines = table(rows).splitlines()
    assert lines[2].startswith("| reactive | +150 | 2000 | 300 | 4000 | +200 | 8000 | 0 | 1.00 |")
    assert lines[3].startswith("| schedule | -60 | 500 | 300 | 4000 | +200 | 8000 | 0 | 0.25 | 1.00 | 1.00 |")


def test_an_unknown_way_is_refused_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--ways", "reactive,oracle"]) == 2
    assert capsys.readouterr().out.strip() == "--ways: unknown way(s) oracle; choose from reactive, schedule"


def test_the_report_counts_backlog_seconds_and_unit_seconds_from_its_ticks() -> None:
    """A synthetic run: 4 units, then 5 from the scale-out; the lag above the floor for three ticks."""
    from tests.harness.bed.moving_load import SCALING, TICK_S, AutoReport
    from tests.harness.bed.timeline import Tick

    load = MovingLoad(low=5, high=16, low_s=20, high_s=40, fall_s=20)
    lags = [0, 0, 0, 500, 900, 300, 10, 0]
    ticks = [
        Tick(
            1000.0 + TICK_S * i,
            16.0,
            0,
            16.0,
            float(lag),
            1 if i >= 4 else 0,
            1 if i >= 3 else 0,
            {"1": 1, "2": 1, "3": 2 if i >= 4 else 1, "4": 1},
        )
        for i, lag in enumerate(lags)
    ]
    report = AutoReport(load, SCALING, 1000.0, ticks)
    figures = report.figures()
    assert figures["backlog_s"] == 3 * TICK_S
    assert figures["unit_seconds"] == TICK_S * (4 * 4 + 5 * 4)
    assert figures["peak_lag"] == 900.0
    assert figures["first_scale_out_s"] == 4 * TICK_S - load.low_s  # applied at the fifth tick
    assert "backlog_s: 30.0" in report.table()
