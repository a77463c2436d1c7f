"""Nimbus down or silent: the client fails fast with one line; the exporter keeps serving and says so."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import requests

from stormscale.operator.adapters.nimbus import NimbusPort
from stormscale.operator.ports import UnavailableError
from stormscale.storm import Endpoint, NimbusClient, NimbusUnavailableError
from stormscale.storm.exporter import names as n
from stormscale.storm.exporter.scraper import Scraper


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_nimbus() -> Iterator[int]:
    """A server that accepts connections and never answers (a hung Nimbus)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


def test_refused_connection_fails_fast_with_one_line() -> None:
    port = closed_port()
    started = time.monotonic()
    with pytest.raises(
        NimbusUnavailableError, match=f"Nimbus 127.0.0.1:{port} getTopologySummaries: cannot reach"
    ):
        NimbusClient(Endpoint("127.0.0.1", port), timeout_s=5).topologies()
    assert time.monotonic() - started < 1.0


def test_a_silent_nimbus_times_out(silent_nimbus: int) -> None:
    started = time.monotonic()
    with pytest.raises(NimbusUnavailableError, match="timed out"):
        NimbusClient(Endpoint("127.0.0.1", silent_nimbus), timeout_s=0.5).cluster_summary()
    assert time.monotonic() - started < 2.0


def test_every_seed_is_tried_and_named() -> None:
    a, b = closed_port(), closed_port()
    with pytest.raises(NimbusUnavailableError) as caught:
        NimbusClient([Endpoint("127.0.0.1", a), Endpoint("127.0.0.1", b)]).topologies()
    assert f":{a} " in str(caught.value)
    assert f":{b} " in str(caught.value)


def test_the_port_reports_unavailable() -> None:
    port = NimbusPort(NimbusClient(Endpoint("127.0.0.1", closed_port())))
    with pytest.raises(UnavailableError, match="cannot reach Nimbus"):
        port.describe("t")
    with pytest.raises(UnavailableError):
        port.rebalance("t", {"a": 2}, workers=1, wait_secs=0)


def test_the_scraper_counts_errors_once_per_cache_interval() -> None:
    now = [0.0]
    scraper = Scraper(NimbusClient(Endpoint("127.0.0.1", closed_port())), cache_s=10, clock=lambda: now[0])
    for _ in range(3):
        list(scraper.collect())
    assert scraper.errors == 1
    now[0] = 10.0
    values = {s.name: s.value for f in scraper.collect() for s in f.samples}
    assert scraper.errors == 2
    assert values[n.UP] == 0
    assert values[n.SCRAPE_ERRORS] == 2
    assert scraper.health().startswith("ok: nimbus down: Nimbus 127.0.0.1:")


def test_the_exporter_process_keeps_serving_while_nimbus_is_down() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    argv = [sys.executable, "-m", "stormscale.storm.exporter", "--nimbus", f"127.0.0.1:{closed_port()}"]
    process = subprocess.Popen([*argv, "--port", str(port), "--cache-seconds", "0"], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        assert b"serving on" in process.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        bodies = [requests.get(f"{url}/metrics", timeout=5).text for _ in range(3)]
        health = requests.get(f"{url}/healthz", timeout=5)
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert health.status_code == 200
    assert "nimbus down" in health.text
    assert f"{n.UP} 0.0" in bodies[-1]
    assert f"{n.SCRAPE_ERRORS} 3.0" in bodies[-1]
    assert "storm_component_emitted_total{" not in bodies[-1]
