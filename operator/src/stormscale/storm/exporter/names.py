"""The exporter's metric names and label sets (documented in docs/exporter.md)."""

from __future__ import annotations

TOPOLOGY, COMPONENT, EXECUTOR, STREAM, SOURCE = "topology", "component", "executor", "stream", "source"
EXECUTOR_LABELS = (TOPOLOGY, COMPONENT, EXECUTOR)
COMPONENT_LABELS = (TOPOLOGY, COMPONENT)

# Counters (Storm's all-time counts; names carry the _total suffix in the exposition)
EMITTED = "storm_component_emitted_total"
TRANSFERRED = "storm_component_transferred_total"
EXECUTED = "storm_component_executed_total"
ACKED = "storm_component_acked_total"
FAILED = "storm_component_failed_total"
BUSY = "storm_component_busy_seconds_total"
# Gauges
CAPACITY = "storm_component_capacity"
EXECUTE_LATENCY = "storm_component_execute_latency_ms"
PROCESS_LATENCY = "storm_component_process_latency_ms"
EXECUTORS = "storm_component_executors"
TASKS = "storm_component_tasks"
WORKERS = "storm_topology_workers"
# The exporter itself
UP = "stormscale_exporter_up"
SCRAPE_ERRORS = "stormscale_exporter_scrape_errors_total"
NIMBUS_CALLS = "stormscale_exporter_nimbus_calls_total"
SCRAPE_SECONDS = "stormscale_exporter_scrape_duration_seconds"
# Exported by the benchmark spout itself (read by the sample reader, not proxied here)
SPOUT_OFFERED = "stormscale_spout_offered_total"
