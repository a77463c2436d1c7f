"""Session fixture of Prometheus (registered in tests/conftest.py).

- ``prometheus``: Prometheus on a loopback port scraping ``prometheus.sd_dir`` (installed from
  Debian's package first if missing, which needs root); its state and log go to the session's Storm
  run directory (``storm_run_dir``), next to the topologies whose endpoints it scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.prometheus.server import Prometheus


@pytest.fixture(scope="session")
def prometheus(storm_run_dir: Path) -> Iterator[Prometheus]:
    """A running Prometheus (2 s scrape interval) with a file_sd folder for task endpoints."""
    server = Prometheus(storm_run_dir / "prometheus").start()
    try:
        yield server
    finally:
        server.stop()
