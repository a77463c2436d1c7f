"""The exporter and the sample reader against real Storm and Prometheus.

One light ``linear`` topology and one exporter process (``python -m stormscale.storm.exporter``)
serve the module; Prometheus scrapes the exporter and the spout's own endpoint. Order matters: the
rate test fills Prometheus with two minutes of data that the sample-reader test then reads, and the
rebalance test runs last because it changes the topology.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import requests
from kubernetes.client import ApiClient as KubeClient
from prometheus_api_client import PrometheusConnect
from prometheus_client.parser import text_string_to_metric_families

from stormscale.aggregation import parse_published
from stormscale.operator import handlers
from stormscale.publish import cli as publish_cli
from stormscale.publish.kube import FleetApi
from stormscale.samples import SCHEMA
from stormscale.storm import NimbusClient, RebalanceRequest
from stormscale.storm.exporter import names as n
from stormscale.storm.exporter.scraper import Scraper
from stormscale.storm.exporter.server import serve
from stormscale.storm.model import ALL_TIME, TEN_MINUTES
from stormscale.storm.samples.queries import QUERIES
from tests.harness.bed.measure import running_exporter
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.fixtures import scratch_namespace
from tests.harness.prometheus.server import Prometheus, StaticJob
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.topology import Topology, kill, submit
from tests.harness.waiting import wait_for
from tests.integration.test_operator_api import condition, deployment, get, operator

pytestmark = pytest.mark.storm

NAME = "it-exporter"
RATE = 30
PROPS = {"topology.name": NAME, "max.tasks": 3, "c1.tasks": 2, "c1.rate": RATE}
COSTS = {"c2.cost_us": 2000, "c3.cost_us": 1000, "c4.cost_us": 500}
RATE_WINDOW_S = 90
REBALANCE_WAIT_S = 3
EXPORT_STEP_S = 10
Key = tuple[str, ...]


@dataclass(frozen=True)
class Exporter:
    """The exporter process under test."""

    url: str
    scraped_since: float  # when Prometheus started scraping it (Unix seconds)

    def families(self) -> dict[str, dict[Key, float]]:
        """Scrape /metrics: metric name → (sorted label pairs) → value."""
        text = requests.get(f"{self.url}/metrics", timeout=10).text
        out: dict[str, dict[Key, float]] = defaultdict(dict)
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[s.name][tuple(f"{k}={v}" for k, v in sorted(s.labels.items()))] = s.value
        return out


def label(labels: Key, name: str) -> str:
    """The value of label ``name`` in a sample's ``("k=v", ...)`` key ("" if absent)."""
    return next((pair.split("=", 1)[1] for pair in labels if pair.startswith(f"{name}=")), "")


def totals(samples: dict[Key, float], components: Iterable[str]) -> dict[str, float]:
    """Per-component sums for ``components`` (0 where the exporter has no series, e.g. a sink's emits)."""
    sums = per_component(samples)
    return {c: sums.get(c, 0.0) for c in components}


def per_component(samples: dict[Key, float]) -> dict[str, float]:
    """Sum a family's samples by their component label."""
    sums: dict[str, float] = defaultdict(float)
    for labels, value in samples.items():
        sums[label(labels, "component")] += value
    return dict(sums)


@pytest.fixture(scope="module")
def topology(
    storm_cluster: StormCluster, storm_supervisor: str, prometheus: Prometheus
) -> Iterator[Topology]:
    """The module's topology; its spout registers its own endpoint with Prometheus."""
    props = {**PROPS, **COSTS, "metrics.sd.dir": prometheus.sd_dir}
    topo = submit(storm_cluster.endpoints, "linear", props)
    try:
        yield topo
    finally:
        kill(storm_cluster.endpoints, topo.name)


@pytest.fixture(scope="module")
def client(storm_cluster: StormCluster) -> NimbusClient:
    """The product client on the session's Nimbus."""
    return storm_cluster.endpoints.nimbus(timeout_s=10)


@pytest.fixture(scope="module")
def exporter(
    storm_cluster: StormCluster, prometheus: Prometheus, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Exporter]:
    log = tmp_path_factory.mktemp("exporter") / "exporter.log"
    with running_exporter(storm_cluster.endpoints, log) as url:
        try:
            prometheus.set_jobs([StaticJob("stormscale-exporter", [url.removeprefix("http://")])])
            yield Exporter(url, time.time())
        finally:
            prometheus.set_jobs([])


