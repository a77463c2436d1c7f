"""A real Kafka 3.9 broker on loopback: one KRaft server that is both broker and controller.

``KafkaBroker(run_dir)`` writes ``server.properties`` (listeners on 127.0.0.1 at free ports, log dirs
in the run directory, one replica of everything), formats the storage with ``kafka.tools.StorageTool``
and starts ``kafka.Kafka`` as a ``java -cp`` process with a small heap; it is ready when the broker
answers a metadata request with itself. ``bootstrap`` is ``127.0.0.1:<port>``; ``create_topic``
creates a topic and waits until every partition has a leader. The Kafka home comes from
:mod:`.home` (Maven). As a context manager it stops the broker on exit.

For people (``make kafka-up`` / ``make kafka-down``, state under ``.run/kafka``)::

    python -m tests.harness.kafka.broker up
    python -m tests.harness.kafka.broker down
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import signal
import subprocess
import time
import uuid
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.harness.kafka.home import ensure_kafka_home
from tests.harness.paths import RUN_ROOT
from tests.harness.process import (
    Daemon,
    DaemonError,
    LaunchSpec,
    free_port,
    log_tail,
    marked_pids,
    new_run_dir,
    port_open,
    signal_group,
    stop_group,
)
from tests.harness.storm.daemons import java_env
from tests.harness.waiting import wait_for

LOOPBACK = "127.0.0.1"
READY_TIMEOUT_S = 120.0
FORMAT_TIMEOUT_S = 120.0
TOPIC_TIMEOUT_S = 60.0
HEAP_MB = 384
NODE_ID = 1
MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
KAFKA_LINK = RUN_ROOT / "kafka"


def cluster_id() -> str:
    """A fresh KRaft cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's Uuid)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def server_properties(run_dir: Path, port: int, controller_port: int) -> dict[str, str]:
    """A single combined broker + controller on loopback, sized for one machine's tests."""
    return {
        "process.roles": "broker,controller",
        "node.id": str(NODE_ID),
        "controller.quorum.voters": f"{NODE_ID}@{LOOPBACK}:{controller_port}",
        "listeners": f"PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(run_dir / "data"),
        "metadata.log.dir": str(run_dir / "metadata"),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "auto.create.topics.enable": "false",
        # One replica of the internal topics (a single broker) and few partitions: faster to create.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        # A consumer group forms at once instead of waiting 3 s for more members.
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.retention.hours": "24",
    }


def write_properties(path: Path, props: dict[str, str]) -> Path:
    """Write ``props`` as a .properties file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def java_argv(home: Path, run_dir: Path, main: str, heap_mb: int = HEAP_MB) -> list[str]:
    """``java`` with Kafka's lib/ on the classpath, its log4j config and a small heap."""
    return [
        "java",
        f"-Xmx{heap_mb}m",
        f"-Xms{min(heap_mb, 128)}m",
        "-XX:+UseSerialGC",
        "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={run_dir / 'logs'}",
        f"-Dlog4j.configuration=file:{home / 'config' / 'log4j.properties'}",
        "-cp",
        f"{home / 'lib' / '*'}",
        main,
    ]


