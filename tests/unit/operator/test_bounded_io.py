"""One tenant cannot hurt the operator: every Prometheus and Nimbus answer is bounded in bytes, series,
points, values and time, and no endpoint's userinfo is ever shown.

Hostile servers on real loopback sockets (a huge body, too many series, a drip, a long
``Retry-After``, a Thrift frame of 16 M empty structs): each call ends in its named error within a
loose multiple of its deadline, having read no more than its cap."""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from itertools import count

import kopf
import pytest

from stormscale.operator.adapters.errors import mapped
from stormscale.operator.ports import TooLargeError
from stormscale.operator.status import DEGRADED, Reason, StormTopologyStatus
from stormscale.storm.client import NimbusClient
from stormscale.storm.errors import NimbusUnavailableError, redact
from stormscale.storm.model import Endpoint
from stormscale.storm.samples import Limits, PrometheusError, PrometheusTooLargeError, SampleReader, Window
from stormscale.storm.samples.fetch import CHUNK_BYTES, AnswerTooLargeError, env_number, read_capped
from stormscale.storm.samples.reader import (
    DEFAULT_MAX_SERIES,
    MAX_BYTES_ENV,
    MAX_POINTS_ENV,
    MAX_SERIES_ENV,
    PrometheusUnavailableError,
    series_at_least,
)
from stormscale.storm.wire import (
    DEFAULT_MAX_ELEMENTS,
    MAX_ELEMENTS_ENV,
    TooManyElementsError,
    check_reply_frame,
    max_elements_from_env,
)

from .test_reconcile import conditions, policy, run, world
from .test_timeouts import finishes, server

WINDOW = Window(1_700_000_000, 1_700_000_090, 10)
OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"


def url(port: int, userinfo: str = "") -> str:
    return f"http://{userinfo}127.0.0.1:{port}"


def matrix(series: int, points: int) -> bytes:
    """A range query's answer: ``series`` series of ``points`` points each."""
    result = [
        {
            "metric": {"component": f"c{i}", "executor": f"[{i}-{i}]"},
            "values": [[1_700_000_000 + 10 * p, "1"] for p in range(points)],
        }
        for i in range(series)
    ]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


def answering(body: bytes, status: str = "200 OK", headers: str = "") -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        head = (
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{headers}"
        )
        conn.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)

    return answer


# --- bytes ------------------------------------------------------------------------------------------


def test_an_endless_body_is_cut_at_the_byte_cap() -> None:
    """No Content-Length: the body is read streaming and refused once past the cap, long before the
    256 MiB the server would send (what it got out is the cap plus the sockets' buffers)."""
    sent = [0]

    def endless(conn: socket.socket) -> None:
        conn.sendall(OK_HEAD + b"\r\n")
        chunk = b" " * 65536
        while sent[0] < 256 * 1024 * 1024:
            conn.sendall(chunk)
            sent[0] += len(chunk)

    cap = 1024 * 1024
    with server(endless) as port:
        reader = SampleReader(url(port), timeout_s=5, retries=0, limits=Limits(max_bytes=cap))
        err = finishes(lambda: reader.read("t", WINDOW), bound_s=15)
    assert isinstance(err, PrometheusTooLargeError)
    assert err.cap == MAX_BYTES_ENV
    assert MAX_BYTES_ENV in str(err)
    assert sent[0] < 64 * 1024 * 1024


def test_a_declared_length_over_the_cap_is_refused_before_the_body_is_read() -> None:
    def declared(conn: socket.socket) -> None:
        conn.sendall(OK_HEAD + b"Content-Length: 500000000\r\n\r\n")
        time.sleep(5)

    with server(declared) as port:
        reader = SampleReader(url(port), timeout_s=3, retries=0, limits=Limits(max_bytes=1024))
        err = finishes(lambda: reader.newest("t"), bound_s=2)
    assert isinstance(err, PrometheusTooLargeError)
    assert "500,000,000 bytes" in str(err)


def test_the_reader_never_holds_more_than_the_cap_and_one_chunk() -> None:
    served = [0]

    class Endless:
        def getheader(self, name: str) -> None:
            return None

        def read1(self, size: int) -> bytes:
            served[0] += size
            return b"x" * size

    cap = 10 * CHUNK_BYTES + 7
    with pytest.raises(AnswerTooLargeError) as raised:
        read_capped(Endless(), cap, MAX_BYTES_ENV)  # type: ignore[arg-type]  # duck-typed HTTPResponse
    assert raised.value.cap == MAX_BYTES_ENV
    assert cap < served[0] <= cap + CHUNK_BYTES


