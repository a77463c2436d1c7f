"""Numbers read from untrusted JSON documents (profiles, plans, placements), pure.

JSON's integers have no bound in Python: ``math.isfinite(10**400)`` raises ``OverflowError``, and so do
``float()`` and ``format(…, "g")`` of it, and ``str()`` of an integer above 4,300 digits raises
``ValueError``. These two helpers are what every reader asks instead.
"""

from __future__ import annotations

import math
import sys
from typing import Any, TypeGuard

#: The largest integer a float holds without overflowing (about 1.8e308).
FLOAT_MAX_INT = int(sys.float_info.max)
#: An integer at least this large is named by its digit count, not written out.
LONG_INTEGER = 10**40


def is_finite_number(value: Any) -> TypeGuard[int | float]:
    """A number that converts to a finite float: a finite float, or an integer within ±1.8e308 (never a
    bool). Larger integers are infinite as rates, as JSON's 1e400 is."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -FLOAT_MAX_INT <= value <= FLOAT_MAX_INT
    return isinstance(value, float) and math.isfinite(value)


def short(value: Any) -> str:
    """``repr`` cut to 40 characters, a long integer as its digit count: an error names a value, it
    does not echo a megabyte of it."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= LONG_INTEGER:
        return f"an integer of {digits(abs(value))} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def digits(n: int) -> int:
    """The decimal digits of ``n ≥ 1`` without ``str(n)`` (which refuses past 4,300 digits)::

    2^(b−1) ≤ n < 2^b   ⇒   d₀ = ⌊(b − 1) · log10 2⌋ + 1 ≤ digits ≤ d₀ + 1
    digits = d₀ + 1  if n ≥ 10^d₀  else d₀
    """
    low = math.floor((n.bit_length() - 1) * math.log10(2)) + 1
    return low + 1 if n >= 10**low else low
