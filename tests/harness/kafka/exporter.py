"""A Kafka offsets exporter for Prometheus: the test bed's stand-in for danielqsj/kafka_exporter.

The widely used kafka_exporter cannot be built here (its Go module is refused), so this serves the
part of its metrics that a consumer's lag needs, under exactly its names and labels, as gauges:

    kafka_brokers                                                   brokers in the cluster
    kafka_topic_partitions{topic}                                   partitions of a topic
    kafka_topic_partition_current_offset{topic,partition}           the log end offset
    kafka_topic_partition_oldest_offset{topic,partition}            the log start offset
    kafka_consumergroup_members{consumergroup}                      members of a group
    kafka_consumergroup_current_offset{consumergroup,topic,partition}   the committed offset
    kafka_consumergroup_current_offset_sum{consumergroup,topic}
    kafka_consumergroup_lag{consumergroup,topic,partition}          log end − committed
    kafka_consumergroup_lag_sum{consumergroup,topic}

As kafka_exporter does, a group shows the topics it has committed offsets in, with every partition of
such a topic; a partition without a commit shows current offset −1 and lag −1. Internal topics
(``__consumer_offsets``, any name starting ``__``) are left out. Everything is read fresh from the
broker on each scrape with confluent-kafka's AdminClient, within a per-scrape timeout; when the broker
does not answer in time the scrape still succeeds, with ``kafka_up 0`` (``1`` otherwise) and the
reason as a comment, never an HTTP error. Users replace it with their own kafka_exporter: the names
are the same.

    python -m tests.harness.kafka.exporter --bootstrap 127.0.0.1:9092 --listen 127.0.0.1:9308
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec  # confluent_kafka.admin's, not in its __all__

from tests.harness.process import AlwaysRestarted, LaunchSpec, free_port

HELP_LINE = "A Kafka offsets exporter for Prometheus (kafka_exporter's names)."
SCRAPE_TIMEOUT_S = 1.5
READY_TIMEOUT_S = 30.0
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NO_OFFSET = -1

HELP = {
    "kafka_up": "1 if the last scrape read the broker, 0 if it did not answer in time",
    "kafka_brokers": "Brokers in the Kafka cluster",
    "kafka_topic_partitions": "Partitions of the topic",
    "kafka_topic_partition_current_offset": "Log end offset of the topic partition",
    "kafka_topic_partition_oldest_offset": "Log start offset of the topic partition",
    "kafka_consumergroup_members": "Members of the consumer group",
    "kafka_consumergroup_current_offset": "Committed offset of the consumer group at the topic partition",
    "kafka_consumergroup_current_offset_sum": "Committed offsets of the consumer group over the topic",
    "kafka_consumergroup_lag": "Log end offset less the group's committed offset at the topic partition",
    "kafka_consumergroup_lag_sum": "Lag of the consumer group over the topic's partitions",
}


@dataclass(frozen=True)
class Offsets:
    """What one scrape read from the broker."""

    brokers: int
    #: topic → partition → (oldest offset, log end offset)
    topics: Mapping[str, Mapping[int, tuple[int, int]]]
    #: group → topic → partition → committed offset (only what the group has committed)
    committed: Mapping[str, Mapping[str, Mapping[int, int]]] = field(default_factory=dict)
    #: group → members now
    members: Mapping[str, int] = field(default_factory=dict)


def internal(topic: str) -> bool:
    """Kafka's own topics (``__consumer_offsets``, ``__transaction_state``, ...)."""
    return topic.startswith("__")


