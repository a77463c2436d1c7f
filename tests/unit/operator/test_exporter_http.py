"""The exporter's HTTP surface: metrics on /metrics only, 404 elsewhere, bound to
127.0.0.1 unless told otherwise. A real server on a free port; Nimbus is a closed local port."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from stormscale.storm.client import NimbusClient
from stormscale.storm.exporter.__main__ import parse_args
from stormscale.storm.exporter.scraper import Scraper
from stormscale.storm.exporter.server import serve
from stormscale.storm.model import Endpoint


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def base() -> Iterator[str]:
    scraper = Scraper(NimbusClient(Endpoint("127.0.0.1", closed_port()), timeout_s=0.5), cache_s=60)
    server = serve(scraper, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_metrics_are_served_on_metrics(base: str) -> None:
    status, body = get(base + "/metrics")
    assert status == 200
    assert "storm_" in body or "# HELP" in body


@pytest.mark.parametrize("path", ["/", "/anything", "/metrics/x", "/metricsx", "/debug"])
def test_any_other_path_is_404_without_metrics(base: str, path: str) -> None:
    status, body = get(base + path)
    assert status == 404
    assert "# HELP" not in body


def test_healthz_stays(base: str) -> None:
    assert get(base + "/healthz")[0] == 200


def test_the_exporter_binds_loopback_unless_told() -> None:
    assert parse_args(["--nimbus", "n:6627"]).listen == "127.0.0.1"
    assert parse_args(["--nimbus", "n:6627", "--listen", "10.0.0.5"]).listen == "10.0.0.5"
