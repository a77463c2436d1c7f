"""A Prometheus exporter for Storm: counters and gauges per topology, component and executor, from Nimbus."""
