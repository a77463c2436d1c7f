"""A real Storm 2.8 cluster on loopback: ZooKeeper, Nimbus and N Supervisors as ``java -cp`` processes.

Each daemon gets its own storm.yaml (``-Dstorm.conf.file``) and log files under the run directory
(``.run/storm-<timestamp>-<pid>/storm/``); ports are chosen at run time. ``supervisor_spec`` returns the exact
command and environment of one Supervisor so the pod runner can start Supervisors as the replicas of
a worker Deployment (one slot per Supervisor by default).

Tuned for tests, not production: ``topology.stats.sample.rate: 1.0`` (Storm samples 5 % by default,
so counts move in steps of 20) and ``executor.metrics.frequency.secs: 5`` (workers report executor
stats to Nimbus every 60 s by default). There is no Storm UI: ``storm-webapp`` does not resolve on
the reachable Maven Central mirror, so readiness and stats go through Nimbus Thrift with the
product's client (``stormscale.storm``). ZooKeeper is ZooKeeper's own server class on
127.0.0.1; Storm's Nimbus Thrift, Supervisor Thrift and worker Netty servers have no bind-address
setting and bind the wildcard address.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from stormscale.storm import Endpoint, NimbusClient
from stormscale.storm.model import ClusterSummary
from tests.harness.storm_home import REPO_ROOT, ensure_storm_home
from tests.harness.storm_process import (
    Daemon,
    LaunchSpec,
    free_port,
    kill_marked,
    marked_pids,
    port_open,
    stop_group,
)

READY_TIMEOUT_S = 180.0
LOOPBACK = "127.0.0.1"
METRICS_FREQUENCY_S = 5

TEST_CONF: dict[str, Any] = {
    "topology.stats.sample.rate": 1.0,
    "executor.metrics.frequency.secs": METRICS_FREQUENCY_S,
    "nimbus.monitor.freq.secs": 3,
    "nimbus.thrift.threads": 8,
    "worker.heap.memory.mb": 256,
    "worker.childopts": "-Xmx%HEAP-MEM%m -XX:+UseSerialGC",
    "supervisor.worker.start.timeout.secs": 180,
}


@dataclass(frozen=True)
class StormEndpoints:
    """Where a running cluster is: enough to submit, query, or add a Supervisor from another process."""

    storm_home: str
    run_dir: str
    zookeeper_port: int
    nimbus_port: int
    host: str = LOOPBACK

    @property
    def storm_dir(self) -> Path:
        """The cluster's own folder inside the run directory."""
        return Path(self.run_dir) / "storm"

    def nimbus(self, timeout_s: float = 30.0) -> NimbusClient:
        """A Thrift client of this cluster's Nimbus."""
        return NimbusClient(Endpoint(self.host, self.nimbus_port), timeout_s)


def base_conf(ep: StormEndpoints) -> dict[str, Any]:
    """storm.yaml keys shared by every daemon and the submitter."""
    return {
        "storm.zookeeper.servers": [ep.host],
        "storm.zookeeper.port": ep.zookeeper_port,
        "nimbus.seeds": [ep.host],
        "nimbus.thrift.port": ep.nimbus_port,
        "storm.local.hostname": ep.host,
        **TEST_CONF,
    }


def write_conf(path: Path, conf: dict[str, Any]) -> Path:
    """Write a storm.yaml (JSON is YAML) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conf, indent=2, sort_keys=True) + "\n")
    return path


def java_env() -> dict[str, str]:
    """The daemons' environment: this one, with JAVA_HOME when it can be found."""
    env = dict(os.environ)
    java = shutil.which("java")
    if "JAVA_HOME" not in env and java:
        env["JAVA_HOME"] = str(Path(java).resolve().parents[1])
    return env