class KafkaBroker:
    """One KRaft broker + controller; ``start()`` formats and starts it, ``stop()`` ends it."""

    def __init__(self, run_dir: Path, home: Path | None = None, heap_mb: int = HEAP_MB) -> None:
        self.run_dir = run_dir
        self.home = home or ensure_kafka_home()
        self.heap_mb = heap_mb
        self.port = free_port()
        self.controller_port = free_port()
        self.daemon: Daemon | None = None
        self.started_s = 0.0

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>``: what clients give as bootstrap servers."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def config_file(self) -> Path:
        return self.run_dir / "server.properties"

    @property
    def log(self) -> Path:
        return self.run_dir / "kafka.log"

    def admin(self, timeout_s: float = 10.0) -> AdminClient:
        """An admin client of this broker (librdkafka's own logs at warnings and above)."""
        timeout_ms = str(int(timeout_s * 1000))
        return AdminClient(
            {"bootstrap.servers": self.bootstrap, "socket.timeout.ms": timeout_ms, "log_level": 4}
        )

    def format_storage(self) -> None:
        """``StorageTool format`` of the log and metadata dirs with a fresh cluster id."""
        argv = java_argv(self.home, self.run_dir, STORAGE_TOOL, 256)
        argv += ["format", "--cluster-id", cluster_id(), "--config", str(self.config_file)]
        out = self.run_dir / "format.out"
        with out.open("wb") as console:
            done = subprocess.run(
                argv,
                stdout=console,
                stderr=subprocess.STDOUT,
                env=java_env(),
                timeout=FORMAT_TIMEOUT_S,
                check=False,
            )
        if done.returncode != 0:
            raise DaemonError(f"Kafka StorageTool format failed ({done.returncode}):\n{log_tail(out)}")

    def spec(self) -> LaunchSpec:
        """The broker's command: ``kafka.Kafka server.properties``, console into ``kafka.log``."""
        argv = [*java_argv(self.home, self.run_dir, MAIN_CLASS, self.heap_mb), str(self.config_file)]
        return LaunchSpec(
            "kafka", argv, java_env(), self.run_dir, self.log, self.log, marker=f"{self.run_dir}/"
        )

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> KafkaBroker:
        """Write the config, format the storage, start the broker and wait until it serves metadata."""
        started = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        write_properties(self.config_file, server_properties(self.run_dir, self.port, self.controller_port))
        self.format_storage()
        self.daemon = Daemon(self.spec())
        try:
            self.daemon.wait_ready(self.ready, timeout_s, f"the broker serves metadata on {self.bootstrap}")
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - started
        return self

    def ready(self) -> bool:
        """True once the broker answers a metadata request and lists itself."""
        if not port_open(LOOPBACK, self.port):
            return False
        try:
            metadata = self.admin(2.0).list_topics(timeout=2.0)
        except KafkaException:
            return False
        return NODE_ID in metadata.brokers

    def create_topic(self, name: str, partitions: int, timeout_s: float = TOPIC_TIMEOUT_S) -> None:
        """Create topic ``name`` (one replica) and wait until each of its partitions has a leader; a
        topic of that name that exists already must have ``partitions`` partitions."""
        admin = self.admin()
        futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=timeout_s)
        try:
            futures[name].result(timeout=timeout_s)
        except KafkaException as err:
            if err.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise DaemonError(f"cannot create topic {name} on {self.bootstrap}: {err}") from err
        wait_for(
            lambda: self._has_leaders(admin, name, partitions),
            timeout_s,
            f"topic {name}: every partition with a leader",
            error=DaemonError,
        )

    @staticmethod
    def _has_leaders(admin: AdminClient, name: str, partitions: int) -> bool:
        topic = admin.list_topics(name, timeout=5.0).topics.get(name)
        if topic is None or topic.error is not None or len(topic.partitions) != partitions:
            return False
        return all(p.leader >= 0 for p in topic.partitions.values())

    def stop(self) -> None:
        """Stop the broker (SIGTERM: a controlled shutdown; SIGKILL after the grace period)."""
        if self.daemon is not None:
            self.daemon.stop()
            self.daemon = None

    def kill(self) -> None:
        """SIGKILL the broker's process group (a crash: no controlled shutdown; its log and metadata
        folders stay); :meth:`restart` starts it again on them."""
        if self.daemon is not None:
            signal_group(self.daemon.pid, signal.SIGKILL)
            self.daemon.proc.wait(timeout=30)

    def restart(self, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Start the broker again on its own folders (not formatted again: every record stays), on the
        same ports; the seconds until it serves metadata."""
        if self.daemon is not None and self.daemon.exited() is None:
            raise DaemonError("the broker is running: kill it first")
        started = time.monotonic()
        self.daemon = Daemon(self.spec())
        self.daemon.wait_ready(self.ready, timeout_s, f"the broker serves metadata again on {self.bootstrap}")
        return time.monotonic() - started

    def save_state(self) -> None:
        """Write the bootstrap address and the process group to ``state.json`` (for ``kafka-down``)."""
        pgid = self.daemon.pid if self.daemon is not None else 0
        state = {"bootstrap": self.bootstrap, "run_dir": str(self.run_dir), "pgid": pgid}
        (self.run_dir / "state.json").write_text(json.dumps(state, indent=2) + "\n")

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def broker_up() -> KafkaBroker:
    """Start a broker that outlives this process (``make kafka-up``); link it as ``.run/kafka``."""
    broker = KafkaBroker(new_run_dir("kafka-")).start()
    broker.save_state()
    KAFKA_LINK.unlink(missing_ok=True)
    KAFKA_LINK.symlink_to(broker.run_dir)
    return broker


def broker_down(link: Path = KAFKA_LINK) -> list[int]:
    """Stop what ``broker_up`` started (only a process that names its run directory); its pid."""
    state_file = link / "state.json"
    if not state_file.exists():
        return []
    state = json.loads(state_file.read_text())
    marker = f"{state['run_dir']}/"
    pgids = [state["pgid"]] if state["pgid"] in marked_pids(marker) else []
    for pgid in pgids:
        stop_group(pgid, 10.0, functools.partial(_gone, pgid, marker))
    if link == KAFKA_LINK:
        KAFKA_LINK.unlink(missing_ok=True)
    return pgids


def _gone(pid: int, marker: str) -> bool:
    return pid not in marked_pids(marker)


def main() -> None:
    """``up`` or ``down``, for people (``make kafka-up`` / ``make kafka-down``)."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.kafka.broker")
    parser.add_argument("command", choices=["up", "down"])
    args = parser.parse_args()
    if args.command == "up":
        broker = broker_up()
        print(f"Kafka {broker.bootstrap} ready in {broker.started_s:.1f} s; log {broker.log}")
        print("stop with: make kafka-down")
    else:
        print(f"stopped process groups {broker_down()}")


if __name__ == "__main__":
    main()