def next_update(client: NimbusClient, topology_id: str, component: str) -> tuple[float, int]:
    """Wait for Nimbus's next stats update of ``component``; its time and all-time executed count."""
    before = client.topology_page(topology_id, ALL_TIME).components[component].executed

    def updated() -> tuple[float, int] | None:
        now = client.topology_page(topology_id, ALL_TIME).components[component].executed
        return (time.time(), now) if now != before else None

    return wait_for(updated, 30, f"a stats update of {component}", every_s=0.25)


def test_exporter_counters_and_gauges_equal_storms_own_numbers(
    client: NimbusClient, topology: Topology, exporter: Exporter
) -> None:
    wait_for(lambda: per_component(exporter.families()[n.EXECUTED]).get("4", 0) > 50, 180, "no tuples at 4")
    # All-time counters only grow, so the exporter's read (after p0 and the 1 s cache) must lie between
    # Nimbus's page before it and the page after Nimbus's next stats update (the page may lag a beat).
    p0 = client.topology_page(topology.id, ALL_TIME).components
    time.sleep(1.2)
    fams = exporter.families()
    next_update(client, topology.id, "4")
    storm = client.topology_page(topology.id, ALL_TIME).components
    for family, field in ((n.EMITTED, "emitted"), (n.TRANSFERRED, "transferred"), (n.EXECUTED, "executed")):
        seen = totals(fams[family], storm)
        for c, s in storm.items():
            if field == "executed" and c == "1":
                continue  # spouts execute nothing
            low, high = float(getattr(p0[c], field)), float(getattr(s, field))
            assert low <= seen[c] <= high, f"{family} of {c}: {seen[c]} outside [{low}, {high}]"
    # busy seconds = Σ executed × mean execute latency over all time; one executor per bolt here, so the
    # page's all-time executed count times its (count-weighted) latency is the same product
    busy = per_component(fams[n.BUSY])
    assert set(busy) == {"2", "3", "4"}, "bolts only"
    for c in busy:
        low = p0[c].executed * p0[c].execute_latency_ms / 1000
        high = storm[c].executed * storm[c].execute_latency_ms / 1000
        assert low * 0.999 - 0.002 <= busy[c] <= high * 1.001 + 0.002, f"busy of {c}: {busy[c]}"
    assert per_component(fams[n.EXECUTORS]) == {c: float(s.executors) for c, s in storm.items()}
    assert per_component(fams[n.TASKS]) == {"1": 2.0, "2": 3.0, "3": 3.0, "4": 3.0}
    assert fams[n.WORKERS] == {(f"topology={NAME}",): 1.0}
    inputs = {(label(k, "component"), label(k, "source"), label(k, "stream")) for k in fams[n.EXECUTED]}
    assert inputs == {("2", "1", "default"), ("3", "2", "default"), ("4", "3", "default")}
    time.sleep(1.2)  # past the exporter's cache: gauges read back to back with Storm's page
    fams = exporter.families()
    recent = client.topology_page(topology.id, TEN_MINUTES).components
    for bolt in ("2", "3", "4"):
        assert per_component(fams[n.CAPACITY])[bolt] == pytest.approx(
            recent[bolt].capacity, rel=0.05, abs=0.002
        )
        assert per_component(fams[n.EXECUTE_LATENCY])[bolt] == pytest.approx(
            recent[bolt].execute_latency_ms, rel=0.05, abs=0.01
        )
    assert 0 < per_component(fams[n.CAPACITY])["2"] < 1
    assert fams[n.UP] == {(): 1.0}


def test_prometheus_rate_of_the_counters_agrees_with_storms_rate(
    client: NimbusClient, topology: Topology, exporter: Exporter, prometheus: Prometheus
) -> None:
    t0, c0 = next_update(client, topology.id, "4")
    time.sleep(RATE_WINDOW_S)
    t1, c1 = next_update(client, topology.id, "4")
    storm_rate = (c1 - c0) / (t1 - t0)
    time.sleep(3)  # let Prometheus scrape the new value
    window = round(t1 - t0) + 1
    promql = f'sum(rate({n.EXECUTED}{{topology="{NAME}",component="4"}}[{window}s]))'
    result = PrometheusConnect(url=prometheus.url, disable_ssl=True).custom_query(
        promql, params={"time": t1 + 3}
    )
    prom_rate = float(result[0]["value"][1])
    assert storm_rate == pytest.approx(RATE, rel=0.2), "the topology keeps up with its spout"
    assert prom_rate == pytest.approx(storm_rate, rel=0.05)


