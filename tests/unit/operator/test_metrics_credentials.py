"""Prometheus credentials from Secrets (``spec.metrics.auth``): the header and the TLS context they
become, a missing or unusable Secret named without its value, the credentials on the wire (a loopback
server standing in for Prometheus checks them), and no secret value in status, events or logs."""

from __future__ import annotations

import base64
import http.server
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import kopf
import pytest
from prometheus_client import generate_latest

from stormscale.operator import handlers
from stormscale.operator.adapters.secrets import CredentialsUnavailableError, metrics_auth
from stormscale.operator.endpoints import EndpointPolicy
from stormscale.operator.policy import InvalidSpecError, MetricsAuthSpec, parse_spec
from stormscale.operator.status import RETRY_AFTER, Reason, StormTopologyStatus
from stormscale.storm.errors import redact, register_secrets
from stormscale.storm.samples import PrometheusError, SampleReader
from tests.harness.fakes.ports import FakeEvents

from .test_error_contract import BODY, FakeStore, degraded_reason
from .test_reconcile import policy, world

TOKEN = "tok-7f3a9c2e-never-shown"
PASSWORD = "pw-hunter2-never-shown"
OWNER = "streaming/linear"
KOPF_EVENTS = handlers.KopfEvents  # the real one: it posts through Kopf and logs each event


class FakeSecrets:
    """Secrets by name → decoded data; ``refused``: names whose read fails as a 403 would."""

    def __init__(
        self, secrets: Mapping[str, Mapping[str, bytes]], refused: frozenset[str] = frozenset()
    ) -> None:
        self.secrets, self.refused, self.reads = dict(secrets), refused, list[str]()

    def data(self, namespace: str, name: str) -> Mapping[str, bytes] | None:
        self.reads.append(f"{namespace}/{name}")
        if name in self.refused:
            raise CredentialsUnavailableError(f"Secret {namespace}/{name} not read: 403 Forbidden")
        return self.secrets.get(name)


def auth(**fields: Any) -> MetricsAuthSpec:
    return MetricsAuthSpec.model_validate(fields)


@pytest.fixture(autouse=True)
def forget_registered_secrets() -> Iterator[None]:
    yield
    register_secrets(OWNER, ())


# --- what the Secrets become -----------------------------------------------------------------------


def test_a_bearer_token_becomes_the_header_without_its_newline_and_is_hidden_from_then_on() -> None:
    secrets = FakeSecrets({"prom-token": {"token": TOKEN.encode() + b"\n"}})
    found = metrics_auth(
        auth(bearerToken={"name": "prom-token", "key": "token"}), "streaming", OWNER, secrets
    )
    assert found is not None
    assert found.headers() == {"Authorization": f"Bearer {TOKEN}"}
    assert TOKEN not in repr(found)
    assert secrets.reads == ["streaming/prom-token"]
    assert redact(f"server said: Bearer {TOKEN}") == "server said: Bearer ***"


def test_basic_auth_is_username_and_password_from_their_keys() -> None:
    secrets = FakeSecrets({"prom": {"user": b"stormscale", "pass": PASSWORD.encode()}})
    basic = {"username": {"name": "prom", "key": "user"}, "password": {"name": "prom", "key": "pass"}}
    found = metrics_auth(auth(basic=basic), "streaming", OWNER, secrets)
    assert found is not None
    pair = base64.b64encode(f"stormscale:{PASSWORD}".encode()).decode()
    assert found.headers() == {"Authorization": f"Basic {pair}"}
    assert PASSWORD not in redact(f"{PASSWORD} {pair}")


def test_no_auth_is_no_credentials() -> None:
    assert metrics_auth(None, "streaming", OWNER, FakeSecrets({})) is None


