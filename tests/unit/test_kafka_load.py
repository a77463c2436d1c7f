"""The load generator's schedule: parsing, the rate at a time, the records due by a time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.harness.kafka.load import Schedule, ScheduleError, Segment
from tests.unit.fuzzing import fuzz_settings

EXAMPLE = "60@120s,120@300s,ramp:120->60@60s"


def test_schedule_parses_steps_and_ramps() -> None:
    schedule = Schedule.parse(EXAMPLE)
    assert schedule.segments == (Segment(60, 60, 120), Segment(120, 120, 300), Segment(120, 60, 60))
    assert schedule.seconds == 480
    assert str(schedule) == EXAMPLE
    assert Schedule.parse(str(schedule)) == schedule
    assert Schedule.parse("60@2m, 0@1h").segments == (Segment(60, 60, 120), Segment(0, 0, 3600))
    assert Schedule.parse("7.5@10") == Schedule.constant(7.5, 10)


@pytest.mark.parametrize(
    ("t", "rate"),
    [
        (-1, 0),
        (0, 60),
        (119.9, 60),
        (120, 120),
        (419.9, 120),
        (420, 120),
        (450, 90),
        (479, 61),
        (480, 0),
        (1e6, 0),
    ],
)
def test_schedule_rate_at_time(t: float, rate: float) -> None:
    assert Schedule.parse(EXAMPLE).rate_at(t) == pytest.approx(rate)


@pytest.mark.parametrize(
    ("t", "due"),
    [
        (-5, 0),
        (0, 0),
        (1, 60),
        (120, 7200),
        (420, 7200 + 36000),
        (450, 43200 + 30 * (120 + 90) / 2),
        (480, 48600),
    ],
)
def test_schedule_records_due_by_time(t: float, due: float) -> None:
    schedule = Schedule.parse(EXAMPLE)
    assert schedule.due(t) == pytest.approx(due)
    assert schedule.due(10_000) == pytest.approx(48600)  # nothing after the end
    assert schedule.total == 48600


@pytest.mark.parametrize(
    "text",
    ["", "60", "60@", "@10s", "abc@1s", "ramp:1@2s", "ramp:1->@2s", "-5@1s", "5@0s", "5@10x", "5@1s,,x"],
)
def test_schedule_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ScheduleError):
        Schedule.parse(text)


segments = st.lists(
    st.tuples(
        st.floats(0, 500, allow_nan=False),
        st.floats(0, 500, allow_nan=False),
        st.floats(0.1, 100, allow_nan=False),
    ),
    min_size=1,
    max_size=5,
)


@fuzz_settings(deadline_ms=500)
@given(parts=segments, fractions=st.lists(st.floats(0, 1), min_size=2, max_size=2))
def test_schedule_due_is_the_integral_of_the_rate(
    parts: list[tuple[float, float, float]], fractions: list[float]
) -> None:
    schedule = Schedule(tuple(Segment(a, b, s) for a, b, s in parts))
    t0, t1 = sorted(f * schedule.seconds for f in fractions)
    assert schedule.due(t1) >= schedule.due(t0) - 1e-9  # never fewer records later
    steps = 400  # the midpoint rule is exact on each linear piece except where a segment ends
    width = (t1 - t0) / steps
    numeric = sum(schedule.rate_at(t0 + (i + 0.5) * width) for i in range(steps)) * width
    jump = 500 * width * len(parts)  # at most one step per segment boundary is off, by ≤ max rate × width
    assert abs(schedule.due(t1) - schedule.due(t0) - numeric) <= jump + 1e-6
