"""Session fixtures of the Storm part of the test bed (registered in tests/conftest.py).

- ``storm_home``: the STORM_HOME, built from Maven Central on first use (about a minute cold).
- ``storm_run_dir``: this session's ``.run/storm-<timestamp>-<pid>/``.
- ``storm_cluster``: ZooKeeper + Nimbus, started once; ``start_supervisor``/``stop_supervisor`` add
  and remove Supervisors (one slot each). Everything is stopped at the end of the session.
- ``storm_supervisor``: one Supervisor (one slot) shared by the session's topologies.

Nothing starts unless a test asks for it, so tests that do not use Storm pay nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.process import new_run_dir
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.home import ensure_storm_home


@pytest.fixture(scope="session")
def storm_home() -> Path:
    """The STORM_HOME, built if missing."""
    return ensure_storm_home()


@pytest.fixture(scope="session")
def storm_run_dir() -> Path:
    """This session's run directory for Storm and Prometheus state and logs."""
    return new_run_dir("storm-")


@pytest.fixture(scope="session")
def storm_cluster(storm_home: Path, storm_run_dir: Path) -> Iterator[StormCluster]:
    """A running ZooKeeper + Nimbus; Supervisors on demand; all stopped at session end."""
    cluster = StormCluster(storm_run_dir, storm_home)
    with cluster:
        yield cluster


@pytest.fixture(scope="session")
def storm_supervisor(storm_cluster: StormCluster) -> str:
    """One Supervisor (one worker slot) for the session's topologies; its name."""
    name = "session-supervisor-1"
    storm_cluster.start_supervisor(name)
    return name
