"""The sample reader: the exporter's series in Prometheus → tidy metric samples (docs/formats/samples.md),
in the operator's profiler and as ``stormscale-samples`` (Prometheus → Parquet)."""

from stormscale.storm.samples.cpu import CpuRows, Pod, PodCpu, cpu_samples, pod_busy
from stormscale.storm.samples.reader import (
    MAX_POINTS,
    Limits,
    PrometheusError,
    PrometheusTooLargeError,
    PrometheusUnavailableError,
    SampleReader,
    Window,
)

__all__ = [
    "MAX_POINTS",
    "CpuRows",
    "Limits",
    "Pod",
    "PodCpu",
    "PrometheusError",
    "PrometheusTooLargeError",
    "PrometheusUnavailableError",
    "SampleReader",
    "Window",
    "cpu_samples",
    "pod_busy",
]