def test_an_answer_within_the_byte_cap_is_read_whole() -> None:
    body = matrix(3, 10)
    with server(answering(body)) as port:
        rows = SampleReader(url(port), retries=0, limits=Limits(max_bytes=len(body))).read("t", WINDOW)
    assert rows


# --- series and points ------------------------------------------------------------------------------


@pytest.mark.parametrize(("series", "points", "cap"), [(11, 2, MAX_SERIES_ENV), (1, 11, MAX_POINTS_ENV)])
def test_too_many_series_or_points_are_refused_naming_the_cap(series: int, points: int, cap: str) -> None:
    limits = Limits(max_series=10, max_points=10)
    with server(answering(matrix(series, points))) as port, pytest.raises(PrometheusTooLargeError) as raised:
        SampleReader(url(port), retries=0, limits=limits).read("t", WINDOW)
    assert raised.value.cap == cap
    assert cap in str(raised.value)
    with server(answering(matrix(10, 10))) as port:
        assert SampleReader(url(port), retries=0, limits=limits).read("t", WINDOW)


def test_an_answer_surely_over_the_series_cap_is_refused_unparsed() -> None:
    """Cut after its series, the body is no JSON: only a refusal before parsing names the series cap."""
    limits = Limits(max_series=10)
    truncated = matrix(21, 2)[:-3]
    with server(answering(truncated)) as port, pytest.raises(PrometheusTooLargeError) as raised:
        SampleReader(url(port), retries=0, limits=limits).read("t", WINDOW)
    assert raised.value.cap == MAX_SERIES_ENV
    assert "at least 11 series" in str(raised.value)


def test_a_label_named_metric_does_not_count_as_a_series() -> None:
    """Ten series, each with a label named ``metric``: twenty keys, within a ten-series cap."""
    labels = [{"metric": f"m{i}", "component": f"c{i}", "executor": f"[{i}-{i}]"} for i in range(10)]
    result = [{"metric": metric, "values": [[1, "1"]]} for metric in labels]
    body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()
    assert series_at_least(body) == 10
    assert series_at_least(matrix(21, 2)) == 11
    with server(answering(body)) as port:
        assert SampleReader(url(port), retries=0, limits=Limits(max_series=10)).read("t", WINDOW)


def test_an_answer_over_a_cap_is_degraded_metrics_too_large_naming_it() -> None:
    with server(answering(matrix(DEFAULT_MAX_SERIES + 1, 1))) as port:
        reader = SampleReader(url(port), retries=0)
        with pytest.raises(TooLargeError) as raised:
            mapped(lambda: reader.read("t", WINDOW))
    assert MAX_SERIES_ENV in str(raised.value)
    w = world()
    w.profiler.fail = raised.value
    outcome = run(w, policy())
    assert conditions(outcome)["Degraded"] == ("True", Reason.METRICS_TOO_LARGE.value)
    (message,) = [c["message"] for c in outcome.status["conditions"] if c["type"] == DEGRADED]
    assert MAX_SERIES_ENV in message


# --- time -------------------------------------------------------------------------------------------


def drip(head: bytes, body: bytes, every_s: float = 0.25) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        for byte in head + body:
            conn.sendall(bytes([byte]))
            time.sleep(every_s)

    return answer


@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_dripping_prometheus_is_cut_at_the_call_s_deadline(where: str) -> None:
    """62 bytes at 4 a second: no single read waits the deadline, the whole call does."""
    body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'[:62]
    head = OK_HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode()
    answer = drip(head, body) if where == "headers" else _after(head, drip(b"", body))
    with server(answer) as port:
        reader = SampleReader(url(port), timeout_s=1, retries=0)
        started = time.monotonic()
        err = finishes(lambda: reader.newest("t"), bound_s=3)
    assert isinstance(err, PrometheusUnavailableError)
    assert "within 1s" in str(err)
    assert time.monotonic() - started >= 0.9  # it was the deadline, not an error, that ended it


def _after(head: bytes, then: Callable[[socket.socket], None]) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        conn.sendall(head)
        then(conn)

    return answer


def test_a_retry_after_past_the_deadline_ends_the_call_at_once() -> None:
    """``Retry-After: 15`` with a 2 s deadline: not two 15 s waits, but one answer and an error."""
    calls = count()

    def busy(conn: socket.socket) -> None:
        next(calls)
        answering(b"{}", "503 Service Unavailable", "Retry-After: 15\r\n")(conn)

    with server(busy) as port:
        reader = SampleReader(url(port), timeout_s=2, retries=2)
        err = finishes(lambda: reader.newest("t"), bound_s=6)
    assert isinstance(err, PrometheusUnavailableError)
    assert "retry after 15s" in str(err)
    assert next(calls) == 1


