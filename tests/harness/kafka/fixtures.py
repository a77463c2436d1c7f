"""Session fixtures of the Kafka part of the test bed (registered in tests/conftest.py).

- ``kafka_broker``: one KRaft broker + controller on loopback (its Kafka home built from Maven Central
  on first use), state and log in this session's ``.run/kafka-<timestamp>-<random>/``; stopped at the
  end of the session.
- ``kafka_exporter``: the offsets exporter (``python -m tests.harness.kafka.exporter``) of that broker
  on a free loopback port; its URL. A test that wants it in Prometheus adds a job ``kafka`` for it.

Nothing starts unless a test asks for it, so tests that do not use Kafka pay nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.kafka.broker import KafkaBroker
from tests.harness.kafka.exporter import running_offsets_exporter
from tests.harness.process import new_run_dir


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A running broker for the whole session (``.bootstrap``, ``.create_topic()``)."""
    with KafkaBroker(new_run_dir("kafka-")) as broker:
        print(f"[kafka] broker {broker.bootstrap} ready in {broker.started_s:.1f} s")
        yield broker


@pytest.fixture(scope="session")
def kafka_exporter(kafka_broker: KafkaBroker) -> Iterator[str]:
    """The offsets exporter of ``kafka_broker``; its base URL (``/metrics``)."""
    with running_offsets_exporter(kafka_broker.bootstrap, kafka_broker.run_dir / "exporter.log") as url:
        yield url
