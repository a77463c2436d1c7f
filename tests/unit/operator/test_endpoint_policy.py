"""The operator's endpoint policy: which Nimbus endpoints and URLs a spec may name. The matcher (exact
names, ``*.suffix``, ports, URL paths), its configuration, and the pass: a refused endpoint is
``Degraded/EndpointRefused`` with one Warning, and nothing is contacted."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import kopf
import pytest

from stormscale.operator import handlers
from stormscale.operator.endpoints import (
    NIMBUS_ENV,
    URLS_ENV,
    EndpointPolicy,
    EndpointPolicyError,
    HostPattern,
    NimbusPattern,
    UrlPattern,
)
from stormscale.operator.status import RETRY_AFTER, Reason, StormTopologyStatus
from tests.harness.fakes.ports import FakeEvents

from .test_error_contract import BODY, FakeStore, degraded_reason
from .test_reconcile import policy, world

# --- the matcher ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "host", "allowed"),
    [
        ("nimbus.storm.svc", "nimbus.storm.svc", True),
        ("nimbus.storm.svc", "NIMBUS.Storm.svc.", True),  # case and a trailing dot do not matter
        ("nimbus.storm.svc", "nimbus.storm.svc.evil.example", False),
        ("nimbus.storm.svc", "evil-nimbus.storm.svc", False),
        ("*.storm.svc", "nimbus.team-a.storm.svc", True),  # one or more labels
        ("*.storm.svc", "nimbus.storm.svc", True),
        ("*.storm.svc", "storm.svc", False),  # the suffix itself is not under it
        ("*.storm.svc", "nimbusstorm.svc", False),  # a label boundary, not a string suffix
        ("*.storm.svc", "nimbus.storm.svc.evil.example", False),
        ("10.0.0.5", "10.0.0.5", True),
        ("10.0.0.5", "10.0.0.50", False),
        ("::1", "[::1]", True),
    ],
)
def test_a_host_pattern_is_an_exact_name_or_a_suffix_under_labels(
    pattern: str, host: str, allowed: bool
) -> None:
    assert HostPattern.parse(pattern).matches(host) is allowed


@pytest.mark.parametrize(
    ("entry", "host", "port", "allowed"),
    [
        ("nimbus.storm.svc:6627", "nimbus.storm.svc", 6627, True),
        ("nimbus.storm.svc:6627", "nimbus.storm.svc", 6628, False),
        ("nimbus.storm.svc", "nimbus.storm.svc", 7000, True),  # no port: any port of the host
        ("*.storm.svc:6627", "a.storm.svc", 6627, True),
        ("[::1]:6627", "::1", 6627, True),
        ("[::1]:6627", "::1", 22, False),
        ("[fd00::5]", "fd00::5", 1, True),
    ],
)
def test_a_nimbus_entry_is_a_host_and_maybe_a_port(entry: str, host: str, port: int, allowed: bool) -> None:
    assert NimbusPattern.parse(entry).matches(host, port) is allowed


@pytest.mark.parametrize(
    ("entry", "url", "allowed"),
    [
        ("http://prometheus.monitoring.svc:9090", "http://prometheus.monitoring.svc:9090", True),
        ("http://prometheus.monitoring.svc:9090", "http://prometheus.monitoring.svc:9090/", True),
        ("http://prometheus.monitoring.svc:9090", "https://prometheus.monitoring.svc:9090", False),
        ("http://prometheus.monitoring.svc:9090", "http://prometheus.monitoring.svc:9091", False),
        ("http://prometheus.monitoring.svc", "http://prometheus.monitoring.svc:80", True),  # default ports
        ("https://prometheus.monitoring.svc", "https://prometheus.monitoring.svc:443/x", True),
        ("https://prometheus.monitoring.svc", "https://prometheus.monitoring.svc:8443", False),
        ("http://*.monitoring.svc:9090", "http://team-a.monitoring.svc:9090", True),
        ("http://*.monitoring.svc:9090", "http://169.254.169.254:9090", False),
        ("https://thanos.example/tenant-a", "https://thanos.example/tenant-a", True),
        ("https://thanos.example/tenant-a", "https://thanos.example/tenant-a/api", True),
        ("https://thanos.example/tenant-a", "https://thanos.example/tenant-ab", False),  # a segment
        ("https://thanos.example/tenant-a", "https://thanos.example/", False),
        ("http://prometheus:9090", "http://prometheus:notaport", False),  # unusable: never allowed
    ],
)
def test_a_url_entry_is_a_scheme_host_port_and_path_prefix(entry: str, url: str, allowed: bool) -> None:
    assert UrlPattern.parse(entry).matches(url) is allowed


@pytest.mark.parametrize(
    "entry",
    ["", "*", "a.*.svc", "**.svc", "nimbus:0", "nimbus:port", "[::1", "[::1]x", "nimbus/path"],
)
def test_a_nimbus_entry_of_another_form_is_refused(entry: str) -> None:
    with pytest.raises(EndpointPolicyError):
        NimbusPattern.parse(entry)


@pytest.mark.parametrize(
    "entry",
    ["prometheus:9090", "ftp://prometheus", "http://", "http://p?x=1", "http://p#f", "http://a.*.svc"],
)
def test_a_url_entry_of_another_form_is_refused(entry: str) -> None:
    with pytest.raises(EndpointPolicyError):
        UrlPattern.parse(entry)


def test_a_url_entry_with_userinfo_is_refused_without_showing_it() -> None:
    with pytest.raises(EndpointPolicyError) as err:
        UrlPattern.parse("http://admin:hunter22@prometheus:9090")
    assert "hunter22" not in str(err.value)


def test_matching_takes_time_linear_in_the_input() -> None:
    """No pattern can be made slow: a suffix test on a long hostile host, many times, in well under
    a second (a backtracking matcher on such input takes seconds to years)."""
    policy = EndpointPolicy.parse(["*.a.a.a.a.a.a.a.a.a:1"], ["http://*.a.a.a.a/" + "a/" * 500])
    host = "a." * 10_000 + "b"
    started = time.perf_counter()
    for _ in range(200):
        assert not policy.nimbus_allowed(host, 1)
        assert not policy.url_allowed(f"http://{host}/" + "a/" * 500)
    assert time.perf_counter() - started < 2.0


def test_the_policy_comes_from_two_variables_and_an_empty_one_is_open() -> None:
    policy = EndpointPolicy.from_env({NIMBUS_ENV: "nimbus.a:6627, *.storm.svc\n10.0.0.5", URLS_ENV: ""})
    assert len(policy.nimbus) == 3
    assert policy.url_allowed("http://169.254.169.254/latest/meta-data")  # open: as without a policy
    assert not policy.nimbus_allowed("169.254.169.254", 6627)
    assert EndpointPolicy.from_env({}) == EndpointPolicy()
    assert all("open" in line for line in EndpointPolicy().describe())
    assert not any("open" in line for line in EndpointPolicy.parse(["n"], ["http://p"]).describe())
    with pytest.raises(EndpointPolicyError, match=NIMBUS_ENV):
        EndpointPolicy.from_env({NIMBUS_ENV: "a.*.b"})


def test_a_refusal_names_each_field_and_its_endpoint() -> None:
    policy = EndpointPolicy.parse(["nimbus.storm.svc:6627"], ["http://prometheus.monitoring.svc:9090"])
    urls = {"spec.metrics.prometheus": "http://169.254.169.254/latest", "spec.ui.url": None}
    message = policy.refusal(("nimbus.storm.svc", 6627), urls)
    assert message is not None
    assert "spec.metrics.prometheus http://169.254.169.254/latest is not an allowed URL" in message
    assert "spec.nimbus" not in message
    both = policy.refusal(("10.0.0.1", 6627), {**urls, "spec.ui.url": "http://ui:8080"})
    assert both is not None
    assert "spec.nimbus 10.0.0.1:6627" in both
    assert "spec.ui.url http://ui:8080" in both
    assert (
        policy.refusal(
            ("nimbus.storm.svc", 6627), {"spec.metrics.prometheus": "http://prometheus.monitoring.svc:9090"}
        )
        is None
    )


def test_the_scheduler_s_placement_port_on_the_nimbus_host_is_checked_too() -> None:
    policy = EndpointPolicy.parse(["nimbus.storm.svc:6627"], [])
    nimbus, urls = ("nimbus.storm.svc", 6627), {"spec.metrics.prometheus": "http://p:9090"}
    message = policy.refusal(nimbus, urls, placement_port=6629)
    assert message is not None
    assert "spec.nimbus.placementPort nimbus.storm.svc:6629 is not an allowed Nimbus endpoint" in message
    assert "spec.nimbus " not in message
    allowed = EndpointPolicy.parse(["nimbus.storm.svc:6627", "nimbus.storm.svc:6629"], [])
    assert allowed.refusal(nimbus, urls, placement_port=6629) is None
    assert EndpointPolicy.parse(["nimbus.storm.svc"], []).refusal(nimbus, urls, placement_port=6629) is None


# --- the pass: refused before anything is contacted ------------------------------------------------


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``handlers.run_pass`` with fake ports, a fake status store and recorded events."""
    w, store, events = world(), FakeStore(), FakeEvents()
    store.resource = {**BODY, "spec": policy().spec.model_dump(by_alias=True)}
    monkeypatch.setattr(handlers, "status_store", lambda: store)
    monkeypatch.setattr(handlers, "PORTS_FACTORY", lambda *_: w.ports)
    monkeypatch.setattr(handlers, "KopfEvents", lambda _: events)
    w.status = store
    return w, store, events


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A loopback socket that records every connection accepted (Nimbus and Prometheus both)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    accepted: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            accepted.append(str(peer))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def contacting_factory(built: list[str], world_ports: Any) -> Any:
    """A ports factory that contacts the spec's Nimbus endpoint and Prometheus URL as the real one's
    adapters would, then hands out the fakes: any pass that builds ports is seen by the listener."""

    def build(policy: Any, namespace: str, body: Any) -> Any:
        spec = policy.spec
        built.append(spec.nimbus.host)
        socket.create_connection((spec.nimbus.host, spec.nimbus.port), timeout=2).close()
        port = int(spec.metrics.prometheus.rsplit(":", 1)[1])
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return world_ports

    return build


