"""The disruption benchmark's arithmetic on synthetic readings: workers restarted from their uptime,
seconds at zero, tuples lost, the table's ratio and the plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import disruption as bench


def step(way: str, gap_s: float, restarted: int) -> bench.Step:
    """A sink at 10/s for 60 s, at zero for ``gap_s`` from the rebalance (10 s after the apply at
    100), then 12/s; 4 workers before, ``restarted`` of them (and one new) young at the end."""
    readings, count, t = [], 0.0, 40.0
    while t <= 400:
        readings.append((t, count))
        rate = 10.0 if t < 110 else (0.0 if t < 110 + gap_s else 12.0)
        count += rate * 5
        t += 5
    before = {f"h{i}:1": 300 for i in range(4)}
    ended = 400.0
    after = {w: (10 if i < restarted else 600) for i, w in enumerate(before)}
    after["h9:1"] = 20  # a new worker
    return bench.Step(
        "linear",
        way,
        readings,
        applied_at=100.0,
        rebalanced_at=110.0,
        before_s=60.0,
        workers_before=before,
        workers_after=after,
        ended_at=ended,
    )


def test_the_figures_count_restarts_zero_seconds_and_the_loss() -> None:
    figures = step("storm", 40.0, 4).figures()
    assert figures["steady_before"] == pytest.approx(10.0)
    assert (figures["workers_before"], figures["restarted"], figures["started"]) == (4, 4, 1)
    assert figures["zero_s"] == pytest.approx(40.0)
    assert figures["lost"] == pytest.approx(400.0)  # 40 s × 10/s until the old rate is back
    assert figures["steady_after"] == pytest.approx(12.0)
    assert figures["rebalance_s"] == pytest.approx(10.0)
    assert figures["settled_s"] == pytest.approx(50.0)  # 110 + 40 - 100


def test_a_gone_worker_counts_as_restarted_and_the_ratio_is_ours_over_storm_s(tmp_path: Path) -> None:
    ours = step("stormscale", 10.0, 1)
    del ours.workers_after["h3:1"]  # stopped by the step
    assert ours.restarts() == (4, 2, 1)
    text = bench.table([step("storm", 40.0, 4), step("sticky", 20.0, 2), ours])
    assert (
        "| tuples lost, ∫ (steady − rate)⁺ dt | 400 tuples | 200 tuples | 100 tuples | 0.50 | 0.25 |" in text
    )
    assert "| seconds with the sink at zero | 40 s | 20 s | 10 s | 0.50 | 0.25 |" in text
    assert bench.plot([step("storm", 40.0, 4), ours], tmp_path).stat().st_size > 10_000


def test_the_sink_s_lines_are_counted_complete_only(tmp_path: Path) -> None:
    (tmp_path / "seen-3.txt").write_text("1\n2\n3")
    (tmp_path / "seen-4.txt").write_text("7\n")
    (tmp_path / "other.txt").write_text("9\n")
    assert bench.lines_seen(tmp_path) == 3


def test_each_shape_is_measured_three_ways_on_names_of_its_own() -> None:
    pairs = bench.scenarios()
    assert [(way, s.shape) for way, s in pairs] == [
        ("storm", "kafka-linear"),
        ("sticky", "kafka-linear"),
        ("stormscale", "kafka-linear"),
        ("storm", "diamond"),
        ("sticky", "diamond"),
        ("stormscale", "diamond"),
    ]
    assert len({s.name for _, s in pairs}) == 6
    assert [s.placement for _, s in pairs] == ["", "", "MultiLevel", "", "", "MultiLevel"]
    # only Storm's own way opts out of the scheduler's sticky default
    assert [s.storm_conf.get("stormscale.sticky", True) for _, s in pairs] == [False, True, True] * 2
    assert all(s.records_seen for _, s in pairs)
