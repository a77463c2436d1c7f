"""The one duration grammar: a whole number and a unit, ``s``, ``m`` or ``h`` (``30s``, ``5m``, ``1h``).

The CRD's schema uses :data:`PATTERN` and :data:`MAX_LENGTH`; the operator's spec model and every
command line parse with :func:`parse_duration`, so a window or step that one accepts the others accept
too. A duration is at most :data:`MAX_SECONDS` (a leap year): whatever adds it to or takes it from a
time stays far inside ``datetime``'s range, and no digit string is long enough to cost anything.
"""

from __future__ import annotations

import re

PATTERN = r"^([0-9]+)(s|m|h)$"
#: Characters in a duration: ``"8784h"`` needs 5; 12 leaves room for leading zeros and seconds.
MAX_LENGTH = 12
#: 366 days in seconds: the longest duration anything here waits, looks back or keeps.
MAX_SECONDS = 366 * 24 * 3600
_DURATION = re.compile(PATTERN)
_SECONDS = {"s": 1, "m": 60, "h": 3600}


class DurationError(ValueError):
    """Not a duration, or one beyond :data:`MAX_LENGTH` characters or :data:`MAX_SECONDS`."""


def parse_duration(text: str) -> int:
    """``"90s"``, ``"5m"``, ``"1h"`` → whole seconds, at most :data:`MAX_SECONDS`;
    :class:`DurationError` (a ``ValueError``) naming the text otherwise."""
    if len(text) > MAX_LENGTH:
        raise DurationError(f"a duration has at most {MAX_LENGTH} characters: {text[:MAX_LENGTH]!r}...")
    match = _DURATION.match(text.strip())
    if not match:
        raise DurationError(f"not a duration like 30s, 5m or 1h: {text!r}")
    seconds = int(match.group(1)) * _SECONDS[match.group(2)]
    if seconds > MAX_SECONDS:
        raise DurationError(f"{text!r} is longer than 366 days ({MAX_SECONDS}s)")
    return seconds
