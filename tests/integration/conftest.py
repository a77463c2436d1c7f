"""Settings every integration module shares, applied before pytest imports any of them.

The operator's timer interval is read once, when :mod:`stormscale.operator.handlers` is first imported,
and several modules import it: whichever pytest collects first fixes the interval for the whole run.
Setting it here, before collection, gives every in-process operator the same 2 s timer.
"""

from __future__ import annotations

import os

os.environ.setdefault("STORMSCALE_INTERVAL_SECONDS", "2")
