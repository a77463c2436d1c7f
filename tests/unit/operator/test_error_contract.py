"""One error contract: ports raise only Unavailable or Refused, and everything above them ends as a
Degraded condition with a reason, one Warning per change of reason, and a retry delay by reason.

One test per escape a maintainer found (each of them used to leave ``reconcile`` as a traceback).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import kopf
import pytest

from stormscale.operator import handlers
from stormscale.operator.adapters.nimbus import NimbusPort
from stormscale.operator.adapters.profiler import NimbusGraphs, PrometheusProfiler
from stormscale.operator.policy import InvalidSpecError, parse_spec
from stormscale.operator.ports import GoneError, RefusedError, UnavailableError
from stormscale.operator.status import RETRY_AFTER, Reason, StormTopologyStatus
from stormscale.planner import parse_profile
from stormscale.storm import Endpoint, NimbusClient, NimbusUnavailableError
from stormscale.storm.samples import PrometheusError, PrometheusUnavailableError, SampleReader, Window
from tests.harness.fakes.ports import FakeEvents, FakeNimbus, FakeProfiler, FakeStatus

from .test_reconcile import conditions, policy, run, world

# --- Prometheus: every answer that is not a good one is one of the reader's two errors -------------


class _Answer(BaseHTTPRequestHandler):
    status = 200
    body: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:
        payload = json.dumps(self.body).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_GET  # noqa: N815 - the name http.server dispatches to

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[type[_Answer]]:
    """A loopback HTTP server that answers every query with ``status`` and ``body``."""
    answer = type("Answer", (_Answer,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    answer.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield answer
    server.shutdown()
    server.server_close()


WINDOW = Window(1_700_000_000, 1_700_000_300, 10)


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_prometheus_overloaded_or_restarting_is_unavailable(prometheus: Any, code: int) -> None:
    prometheus.status, prometheus.body = code, {"status": "error"}
    with pytest.raises(PrometheusUnavailableError, match=f"answered {code}"):
        SampleReader(prometheus.url, retries=0).read("t", WINDOW)


@pytest.mark.parametrize("code", [400, 401, 403, 422])
def test_prometheus_refusing_the_query_is_refused_not_unavailable(prometheus: Any, code: int) -> None:
    prometheus.status, prometheus.body = code, {"status": "error"}
    with pytest.raises(PrometheusError, match=f"answered {code}") as caught:
        SampleReader(prometheus.url, retries=0).read("t", WINDOW)
    assert not isinstance(caught.value, PrometheusUnavailableError)


def test_a_200_without_data_is_a_malformed_answer(prometheus: Any) -> None:
    prometheus.status, prometheus.body = 200, {"status": "success"}
    with pytest.raises(PrometheusUnavailableError, match="malformed answer"):
        SampleReader(prometheus.url, retries=0).read("t", WINDOW)
    with pytest.raises(PrometheusUnavailableError, match="malformed answer"):
        SampleReader(prometheus.url, retries=0).newest("t")


def test_series_without_values_are_a_malformed_answer(prometheus: Any) -> None:
    prometheus.body = {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}}]}}
    with pytest.raises(PrometheusUnavailableError, match="malformed answer"):
        SampleReader(prometheus.url, retries=0).read("t", WINDOW)


def profiler_on(url: str, step_s: float = 10.0) -> PrometheusProfiler:
    return PrometheusProfiler(
        SampleReader(url, retries=0), NimbusGraphs(NimbusClient(Endpoint("127.0.0.1", 1))), step_s
    )


def test_the_profiler_port_maps_prometheus_errors_to_its_two_kinds(prometheus: Any) -> None:
    prometheus.status = 503
    with pytest.raises(UnavailableError):
        profiler_on(prometheus.url).profile("t", 300)
    prometheus.status = 401
    with pytest.raises(RefusedError):
        profiler_on(prometheus.url).profile("t", 300)


def test_a_window_the_reader_refuses_is_refused_by_the_port_and_by_the_spec() -> None:
    with pytest.raises(RefusedError, match="points per series"):
        profiler_on("http://127.0.0.1:1", step_s=1).profile("t", 48 * 3600)
    spec = policy().spec.model_dump(by_alias=True)
    spec["metrics"] |= {"window": "48h", "step": "10s"}  # the CRD's grammar allows both
    with pytest.raises(InvalidSpecError, match=r"spec\.metrics: .*17281 steps.*raise metrics\.step"):
        parse_spec(spec)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (RefusedError("Prometheus answered 401"), "MetricsRefused"),
        (UnavailableError("Prometheus answered 503"), "MetricsUnavailable"),
    ],
)
def test_metrics_errors_are_conditions_with_no_action(error: Exception, reason: str) -> None:
    w = world()
    w.profiler.fail = error
    outcome = run(w, policy())
    assert conditions(outcome)["Degraded"] == ("True", reason)
    assert [j for j in w.journal if j[0] in {"scale", "rebalance"}] == []
    assert outcome.retry_after == RETRY_AFTER[Reason(reason)]
    again = run(w, policy(), outcome.status, minutes=1)
    assert [e[:2] for e in w.events.posted] == [("Warning", reason)]  # once per change of reason
    assert again.retry_after == outcome.retry_after


# --- Nimbus: a garbled answer is a bad response, not a crash ---------------------------------------


@pytest.fixture
def garbling_nimbus() -> Iterator[int]:
    """A server that answers every call with one small frame of garbage."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                garbage = b"\x80\x01\x00\x02" + b"\xff" * 12
                conn.sendall(struct.pack(">i", len(garbage)) + garbage)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    server.close()


