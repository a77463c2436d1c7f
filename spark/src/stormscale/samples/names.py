"""The contract's ``metric`` values (docs/formats/samples.md, "Metrics")."""

from __future__ import annotations

EMITTED = "emitted_total"
TRANSFERRED = "transferred_total"
EXECUTED = "executed_total"
ACKED = "acked_total"
FAILED = "failed_total"
BUSY = "busy_seconds_total"
OFFERED = "offered_total"
CAPACITY = "capacity"
EXECUTE_LATENCY = "execute_latency_ms"
PROCESS_LATENCY = "process_latency_ms"
EXECUTORS = "executors"
TASKS = "tasks"
WORKERS = "workers"

#: Cumulative metrics (monotone except across a worker restart, which resets them to 0).
COUNTERS = (EMITTED, TRANSFERRED, EXECUTED, ACKED, FAILED, OFFERED, BUSY)
