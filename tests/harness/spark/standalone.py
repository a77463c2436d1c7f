"""A Spark standalone cluster on loopback: one master and ``workers`` workers, each its own JVM,
started from the PySpark distribution installed from PyPI (its ``bin/spark-class``), as a user's
cluster manager runs them.

Each worker runs its executors' Python workers with this interpreter (``PYSPARK_PYTHON``), so the
aggregation's package is importable in Spark's tasks as it is in a user's image. The JVMs start one
after another; :meth:`StandaloneCluster.stop` stops the workers, then the master.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pyspark
import requests

from tests.harness.process import Daemon, LaunchSpec, free_port

LOOPBACK = "127.0.0.1"
#: Seconds a JVM of the cluster may take to come up (two cores shared with the rest of the bed).
START_S = 180.0
SPARK_HOME = Path(pyspark.__file__).parent


@dataclass
class StandaloneCluster:
    """A running master and its workers."""

    master_url: str
    web_url: str
    daemons: list[Daemon] = field(default_factory=list)

    def alive_workers(self) -> int:
        """Workers the master lists as ``ALIVE`` (its web UI's JSON)."""
        try:
            state = requests.get(f"{self.web_url}/json/", timeout=5).json()
        except (requests.RequestException, ValueError):
            return 0
        return sum(1 for w in state.get("workers", ()) if w.get("state") == "ALIVE")

    def completed_applications(self) -> int:
        """Applications the master has seen finish."""
        try:
            state = requests.get(f"{self.web_url}/json/", timeout=5).json()
        except (requests.RequestException, ValueError):
            return 0
        return len(state.get("completedapps", ()))

    def stop(self) -> None:
        """Workers first, then the master."""
        for daemon in reversed(self.daemons):
            daemon.stop()


def spark_env(run_dir: Path) -> dict[str, str]:
    """The daemons' environment: this Python for the tasks, logs and scratch space in ``run_dir``."""
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOG_DIR": str(run_dir / "logs"),
        "SPARK_WORKER_DIR": str(run_dir / "work"),
        "SPARK_LOCAL_DIRS": str(run_dir / "local"),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_NO_DAEMONIZE": "1",
    }


def spark_class(main_class: str, *args: str) -> list[str]:
    """``spark-class <main_class> <args>`` of the installed distribution."""
    return [str(SPARK_HOME / "bin" / "spark-class"), main_class, *args]


@contextlib.contextmanager
def standalone_cluster(
    run_dir: Path, workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[StandaloneCluster]:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each, all on loopback."""
    run_dir.mkdir(parents=True, exist_ok=True)
    env = spark_env(run_dir)
    port, web = free_port(), free_port()
    master = LaunchSpec(
        "spark-master",
        spark_class(
            "org.apache.spark.deploy.master.Master",
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            "--webui-port",
            str(web),
        ),
        env,
        run_dir,
        run_dir / "master.log",
        run_dir / "master.log",
    )
    cluster = StandaloneCluster(f"spark://{LOOPBACK}:{port}", f"http://{LOOPBACK}:{web}")
    try:
        cluster.daemons.append(Daemon(master))
        cluster.daemons[0].wait_ready(lambda: _answers(cluster.web_url), START_S, "the master's web UI")
        for i in range(workers):
            log = run_dir / f"worker-{i}.log"
            argv = spark_class(
                "org.apache.spark.deploy.worker.Worker",
                cluster.master_url,
                "--host",
                LOOPBACK,
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(run_dir / f"work-{i}"),
            )
            worker = Daemon(LaunchSpec(f"spark-worker-{i}", argv, env, run_dir, log, log))
            cluster.daemons.append(worker)
            worker.wait_ready(partial(_at_least, cluster, i + 1), START_S, f"{i + 1} workers ALIVE")
        yield cluster
    finally:
        cluster.stop()


def _at_least(cluster: StandaloneCluster, workers: int) -> bool:
    return cluster.alive_workers() >= workers


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/json/", timeout=5).ok
    except requests.RequestException:
        return False
