"""The Kafka offsets exporter: its exposition text from offsets (kafka_exporter's names and labels),
and its HTTP answer when no broker answers (one test talks to a closed loopback port)."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import HTTPServer

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.kafka.exporter import Offsets, OffsetsExporter, handler_for, render
from tests.harness.process import free_port


def families(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Parse exposition text: name → sorted labels → value (every family must be a gauge)."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


OFFSETS = Offsets(
    brokers=1,
    topics={
        "load": {0: (0, 100), 1: (0, 120), 2: (5, 80), 3: (0, 0)},
        "other": {0: (0, 7)},
        "__consumer_offsets": {0: (0, 3), 1: (0, 4)},
    },
    committed={
        "spout": {"load": {0: 100, 1: 90, 2: 80}, "__consumer_offsets": {0: 1}},
        "idle": {},
    },
    members={"spout": 1, "idle": 0},
)


def test_exporter_renders_kafka_exporters_names_and_labels() -> None:
    got = families(render(OFFSETS))
    assert got["kafka_up"] == {(): 1}
    assert got["kafka_brokers"] == {(): 1}
    assert got["kafka_topic_partitions"] == {(("topic", "load"),): 4, (("topic", "other"),): 1}
    current = got["kafka_topic_partition_current_offset"]
    assert current[(("partition", "1"), ("topic", "load"))] == 120
    assert sum(v for k, v in current.items() if ("topic", "load") in k) == 300
    assert got["kafka_topic_partition_oldest_offset"][(("partition", "2"), ("topic", "load"))] == 5
    assert got["kafka_consumergroup_members"] == {
        (("consumergroup", "idle"),): 0,
        (("consumergroup", "spout"),): 1,
    }


def test_exporter_renders_committed_offsets_and_lag_per_partition() -> None:
    got = families(render(OFFSETS))
    key = (("consumergroup", "spout"), ("partition", "{}"), ("topic", "load"))

    def at(name: str, partition: int) -> float:
        labels = tuple((k, v.format(partition)) for k, v in key)
        return got[name][labels]

    assert [at("kafka_consumergroup_current_offset", p) for p in range(4)] == [100, 90, 80, -1]
    assert [at("kafka_consumergroup_lag", p) for p in range(4)] == [0, 30, 0, -1]  # no commit: -1 (alertable)
    sums = (("consumergroup", "spout"), ("topic", "load"))
    assert got["kafka_consumergroup_current_offset_sum"] == {sums: 270}
    assert got["kafka_consumergroup_lag_sum"] == {sums: 30}
    # only topics the group committed in; never an internal topic; a group without commits has none
    assert {dict(k)["topic"] for k in got["kafka_consumergroup_current_offset"]} == {"load"}
    assert all(dict(k)["consumergroup"] == "spout" for k in got["kafka_consumergroup_lag"])


def test_exporter_leaves_internal_topics_out() -> None:
    text = render(OFFSETS)
    assert "__consumer_offsets" not in text
    assert "other" in text


def test_exporter_says_down_without_failing_and_escapes_labels() -> None:
    down = render(None, 'KafkaException: timed out\n"waiting" for 127.0.0.1:9')
    assert families(down) == {"kafka_up": {(): 0}}
    assert down.startswith("# kafka unreachable: KafkaException: timed out")
    odd = Offsets(1, {"t": {0: (0, 5)}}, {'g"1\\': {"t": {0: 2}}}, {'g"1\\': 1})
    assert families(render(odd))["kafka_consumergroup_lag"] == {
        (("consumergroup", 'g"1\\'), ("partition", "0"), ("topic", "t")): 3
    }


@pytest.fixture
def exporter_without_broker() -> Iterator[str]:
    """The exporter's HTTP server, its broker a loopback port where nothing listens."""
    server = HTTPServer(("127.0.0.1", 0), handler_for(OffsetsExporter(f"127.0.0.1:{free_port()}", 1.0)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_exporter_without_a_broker_answers_kafka_up_0_in_time(exporter_without_broker: str) -> None:
    started = time.monotonic()
    with urllib.request.urlopen(f"{exporter_without_broker}/metrics", timeout=10) as response:
        assert response.status == 200
        body = response.read().decode()
    assert time.monotonic() - started < 3.0, "the per-scrape timeout bounds a scrape"
    assert families(body) == {"kafka_up": {(): 0}}
    with urllib.request.urlopen(f"{exporter_without_broker}/healthz", timeout=5) as response:
        assert response.status == 200