@pytest.mark.parametrize(
    ("secrets", "says"),
    [
        (FakeSecrets({}), "spec.metrics.auth.bearerToken: Secret streaming/prom-token not found"),
        (
            FakeSecrets({"prom-token": {"other": TOKEN.encode()}}),
            "spec.metrics.auth.bearerToken: Secret streaming/prom-token has no key 'token'",
        ),
        (
            FakeSecrets({}, refused=frozenset({"prom-token"})),
            "spec.metrics.auth.bearerToken: Secret streaming/prom-token not read: 403 Forbidden",
        ),
        (
            FakeSecrets({"prom-token": {"token": f"{TOKEN}\r\nX-Injected: 1".encode()}}),
            "Secret key prom-token/token is empty, not UTF-8 or holds control characters",
        ),
        (FakeSecrets({"prom-token": {"token": b"\xff\xfe"}}), "not UTF-8"),
        (FakeSecrets({"prom-token": {"token": b"  \n"}}), "is empty"),
    ],
)
def test_a_missing_or_unusable_secret_is_named_never_shown(secrets: FakeSecrets, says: str) -> None:
    with pytest.raises(CredentialsUnavailableError) as err:
        metrics_auth(auth(bearerToken={"name": "prom-token", "key": "token"}), "streaming", OWNER, secrets)
    assert says in str(err.value)
    assert TOKEN not in str(err.value)


def test_pem_that_ssl_cannot_use_is_unavailable_credentials_not_a_crash() -> None:
    secrets = FakeSecrets({"tls": {"tls.crt": b"not a certificate", "tls.key": b"not a key"}})
    tls = {"certificate": {"name": "tls", "key": "tls.crt"}, "key": {"name": "tls", "key": "tls.key"}}
    with pytest.raises(CredentialsUnavailableError, match=r"spec\.metrics\.auth: the client certificate"):
        metrics_auth(auth(tls=tls), "streaming", OWNER, secrets)
    with pytest.raises(CredentialsUnavailableError, match=r"spec\.metrics\.auth: the CA bundle"):
        metrics_auth(auth(ca={"name": "tls", "key": "tls.crt"}), "streaming", OWNER, secrets)


# --- the spec --------------------------------------------------------------------------------------


def spec(**metrics: Any) -> dict[str, Any]:
    raw = policy().spec.model_dump(by_alias=True, exclude_none=True)
    raw["metrics"] |= metrics
    return raw


@pytest.mark.parametrize(
    ("field", "raw"),
    [
        ("spec.metrics.prometheus", spec(prometheus=f"http://admin:{PASSWORD}@prometheus:9090")),
        ("spec.metrics.prometheus", spec(prometheus=f"https://{PASSWORD}@prometheus")),
        ("spec.ui.url", {**spec(), "ui": {"url": f"http://admin:{PASSWORD}@storm-ui:8080"}}),
        ("spec.nimbus.host", {**spec(), "nimbus": {"host": f"admin:{PASSWORD}@nimbus"}}),
    ],
)
def test_userinfo_in_any_endpoint_is_an_invalid_spec_naming_the_field_not_the_value(
    field: str, raw: dict[str, Any]
) -> None:
    with pytest.raises(InvalidSpecError, match=f"^{field}: .*userinfo") as err:
        parse_spec(raw)
    assert PASSWORD not in str(err.value)


def test_an_at_sign_past_the_host_is_no_userinfo() -> None:
    parse_spec(spec(prometheus="http://prometheus:9090/tenant@a"))


def test_the_auth_spec_rules() -> None:
    ref = {"name": "s", "key": "k"}
    with pytest.raises(InvalidSpecError, match="bearerToken and basic are exclusive"):
        parse_spec(spec(auth={"bearerToken": ref, "basic": {"username": ref, "password": ref}}))
    with pytest.raises(InvalidSpecError, match="need an https"):
        parse_spec(spec(auth={"ca": ref}))
    with pytest.raises(InvalidSpecError, match=r"spec\.metrics\.auth\.bearerToken\.name"):
        parse_spec(spec(auth={"bearerToken": {"name": "Not_A_Secret", "key": "k"}}))
    with_tls = spec(
        prometheus="https://prometheus:9090", auth={"tls": {"certificate": ref, "key": ref}, "ca": ref}
    )
    assert parse_spec(with_tls).spec.metrics.auth is not None


# --- on the wire -----------------------------------------------------------------------------------

EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


