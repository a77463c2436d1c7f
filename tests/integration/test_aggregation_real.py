"""On samples from a real congested topology, the aggregation's profile predicts the sinks' throughput.

The whole measuring pipeline runs for real: the diamond topology (spout "1" splits 0.5/0.5 to bolts
"2" and "3", both feed sink "4") on a Storm cluster of this module's own with one Supervisor, the
exporter (``python -m stormscale.storm.exporter``), a Prometheus of this module's own scraping it
and the spout's endpoint, the sample reader writing one window to Parquet, the structure from Nimbus
(``getUserTopology``), and the aggregation job (``python -m stormscale.aggregation``, Spark ``local[*]``,
then ``--engine local`` on the same files). The planner then predicts Θ from the profile alone.

The case is congested on purpose: bolt "3" burns ``COST3_US`` of CPU per tuple in its one process, so
it can take about 1/COST3 tuples/s, and the spout offers ``OFFERED`` tuples/s, half of them to "3",
well above that. Storm 2.x backpressure then throttles the spout to twice what "3" manages, so every
measured rate describes the bottleneck and none the demand. Receive queues are made small
(``RECEIVE_BUFFER``, submitted as topology conf) so backpressure reaches the spout within seconds
rather than after Storm's default 32 768 queued tuples (at 70 tuples/s in excess, 8 minutes).

Busy time comes from the exporter's busy-seconds counter (``storm_component_busy_seconds_total``,
docs/exporter.md), differentiated over the window, so the window needs only a short settle after the
first tuples reach the sink. Storm's 10-minute latency and capacity gauges would have needed ten: a
multilang bolt's first few hundred tuples go into its process's pipe without blocking ``execute``,
and their zero latency lowered the bottleneck's busy time, and raised its capacity, by 13–17 % for
ten minutes (measured before the counter existed, when this test waited 11 minutes).

The measurement is independent of the pipeline: the sinks' executed counts on Nimbus's topology page,
read when a worker heartbeat changes them, at both ends of the window (``tests/harness/bed/measure.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stormscale.planner import FlowModel, parse_profile, throughput
from stormscale.storm import NimbusClient
from stormscale.storm.samples.reader import Window
from tests.harness.bed.measure import (
    Measured,
    SinkCounter,
    rate_over,
    run_aggregation,
    running_exporter,
    sinks,
    structure_document,
    write_samples,
    write_structure,
)
from tests.harness.process import new_run_dir
from tests.harness.prometheus.server import Prometheus, StaticJob
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.topology import Topology, kill, submit, wait_for_stats

pytestmark = [pytest.mark.integration, pytest.mark.storm, pytest.mark.spark]

NAME = "it-aggregation-real"
OFFERED = 200  # tuples/s offered by the spout: 100/s to each branch
COST3_US = 20_000  # bolt "3": 50 tuples/s at most on a whole core, less on a busy machine
OVERRIDES: dict[str, object] = {
    "topology.name": NAME,
    "max.tasks": 1,  # one task, one process per bolt: a unit is one process
    "c1.tasks": 1,
    "c1.rate": OFFERED,
    "c2.cost_us": 2_000,
    "c3.cost_us": COST3_US,
    "c4.cost_us": 1_000,
}
CONF: dict[str, object] = {"topology.executor.receive.buffer.size": 64}
FIRST_TUPLES_TIMEOUT_S = 240.0
SETTLE_S = 75.0  # backpressure reaches the spout within seconds; the shell bolts' pipes fill at once
WINDOW_S = 180.0  # about 36 worker heartbeats (5 s apart)
STEP_S = 10
PROMETHEUS_LAG_S = 3  # a heartbeat reaches Prometheus within the exporter's cache + one scrape
TOLERANCE = 0.10
ENGINES_AGREE = 1e-4


@pytest.fixture(scope="module")
def cluster(storm_home: Path) -> Iterator[StormCluster]:
    """ZooKeeper + Nimbus + one Supervisor (one slot) of this module only."""
    with StormCluster(new_run_dir("storm-") / "aggregation-real", storm_home) as storm:
        storm.start_supervisor("aggregation-real-1")
        yield storm


@pytest.fixture(scope="module")
def prometheus(cluster: StormCluster) -> Iterator[Prometheus]:
    """A Prometheus of this module's own (its scrape jobs are not shared with other tests)."""
    server = Prometheus(cluster.endpoints.storm_dir.parent / "prometheus").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def exporter(cluster: StormCluster, prometheus: Prometheus) -> Iterator[str]:
    """The exporter, scraped by the module's Prometheus; its URL."""
    log = cluster.endpoints.storm_dir.parent / "exporter.log"
    with running_exporter(cluster.endpoints, log) as url:
        prometheus.set_jobs([StaticJob("stormscale-exporter", [url.removeprefix("http://")])])
        yield url


@pytest.fixture(scope="module")
def topology(cluster: StormCluster, prometheus: Prometheus, exporter: str) -> Iterator[Topology]:
    """The congested diamond; its spout registers its own endpoint with Prometheus. Killed at the end."""
    props = {**OVERRIDES, "metrics.sd.dir": prometheus.sd_dir}
    submitted = submit(cluster.endpoints, "diamond", props, conf=CONF)
    try:
        yield submitted
    finally:
        kill(cluster.endpoints, submitted.name)


