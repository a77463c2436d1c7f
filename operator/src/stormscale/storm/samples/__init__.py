"""The sample reader: the exporter's series in Prometheus → tidy metric samples (docs/formats/samples.md),
in the operator's profiler and as ``stormscale-samples`` (Prometheus → Parquet)."""

from stormscale.storm.samples.reader import (
    MAX_POINTS,
    PrometheusError,
    PrometheusUnavailableError,
    SampleReader,
    Window,
)

__all__ = ["MAX_POINTS", "PrometheusError", "PrometheusUnavailableError", "SampleReader", "Window"]