class CheckingPrometheus(http.server.BaseHTTPRequestHandler):
    """Answers 200 to a request carrying ``expected`` as its Authorization, 401 otherwise, as a
    Prometheus behind an authenticating proxy would; records what it was sent."""

    expected: ClassVar[str | None] = None
    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        sent = self.headers.get("Authorization")
        self.seen.append(sent)
        ok = self.expected is None or sent == self.expected
        body = EMPTY if ok else b'{"status":"error"}'
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def serve(httpd: http.server.HTTPServer) -> Iterator[http.server.HTTPServer]:
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def prometheus() -> Iterator[tuple[str, type[CheckingPrometheus]]]:
    handler = type("Handler", (CheckingPrometheus,), {"seen": [], "expected": f"Bearer {TOKEN}"})
    for httpd in serve(http.server.HTTPServer(("127.0.0.1", 0), handler)):
        yield f"http://127.0.0.1:{httpd.server_port}", handler


def test_the_token_reaches_prometheus_and_without_it_prometheus_refuses(
    prometheus: tuple[str, type[CheckingPrometheus]],
) -> None:
    url, server = prometheus
    secrets = FakeSecrets({"prom-token": {"token": TOKEN.encode()}})
    found = metrics_auth(
        auth(bearerToken={"name": "prom-token", "key": "token"}), "streaming", OWNER, secrets
    )
    assert SampleReader(url, timeout_s=5, retries=0, auth=found).newest("t") is None
    with pytest.raises(PrometheusError, match="answered 401") as refused:
        SampleReader(url, timeout_s=5, retries=0).newest("t")
    assert server.seen == [f"Bearer {TOKEN}", None]
    assert TOKEN not in str(refused.value)


def openssl_pair(tmp_path: Path, name: str) -> tuple[bytes, bytes]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM)."""
    cert, key = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert.read_bytes(), key.read_bytes()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_a_client_certificate_and_a_ca_from_secrets_make_mutual_tls(tmp_path: Path) -> None:
    server_cert, _ = openssl_pair(tmp_path, "prometheus")
    client_cert, client_key = openssl_pair(tmp_path, "stormscale")
    (tmp_path / "clients.pem").write_bytes(client_cert)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "prometheus.crt", tmp_path / "prometheus.key")
    context.verify_mode = ssl.CERT_REQUIRED  # no client certificate, no answer
    context.load_verify_locations(tmp_path / "clients.pem")
    handler: type[CheckingPrometheus] = type("Handler", (CheckingPrometheus,), {"seen": [], "expected": None})
    httpd = http.server.HTTPServer(("127.0.0.1", 0), handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    secrets = FakeSecrets(
        {"client-tls": {"tls.crt": client_cert, "tls.key": client_key}, "prom-ca": {"ca.crt": server_cert}}
    )
    spec_auth = auth(
        tls={
            "certificate": {"name": "client-tls", "key": "tls.crt"},
            "key": {"name": "client-tls", "key": "tls.key"},
        },
        ca={"name": "prom-ca", "key": "ca.crt"},
    )
    for running in serve(httpd):
        url = f"https://127.0.0.1:{running.server_port}"
        found = metrics_auth(spec_auth, "streaming", OWNER, secrets)
        assert SampleReader(url, timeout_s=5, retries=0, auth=found).newest("t") is None
        ca_only = metrics_auth(auth(ca={"name": "prom-ca", "key": "ca.crt"}), "streaming", OWNER, secrets)
        with pytest.raises(PrometheusError):  # the server's CA is trusted, but no client certificate
            SampleReader(url, timeout_s=5, retries=0, auth=ca_only).newest("t")
    assert handler.seen == [None]
    assert not list(Path("/tmp").glob("stormscale-tls-*"))  # the key's file is gone once loaded


# --- the pass: CredentialsUnavailable, and no secret anywhere ---------------------------------------


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``handlers.run_pass`` with fake ports whose credentials are resolved from fake Secrets as the
    real factory does, a fake status store and recorded events; the endpoint policy open."""
    w, store, events = world(), FakeStore(), FakeEvents()
    store.resource = {**BODY, "spec": policy().spec.model_dump(by_alias=True, exclude_none=True)}
    store.resource["spec"]["metrics"]["auth"] = {"bearerToken": {"name": "prom-token", "key": "token"}}
    secrets = FakeSecrets({"prom-token": {"token": TOKEN.encode()}})

    def ports(policy: Any, namespace: str, body: Any) -> Any:
        metrics_auth(policy.spec.metrics.auth, namespace, f"{namespace}/{body.metadata.name}", secrets)
        return w.ports

    monkeypatch.setattr(handlers, "status_store", lambda: store)
    monkeypatch.setattr(handlers, "PORTS_FACTORY", ports)
    monkeypatch.setattr(handlers, "KopfEvents", lambda _: events)
    monkeypatch.setattr(handlers, "_ENDPOINTS", EndpointPolicy())
    w.status = store
    return w, store, events, secrets


