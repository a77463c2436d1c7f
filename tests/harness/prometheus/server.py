"""Prometheus (Debian's package) on a loopback port, with a scrape config the test controls.

The config file, the TSDB and the log live in the run directory. Scrape targets come from static
jobs and from a ``file_sd`` folder (``sd_dir``) where the benchmark's multilang components register
their own metrics endpoints (topology property ``metrics.sd.dir``). ``set_jobs`` rewrites the config
and reloads it through ``/-/reload``; readiness is ``/-/ready``.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from tests.harness.paths import ASSETS
from tests.harness.process import Daemon, DaemonError, LaunchSpec, free_port
from tests.harness.waiting import wait_for

PROMETHEUS_BIN = Path("/usr/bin/prometheus")
INSTALL_SCRIPT = ASSETS / "install_prometheus.sh"
READY_TIMEOUT_S = 60.0
SCRAPE_INTERVAL_S = 2
SD_JOB = "stormscale-tasks"


def ensure_prometheus() -> Path:
    """The Prometheus binary, installed with ``install_prometheus.sh`` first if it is missing."""
    if not PROMETHEUS_BIN.exists():
        done = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, check=False)
        if done.returncode != 0 or not PROMETHEUS_BIN.exists():
            raise DaemonError(f"cannot install Prometheus ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return PROMETHEUS_BIN


@dataclass(frozen=True)
class StaticJob:
    """A scrape job with fixed ``host:port`` targets."""

    name: str
    targets: list[str]
    metrics_path: str = "/metrics"


def scrape_config(jobs: list[StaticJob], sd_dir: Path, interval_s: int) -> dict[str, Any]:
    """The Prometheus config: the file_sd job on ``sd_dir`` plus ``jobs``."""
    scrape_configs: list[dict[str, Any]] = [
        {
            "job_name": SD_JOB,
            "file_sd_configs": [{"files": [str(sd_dir / "*.json")], "refresh_interval": "2s"}],
        }
    ]
    for job in jobs:
        scrape_configs.append(
            {
                "job_name": job.name,
                "metrics_path": job.metrics_path,
                "static_configs": [{"targets": job.targets}],
            }
        )
    interval = f"{interval_s}s"
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "scrape_configs": scrape_configs,
    }


@dataclass
class Prometheus:
    """One Prometheus server; ``start()`` waits for ``/-/ready``, ``stop()`` ends it."""

    run_dir: Path
    scrape_interval_s: int = SCRAPE_INTERVAL_S
    jobs: list[StaticJob] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    daemon: Daemon | None = None

    @property
    def url(self) -> str:
        """Base URL of the HTTP API."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def sd_dir(self) -> Path:
        """The file_sd folder: ``*.json`` target files written here are scraped."""
        return self.run_dir / "sd"

    @property
    def config_file(self) -> Path:
        """The config file Prometheus reads."""
        return self.run_dir / "prometheus.yml"

    def write_config(self) -> None:
        """Write the scrape config (JSON is YAML)."""
        self.sd_dir.mkdir(parents=True, exist_ok=True)
        config = scrape_config(self.jobs, self.sd_dir, self.scrape_interval_s)
        self.config_file.write_text(json.dumps(config, indent=2) + "\n")

    def spec(self) -> LaunchSpec:
        """The Prometheus command: loopback only, TSDB in the run directory, lifecycle API on."""
        argv = [
            str(ensure_prometheus()),
            f"--config.file={self.config_file}",
            f"--storage.tsdb.path={self.run_dir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=2h",
            "--web.enable-lifecycle",
        ]
        log = self.run_dir / "prometheus.log"
        return LaunchSpec("prometheus", argv, {"PATH": "/usr/bin:/bin"}, self.run_dir, log, log)

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> Prometheus:
        """Write the config, start the server and wait for ``/-/ready``."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.write_config()
        self.daemon = Daemon(self.spec())
        try:
            self.daemon.wait_ready(self._ready, timeout_s, f"{self.url}/-/ready answers 200")
        except BaseException:
            self.stop()
            raise
        return self

    def _ready(self) -> bool:
        try:
            return requests.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def set_jobs(self, jobs: list[StaticJob]) -> None:
        """Replace the static jobs and reload the config."""
        self.jobs = list(jobs)
        self.write_config()
        requests.post(f"{self.url}/-/reload", timeout=10).raise_for_status()

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query; the ``result`` list of the response."""
        return self._api("query", {"query": promql})

    def query_range(self, promql: str, start: float, end: float, step_s: float) -> list[dict[str, Any]]:
        """A range query over [start, end] (Unix seconds); the ``result`` list (matrix)."""
        return self._api("query_range", {"query": promql, "start": start, "end": end, "step": step_s})

    def _api(self, endpoint: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        response = requests.get(f"{self.url}/api/v1/{endpoint}", params=params, timeout=10)
        response.raise_for_status()
        body = response.json()
        if body.get("status") != "success":
            raise DaemonError(f"Prometheus {endpoint} {params} failed: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_for(self, promql: str, timeout_s: float = 60.0) -> list[dict[str, Any]]:
        """Poll an instant query until it returns a non-empty result."""
        return wait_for(
            lambda: self.query(promql),
            timeout_s,
            f"Prometheus: {promql!r} non-empty",
            every_s=1.0,
            error=DaemonError,
        )

    def stop(self) -> None:
        """Stop the server."""
        if self.daemon is not None:
            self.daemon.stop()
            self.daemon = None