def test_a_garbled_thrift_answer_is_a_bad_response(garbling_nimbus: int) -> None:
    client = NimbusClient(Endpoint("127.0.0.1", garbling_nimbus), timeout_s=2)
    with pytest.raises(NimbusUnavailableError, match="getTopologySummaries"):
        client.topologies()
    with pytest.raises(UnavailableError):
        NimbusPort(client).describe("t")


# --- The planner: a strategy that cannot plan this topology -----------------------------------------


def five_spouts() -> Any:
    spouts = [
        {
            "id": f"s{i}",
            "kind": "spout",
            "units": 1,
            "outputPerUnit": 100.0,
            "children": {"b": 1},
            "maxUnits": None,
        }
        for i in range(5)
    ]
    sink = {
        "id": "b",
        "kind": "bolt",
        "units": 1,
        "capacityPerUnit": 50.0,
        "selectivity": 1.0,
        "children": {},
    }
    return parse_profile({"topology": "five", "components": [*spouts, sink]})


def five_spout_world() -> Any:
    w = world(executors={**{f"s{i}": 1 for i in range(5)}, "b": 1})
    w.profiler = FakeProfiler(five_spouts())
    return w


def test_optimal_past_its_limit_is_left_out_of_the_alternatives() -> None:
    w = five_spout_world()  # 5 scalable spouts, budget 8: 9^5 spout combinations for the exact program
    outcome = run(w, policy(budget=8, flowModel="Backpressure", maxUnits=16, strategy="Best"))
    assert conditions(outcome)["Degraded"][0] == "False"
    plan = outcome.status["lastPlan"]
    assert set(plan["alternatives"]) == {"stela", "predictive", "combined", "best"}
    assert (plan["strategy"], plan["chosen"]) == ("best", "combined")
    assert "the exact program did not run" in plan["note"]


def test_optimal_chosen_past_its_limit_is_planning_failed() -> None:
    w = five_spout_world()
    outcome = run(w, policy(budget=8, flowModel="Backpressure", strategy="Optimal"))
    assert conditions(outcome)["Degraded"] == ("True", "PlanningFailed")
    assert "combinations" in next(
        c["message"] for c in outcome.status["conditions"] if c["type"] == "Degraded"
    )
    assert w.journal == []


# --- The handler: retry delays by reason, the last line of the contract ----------------------------


class FakeStore(FakeStatus):
    """The handler's status store: loads the resource, saves like the Kubernetes adapter."""

    resource: dict[str, Any]
    load_error: Exception | None = None

    def load(self, namespace: str, name: str) -> dict[str, Any]:
        if self.load_error:
            raise self.load_error
        self.stored = dict(self.resource.get("status") or {})
        return self.resource

    def save(self, namespace: str, name: str, status: StormTopologyStatus) -> None:
        super().save(namespace, name, status)
        self.resource["status"] = self.stored