def test_a_missing_secret_is_degraded_credentials_unavailable_and_retried(handler: Any) -> None:
    _, store, events, secrets = handler
    secrets.secrets.clear()
    for _ in range(2):
        with pytest.raises(kopf.TemporaryError) as caught:
            handlers.run_pass(kopf.Body(store.resource))
    assert caught.value.delay == RETRY_AFTER[Reason.CREDENTIALS_UNAVAILABLE]
    assert degraded_reason(store) == "CredentialsUnavailable"
    degraded = StormTopologyStatus.from_json(store.stored).condition("Degraded")
    assert degraded is not None
    assert "Secret streaming/prom-token not found" in degraded.message
    assert [e[:2] for e in events.posted] == [("Warning", "CredentialsUnavailable")]


def test_a_failing_pass_shows_no_secret_in_status_events_logs_or_metrics(
    handler: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A library that quotes what it was sent (the token, a URL's password) in an exception: the pass
    ends InternalError, its traceback is logged, and the values appear nowhere; then a spec with the
    password in its Prometheus URL: InvalidSpec, and the same."""
    w, store, _, _ = handler
    w.nimbus.fail_describe = RuntimeError(
        f"upstream refused 'Authorization: Bearer {TOKEN}' for http://admin:{PASSWORD}@prometheus:9090"
    )
    posted: list[str] = []
    monkeypatch.setattr(kopf, "event", lambda *a, **kw: posted.append(kw["message"]))
    monkeypatch.setattr(handlers, "KopfEvents", KOPF_EVENTS)
    with caplog.at_level("DEBUG"):
        with pytest.raises(kopf.TemporaryError) as internal:
            handlers.run_pass(kopf.Body(store.resource))
        assert degraded_reason(store) == "InternalError"
        store.resource["spec"]["metrics"]["prometheus"] = f"http://admin:{PASSWORD}@prometheus:9090"
        handlers.run_pass(kopf.Body(store.resource))
        assert degraded_reason(store) == "InvalidSpec"
    assert "Traceback" in caplog.text  # the traceback is logged, redacted
    assert "RuntimeError: upstream refused 'Authorization: Bearer ***'" in caplog.text
    assert len(posted) == 2
    shown = [
        json.dumps(store.stored),
        json.dumps(store.saved, default=str),
        *posted,
        caplog.text,
        str(internal.value),
        generate_latest(handlers.METRICS.registry).decode(),
    ]
    for text in shown:
        assert TOKEN not in text
        assert PASSWORD not in text


def test_the_log_filter_redacts_arguments_tracebacks_and_survives_a_bad_format() -> None:
    import logging
    import sys

    from stormscale.storm.errors import RedactingFilter

    register_secrets(OWNER, [TOKEN])
    try:
        raise ValueError(f"Invalid header value 'Bearer {TOKEN}'")
    except ValueError:
        failed = sys.exc_info()
    record = logging.LogRecord("stormscale.operator", logging.ERROR, __file__, 1, "sent %s", (TOKEN,), failed)
    assert RedactingFilter().filter(record)
    shown = logging.Formatter().format(record)
    assert "sent ***" in shown
    assert "Invalid header value 'Bearer ***'" in shown
    assert TOKEN not in shown
    bad = logging.LogRecord("stormscale.operator", logging.INFO, __file__, 1, "%d of %d", (TOKEN,), None)
    assert RedactingFilter().filter(bad)
    assert TOKEN not in logging.Formatter().format(bad)
