"""The moving-load timeline's figures (tests/harness/bed/timeline.py) on hand-made ticks."""

from __future__ import annotations

from tests.harness.bed.timeline import (
    Tick,
    applied_changes,
    changes_between,
    converged_at,
    drained_at,
    lag_peak,
    lag_peak_at,
    reaction_s,
    scaled_in,
)


def tick(at: float, rate: float, sink: float | None, lag: float | None, budget: int | None) -> Tick:
    return Tick(at, rate, 0, sink, lag, budget, budget)


#: 8/s, then 16/s at t=100; Auto applies budget 1 at t=190; the sinks catch up at t=250 and the lag
#: (peaking at 400) drains by t=340; back to 8/s at t=400, budget 0 applied at t=700.
TICKS = [
    tick(0, 8, 8.0, 0, 0),
    tick(50, 8, 8.1, 2, 0),
    tick(100, 16, 8.0, 5, 0),
    tick(150, 16, 13.0, 200, 0),
    tick(190, 16, 12.0, 400, 1),
    tick(250, 16, 19.0, 300, 1),
    tick(300, 16, 18.0, 100, 1),
    tick(340, 16, 16.5, 3, 1),
    tick(400, 8, 8.0, 2, 1),
    tick(700, 8, 8.0, 1, 0),
    tick(750, 8, 7.9, 0, None),
]


def test_applied_changes_and_the_reaction_to_each_load_change() -> None:
    assert applied_changes(TICKS) == [(190, 1), (700, 0)]
    assert reaction_s(TICKS, 100) == 90
    assert reaction_s(TICKS, 400) == 300
    assert reaction_s(TICKS, 701) is None
    assert changes_between(TICKS, 100, 400) == [(190, 1)]


def test_the_first_applied_budget_is_a_change_from_the_baseline() -> None:
    """The operator's first write can be the scale-out itself (no fresh profile before the rise)."""
    late = [tick(0, 8, None, None, None), tick(100, 16, 8.0, 50, None), tick(160, 16, 9.0, 300, 2)]
    assert applied_changes(late) == [(160, 2)]
    assert reaction_s(late, 100) == 60
    assert applied_changes([tick(0, 8, 8.0, 0, None), tick(10, 8, 8.0, 0, 0)]) == []


def test_convergence_needs_the_sinks_to_keep_up_for_consecutive_ticks() -> None:
    assert converged_at(TICKS, 100) == 250  # 13 and 12 are short of 16, then 19, 18, 16.5
    assert converged_at(TICKS, 100, hold=9) is None
    assert converged_at(TICKS, 100, tolerance=0.3) == 150  # 13 >= 0.7·16


def test_the_lag_peak_and_when_it_drained_after_it() -> None:
    assert lag_peak(TICKS, 100, 400) == 400
    assert drained_at(TICKS, 100, floor=10) == 340  # not t=100 (5 < 10, but before the peak)
    assert drained_at(TICKS, 100, floor=1) == 700
    assert drained_at([tick(0, 8, 8, None, 0)], 0, floor=10) is None
    assert lag_peak_at(TICKS, 100, 400) == 190
    assert lag_peak_at(TICKS, 300, 800) == 300  # the highest from 300 on
    assert lag_peak_at([tick(0, 8, 8, None, 0)], 0, 10) is None


def test_scaled_in_is_the_first_tick_after_the_fall_below_the_highest_budget() -> None:
    firsts = [i for i in range(1, len(TICKS) + 1) if scaled_in(TICKS[:i], 400)]
    assert firsts[:1] == [TICKS.index(tick(700, 8, 8.0, 1, 0)) + 1]
    assert not scaled_in(TICKS[:5], 150)  # the rise's budget is above, not below
    assert not scaled_in(TICKS, 400)  # the newest tick has no reading
    assert not scaled_in([], 0)
