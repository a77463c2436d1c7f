"""How each Storm daemon of the test bed is launched: storm.yaml, ``java`` command line, launch spec.

Each daemon gets its own storm.yaml (``-Dstorm.conf.file``) and log files under the cluster's folder
(``<run dir>/storm/``); ports are chosen at run time. ``supervisor_spec`` returns the exact command and
environment of one Supervisor so the pod runner can start Supervisors as the replicas of a worker
Deployment (``SupervisorLauncher``, one slot per Supervisor by default).

Tuned for tests, not production: ``topology.stats.sample.rate: 1.0`` (Storm samples 5 % by default,
so counts move in steps of 20) and ``executor.metrics.frequency.secs: 5`` (workers report executor
stats to Nimbus every 60 s by default). ZooKeeper is ZooKeeper's own server class on 127.0.0.1;
Storm's Nimbus Thrift, Supervisor Thrift and worker Netty servers have no bind-address setting and
bind the wildcard address.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from stormscale.storm import Endpoint, NimbusClient
from tests.harness.process import LaunchSpec, free_port
from tests.harness.storm.scheduler import SCHEDULER_CLASS

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
    #: Stormscale's scheduler jar on Nimbus's classpath, selected by ``storm.scheduler``; empty: Storm's
    #: own DefaultScheduler (:mod:`tests.harness.storm.scheduler`).
    scheduler_jar: str = ""
    #: The scheduler's placement endpoint on Nimbus (``stormscale.scheduler.port``, loopback); 0: none.
    placement_port: int = 0

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
    """Nimbus with its own storm.yaml and local dir, and Stormscale's scheduler when ``ep`` names its jar
    (on the classpath, where a production Nimbus has it in ``extlib-daemon/``)."""
    nimbus_dir = ep.storm_dir / "nimbus"
    conf = {
        **base_conf(ep),
        "storm.local.dir": str(nimbus_dir / "local"),
        "storm.metricstore.rocksdb.location": str(nimbus_dir / "rocks"),
    }
    classpath = daemon_classpath(ep)
    if ep.scheduler_jar:
        conf["storm.scheduler"] = SCHEDULER_CLASS
        classpath += f":{ep.scheduler_jar}"
        if ep.placement_port:
            conf["stormscale.scheduler.port"] = ep.placement_port
            conf["stormscale.scheduler.host"] = ep.host
    conf_file = write_conf(nimbus_dir / "storm.yaml", conf)
    log_dir = ep.storm_dir / "logs"
    argv = java_argv(ep, "nimbus", conf_file, log_dir, 512)
    argv += ["-cp", classpath, "org.apache.storm.daemon.nimbus.Nimbus"]
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

    def __call__(self, replica: str | Named, slots: int | None = None) -> LaunchSpec:
        """The spec of replica ``replica`` (a name, or anything with a ``name``, such as the pod
        runner's ``Replica``) with ``slots`` worker slots (default: the launcher's); its
        ``argv``/``env``/``cwd`` are what the pod runner's ``Command`` needs."""
        name = replica if isinstance(replica, str) else replica.name
        slots = self.slots if slots is None else slots
        return supervisor_spec(self.endpoints, name, self.host_for(name), slots, self.extra_conf)
