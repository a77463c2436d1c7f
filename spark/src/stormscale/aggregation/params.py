"""The job's settings, each declared once with its unit, default and meaning."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Params:
    """Estimator parameters shared by the Spark job and the single-process implementation."""

    #: Seconds dropped after the last rebalance or restart (executor count, worker count or counter
    #: reset): caches are cold and queues drain, so rates and latencies there are not the steady state.
    settle_s: float = 120.0
    #: Fewest intervals the steady window must hold; fewer is an error (no profile is guessed).
    min_intervals: int = 5
    #: Coefficient of variation of a component's per-interval rate above which the window is flagged
    #: unstable (the profile is still written, with ``confidence.steady = false``).
    max_cv: float = 0.25
    #: Streams whose name starts with this are Storm's system streams (acks, metrics, ticks): they are
    #: not data output and count neither in selectivity nor in edge fractions.
    system_stream_prefix: str = "__"
    #: Only samples with ``start <= ts <= end`` are read (None: unbounded).
    start: datetime | None = None
    end: datetime | None = None
