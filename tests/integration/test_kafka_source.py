"""Kafka as a real source: broker, offsets exporter through Prometheus, load generator, KafkaSpout.

One run on the session's Storm (one Supervisor, one worker), the session's Prometheus and the
session's Kafka broker: the ``kafka-linear`` topology (Storm's KafkaSpout → three JVM CpuBolts, the
sink recording every key it acks) reads a topic of 4 partitions while the load generator produces
``RATE`` records/s for ``LOAD_S`` seconds, a rate the topology carries. Then:

(a) Prometheus's ``sum(kafka_topic_partition_current_offset{topic})`` (the exporter's log end offsets)
    equals what the generator produced, exactly;
(b) the consumer group's lag drains to 0 on every partition and its committed offsets
    (``kafka_consumergroup_current_offset``) add up to the produced count;
(c) every produced key, and no other, is in the sink's seen files (duplicates are counted: at least
    once allows them);
(d) the spout's emitted rate from Nimbus over a window inside the load is within 10 % of the
    produced rate.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness.bed.measure import Measured, rate_over
from tests.harness.kafka.broker import KafkaBroker
from tests.harness.kafka.load import LoadGenerator, Schedule
from tests.harness.kafka.seen import SeenReport, compare, read_seen
from tests.harness.prometheus.server import Prometheus, StaticJob
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.topology import kill, submit
from tests.harness.waiting import seconds_until, wait_for

pytestmark = pytest.mark.storm

TOPIC = "it-kafka-linear"
GROUP = "it-kafka-linear"
PARTITIONS = 4
TASKS = 4  # per bolt
RATE = 40.0  # records/s: the bolts below need ~0.2 CPU for it
LOAD_S = 75.0
WARM_UP_S = 15.0  # after the load starts: the spout has caught up and Storm's stats are moving
WINDOW_S = 30.0
WORKER_TIMEOUT_S = 180.0
SETTLE_TIMEOUT_S = 90.0  # the last records through the topology, their offsets committed (every 2 s)
SCRAPE_TIMEOUT_S = 30.0
PROPERTIES: dict[str, object] = {
    "topology.name": "it-kafka-linear",
    "topology.ackers": 1,
    "max.tasks": TASKS,
    "c1.tasks": 1,
    "c2.cost_us": 2000,
    "c3.cost_us": 2000,
    "c4.cost_us": 1000,
    "kafka.topic": TOPIC,
    "kafka.group": GROUP,
}
# As test_jvm_topology.py: idle executors sleep at once; a short queue for backpressure within seconds.
CONF: dict[str, object] = {
    "topology.bolt.wait.progressive.level2.count": 0,
    "topology.backpressure.wait.progressive.level2.count": 0,
    "topology.executor.receive.buffer.size": 1024,
    "topology.max.spout.pending": 500,
}


@contextlib.contextmanager
def scraped_as_kafka(prometheus: Prometheus, exporter_url: str) -> Iterator[None]:
    """Prometheus scrapes the offsets exporter as job ``kafka`` (its other jobs kept, restored after)."""
    before = list(prometheus.jobs)
    prometheus.set_jobs([*before, StaticJob("kafka", [exporter_url.removeprefix("http://")])])
    try:
        yield
    finally:
        prometheus.set_jobs(before)


def scalar(prometheus: Prometheus, promql: str) -> float | None:
    """The value of a query that yields one series, None while it yields none."""
    result = prometheus.query(promql)
    return float(result[0]["value"][1]) if result else None


def poll(check: Callable[[], str | None], timeout_s: float) -> str | None:
    """Call ``check`` every second until it returns None (done); its last complaint after ``timeout_s``."""
    last: list[str | None] = [None]

    def done() -> bool:
        last[0] = check()
        return last[0] is None

    wait_for(done, timeout_s, "no complaint", every_s=1.0, raise_on_timeout=False)
    return last[0]


def wait_for_worker(seen_dir: Path, tasks: int) -> float:
    """Seconds until every sink task has opened its seen file (the worker is up and prepared)."""
    return seconds_until(
        lambda: len(list(seen_dir.glob("seen-*.txt"))) >= tasks,
        WORKER_TIMEOUT_S,
        f"the sink's {tasks} tasks to open their seen files",
    )


def offsets_reach(prometheus: Prometheus, produced: int) -> str | None:
    """(a): the topic's log end offsets add up to ``produced``."""
    end = scalar(prometheus, f'sum(kafka_topic_partition_current_offset{{topic="{TOPIC}"}})')
    up = scalar(prometheus, 'max(kafka_up{job="kafka"})')
    return None if end == produced and up == 1 else f"log end offsets sum to {end} (kafka_up {up})"