def test_a_retry_after_within_the_deadline_is_waited_and_asked_again() -> None:
    calls = count()
    empty = b'{"status":"success","data":{"resultType":"vector","result":[]}}'

    def busy_once(conn: socket.socket) -> None:
        if next(calls) == 0:
            answering(b"{}", "429 Too Many Requests", "Retry-After: 0.2\r\n")(conn)
        else:
            answering(empty)(conn)

    with server(busy_once) as port:
        assert SampleReader(url(port), timeout_s=5, retries=2).newest("t") is None
    assert next(calls) == 2


# --- Nimbus -----------------------------------------------------------------------------------------


def empty_structs_reply(n: int) -> bytes:
    """A ``getTopologySummaries`` reply whose result is a list of ``n`` empty structs (one byte each)."""
    name = b"getTopologySummaries"
    head = struct.pack("!I", 0x80010002) + struct.pack("!i", len(name)) + name + struct.pack("!i", 0)
    return head + b"\x0f\x00\x00" + b"\x0c" + struct.pack("!i", n) + b"\x00" * n + b"\x00"


def test_the_element_cap_decides_whether_a_frame_is_decoded() -> None:
    frame = empty_structs_reply(1000)
    check_reply_frame(frame, max_elements=2000)
    with pytest.raises(TooManyElementsError, match=MAX_ELEMENTS_ENV):
        check_reply_frame(frame, max_elements=500)


def test_a_frame_of_16_million_empty_structs_fails_fast_with_the_named_error() -> None:
    frame = empty_structs_reply(16_000_000)
    started = time.monotonic()
    with pytest.raises(TooManyElementsError):
        check_reply_frame(frame)
    assert time.monotonic() - started < 10.0


def test_the_call_s_deadline_is_checked_while_a_frame_is_walked() -> None:
    frame = empty_structs_reply(16_000_000)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        check_reply_frame(frame, max_elements=10**9, deadline=started + 0.3)
    assert time.monotonic() - started < 3 * 0.3 + 1.0


@pytest.fixture
def hostile_nimbus() -> Iterator[int]:
    frame = empty_structs_reply(16_000_000)

    def answer(conn: socket.socket) -> None:
        conn.sendall(struct.pack("!i", len(frame)) + frame)

    with server(answer) as port:
        yield port


def test_a_16_mb_answer_of_empty_structs_fails_well_within_the_nimbus_deadline(hostile_nimbus: int) -> None:
    client = NimbusClient(Endpoint("127.0.0.1", hostile_nimbus), timeout_s=10)
    started = time.monotonic()
    err = finishes(client.topologies, bound_s=10)
    assert isinstance(err, NimbusUnavailableError)
    assert MAX_ELEMENTS_ENV in str(err)
    assert time.monotonic() - started < 10


# --- userinfo ---------------------------------------------------------------------------------------

