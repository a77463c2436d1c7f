"""The whole test bed as one stack (control plane, Storm, Prometheus, exporter, pod runner), the
benchmark scenarios it runs, and how a running topology is measured."""
