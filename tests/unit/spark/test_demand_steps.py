"""The demand's per-step rates (``formulas.period_rate``): a counter that moves at every scrape gives
each step its own rate; one that moves at heartbeats gives each step its heartbeat period's rate."""

from __future__ import annotations

import numpy as np

from stormscale.aggregation import local

STEPS = np.arange(0.0, 190.0, 10.0)  # scrapes every 10 s


def test_a_counter_moving_at_every_scrape_gives_each_step_its_own_rate() -> None:
    increase = np.full(len(STEPS), 100.0)  # 10/s
    increase[10] = 300.0  # 30/s in the step ending at 100 s
    rates = local.period_rates(np.zeros(len(STEPS), np.int64), STEPS, increase)
    assert np.isnan(rates[0])  # before the first move: the period's start is unknown
    assert rates[10] == 30.0
    assert np.all(np.delete(rates, [0, 10]) == 10.0)


def test_a_counter_moving_at_heartbeats_gives_each_step_its_period_s_rate() -> None:
    """Heartbeats every 60 s (at 0, 60, 120, 180 s): a plain Δ/dt would read 0, 0, …, 60/s on 10-second
    steps, and its p95 six times the rate."""
    increase = np.zeros(len(STEPS))
    increase[STEPS == 60] = 600.0
    increase[STEPS == 120] = 1200.0  # 20/s from 60 s to 120 s
    increase[STEPS == 180] = 600.0  # 10/s from 120 s to 180 s
    rates = local.period_rates(np.zeros(len(STEPS), np.int64), STEPS, increase)
    assert np.all(np.isnan(rates[STEPS <= 60]))  # before the first move
    assert np.all(rates[(STEPS > 60) & (STEPS <= 120)] == 20.0)
    assert np.all(rates[(STEPS > 120) & (STEPS <= 180)] == 10.0)


def test_series_do_not_lend_each_other_their_moves() -> None:
    group = np.repeat(np.array([0, 1], np.int64), 3)
    ts = np.tile(np.array([10.0, 20.0, 30.0]), 2)
    increase = np.array([50.0, 50.0, 50.0, 0.0, 0.0, 80.0])  # series 1 moves once: no period
    rates = local.period_rates(group, ts, increase)
    assert np.isnan(rates[0])
    assert rates[1] == rates[2] == 5.0
    assert np.all(np.isnan(rates[3:]))
