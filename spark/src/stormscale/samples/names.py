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
#: CPU seconds used by the pod the executor runs in (its share when several executors of one
#: component share the pod); written only where one component runs per pod (docs/formats/samples.md).
CPU_SECONDS = "cpu_seconds_total"
#: That pod's container CPU limit in cores (the executor's share, as for :data:`CPU_SECONDS`).
CPU_LIMIT = "cpu_limit_cores"

#: Cumulative metrics (monotone except across a worker restart, which resets them to 0).
COUNTERS = (EMITTED, TRANSFERRED, EXECUTED, ACKED, FAILED, OFFERED, BUSY, CPU_SECONDS)