def raw_rows(prometheus: Prometheus, start: int, end: int, step: int) -> set[tuple[object, ...]]:
    """Every sample Prometheus returns for the reader's raw series, as rows without the topology."""
    rows: set[tuple[object, ...]] = set()
    for query in QUERIES:
        summed: dict[tuple[object, ...], float] = defaultdict(float)
        for series in prometheus.query_range(f'{query.series}{{topology="{NAME}"}}', start, end, step):
            labels = series["metric"]
            ids = tuple(labels.get(label, "") for label in ("component", "executor", "stream", "source"))
            for ts, value in series["values"]:
                key = (round(float(ts) * 1000), ids[0], ids[1], query.metric, ids[2], ids[3])
                if query.aggregation == "sum":
                    summed[key] += float(value)
                else:
                    rows.add((*key, float(value)))
        rows |= {(*key, value) for key, value in summed.items()}
    return rows


def test_sample_reader_writes_exactly_the_samples_prometheus_returns(
    topology: Topology, exporter: Exporter, prometheus: Prometheus, tmp_path: Path
) -> None:
    time.sleep(max(0.0, exporter.scraped_since + 125 - time.time()))  # two full minutes of data
    end, out = int(time.time()), tmp_path / "samples.parquet"
    argv = [
        sys.executable,
        "-m",
        "stormscale.storm.samples",
        "--prometheus",
        prometheus.url,
        "--topology",
        NAME,
    ]
    argv += ["--window", "2m", "--step", "5s", "--end", str(end), "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    expected = raw_rows(prometheus, end - 120, end, 5)
    table = pq.read_table(out)
    assert table.schema.equals(SCHEMA)
    got = [
        (
            int(r["ts"].timestamp() * 1000),
            r["component"],
            r["executor"],
            r["metric"],
            r["stream"],
            r["source"],
            r["value"],
        )
        for r in table.to_pylist()
    ]
    assert len(got) == len(set(got)), "no duplicated row"
    assert set(got) == expected
    assert {r["metric"] for r in table.to_pylist()} >= {
        "emitted_total",
        "executed_total",
        "busy_seconds_total",
        "offered_total",
        "capacity",
        "executors",
        "tasks",
        "workers",
    }
    steps = sorted({r[0] for r in got})
    assert all(b - a == 5000 for a, b in itertools.pairwise(steps)), "no step missing inside the window"
    assert len(steps) >= 120 // 5, "the window is covered (the first step may precede the first scrape)"


def test_the_scheduled_export_feeds_the_publisher_and_the_operator_plans_on_it(
    topology: Topology,
    *,
    exporter: Exporter,
    prometheus: Prometheus,
    storm_cluster: StormCluster,
    control_plane: ControlPlane,
    kube_api: KubeClient,
    stormtopology_crd: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Prometheus and Nimbus → ``stormscale-samples-export`` (partitions, structure) →
    ``stormscale-publish`` (the ConfigMap) → the operator's plan on it (Recommend: the topology is
    left as it is), nothing written by hand in between."""
    time.sleep(max(0.0, exporter.scraped_since + 125 - time.time()))  # two full minutes of data
    end, root = int(time.time()), tmp_path / "samples"
    endpoints = storm_cluster.endpoints
    argv = [sys.executable, "-m", "stormscale.storm.samples.export", "--prometheus", prometheus.url]
    argv += ["--nimbus", f"{endpoints.host}:{endpoints.nimbus_port}", "--root", str(root)]
    # Steps of two of Storm's 5 s heartbeats: at 5 s a step held 0, 1 or 2 of them as the two clocks
    # drifted, and every component's per-step rates spread 0.7 (not steady); the same samples thinned
    # to 10 s steps spread 0.005-0.008, to 20 s 0.004.
    argv += ["--lookback", "2m", "--step", f"{EXPORT_STEP_S}s", "--end", str(end)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    hours = sorted((root / f"topology={NAME}").glob("hour=*/samples.parquet"))
    assert 1 <= len(hours) <= 2  # the window may straddle an hour
    rows = [r for hour in hours for r in pq.read_table(hour).to_pylist()]
    assert {r["topology"] for r in rows} == {NAME}
    stamps = sorted({int(r["ts"].timestamp()) for r in rows})
    assert end - EXPORT_STEP_S < stamps[-1] <= end  # the hour's steps reach the run's end
    gaps = {b - a for a, b in itertools.pairwise(stamps)}
    assert gaps <= {EXPORT_STEP_S}, "no step missing across the hours"
    structure = json.loads((root / "structures" / f"{NAME}.json").read_text())
    assert [(c["id"], c["children"]) for c in structure["components"]] == [
        ("1", ["2"]),
        ("2", ["3"]),
        ("3", ["4"]),
        ("4", []),
    ]
    assert structure["components"][0]["tasks"] == PROPS["c1.tasks"]

    with scratch_namespace(control_plane, "export") as namespace:
        control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
        spec = {
            "topologyName": NAME,
            "nimbus": {"host": endpoints.host, "port": endpoints.nimbus_port},
            "workers": {"deployment": "linear-workers"},
            "metrics": {"prometheus": prometheus.url, "profile": "Published", "publishedMaxAge": "1h"},
            "scaling": {"mode": "Recommend", "budget": 2},
        }
        stormtopology = {
            "apiVersion": "stormscale.io/v1alpha1",
            "kind": "StormTopology",
            "metadata": {"name": "linear", "namespace": namespace},
            "spec": spec,
        }
        control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(stormtopology))
        publish = ["--samples", str(root), "--structure", str(root / "structures"), "--namespace", namespace]
        publish += ["--end", datetime.fromtimestamp(end + 1, UTC).isoformat(), "--window", "2m"]
        published = publish_cli.main([*publish, "--engine", "local"], fleet=FleetApi(kube_api))
        assert published == 0
        profile = parse_published(get(control_plane, namespace, "configmap/linear-profile")["data"])
        assert profile.document["confidence"]["steady"] is True
        assert [c.id for c in profile.topology.components] == ["1", "2", "3", "4"]

        monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
        monkeypatch.setattr(handlers, "_API", kube_api)
        executors_before = {e.id for e in endpoints.nimbus().topology_info(NAME).executors}
        with operator(namespace) as runner:
            planned = wait_for(
                lambda: (
                    r
                    if condition(r := get(control_plane, namespace), "Ready") == ("True", "Recommended")
                    else None
                ),
                60,
                "a recommendation on the published profile",
            )
        assert runner.exception is None
        plan = planned["status"]["lastPlan"]
        assert plan["profileSource"] == "Published"
        assert (
            plan["profileWindow"]
            == get(control_plane, namespace, "configmap/linear-profile")["data"]["window"]
        )
        assert 1 <= sum(plan["allocation"].values()) <= 2  # a unit that adds nothing stays unallocated
        assert plan["predicted"]["after"] > plan["predicted"]["before"] > 0
        assert {e.id for e in endpoints.nimbus().topology_info(NAME).executors} == executors_before


def test_scrapes_within_the_cache_interval_cost_one_read_of_nimbus(
    client: NimbusClient, topology: Topology
) -> None:
    scraper = Scraper(client, cache_s=60)
    server = serve(scraper, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        bodies = [requests.get(url, timeout=10).text for _ in range(5)]
    finally:
        server.shutdown()
        server.server_close()
    topologies = len(client.topologies())
    assert scraper.calls == 1 + topologies
    assert f"{n.NIMBUS_CALLS} {1 + topologies}.0" in bodies[-1]
    assert len(set(bodies)) == 1


def test_rebalance_shows_in_the_exporter_within_its_wait_time(
    client: NimbusClient, topology: Topology, exporter: Exporter
) -> None:
    started = time.monotonic()
    client.rebalance(NAME, RebalanceRequest(wait_secs=REBALANCE_WAIT_S, workers=1, executors={"2": 3}))
    wait_for(
        lambda: per_component(exporter.families()[n.EXECUTORS]).get("2") == 3.0,
        REBALANCE_WAIT_S + 30,
        "the exporter never showed 3 executors of 2",
    )
    assert time.monotonic() - started < REBALANCE_WAIT_S + 30
    assert per_component(exporter.families()[n.EXECUTORS]) == {"1": 1.0, "2": 3.0, "3": 1.0, "4": 1.0}
