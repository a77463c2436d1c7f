"""What the bounded fuzz tests share: how many examples, the per-example deadline, and the check that
an input gives a value or the documented error with a one-line message."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings

T = TypeVar("T")
#: 400 in the unit run (about 10 s a test on a quiet machine); ``make fuzz`` sets 20,000.
EXAMPLES = int(os.environ.get("STORMSCALE_FUZZ_EXAMPLES", "400"))


def fuzz_settings(deadline_ms: int) -> settings:
    """Hypothesis settings with ``deadline_ms`` per example (a hang or a quadratic path fails); the
    unit run is reproducible, ``make fuzz`` explores."""
    return settings(
        max_examples=EXAMPLES,
        deadline=timedelta(milliseconds=deadline_ms),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=EXAMPLES <= 1000,
    )


def outcome(parse: Callable[[Any], T], value: Any, error: type[Exception]) -> T | str:
    """``parse(value)``, or the message of the documented ``error`` (one line); any other exception
    propagates and fails the example."""
    try:
        return parse(value)
    except error as err:
        message = str(err)
    assert message, "an error must say what is wrong"
    assert "\n" not in message, message
    return message