def escape(value: str) -> str:
    """A label value as the text format wants it (backslash, double quote and newline escaped)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{key}="{escape(str(value))}"' for key, value in labels.items()) + "}"


class _Text:
    """Gauges grouped by name (each name's HELP and TYPE once, then its samples)."""

    def __init__(self) -> None:
        self.samples: dict[str, list[str]] = {}

    def add(self, name: str, value: float, **labels: object) -> None:
        self.samples.setdefault(name, []).append(f"{name}{_labels(**labels) if labels else ''} {value:g}")

    def render(self, comments: list[str]) -> str:
        lines = [f"# {c}" for c in comments]
        for name, samples in self.samples.items():
            lines += [f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge", *samples]
        return "\n".join(lines) + "\n"


def render(offsets: Offsets | None, error: str = "") -> str:
    """The exposition text of one scrape: ``kafka_up 0`` and the reason when ``offsets`` is None."""
    text = _Text()
    text.add("kafka_up", 0 if offsets is None else 1)
    if offsets is None:
        return text.render([f"kafka unreachable: {' '.join(error.split())}"] if error else [])
    text.add("kafka_brokers", offsets.brokers)
    topics = {t: p for t, p in sorted(offsets.topics.items()) if not internal(t)}
    for topic, partitions in topics.items():
        text.add("kafka_topic_partitions", len(partitions), topic=topic)
    which = (("kafka_topic_partition_current_offset", 1), ("kafka_topic_partition_oldest_offset", 0))
    for name, index in which:
        for topic, partitions in topics.items():
            for partition, ends in sorted(partitions.items()):
                text.add(name, ends[index], topic=topic, partition=partition)
    for group, count in sorted(offsets.members.items()):
        text.add("kafka_consumergroup_members", count, consumergroup=group)
    for group, by_topic in sorted(offsets.committed.items()):
        for topic, committed in sorted(by_topic.items()):
            if not internal(topic) and committed:
                _group_topic(text, group, topic, committed, topics.get(topic, {}))
    return text.render([])


def _group_topic(
    text: _Text, group: str, topic: str, committed: Mapping[int, int], ends: Mapping[int, tuple[int, int]]
) -> None:
    """A group's committed offsets and lag over every partition of one topic it has committed in."""
    current_sum = lag_sum = 0
    for partition in sorted(set(ends) | set(committed)):
        offset = committed.get(partition, NO_OFFSET)
        labels = {"consumergroup": group, "topic": topic, "partition": partition}
        text.add("kafka_consumergroup_current_offset", offset, **labels)
        current_sum += max(offset, 0)
        if partition in ends:
            lag = NO_OFFSET if offset == NO_OFFSET else ends[partition][1] - offset
            lag_sum += max(lag, 0)
            text.add("kafka_consumergroup_lag", lag, **labels)
    text.add("kafka_consumergroup_current_offset_sum", current_sum, consumergroup=group, topic=topic)
    text.add("kafka_consumergroup_lag_sum", lag_sum, consumergroup=group, topic=topic)


class _Deadline:
    """What is left of one scrape's time budget."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the scrape's time budget ran out")
        return left

    def result(self, future: concurrent.futures.Future[Any]) -> Any:
        return future.result(timeout=self.left())


def read_offsets(admin: AdminClient, timeout_s: float = SCRAPE_TIMEOUT_S) -> Offsets:
    """Topics, their partitions' oldest and end offsets, and every group's commits, within ``timeout_s``."""
    deadline = _Deadline(timeout_s)
    metadata = admin.list_topics(timeout=deadline.left())
    partitions = [
        TopicPartition(name, p)
        for name, topic in metadata.topics.items()
        if not internal(name) and topic.error is None
        for p in topic.partitions
    ]
    oldest = _list_offsets(admin, partitions, OffsetSpec.earliest(), deadline)  # type: ignore[no-untyped-call]
    newest = _list_offsets(admin, partitions, OffsetSpec.latest(), deadline)  # type: ignore[no-untyped-call]
    topics: dict[str, dict[int, tuple[int, int]]] = {}
    for tp in partitions:
        key = (tp.topic, tp.partition)
        topics.setdefault(tp.topic, {})[tp.partition] = (oldest[key], newest[key])
    listing = deadline.result(admin.list_consumer_groups(request_timeout=deadline.left()))
    groups = sorted(g.group_id for g in listing.valid)
    committed = _committed(admin, groups, deadline)
    return Offsets(len(metadata.brokers), topics, committed, _members(admin, groups, deadline))


def _list_offsets(
    admin: AdminClient, partitions: list[TopicPartition], spec: OffsetSpec, deadline: _Deadline
) -> dict[tuple[str, int], int]:
    if not partitions:
        return {}
    futures = admin.list_offsets(dict.fromkeys(partitions, spec), request_timeout=deadline.left())
    return {(tp.topic, tp.partition): deadline.result(f).offset for tp, f in futures.items()}


def _committed(
    admin: AdminClient, groups: list[str], deadline: _Deadline
) -> dict[str, dict[str, dict[int, int]]]:
    """Each group's committed offsets (one request per group: the API takes one at a time)."""
    committed: dict[str, dict[str, dict[int, int]]] = {}
    for group in groups:
        request = [ConsumerGroupTopicPartitions(group)]
        futures = admin.list_consumer_group_offsets(request, request_timeout=deadline.left())
        answer = deadline.result(futures[group])
        for tp in answer.topic_partitions or []:
            if tp.offset >= 0 and tp.error is None:
                committed.setdefault(group, {}).setdefault(tp.topic, {})[tp.partition] = tp.offset
    return committed


def _members(admin: AdminClient, groups: list[str], deadline: _Deadline) -> dict[str, int]:
    if not groups:
        return {}
    futures = admin.describe_consumer_groups(groups, request_timeout=deadline.left())
    return {group: len(deadline.result(future).members) for group, future in futures.items()}


class OffsetsExporter:
    """Reads the broker on each call of :meth:`scrape` (one at a time) and renders it."""

    def __init__(self, bootstrap: str, timeout_s: float = SCRAPE_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self.admin = AdminClient(
            {"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout_s * 1000), "log_level": 3}
        )
        self._lock = threading.Lock()

    def scrape(self) -> str:
        """The metrics now; ``kafka_up 0`` with the reason if the broker did not answer in time."""
        with self._lock:
            try:
                return render(read_offsets(self.admin, self.timeout_s))
            except Exception as err:  # KafkaException, a timeout, or an answer we cannot read: never a 500
                return render(None, f"{type(err).__name__}: {err}")


def handler_for(exporter: OffsetsExporter) -> type[BaseHTTPRequestHandler]:
    """A request handler serving ``/metrics`` and ``/healthz`` from ``exporter``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._reply(200, exporter.scrape(), CONTENT_TYPE)
            elif path == "/healthz":
                self._reply(200, "ok\n", "text/plain")
            else:
                self._reply(404, "not found: try /metrics\n", "text/plain")

        def _reply(self, status: int, body: str, content_type: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a scrape every 2 s is no news."""

    return Handler


def serve(bootstrap: str, host: str, port: int, timeout_s: float = SCRAPE_TIMEOUT_S) -> None:
    """Serve until interrupted."""
    server = HTTPServer((host, port), handler_for(OffsetsExporter(bootstrap, timeout_s)))
    print(f"kafka offsets exporter for {bootstrap} on http://{host}:{port}/metrics", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    server.server_close()


def healthy(url: str) -> bool:
    """True if the exporter at ``url`` answers ``/healthz``."""
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def running_offsets_exporter(bootstrap: str, log: Path, timeout_s: float = READY_TIMEOUT_S) -> Iterator[str]:
    """``python -m tests.harness.kafka.exporter`` on a free loopback port; its URL. Started again on the
    same port whenever it exits, as Kubernetes restarts a Deployment's container (librdkafka can abort
    the process on an assertion when the broker restarts under it); stopped on exit."""
    port = free_port()
    argv = [sys.executable, "-m", "tests.harness.kafka.exporter", "--bootstrap", bootstrap]
    argv += ["--listen", f"127.0.0.1:{port}"]
    log.parent.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}"
    exporter = AlwaysRestarted(
        LaunchSpec("kafka offsets exporter", argv, dict(os.environ), Path.cwd(), log, log)
    )
    try:
        exporter.daemon.wait_ready(lambda: healthy(url), timeout_s, f"{url}/healthz answers")
        yield url
    finally:
        exporter.stop()


def main(argv: list[str] | None = None) -> None:
    """``--bootstrap HOST:PORT --listen HOST:PORT [--timeout-s S]``."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.kafka.exporter", description=HELP_LINE)
    parser.add_argument("--bootstrap", required=True, help="host:port of a broker")
    parser.add_argument("--listen", default="127.0.0.1:9308", help="host:port to serve /metrics on")
    parser.add_argument("--timeout-s", type=float, default=SCRAPE_TIMEOUT_S, help="time budget of one scrape")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    serve(args.bootstrap, host or "127.0.0.1", int(port), args.timeout_s)


if __name__ == "__main__":
    main()
