"""The fleet benchmark's what-if (``python -m bench.fleet --threads N``): Kopf's thread pool for sync
handlers set to ``STORMSCALE_BENCH_THREADS`` threads instead of Kopf's default, min(32, CPUs + 4).

Loaded beside the operator's handlers (``kopf run -m stormscale.operator.handlers -m
bench.kopf_threads``) by that phase only; the operator itself does not set the pool's size.
"""

from __future__ import annotations

import os
from typing import Any

import kopf

THREADS_ENV = "STORMSCALE_BENCH_THREADS"


@kopf.on.startup()
def threads(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Size Kopf's executor (it grows its threads on demand up to this many)."""
    if os.environ.get(THREADS_ENV):
        settings.execution.max_workers = int(os.environ[THREADS_ENV])
