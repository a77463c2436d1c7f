"""The Kafka broker's configuration and home: no JVM, no broker."""

from __future__ import annotations

from pathlib import Path

from tests.harness.kafka import home
from tests.harness.kafka.broker import cluster_id, server_properties


def test_broker_is_one_kraft_node_on_loopback(tmp_path: Path) -> None:
    props = server_properties(tmp_path, 9092, 9093)
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == f"{props['node.id']}@127.0.0.1:9093"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert props["log.dirs"].startswith(str(tmp_path))
    assert props["offsets.topic.replication.factor"] == "1"
    ids = {cluster_id() for _ in range(5)}
    assert len(ids) == 5
    assert all(len(i) == 22 and "=" not in i for i in ids)  # 16 bytes, URL-safe base64 without padding


def test_kafka_home_lists_what_it_needs(tmp_path: Path) -> None:
    missing = home.missing_parts(tmp_path)
    assert f"lib/kafka_2.13-{home.KAFKA_VERSION}.jar" in missing
    assert "config/log4j.properties" in missing
    assert not home.is_complete(tmp_path)
