"""Hung and hostile endpoints on real local sockets: a Nimbus that trickles
bytes, a huge Thrift frame header, a Kubernetes API server or a Prometheus that never answers. Each call
must end by its deadline with the adapters' typed one-line error."""

from __future__ import annotations

import http.server
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from kubernetes import client

from stormscale.operator.adapters import kube
from stormscale.operator.ports import UnavailableError
from stormscale.storm.client import MAX_FRAME_BYTES, NimbusClient
from stormscale.storm.errors import NimbusUnavailableError
from stormscale.storm.model import Endpoint
from stormscale.storm.samples import PrometheusUnavailableError, SampleReader


@contextmanager
def server(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    """A real TCP server on 127.0.0.1: each connection gets ``answer`` in its own thread."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                answer(conn)
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


def trickle(conn: socket.socket) -> None:
    """A frame of 200 bytes, one byte every 0.2 s: no single read ever waits 1 s."""
    conn.sendall(struct.pack("!i", 200))
    for _ in range(200):
        conn.sendall(b"\x00")
        time.sleep(0.2)


def silent(conn: socket.socket) -> None:
    time.sleep(30)


def header(size: int) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        conn.sendall(struct.pack("!I", size))
        time.sleep(2)

    return answer


def finishes(call: Callable[[], object], bound_s: float) -> BaseException:
    """Run ``call`` in a thread; it must raise within ``bound_s`` (a hang fails, not blocks, the test)."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as err:
            raised.append(err)

    thread = threading.Thread(target=target, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(bound_s)
    assert not thread.is_alive(), f"still running after {bound_s} s"
    assert time.monotonic() - started < bound_s
    assert raised, "returned instead of raising"
    return raised[0]


def test_a_trickling_nimbus_cannot_hold_a_call_past_its_deadline() -> None:
    with server(trickle) as port:
        nimbus = NimbusClient(Endpoint("127.0.0.1", port), timeout_s=1.0)
        err = finishes(nimbus.topologies, bound_s=3.0)
    assert isinstance(err, NimbusUnavailableError)
    assert "timed out" in str(err)


@pytest.mark.parametrize("size", [MAX_FRAME_BYTES + 1, 2**31 - 1, 2**32 - 1])
def test_a_frame_over_the_limit_is_refused_before_it_is_read(size: int) -> None:
    with server(header(size)) as port:
        nimbus = NimbusClient(Endpoint("127.0.0.1", port), timeout_s=5.0)
        err = finishes(nimbus.topologies, bound_s=1.5)
    assert isinstance(err, NimbusUnavailableError)
    assert f"over the {MAX_FRAME_BYTES:,}-byte limit" in str(err)
    assert len(str(err).splitlines()) == 1


def test_a_silent_api_server_ends_the_call_with_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube, "REQUEST_TIMEOUT_S", (1.0, 0.5))
    with server(silent) as port:
        config = client.Configuration()
        config.host = f"http://127.0.0.1:{port}"
        config.retries = 0
        deployments = kube.KubeDeployments(client.ApiClient(config))
        err = finishes(lambda: deployments.read("ns", "workers"), bound_s=4.0)
    assert isinstance(err, UnavailableError)


def test_every_kubernetes_call_of_the_adapters_passes_the_timeout() -> None:
    """Source check: each call into the client carries ``_request_timeout`` (one new call without it
    would hang on a silent API server again)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(kube))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr in {"_apps", "_core", "_hpa", "_custom"}
    ]
    assert len(calls) >= 7
    for call in calls:
        assert any(k.arg == "_request_timeout" for k in call.keywords), ast.unparse(call.func)


def test_scale_applies_replicas_on_the_scale_subresource_only() -> None:
    """RBAC grants ``deployments/scale`` only: the adapter must call that path, with server-side apply."""
    seen: list[tuple[str, str, str, bytes]] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_PATCH(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.command, self.path, self.headers["Content-Type"], body))
            answer = b'{"kind": "Scale", "apiVersion": "autoscaling/v1", "spec": {"replicas": 3}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            return

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        config = client.Configuration()
        config.host = f"http://127.0.0.1:{httpd.server_port}"
        kube.KubeDeployments(client.ApiClient(config)).scale("ns", "workers", 3)
    finally:
        httpd.shutdown()
        httpd.server_close()
    ((method, path, content_type, body),) = seen
    assert (method, path.split("?")[0]) == ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/workers/scale")
    assert "fieldManager=stormscale" in path
    assert content_type == "application/apply-patch+yaml"
    assert json.loads(body)["spec"] == {"replicas": 3}


def test_kopfs_own_calls_get_the_same_bound() -> None:
    import kopf

    from stormscale.operator.handlers import configure

    settings = kopf.OperatorSettings()
    configure(settings=settings)  # type: ignore[call-arg]  # kopf types the decorated function as its callback protocol
    assert settings.networking.connect_timeout == kube.REQUEST_TIMEOUT_S[0]
    assert settings.networking.request_timeout == sum(kube.REQUEST_TIMEOUT_S)
    assert settings.background.cancellation_polling <= 2  # not Kopf's 60 s (a deletion waits on it)


def test_a_silent_prometheus_ends_the_query_after_one_timeout() -> None:
    """A timed-out query is not asked again within the pass (the next pass asks): three 30 s attempts
    held the pass's thread of Kopf's pool for 91 s (bench/fleet.py, docs/evaluation.md "Many resources")."""
    with server(silent) as port:
        reader = SampleReader(f"http://127.0.0.1:{port}", timeout_s=0.5)
        err = finishes(lambda: reader.newest("t"), bound_s=1.2)
    assert isinstance(err, PrometheusUnavailableError)


def test_prometheus_answers_that_say_not_now_are_still_asked_again() -> None:
    """Retries stay for the statuses they are for (429, 5xx): a 503, then the answer."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            status, body = (503, b"{}") if len(seen) == 1 else (200, EMPTY)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        assert SampleReader(f"http://127.0.0.1:{httpd.server_address[1]}").newest("t") is None
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert len(seen) == 2


EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
