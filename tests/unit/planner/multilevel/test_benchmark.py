"""Algorithm 1's load plan, its monitoring rules and the table derivation (multi-level elasticity §3.1)."""

from __future__ import annotations

import pytest

from stormscale.planner.elasticity.benchmark import (
    BenchmarkParams,
    BenchmarkState,
    LevelRecord,
    Recorded,
    benchmark_step,
    derive_table,
    level_of_window,
    load_schedule,
    recorded_loads,
)
from stormscale.planner.elasticity.model import AddExecutor, minimal_layout
from stormscale.planner.elasticity.observation import Observation, OperatorObservation, PodObservation

from .fixtures import PARSER

POD = (PodObservation(0, cpu=0.3, mem=0.3, executors=1, vcpus=4),)


def parser(h: float | None, executors: int = 1) -> tuple[OperatorObservation, ...]:
    return (OperatorObservation(PARSER, 1, h, executors, 16),)


def test_schedule_has_a_warm_up_below_init_load_and_holds_each_level() -> None:
    params = BenchmarkParams(init_load=4000, max_load=8000, step=2000, hold=120, period=30)
    levels = load_schedule(params)
    assert [(lv.start, lv.load, lv.monitored) for lv in levels] == [
        (0, 0, False),
        (120, 2000, False),
        (240, 4000, True),
        (360, 6000, True),
        (480, 8000, True),
    ]
    assert level_of_window(params, 240, 270) == 2
    assert level_of_window(params, 330, 360) == 2
    assert level_of_window(params, 345, 375) is None  # straddles two levels: not used
    assert level_of_window(params, 600, 630) is None  # after the benchmark
    with pytest.raises(ValueError, match="ΔL"):
        load_schedule(BenchmarkParams(0, 100, 0, 120, 30))


def test_warm_up_windows_are_not_monitored() -> None:
    params = BenchmarkParams(init_load=4000, max_load=8000, step=2000, hold=120, period=30)
    state = BenchmarkState(minimal_layout([PARSER]))
    state, actions = benchmark_step(state, Observation(0, 30, operators=parser(0.5), pods=POD), params)
    assert actions == ()
    assert state.levels == ()


def test_benchmark_with_three_consecutive_observations() -> None:
    params = BenchmarkParams(0, 0, 2000, 150, 10, observations=3)
    state = BenchmarkState(minimal_layout([PARSER]))
    fired = []
    for i, h in enumerate([0.85, 0.95, 0.85, 0.85, 0.85]):
        state, actions = benchmark_step(
            state, Observation(10 * i, 10 * i + 10, operators=parser(h), pods=POD), params
        )
        fired.append(actions)
    assert fired == [(), (), (), (), (AddExecutor(PARSER, 0),)]


def test_cool_down_and_counter_reset() -> None:
    params = BenchmarkParams(0, 0, 2000, 600, 30)
    state = BenchmarkState(minimal_layout([PARSER]))
    state, actions = benchmark_step(state, Observation(0, 30, operators=parser(0.5), pods=POD), params)
    assert actions == (AddExecutor(PARSER, 0),)
    stale = Observation(15, 45, operators=parser(0.5, 2), pods=POD)  # started before the action
    assert benchmark_step(state, stale, params) == (state, ())
    reset = Observation(30, 60, operators=parser(0.5, 2), pods=POD, reset=True)
    state, actions = benchmark_step(state, reset, params)
    assert (actions, state.stale_before) == ((), 90)
    assert benchmark_step(state, Observation(60, 90, operators=parser(0.5, 2), pods=POD), params)[1] == ()
    _, actions = benchmark_step(state, Observation(90, 120, operators=parser(0.5, 2), pods=POD), params)
    assert actions == (AddExecutor(PARSER, 0),)
    assert recorded_loads(state) == [0]


def test_derive_table_notes_unsettled_levels_and_applies_a_margin() -> None:
    log = (Recorded(2000, AddExecutor(PARSER, 0)), Recorded(4000, AddExecutor(PARSER, 0)))
    levels = (
        LevelRecord(0, 0, 0, True),
        LevelRecord(1, 2000, 1, True),
        LevelRecord(2, 4000, 2, False),  # Δ was too short: still congested at its end
        LevelRecord(3, 6000, 2, True),
    )
    state = BenchmarkState(minimal_layout([PARSER]), log, levels)
    table = derive_table(state)
    assert [(r.lower, r.upper, r.steps) for r in table.rows] == [(0, 0, 0), (0, 2000, 1), (2000, 6000, 2)]
    assert table.notes == ("level 4000 ended congested: it validates no configuration",)
    margined = derive_table(state, margin=500)
    assert [r.upper for r in margined.rows] == [0, 1500, 5500]
    with pytest.raises(ValueError, match="validated no"):
        derive_table(BenchmarkState(minimal_layout([PARSER])))