def wait_for_accepts(accepted: list[str], count: int) -> None:
    deadline = time.monotonic() + 5
    while len(accepted) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_refused_endpoint_is_degraded_warned_once_and_never_contacted(
    handler: Any, listener: tuple[int, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    w, store, events = handler
    port, accepted = listener
    built: list[str] = []
    monkeypatch.setattr(handlers, "PORTS_FACTORY", contacting_factory(built, w.ports))
    spec = store.resource["spec"]
    spec["nimbus"] = {"host": "127.0.0.1", "port": port}
    spec["metrics"]["prometheus"] = f"http://127.0.0.1:{port}"
    closed = EndpointPolicy.parse(["nimbus.storm.svc:6627"], ["http://prometheus.monitoring.svc:9090"])
    monkeypatch.setattr(handlers, "_ENDPOINTS", closed)
    for _ in range(2):
        handlers.run_pass(kopf.Body(store.resource))  # no TemporaryError: only a change can mend it
    assert RETRY_AFTER[Reason.ENDPOINT_REFUSED] is None
    assert degraded_reason(store) == "EndpointRefused"
    degraded = StormTopologyStatus.from_json(store.stored).condition("Degraded")
    assert degraded is not None
    assert f"spec.nimbus 127.0.0.1:{port}" in degraded.message
    assert f"spec.metrics.prometheus http://127.0.0.1:{port}" in degraded.message
    assert [e[:2] for e in events.posted] == [("Warning", "EndpointRefused")]
    assert built == []
    time.sleep(0.3)  # room for a connection that should not come
    assert accepted == []
    assert w.nimbus.calls == []
    # the control: a policy that allows the endpoints lets the same pass contact them
    monkeypatch.setattr(
        handlers, "_ENDPOINTS", EndpointPolicy.parse(["127.0.0.1"], [f"http://127.0.0.1:{port}"])
    )
    with pytest.raises(kopf.TemporaryError):
        handlers.run_pass(kopf.Body(store.resource))
    wait_for_accepts(accepted, 2)
    assert len(accepted) == 2
    assert built == ["127.0.0.1"]
    assert degraded_reason(store) != "EndpointRefused"


def test_an_open_policy_allows_what_a_spec_names(handler: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    w, store, _ = handler
    monkeypatch.setattr(handlers, "_ENDPOINTS", EndpointPolicy())
    with pytest.raises(kopf.TemporaryError, match="RebalanceRequested"):
        handlers.run_pass(kopf.Body(store.resource))
    assert [c[0] for c in w.nimbus.calls].count("rebalance") == 1


def test_the_ui_url_is_held_to_the_policy_too(handler: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _, store, _ = handler
    nimbus, prometheus = policy().spec.nimbus.host, policy().spec.metrics.prometheus
    allowed = EndpointPolicy.parse([nimbus], [prometheus])
    monkeypatch.setattr(handlers, "_ENDPOINTS", allowed)
    store.resource["spec"]["ui"] = {"url": "http://storm-ui.elsewhere:8080"}
    handlers.run_pass(kopf.Body(store.resource))
    assert degraded_reason(store) == "EndpointRefused"


def test_a_bad_policy_stops_the_operator_at_startup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handlers, "_ENDPOINTS", None)
    monkeypatch.setenv(NIMBUS_ENV, "a.*.b")
    with pytest.raises(kopf.PermanentError, match=NIMBUS_ENV):
        handlers.announce_endpoint_policy()


def test_an_open_policy_is_logged_at_startup(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(handlers, "_ENDPOINTS", None)
    monkeypatch.delenv(NIMBUS_ENV, raising=False)
    monkeypatch.setenv(URLS_ENV, "http://prometheus.monitoring.svc:9090")
    with caplog.at_level("INFO", logger="stormscale.operator"):
        handlers.announce_endpoint_policy()
    assert "endpoint policy: Nimbus endpoints open (any allowed)" in caplog.text
    assert "endpoint policy: Prometheus and UI URLs 1 allowed" in caplog.text
