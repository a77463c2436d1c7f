"""Prometheus over https: certificates are verified by default, and a CA bundle
(argument or STORMSCALE_PROMETHEUS_CA_FILE) makes a private CA trusted. A real local TLS server with a
self-signed certificate made by openssl."""

from __future__ import annotations

import http.server
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from stormscale.storm.samples.reader import CA_FILE_ENV, PrometheusUnavailableError, SampleReader

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


class Prometheus(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(EMPTY)))
        self.end_headers()
        self.wfile.write(EMPTY)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def https(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Prometheus)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_port}", cert
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_unknown_certificate_is_refused_by_default(
    https: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CA_FILE_ENV, raising=False)
    url, _ = https
    with pytest.raises(PrometheusUnavailableError, match=r"SSL|certificate") as err:
        SampleReader(url, timeout_s=5, retries=0).newest("t")
    assert len(str(err.value).splitlines()) == 1


def test_a_ca_bundle_makes_the_private_ca_trusted(
    https: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert = https
    monkeypatch.delenv(CA_FILE_ENV, raising=False)
    assert SampleReader(url, timeout_s=5, retries=0, ca_file=str(cert)).newest("t") is None
    monkeypatch.setenv(CA_FILE_ENV, str(cert))
    assert SampleReader(url, timeout_s=5, retries=0).newest("t") is None