def group_drained(prometheus: Prometheus, produced: int) -> str | None:
    """(b): lag 0 on every partition, committed offsets adding up to ``produced``."""
    selector = f'{{consumergroup="{GROUP}",topic="{TOPIC}"}}'
    lags = prometheus.query(f"kafka_consumergroup_lag{selector}")
    committed = scalar(prometheus, f"sum(kafka_consumergroup_current_offset{selector})")
    lag = {r["metric"]["partition"]: float(r["value"][1]) for r in lags}
    if len(lag) == PARTITIONS and set(lag.values()) == {0.0} and committed == produced:
        return None
    return f"lag by partition {lag}, committed offsets sum to {committed}"


def spout_emitted(cluster: StormCluster, topology_id: str) -> Callable[[], int]:
    """Spout "1"'s all-time emitted count on Nimbus (0 until it reports)."""
    nimbus = cluster.endpoints.nimbus(timeout_s=10)

    def read() -> int:
        components = nimbus.topology_page(topology_id).components
        return components["1"].emitted if "1" in components else 0

    return read


def run_load(
    cluster: StormCluster, topology_id: str, broker: KafkaBroker
) -> tuple[LoadGenerator, Measured, float]:
    """The load, and within it the spout's emitted rate over a window of Nimbus heartbeats; also when
    the window ended, in seconds after the load's start (it must lie inside the load)."""
    generator = LoadGenerator(broker.bootstrap, TOPIC, Schedule.constant(RATE, LOAD_S), log=print).start()
    try:
        time.sleep(WARM_UP_S)
        measured = rate_over(spout_emitted(cluster, topology_id), WINDOW_S)
        inside = generator.elapsed
    finally:
        generator.wait(LOAD_S + 60)
        generator.stop()
    return generator, measured, inside


def test_kafka_spout_topology_reads_every_produced_record(
    storm_cluster: StormCluster,
    storm_supervisor: str,
    prometheus: Prometheus,
    kafka_broker: KafkaBroker,
    kafka_exporter: str,
) -> None:
    started = time.monotonic()
    kafka_broker.create_topic(TOPIC, PARTITIONS)
    seen_dir = storm_cluster.endpoints.storm_dir / "seen" / TOPIC
    props = {**PROPERTIES, "kafka.bootstrap": kafka_broker.bootstrap, "seen.dir": str(seen_dir)}
    with scraped_as_kafka(prometheus, kafka_exporter):
        topology = submit(storm_cluster.endpoints, "kafka-linear", props, conf=CONF, language="jvm")
        try:
            worker_s = wait_for_worker(seen_dir, TASKS)
            generator, measured, inside = run_load(storm_cluster, topology.id, kafka_broker)
            produced, ended = generator.produced, time.monotonic()
            offsets = poll(lambda: offsets_reach(prometheus, produced), SCRAPE_TIMEOUT_S)
            offsets_s = time.monotonic() - ended
            drained = poll(lambda: group_drained(prometheus, produced), SETTLE_TIMEOUT_S)
            drained_s = time.monotonic() - ended
            report: SeenReport = compare(read_seen(seen_dir), produced)
        finally:
            kill(storm_cluster.endpoints, topology.name)
    summary = (
        f"produced {produced} records at {RATE:g}/s over {generator.elapsed:.1f} s "
        f"(sent {generator.sent}, failed {generator.failed}, errors {generator.errors}); worker up "
        f"{worker_s:.1f} s after submit; spout emitted {measured.rate:.2f}/s over {measured.seconds:.1f} s "
        f"(window ended {inside:.1f} s into the load); sink: {report}; "
        f"offsets: {offsets or 'sum = produced'} ({offsets_s:.1f} s after the load); "
        f"group: {drained or 'lag 0, committed = produced'} ({drained_s:.1f} s after the load); "
        f"test {time.monotonic() - started:.0f} s"
    )
    print(summary)
    assert generator.failed == 0, summary
    assert not generator.errors, summary
    assert produced == Schedule.constant(RATE, LOAD_S).total, summary
    assert offsets is None, summary  # (a)
    assert drained is None, summary  # (b)
    assert report.complete, summary  # (c)
    assert inside < LOAD_S, summary  # the rate window lies inside the load
    assert measured.rate == pytest.approx(RATE, rel=0.10), summary  # (d)
