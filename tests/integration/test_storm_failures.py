"""A Storm daemon that cannot start fails the cluster start quickly, with that daemon's log tail."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.harness.process import DaemonError, port_open
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.daemons import LOOPBACK

pytestmark = pytest.mark.storm


def test_nimbus_port_taken_fails_fast_with_its_log_tail(storm_home: Path, tmp_path: Path) -> None:
    cluster = StormCluster(tmp_path, storm_home)
    with socket.socket() as squatter:
        squatter.bind((LOOPBACK, cluster.endpoints.nimbus_port))
        squatter.listen()
        started = time.monotonic()
        with pytest.raises(DaemonError) as failure:
            cluster.start(timeout_s=120)
        elapsed = time.monotonic() - started
    message = str(failure.value)
    assert message.startswith("nimbus exited"), message[:300]
    assert "nimbus.log" in message
    assert f"{cluster.endpoints.nimbus_port} is not available" in message  # Nimbus's own log line
    assert elapsed < 90, f"took {elapsed:.0f} s"
    assert not port_open(LOOPBACK, cluster.endpoints.zookeeper_port), "ZooKeeper was left running"
