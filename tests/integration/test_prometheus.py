"""Prometheus from Debian's package scrapes loopback targets and answers range queries."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from prometheus_api_client import PrometheusConnect
from prometheus_client import CollectorRegistry, Counter, start_http_server

from tests.harness.process import free_port
from tests.harness.prometheus.server import Prometheus, StaticJob
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.topology import kill, submit

pytestmark = pytest.mark.storm


def test_prometheus_scrapes_a_loopback_target_and_answers_a_range_query(prometheus: Prometheus) -> None:
    registry = CollectorRegistry()
    ticks = Counter("probe_ticks", "ticks of the probe", registry=registry)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        prometheus.set_jobs([StaticJob("probe", [f"127.0.0.1:{port}"])])
        prometheus.wait_for('up{job="probe"} == 1', timeout_s=30)
        started = datetime.now()
        for _ in range(8):
            ticks.inc(5)
            time.sleep(1)
        prometheus.wait_for('probe_ticks_total{job="probe"} >= 40', timeout_s=30)
        time.sleep(2)  # the client rounds times to whole seconds: keep the last sample inside the range
        client = PrometheusConnect(url=prometheus.url, disable_ssl=True)
        series = client.custom_query_range(
            'probe_ticks_total{job="probe"}', start_time=started, end_time=datetime.now(), step="1"
        )
    finally:
        server.shutdown()
        thread.join(timeout=5)
        prometheus.set_jobs([])
    values = [float(v) for _, v in series[0]["values"]]
    assert len(values) >= 6
    assert values == sorted(values), "a counter never goes down"
    assert values[-1] == 40.0


def test_prometheus_sees_the_spouts_offered_rate(
    storm_cluster: StormCluster, storm_supervisor: str, prometheus: Prometheus
) -> None:
    overrides = {
        "topology.name": "it-prom-linear",
        "metrics.sd.dir": prometheus.sd_dir,
        "max.tasks": 2,
        "c1.tasks": 2,
        "c1.rate": 30,
    }
    topo = submit(storm_cluster.endpoints, "linear", overrides)
    try:
        selector = '{topology="it-prom-linear", component="1"}'
        prometheus.wait_for(f"stormscale_spout_offered_total{selector} > 0", timeout_s=150)
        time.sleep(20)
        end = time.time()
        rates = prometheus.query_range(
            f"sum(rate(stormscale_spout_offered_total{selector}[10s]))", end - 10, end, 2
        )
        emitted = prometheus.query(f"sum(stormscale_tuples_emitted_total{selector})")
    finally:
        kill(storm_cluster.endpoints, topo.name)
    samples = [float(v) for _, v in rates[0]["values"]]
    assert len(samples) >= 4
    assert sum(samples) / len(samples) == pytest.approx(30, rel=0.25)
    assert float(emitted[0]["value"][1]) > 0
