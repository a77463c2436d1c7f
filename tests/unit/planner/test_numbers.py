"""Numbers from untrusted JSON: an integer of any size is judged and named without an exception."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stormscale.planner.numbers import FLOAT_MAX_INT, digits, is_finite_number, short


@given(st.integers(min_value=1, max_value=10**4000))
def test_digits_counts_as_str_does(n: int) -> None:
    assert digits(n) == len(str(n))


@pytest.mark.parametrize("k", [1, 39, 40, 41, 400, 4300, 4301, 10_000])
def test_digits_at_powers_of_ten_and_past_strs_limit(k: int) -> None:
    """Past 4,300 digits ``str()`` of an integer raises; ``digits`` still counts."""
    assert digits(10**k) == k + 1
    assert digits(10**k - 1) == k


@pytest.mark.parametrize(
    ("value", "finite"),
    [
        (0, True),
        (-(10**300), True),
        (FLOAT_MAX_INT, True),
        (FLOAT_MAX_INT + 1, False),
        (-FLOAT_MAX_INT - 1, False),
        (10**400, False),
        (1.5, True),
        (float("inf"), False),
        (float("nan"), False),
        (True, False),
        ("1", False),
        (None, False),
    ],
)
def test_a_finite_number_converts_to_a_finite_float(value: object, finite: bool) -> None:
    assert is_finite_number(value) is finite
    if finite:
        assert math.isfinite(float(value))  # type: ignore[arg-type]


def test_short_names_long_integers_by_their_digits_and_cuts_long_reprs() -> None:
    assert short(10**39) == repr(10**39)
    assert short(10**40) == "an integer of 41 digits"
    assert short(-(10**10_000)) == "an integer of 10001 digits"
    assert short("x" * 100) == repr("x" * 100)[:37] + "..."
    assert short(True) == "True"
