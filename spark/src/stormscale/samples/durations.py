"""The one duration grammar: a whole number and a unit, ``s``, ``m`` or ``h`` (``30s``, ``5m``, ``1h``).

The CRD's schema uses :data:`PATTERN`; the operator's spec model and every command line parse with
:func:`parse_duration`, so a window or step that one accepts the others accept too.
"""

from __future__ import annotations

import re

PATTERN = r"^([0-9]+)(s|m|h)$"
_DURATION = re.compile(PATTERN)
_SECONDS = {"s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> int:
    """``"90s"``, ``"5m"``, ``"1h"`` → whole seconds; ``ValueError`` naming the text otherwise."""
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"not a duration like 30s, 5m or 1h: {text!r}")
    return int(match.group(1)) * _SECONDS[match.group(2)]