def java_argv(ep: StormEndpoints, name: str, conf_file: Path, log_dir: Path, heap_mb: int) -> list[str]:
    """``java`` with the system properties bin/storm sets for a daemon called ``name``."""
    home = Path(ep.storm_home)
    return [
        "java",
        "-server",
        f"-Xmx{heap_mb}m",
        "-XX:+UseSerialGC",
        f"-Ddaemon.name={name}",
        f"-Dstorm.home={home}",
        f"-Dstorm.log.dir={log_dir}",
        f"-Dstorm.conf.file={conf_file}",
        f"-Dlogfile.name={name}.log",
        f"-Dlog4j.configurationFile={home / 'log4j2' / 'cluster.xml'}",
        "-Djava.deserialization.disabled=true",
    ]


def daemon_classpath(ep: StormEndpoints) -> str:
    """lib/ and extlib/ of the STORM_HOME (as bin/storm's daemon classpath)."""
    home = Path(ep.storm_home)
    return f"{home / 'lib' / '*'}:{home / 'extlib' / '*'}"


def zookeeper_spec(ep: StormEndpoints) -> LaunchSpec:
    """ZooKeeper's standalone server on 127.0.0.1 (admin server off, ``srvr`` allowed)."""
    zk_dir = ep.storm_dir / "zookeeper"
    (zk_dir / "data").mkdir(parents=True, exist_ok=True)
    cfg = zk_dir / "zoo.cfg"
    cfg.write_text(
        f"dataDir={zk_dir / 'data'}\nclientPort={ep.zookeeper_port}\nclientPortAddress={ep.host}\n"
        "tickTime=2000\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n"
        "maxClientCnxns=0\n"
    )
    log_dir = ep.storm_dir / "logs"
    argv = java_argv(ep, "zookeeper", cfg, log_dir, 256)
    argv += ["-cp", daemon_classpath(ep), "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)]
    return LaunchSpec(
        "zookeeper", argv, java_env(), zk_dir, log_dir / "zookeeper.log", log_dir / "zookeeper.out"
    )


def nimbus_spec(ep: StormEndpoints) -> LaunchSpec:
    """Nimbus with its own storm.yaml and local dir."""
    nimbus_dir = ep.storm_dir / "nimbus"
    conf = {
        **base_conf(ep),
        "storm.local.dir": str(nimbus_dir / "local"),
        "storm.metricstore.rocksdb.location": str(nimbus_dir / "rocks"),
    }
    conf_file = write_conf(nimbus_dir / "storm.yaml", conf)
    log_dir = ep.storm_dir / "logs"
    argv = java_argv(ep, "nimbus", conf_file, log_dir, 512)
    argv += ["-cp", daemon_classpath(ep), "org.apache.storm.daemon.nimbus.Nimbus"]
    return LaunchSpec("nimbus", argv, java_env(), nimbus_dir, log_dir / "nimbus.log", log_dir / "nimbus.out")


def supervisor_spec(
    ep: StormEndpoints, name: str, host: str, slots: int = 1, extra_conf: dict[str, Any] | None = None
) -> LaunchSpec:
    """The exact command of one Supervisor called ``name`` (a pod name, say) advertising ``host``.

    It gets its own folder (storm.local.dir, logs, storm.yaml), ``slots`` worker ports and a Thrift
    port picked now, and ``storm.local.hostname: host``; a distinct loopback address per replica
    (127.0.1.N, see ``SupervisorLauncher``) keeps replicas apart in Nimbus's view. Relaunching the
    same name reuses the folder, so the Supervisor keeps its id. ``marker`` (the folder) appears on
    the command line of every worker this Supervisor starts, for cleanup.
    """
    sup_dir = ep.storm_dir / "supervisors" / name
    conf = {
        **base_conf(ep),
        "storm.local.dir": str(sup_dir / "local"),
        "storm.local.hostname": host,
        "supervisor.thrift.port": free_port(),
        "supervisor.slots.ports": [free_port() for _ in range(slots)],
        **(extra_conf or {}),
    }
    conf_file = write_conf(sup_dir / "storm.yaml", conf)
    log_dir = sup_dir / "logs"
    argv = java_argv(ep, "supervisor", conf_file, log_dir, 256)
    argv += ["-cp", daemon_classpath(ep), "org.apache.storm.daemon.supervisor.Supervisor"]
    return LaunchSpec(
        name=f"supervisor {name}",
        argv=argv,
        env=java_env(),
        cwd=sup_dir,
        log=log_dir / "supervisor.log",
        console=log_dir / "supervisor.out",
        marker=f"{sup_dir}/",
        extra={"host": host, "conf": str(conf_file)},
    )


class Named(Protocol):
    """Anything with a replica name (the pod runner's ``Replica`` is one)."""

    @property
    def name(self) -> str: ...


@dataclass
class SupervisorLauncher:
    """Turns a replica name into a Supervisor ``LaunchSpec``: the callable the pod runner calls.

    Each new name gets the next loopback address 127.0.1.N as its Storm hostname; a name seen before
    keeps its address (a restarted pod is the same node).
    """

    endpoints: StormEndpoints
    slots: int = 1
    extra_conf: dict[str, Any] = field(default_factory=dict)
    _hosts: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def host_for(self, name: str) -> str:
        """The loopback address that replica ``name`` advertises."""
        with self._lock:
            if name not in self._hosts:
                n = len(self._hosts)
                self._hosts[name] = f"127.0.{1 + n // 254}.{1 + n % 254}"
            return self._hosts[name]

    def __call__(self, replica: str | Named) -> LaunchSpec:
        """The spec of replica ``replica`` (a name, or anything with a ``name``, such as the pod
        runner's ``Replica``); its ``argv``/``env``/``cwd`` are what the pod runner's ``Command`` needs."""
        name = replica if isinstance(replica, str) else replica.name
        return supervisor_spec(self.endpoints, name, self.host_for(name), self.slots, self.extra_conf)


def supervisors_on(info: ClusterSummary, host: str) -> int:
    """How many Supervisors Nimbus lists for ``host``."""
    return sum(1 for s in info.supervisors if s.host == host)


class StormCluster:
    """ZooKeeper + Nimbus started in order, plus Supervisors on demand; ``stop()`` ends them all."""

    def __init__(self, run_dir: Path, storm_home: Path | None = None) -> None:
        home = storm_home or ensure_storm_home()
        self.endpoints = StormEndpoints(str(home), str(run_dir), free_port(), free_port())
        self.launcher = SupervisorLauncher(self.endpoints)
        self.daemons: list[Daemon] = []
        self.supervisors: dict[str, Daemon] = {}

    @property
    def nimbus(self) -> NimbusClient:
        """A Thrift client of this cluster's Nimbus."""
        return self.endpoints.nimbus()

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> StormCluster:
        """Start ZooKeeper, then Nimbus, each ready before the next; stop all on failure."""
        try:
            self._start_zookeeper(timeout_s)
            self._start_nimbus(timeout_s)
        except BaseException:
            self.stop()
            raise
        self.save_state()
        return self

    def _start_zookeeper(self, timeout_s: float) -> None:
        daemon = self._spawn(zookeeper_spec(self.endpoints))
        port = self.endpoints.zookeeper_port
        daemon.wait_ready(lambda: zookeeper_ok(LOOPBACK, port), timeout_s, f"ZooKeeper answers on {port}")

    def _start_nimbus(self, timeout_s: float) -> None:
        daemon = self._spawn(nimbus_spec(self.endpoints))
        daemon.wait_ready(self._nimbus_leads, timeout_s, f"Nimbus leads on {self.endpoints.nimbus_port}")

    def _spawn(self, spec: LaunchSpec) -> Daemon:
        daemon = Daemon(spec)
        self.daemons.append(daemon)
        return daemon

    def _nimbus_leads(self) -> bool:
        if not port_open(LOOPBACK, self.endpoints.nimbus_port):
            return False
        try:
            return self.endpoints.nimbus(timeout_s=5).cluster_summary().leader is not None
        except Exception:
            return False

    def start_supervisor(self, name: str, timeout_s: float = READY_TIMEOUT_S) -> Daemon:
        """Start Supervisor ``name`` and wait until Nimbus lists it."""
        spec = self.launcher(name)
        daemon = Daemon(spec)
        self.supervisors[name] = daemon
        host = spec.extra["host"]
        daemon.wait_ready(lambda: self._listed(host), timeout_s, f"Nimbus lists a supervisor on {host}")
        self.save_state()
        return daemon

    def _listed(self, host: str) -> bool:
        try:
            return supervisors_on(self.nimbus.cluster_summary(), host) > 0
        except Exception:
            return False

    def stop_supervisor(self, name: str) -> None:
        """Stop Supervisor ``name`` and every worker it started."""
        daemon = self.supervisors.pop(name, None)
        if daemon is not None:
            daemon.stop()
            self.save_state()

    def stop(self) -> None:
        """Stop Supervisors (and their workers), then Nimbus, then ZooKeeper."""
        for name in list(self.supervisors):
            self.stop_supervisor(name)
        for daemon in reversed(self.daemons):
            daemon.stop()
        self.daemons.clear()

    def save_state(self) -> None:
        """Write endpoints and process groups to ``storm/state.json`` (for ``storm-down``)."""
        pgids = [d.pid for d in self.daemons] + [d.pid for d in self.supervisors.values()]
        markers = [d.spec.marker for d in self.supervisors.values()]
        state = {"endpoints": asdict(self.endpoints), "pgids": pgids, "markers": markers}
        write_conf(self.endpoints.storm_dir / "state.json", state)

    def __enter__(self) -> StormCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def zookeeper_ok(host: str, port: int) -> bool:
    """True if ZooKeeper serves requests (``srvr`` reports a mode; ``ruok`` says imok even when not)."""
    try:
        with socket.create_connection((host, port), timeout=2) as sock:
            sock.sendall(b"srvr")
            return b"Mode:" in sock.recv(4096)
    except OSError:
        return False


def new_run_dir() -> Path:
    """A fresh ``.run/storm-<timestamp>-<pid>/`` folder."""
    path = REPO_ROOT / ".run" / f"storm-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


STORM_LINK = REPO_ROOT / ".run" / "storm"


def cluster_up(supervisors: int) -> StormEndpoints:
    """Start a cluster that outlives this process (``make storm-up``); link it as ``.run/storm``."""
    cluster = StormCluster(new_run_dir())
    cluster.start()
    try:
        for i in range(1, supervisors + 1):
            cluster.start_supervisor(f"supervisor-{i}")
    except BaseException:
        cluster.stop()
        raise
    STORM_LINK.unlink(missing_ok=True)
    STORM_LINK.symlink_to(cluster.endpoints.storm_dir)
    return cluster.endpoints


def cluster_down(storm_dir: Path = STORM_LINK) -> list[int]:
    """Stop what ``cluster_up`` started (only processes that name its run directory); their pids."""
    state_file = storm_dir / "state.json"
    if not state_file.exists():
        return []
    state = json.loads(state_file.read_text())
    run_dir = state["endpoints"]["run_dir"]
    pgids = [pid for pid in state["pgids"] if pid in marked_pids(run_dir)]
    for pgid in reversed(pgids):
        stop_group(pgid, 10.0, functools.partial(_gone, pgid, run_dir))
    for marker in state["markers"]:
        kill_marked(marker)
    if storm_dir == STORM_LINK:
        STORM_LINK.unlink(missing_ok=True)
    return pgids


def _gone(pid: int, marker: str) -> bool:
    return pid not in marked_pids(marker)


def main() -> None:
    """``up [--supervisors N]`` or ``down``, for people (``make storm-up`` / ``make storm-down``)."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.storm_cluster")
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("--supervisors", type=int, default=1)
    args = parser.parse_args()
    if args.command == "up":
        ep = cluster_up(args.supervisors)
        print(json.dumps(asdict(ep), indent=2))
        print(f"logs: {ep.storm_dir / 'logs'}; stop with: make storm-down")
    else:
        print(f"stopped process groups {cluster_down()}")


if __name__ == "__main__":
    main()