BODY = {
    "apiVersion": "stormscale.io/v1alpha1",
    "kind": "StormTopology",
    "metadata": {"name": "linear", "namespace": "streaming", "uid": "u-1", "generation": 1},
}


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``handlers.run_pass`` with fake ports, a fake status store and recorded events."""
    w = world()
    store = FakeStore()
    store.resource = {**BODY, "spec": policy().spec.model_dump(by_alias=True)}
    events = FakeEvents()
    monkeypatch.setattr(handlers, "status_store", lambda: store)
    monkeypatch.setattr(handlers, "PORTS_FACTORY", lambda *_: w.ports)
    monkeypatch.setattr(handlers, "KopfEvents", lambda _: events)
    w.status = store
    return w, store, events


def degraded_reason(store: FakeStatus) -> str:
    status = StormTopologyStatus.from_json(store.stored)
    found = status.condition("Degraded")
    assert found is not None
    return found.reason


def test_a_degraded_pass_retries_after_its_reason_s_delay(handler: Any) -> None:
    w, store, _ = handler
    w.nimbus.fail_describe = UnavailableError("nimbus down")
    with pytest.raises(kopf.TemporaryError) as caught:
        handlers.run_pass(kopf.Body(store.resource))
    assert caught.value.delay == RETRY_AFTER[Reason.NIMBUS_UNAVAILABLE]
    assert degraded_reason(store) == "NimbusUnavailable"  # saved before the retry is asked for


def test_a_degraded_pass_that_only_a_change_can_mend_is_not_retried(handler: Any) -> None:
    w, store, _ = handler
    w.cluster.cpu_limit_millicores = None
    handlers.run_pass(kopf.Body(store.resource))  # no TemporaryError: RETRY_AFTER is None
    assert degraded_reason(store) == "NoCPULimit"


def test_a_pass_in_progress_is_looked_at_again_soon(handler: Any) -> None:
    w, store, _ = handler
    with pytest.raises(kopf.TemporaryError, match="RebalanceRequested") as caught:
        handlers.run_pass(kopf.Body(store.resource))
    assert caught.value.delay is not None
    assert caught.value.delay > 0
    assert [c[0] for c in w.nimbus.calls].count("rebalance") == 1


def test_an_unexpected_error_is_an_internal_error_condition_warned_once(handler: Any) -> None:
    w, store, events = handler
    w.nimbus.fail_describe = KeyError("executors")  # not a port error: a bug or a surprise
    for _ in range(2):
        with pytest.raises(kopf.TemporaryError):
            handlers.run_pass(kopf.Body(store.resource))
    assert degraded_reason(store) == "InternalError"
    assert [e[:2] for e in events.posted] == [("Warning", "InternalError")]


def test_an_invalid_spec_is_degraded_through_the_same_path(handler: Any) -> None:
    _, store, events = handler
    store.resource["spec"]["scaling"]["budget"] = 5000
    handlers.run_pass(kopf.Body(store.resource))
    assert degraded_reason(store) == "InvalidSpec"
    assert [e[:2] for e in events.posted] == [("Warning", "InvalidSpec")]


def test_a_status_of_the_wrong_shape_is_degraded_not_a_traceback(handler: Any) -> None:
    _, store, _ = handler
    store.resource["status"] = {"appliedBudget": "two"}
    with pytest.raises(kopf.TemporaryError, match=r"InvalidStatus: status\.appliedBudget"):
        handlers.run_pass(kopf.Body(store.resource))
    assert degraded_reason(store) == "InvalidStatus"


def test_only_a_404_means_deleted(handler: Any) -> None:
    _, store, events = handler
    store.load_error = GoneError("StormTopology streaming/linear: 404 Not Found")
    handlers.run_pass(kopf.Body(store.resource))  # nothing to do
    assert (store.saved, events.posted) == ([], [])
    store.load_error = RefusedError("StormTopology streaming/linear: 403 Forbidden")
    for _ in range(2):
        with pytest.raises(kopf.TemporaryError, match="403") as caught:
            handlers.run_pass(kopf.Body(store.resource))
    assert caught.value.delay == RETRY_AFTER[Reason.KUBERNETES_REFUSED]
    assert degraded_reason(store) == "KubernetesRefused"  # an error condition, where it can be written
    assert [e[:2] for e in events.posted] == [("Warning", "KubernetesRefused")]


def test_a_403_that_also_refuses_the_status_is_still_retried(handler: Any) -> None:
    _, store, _ = handler
    store.load_error = store.fail = RefusedError("StormTopology streaming/linear: 403 Forbidden")
    with pytest.raises(kopf.TemporaryError, match="403"):
        handlers.run_pass(kopf.Body(store.resource))


def test_fakes_are_what_the_handler_uses(handler: Any) -> None:
    w, store, _ = handler
    assert isinstance(w.nimbus, FakeNimbus)
    assert w.ports.status is store
