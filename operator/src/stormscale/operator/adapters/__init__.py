"""Adapters: the ports implemented against real systems (Kubernetes, Nimbus, Prometheus)."""
