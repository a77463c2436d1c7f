"""The endpoint policy and Prometheus credentials on the real API server (etcd + kube-apiserver, the
operator under ``kopf.testing.KopfRunner``): a bearer token read from a Secret reaches a loopback
server standing in for Prometheus (it answers as a Prometheus behind authentication would: 401
without the token, an empty result with it), and a refused endpoint is ``Degraded/EndpointRefused``
with nothing contacted. Nimbus is a recording fake; the Prometheus reader and the Secret read are real.
"""

from __future__ import annotations

import base64
import dataclasses
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from kubernetes import client

from stormscale.operator import handlers
from stormscale.operator.endpoints import NIMBUS_ENV, URLS_ENV
from stormscale.operator.policy import Policy
from stormscale.operator.ports import Ports
from stormscale.operator.realizer import StormRealizer
from tests.harness.fakes.ports import FakeNimbus
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.fixtures import scratch_namespace
from tests.harness.waiting import wait_for
from tests.integration.test_operator_api import condition, deployment, events, get, operator, resource

pytestmark = pytest.mark.integration

TOKEN = "tok-integration-3b9e41d7"
EMPTY = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode()


class AuthenticatingPrometheus(http.server.BaseHTTPRequestHandler):
    """200 with an empty result to ``Authorization: Bearer TOKEN``, 401 to anything else; records
    each request's Authorization."""

    seen: ClassVar[list[str | None]]

    def do_GET(self) -> None:
        sent = self.headers.get("Authorization")
        self.seen.append(sent)
        ok = sent == f"Bearer {TOKEN}"
        body = EMPTY if ok else b'{"status":"error","error":"unauthorized"}'
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def prometheus() -> Iterator[tuple[int, list[str | None]]]:
    seen: list[str | None] = []
    handler = type("Handler", (AuthenticatingPrometheus,), {"seen": seen})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_port, seen
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def namespace(control_plane: ControlPlane, stormtopology_crd: Any) -> Iterator[str]:
    with scratch_namespace(control_plane, "ep") as name:
        yield name


@pytest.fixture
def built(
    control_plane: ControlPlane, kube_api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The real ports (the Secret read through the API server, the real Prometheus reader) with a fake
    Nimbus; returns the namespaces ports were built for (none: nothing could be contacted)."""
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    monkeypatch.setattr(handlers, "_API", kube_api)
    monkeypatch.setattr(handlers, "_ENDPOINTS", None)  # read from the environment at startup
    storm = FakeNimbus({"1": 1, "2": 1, "3": 1, "4": 1}, {"1": 8, "2": 8, "3": 8, "4": 8})
    calls: list[str] = []

    def ports(policy: Policy, namespace: str, body: Any) -> Ports:
        calls.append(namespace)
        real = handlers.default_ports(policy, namespace, body)
        return dataclasses.replace(real, nimbus=storm, realizer=StormRealizer(real.deployments, storm))

    monkeypatch.setattr(handlers, "PORTS_FACTORY", ports)
    return calls


def secret(namespace: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "prometheus-token", "namespace": namespace},
            "data": {"token": base64.b64encode(TOKEN.encode() + b"\n").decode()},
        }
    )


def with_auth(namespace: str, port: int) -> str:
    body = resource(namespace)
    body["spec"]["metrics"] = {
        "prometheus": f"http://127.0.0.1:{port}",
        "auth": {"bearerToken": {"name": "prometheus-token", "key": "token"}},
    }
    return json.dumps(body)


def degraded(control_plane: ControlPlane, namespace: str, reason: str) -> dict[str, Any] | None:
    found = get(control_plane, namespace)
    return found if condition(found, "Degraded") == ("True", reason) else None


def test_a_secret_s_bearer_token_reaches_prometheus_and_is_shown_nowhere(
    control_plane: ControlPlane,
    namespace: str,
    built: list[str],
    prometheus: tuple[int, list[str | None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port, seen = prometheus
    monkeypatch.setenv(NIMBUS_ENV, "127.0.0.1:6627")
    monkeypatch.setenv(URLS_ENV, f"http://127.0.0.1:{port}")
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=with_auth(namespace, port))
        # no Secret yet: named in the condition, nothing sent
        missing = wait_for(
            lambda: degraded(control_plane, namespace, "CredentialsUnavailable"), 60, "CredentialsUnavailable"
        )
        assert "Secret " + namespace + "/prometheus-token not found" in json.dumps(missing["status"])
        assert seen == []
        control_plane.kubectl("apply", "-f", "-", stdin=secret(namespace))
        # the token is sent; the stand-in has no samples: StaleMetrics (a refusal would be MetricsRefused)
        stale = wait_for(lambda: degraded(control_plane, namespace, "StaleMetrics"), 60, "StaleMetrics")
    assert runner.exception is None
    assert seen
    assert set(seen) == {f"Bearer {TOKEN}"}
    shown = json.dumps(stale) + control_plane.kubectl("get", "events", "-n", namespace, "-o", "json")
    assert TOKEN not in shown
    assert TOKEN not in runner.output


def test_a_refused_endpoint_is_endpoint_refused_and_never_contacted(
    control_plane: ControlPlane,
    namespace: str,
    built: list[str],
    prometheus: tuple[int, list[str | None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port, seen = prometheus
    monkeypatch.setenv(NIMBUS_ENV, "*.storm.svc.cluster.local:6627")
    monkeypatch.setenv(URLS_ENV, "http://prometheus.monitoring.svc.cluster.local:9090")
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    control_plane.kubectl("apply", "-f", "-", stdin=secret(namespace))
    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=with_auth(namespace, port))
        refused = wait_for(
            lambda: degraded(control_plane, namespace, "EndpointRefused"), 60, "EndpointRefused"
        )
        wait_for(lambda: events(control_plane, namespace, "EndpointRefused") or None, 30, "its Warning")
    assert runner.exception is None
    message = next(c["message"] for c in refused["status"]["conditions"] if c["type"] == "Degraded")
    assert "spec.nimbus 127.0.0.1:6627" in message
    assert f"spec.metrics.prometheus http://127.0.0.1:{port}" in message
    assert [e["type"] for e in events(control_plane, namespace, "EndpointRefused")] == ["Warning"]
    assert seen == []  # the stand-in Prometheus was never asked
    assert built == []  # no port was built: neither Nimbus nor the Secret was touched
    assert "endpoint policy: Nimbus endpoints 1 allowed" in runner.output