def samples_window(measured: Measured) -> Window:
    """The Prometheus window matching ``measured``: same length, each end just after its heartbeat."""
    start = int(measured.start.at) + PROMETHEUS_LAG_S
    steps = round(measured.seconds / STEP_S)
    return Window(start, start + steps * STEP_S, STEP_S)


def predictions(profile: dict[str, Any]) -> dict[FlowModel, float]:
    """Θ of the profile at its own units, under each flow model."""
    model = parse_profile(profile)
    return {flow: throughput(model, model.units, flow) for flow in FlowModel}


def estimates(profile: dict[str, Any]) -> dict[str, float]:
    """Every number the planner reads from a profile, keyed ``component.field[.child]``."""
    out: dict[str, float] = {}
    for c in profile["components"]:
        for key in ("units", "outputPerUnit", "capacityPerUnit", "selectivity"):
            if key in c:
                out[f"{c['id']}.{key}"] = float(c[key])
        for child, fraction in c.get("children", {}).items():
            out[f"{c['id']}.children.{child}"] = float(fraction)
    return out


def demand(profile: dict[str, Any]) -> float:
    """What the spouts offer: Σ outputPerUnit × units."""
    return sum(
        float(c["outputPerUnit"]) * int(c["units"]) for c in profile["components"] if c["kind"] == "spout"
    )


def summary(profile: dict[str, Any]) -> str:
    """One line per component: the estimates and the confidence the test cares about."""
    lines = []
    for c in profile["components"]:
        conf = c["confidence"]
        numbers = {k: c.get(k) for k in ("units", "outputPerUnit", "capacityPerUnit", "selectivity")}
        extra = {k: conf.get(k) for k in ("executedRate", "emittedRate", "capacityPerUnit", "outputPerUnit")}
        lines.append(f"  {c['id']}: {numbers} {extra} children={c.get('children')}")
    return "\n".join(lines)


def test_the_profile_predicts_the_measured_sink_throughput_of_a_congested_topology(
    cluster: StormCluster, prometheus: Prometheus, topology: Topology, tmp_path: Path
) -> None:
    nimbus: NimbusClient = cluster.endpoints.nimbus(timeout_s=10)
    sink_ids = sinks(structure_document(nimbus, topology.name))
    assert sink_ids == ("4",)
    wait_for_stats(
        cluster.endpoints,
        topology.id,
        lambda s: all(c in s and s[c].executed > 0 for c in sink_ids),
        FIRST_TUPLES_TIMEOUT_S,
    )
    time.sleep(SETTLE_S)
    measured = rate_over(SinkCounter(nimbus, topology.id, sink_ids), WINDOW_S)
    window = samples_window(measured)
    time.sleep(max(0.0, window.end + PROMETHEUS_LAG_S - time.time()))

    samples = tmp_path / "samples.parquet"
    rows = write_samples(prometheus.url, topology.name, window, samples)
    structure_file = write_structure(nimbus, topology.name, tmp_path / "structure" / f"{NAME}.json")
    spark = run_aggregation(samples, structure_file, tmp_path / "spark")
    local = run_aggregation(samples, structure_file, tmp_path / "local", ["--engine", "local"])

    predicted = {"spark": predictions(spark), "local": predictions(local)}
    lines = [
        f"window {window.start}..{window.end} ({rows} samples); measured sink rate {measured.rate:.2f}/s "
        f"over {measured.seconds:.1f} s (Nimbus); demand {demand(spark):.1f}/s",
        *(
            f"{engine}: {flow.value} {theta:.2f}/s ({(theta - measured.rate) / measured.rate:+.1%})"
            for engine, by_flow in predicted.items()
            for flow, theta in by_flow.items()
        ),
        "spark profile:",
        summary(spark),
        f"steady {spark['confidence']['steady']}, unstable {spark['confidence']['unstable']}",
    ]
    print("\n".join(lines))

    assert busy_sources(spark) == busy_sources(local) == {"busy-counter"}, "busy time from the counter"
    assert demand(spark) > 1.2 * measured.rate, "the spout offers well above what the topology delivers"
    assert spark_spout(spark)["confidence"]["outputPerUnit"]["throttled"], "backpressure throttles the spout"
    error = abs(predicted["spark"][FlowModel.BACKPRESSURE] - measured.rate) / measured.rate
    assert error <= TOLERANCE, "\n".join(lines)
    assert predicted["spark"][FlowModel.DROP] > (1 + TOLERANCE) * measured.rate, "drop ≠ Storm 2.x here"
    expected = estimates(spark)
    got = estimates(local)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=ENGINES_AGREE), key
    assert math.isclose(
        predicted["local"][FlowModel.BACKPRESSURE], predicted["spark"][FlowModel.BACKPRESSURE], rel_tol=1e-4
    )


def busy_sources(profile: dict[str, Any]) -> set[str]:
    """Where the bolts' busy time came from (``confidence.capacityPerUnit.source``)."""
    return {
        c["confidence"]["capacityPerUnit"]["source"] for c in profile["components"] if c["kind"] == "bolt"
    }


def spark_spout(profile: dict[str, Any]) -> dict[str, Any]:
    """The profile's only spout."""
    spouts: list[dict[str, Any]] = [c for c in profile["components"] if c["kind"] == "spout"]
    (spout,) = spouts
    return spout
