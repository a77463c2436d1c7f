"""Predicates and signals: health, overload, the noise filter, spout health, counter deltas."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner.elasticity.health import (
    Stream,
    Thresholds,
    health,
    instance_health,
    is_congested,
    is_overloaded,
    received,
    spout_health,
)
from stormscale.planner.elasticity.signals import (
    ForecastSlot,
    counter_delta,
    counter_rate,
    filtered_level,
    first_trigger,
    forecast_max,
    forecast_over_window,
    linear_forecast,
    required_observations,
)


def test_health_threshold_is_strict() -> None:
    at_threshold = health(5400, 6000)
    assert at_threshold == pytest.approx(0.9, abs=1e-12)
    assert not is_congested(at_threshold)
    below = health(5390, 6000)
    assert below == pytest.approx(0.8983, abs=1e-4)
    assert is_congested(below)


def test_no_input_means_no_decision() -> None:
    assert health(0, 0) is None
    assert not is_congested(health(0, 0))
    assert health(50, 60) is None  # fewer than minSamples = 100 tuples
    assert health(50, 60, min_samples=0) == pytest.approx(50 / 60)


def test_received_sums_predecessor_streams_and_all_grouping_reaches_every_instance() -> None:
    assert received([Stream(3000), Stream(1000)], instances=2) == 4000
    assert received([Stream(3000), Stream(1000, all_grouping=True)], instances=2) == 5000
    assert instance_health(1500, 4000, instances=2) == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("cpu", "mem", "expected"),
    [(0.90, 0.50, False), (0.91, 0.10, True), (0.30, 0.95, True), (0.90, 0.90, False)],
)
def test_overload_is_strict(cpu: float, mem: float, expected: bool) -> None:
    assert is_overloaded(cpu, mem) is expected


def test_thresholds_are_configurable() -> None:
    assert is_overloaded(0.85, 0.2, Thresholds(cpu=0.8))
    assert is_congested(0.94, min_health=0.95)


def test_three_consecutive_observations_at_ten_seconds() -> None:
    observations = [0.85, 0.95, 0.85, 0.85, 0.85]
    congested = [is_congested(h) for h in observations]
    assert required_observations(10) == 3
    assert first_trigger(congested, required_observations(10)) == 4  # the 5th observation
    assert required_observations(60) == 1
    assert first_trigger(congested, required_observations(60)) == 0
    assert required_observations(30) == 3  # the cautious reading of §3.1


def test_spout_health() -> None:
    h = spout_health(18000, target_rate=500, period=60)
    assert h == pytest.approx(0.6)
    assert is_congested(h)


def test_counter_deltas() -> None:
    assert counter_delta(1_000_000, 1_240_000) == 240_000
    assert counter_rate(1_000_000, 1_240_000, 60) == pytest.approx(4000)
    assert counter_delta(1_240_000, 3_000) is None
    assert counter_rate(1_240_000, 3_000, 60) is None


def test_forecast_window_is_closed_and_slots_half_open() -> None:
    slots = [ForecastSlot(0, 300, 5000), ForecastSlot(300, 600, 8000)]
    assert forecast_max(slots, 180, 300) == 8000  # the next slot starts within the lead
    assert forecast_max(slots, 300, 420) == 8000
    assert forecast_max(slots, 600, 720) is None
    assert forecast_over_window(slots, 240, 300) == 5000


def test_linear_forecast() -> None:
    assert linear_forecast([0, 10, 20], [1000, 2000, 3000], 140) == pytest.approx(15000)
    assert linear_forecast([5], [700], 100) == 700
    with pytest.raises(ValueError, match="as many"):
        linear_forecast([], [], 0)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=1, max_value=5),
    st.floats(min_value=1000, max_value=5000),
    st.floats(min_value=0, max_value=1e6),
    st.integers(min_value=0, max_value=20),
    st.data(),
)
def test_a_spike_shorter_than_the_window_never_leaves_the_band(
    k: int, steady: float, spike: float, position: int, data: st.DataObject
) -> None:
    """Any run of k observations that contains a steady (in-band) one never moves the level."""
    length = data.draw(st.integers(min_value=1, max_value=k - 1)) if k > 1 else 0
    loads = [steady] * 20
    for i in range(position, min(position + length, 20)):
        loads[i] = spike
    for end in range(1, 21):
        assert filtered_level(loads[:end], 500.0, 6000.0, k) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e5), min_size=1, max_size=5))
def test_filtered_level_is_agreed_by_every_observation(window: list[float]) -> None:
    level = filtered_level(window, 4000.0, 12000.0, len(window))
    if level is not None:
        assert level in window
        assert all(x > 12000 for x in window) or all(x <= 4000 for x in window)