SECRET = "s3cret"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://admin:s3cret@prom:9090/api", "http://***@prom:9090/api"),
        ("Prometheus https://admin:s3cret@prom: timed out", "Prometheus https://***@prom: timed out"),
        ("admin:s3cret@nimbus:6627", "***@nimbus:6627"),
        ("Could not connect to ('admin:s3cret@nimbus', 6627)", "Could not connect to ('***@nimbus', 6627)"),
        ("http://prom:9090/api?query=a", "http://prom:9090/api?query=a"),
    ],
)
def test_redact_hides_userinfo_and_nothing_else(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_prometheus_userinfo_is_sent_as_basic_auth_and_never_shown() -> None:
    with server(answering(b"{}", "401 Unauthorized")) as port, pytest.raises(PrometheusError) as refused:
        SampleReader(url(port, f"admin:{SECRET}@"), retries=0).newest("t")
    dripping = server(drip(b"HTTP/1.1 200 OK\r\n", b""))
    with dripping as port, pytest.raises(PrometheusUnavailableError) as timed_out:
        SampleReader(url(port, f"admin:{SECRET}@"), timeout_s=0.5, retries=0).newest("t")
    for err in (refused.value, timed_out.value):
        assert SECRET not in str(err)
        assert "***@127.0.0.1" in str(err)


def test_the_basic_auth_header_carries_the_userinfo() -> None:
    from stormscale.storm.samples.fetch import basic_auth

    assert basic_auth("http://admin:s3cret@prom") == {"Authorization": "Basic YWRtaW46czNjcmV0"}
    assert basic_auth("http://prom") == {}


def test_nimbus_userinfo_is_never_shown() -> None:
    endpoint = Endpoint.parse(f"admin:{SECRET}@127.0.0.1:1")
    assert SECRET not in str(endpoint)
    assert SECRET not in repr(endpoint)
    with pytest.raises(NimbusUnavailableError) as raised:
        NimbusClient(endpoint, timeout_s=1).topologies()
    assert SECRET not in str(raised.value)


def test_conditions_never_carry_userinfo() -> None:
    status = StormTopologyStatus()
    status.set_condition(
        DEGRADED,
        status=True,
        reason=Reason.METRICS_REFUSED,
        message=f"Prometheus http://admin:{SECRET}@prom answered 401",
        now=datetime(2026, 1, 1, tzinfo=UTC),
        generation=1,
    )
    degraded = status.condition(DEGRADED)
    assert degraded is not None
    assert degraded.message == "Prometheus http://***@prom answered 401"


def test_events_and_their_log_lines_never_carry_userinfo(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from stormscale.operator import handlers

    posted: list[str] = []
    monkeypatch.setattr(kopf, "event", lambda *a, **kw: posted.append(kw["message"]))
    body = type("Body", (), {"metadata": type("Meta", (), {"namespace": "ns", "name": "t"})()})()
    with caplog.at_level("INFO", logger="stormscale.operator"):
        handlers.KopfEvents(body).warning(
            "MetricsRefused", f"Prometheus http://admin:{SECRET}@prom answered 401"
        )
    assert posted == ["Prometheus http://***@prom answered 401"]
    assert SECRET not in caplog.text


# --- sizing and settings ----------------------------------------------------------------------------


def test_the_caps_are_set_from_the_environment_and_typos_keep_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MAX_BYTES_ENV, "2048")
    monkeypatch.setenv(MAX_SERIES_ENV, "lots")
    monkeypatch.setenv(MAX_POINTS_ENV, "0")
    assert Limits.from_env() == Limits(max_bytes=2048)
    monkeypatch.setenv(MAX_ELEMENTS_ENV, "1000")
    assert max_elements_from_env() == 1000
    monkeypatch.setenv(MAX_ELEMENTS_ENV, "-5")
    assert max_elements_from_env() == DEFAULT_MAX_ELEMENTS
    assert env_number("STORMSCALE_UNSET_FOR_TEST", 3.0, 1) == 3.0
    monkeypatch.setenv("STORMSCALE_UNSET_FOR_TEST", "inf")
    assert env_number("STORMSCALE_UNSET_FOR_TEST", 3.0, 1) == 3.0


def test_the_largest_sized_topology_fits_the_default_caps() -> None:
    """8,000 series (4,000 executors × 2 streams) of 361 points (1 h at 10 s) pass the series and
    point caps; of 121 points (20 min at 10 s), labels included, the byte cap (a longer window on a
    topology that large raises it: docs/operator/reference.md)."""
    from stormscale.storm.samples.reader import (
        SIZED_BYTE_CAP_POINTS,
        SIZED_EXECUTORS,
        SIZED_POINTS,
        SIZED_SERIES_PER_EXECUTOR,
    )

    limits = Limits()
    series = SIZED_EXECUTORS * SIZED_SERIES_PER_EXECUTOR
    assert series <= limits.max_series
    assert limits.max_points >= SIZED_POINTS
    point = len(b'[1700000000.000,"123456.789"],')
    labels = len(
        b'{"metric":{"__name__":"storm_component_executed_total","component":"split-sentence-bolt",'
        b'"executor":"[3999-3999]","host":"10.244.12.201","instance":"10.244.12.201:9102",'
        b'"job":"storm-workers","port":"6700","stream":"default","topology":"word-count"},"values":[]},'
    )
    assert series * (SIZED_BYTE_CAP_POINTS * point + labels) < limits.max_bytes
    assert series * (SIZED_POINTS * point + labels) > limits.max_bytes  # 1 h of it does not fit


def test_a_url_the_client_cannot_use_is_refused_not_a_crash() -> None:
    with pytest.raises(PrometheusError, match="unusable URL") as raised:
        SampleReader(f"http://admin:{SECRET}@prom:notaport", retries=0).newest("t")
    assert SECRET not in str(raised.value)
