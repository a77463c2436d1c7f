"""A real Storm 2.8 cluster on loopback: ZooKeeper, Nimbus and N Supervisors as ``java -cp`` processes.

Nimbus runs Stormscale's scheduler (``scheduler/``; topologies without a placement go to Storm's
DefaultScheduler through it) unless ``StormCluster(..., scheduler=False)`` or, for clusters that do not
say, ``STORMSCALE_NIMBUS_SCHEDULER=storm`` in the environment.

The daemons' state and logs live in the run directory's ``storm/`` folder; how each is launched is
in :mod:`tests.harness.storm.daemons`. There is no Storm UI: ``storm-webapp`` does not resolve on the
reachable Maven Central mirror, so readiness and stats go through Nimbus Thrift with the product's
client (``stormscale.storm``).

For people (``make storm-up SUPERVISORS=2`` / ``make storm-down``)::

    python -m tests.harness.storm.cluster up --supervisors 2
    python -m tests.harness.storm.cluster down
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import socket
import time
from dataclasses import asdict
from pathlib import Path

from stormscale.storm import NimbusClient
from stormscale.storm.model import ClusterSummary
from tests.harness.paths import RUN_ROOT
from tests.harness.process import (
    Daemon,
    DaemonError,
    LaunchSpec,
    daemon_named,
    free_port,
    kill_marked,
    marked_pids,
    new_run_dir,
    port_open,
    signal_group,
    stop_group,
)
from tests.harness.storm.daemons import (
    LOOPBACK,
    StormEndpoints,
    SupervisorLauncher,
    nimbus_spec,
    write_conf,
    zookeeper_spec,
)
from tests.harness.storm.home import ensure_storm_home
from tests.harness.storm.scheduler import ensure_scheduler_jar

READY_TIMEOUT_S = 180.0
#: ``storm``: clusters whose ``scheduler`` is not given run Storm's own DefaultScheduler.
SCHEDULER_ENV = "STORMSCALE_NIMBUS_SCHEDULER"


def supervisors_on(info: ClusterSummary, host: str) -> int:
    """How many Supervisors Nimbus lists for ``host``."""
    return sum(1 for s in info.supervisors if s.host == host)


class StormCluster:
    """ZooKeeper + Nimbus started in order, plus Supervisors on demand; ``stop()`` ends them all."""

    def __init__(
        self, run_dir: Path, storm_home: Path | None = None, *, scheduler: bool | None = None
    ) -> None:
        """``scheduler``: Nimbus runs Stormscale's scheduler (built first if missing), else Storm's own;
        None: ours unless the environment says ``STORMSCALE_NIMBUS_SCHEDULER=storm`` (to compare)."""
        home = storm_home or ensure_storm_home()
        if scheduler is None:
            scheduler = os.environ.get(SCHEDULER_ENV, "stormscale") != "storm"
        jar = str(ensure_scheduler_jar()) if scheduler else ""
        self.endpoints = StormEndpoints(
            str(home),
            str(run_dir),
            free_port(),
            free_port(),
            scheduler_jar=jar,
            placement_port=free_port() if jar else 0,
        )
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

    def kill_nimbus(self) -> None:
        """SIGKILL Nimbus alone (a crash: ZooKeeper keeps the topologies' state, Supervisors and their
        workers keep running); :meth:`restart_nimbus` brings it back."""
        daemon = daemon_named(self.daemons, "nimbus", "this cluster")
        signal_group(daemon.pid, signal.SIGKILL)
        daemon.proc.wait(timeout=30)

    def restart_nimbus(self, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Start Nimbus again in its place among the daemons; the seconds until it leads."""
        old = daemon_named(self.daemons, "nimbus", "this cluster")
        if old.exited() is None:
            raise DaemonError("Nimbus is running: kill it first")
        started = time.monotonic()
        daemon = Daemon(nimbus_spec(self.endpoints))
        self.daemons[self.daemons.index(old)] = daemon
        self.save_state()
        daemon.wait_ready(
            self._nimbus_leads, timeout_s, f"Nimbus leads again on {self.endpoints.nimbus_port}"
        )
        return time.monotonic() - started

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


STORM_LINK = RUN_ROOT / "storm"


def cluster_up(supervisors: int) -> StormEndpoints:
    """Start a cluster that outlives this process (``make storm-up``); link it as ``.run/storm``."""
    cluster = StormCluster(new_run_dir("storm-"))
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
    parser = argparse.ArgumentParser(prog="python -m tests.harness.storm.cluster")
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
