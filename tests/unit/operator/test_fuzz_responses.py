"""Bounded fuzzing of what the operator reads from the network: Nimbus's Thrift
answers and Prometheus's HTTP answers, served by real loopback servers to the real clients.

Every example must give a value or the client's documented error (:class:`NimbusError`,
:class:`PrometheusError`) with a one-line message, within a per-example deadline: never another
exception, never a hang. Thrift answers come in two kinds: well-formed replies whose structs hold any
values of their declared types with any fields missing (required ones too: a hostile server sends
what it likes), and wire garbage (such replies with bytes changed, cut or added, and random frames).
Prometheus answers are any JSON in and out of the shape of a query result, and any bytes.

400 examples per test here; ``make fuzz`` runs ``STORMSCALE_FUZZ_EXAMPLES`` (20,000).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from thriftpy2.protocol import binary
from thriftpy2.thrift import TMessageType, TType
from thriftpy2.transport import memory

from stormscale.storm import Endpoint, NimbusClient, NimbusError
from stormscale.storm.idl import NIMBUS
from stormscale.storm.samples import PrometheusError, SampleReader, Window
from stormscale.storm.samples.cpu import Pod
from tests.unit.fuzzing import fuzz_settings, outcome

FUZZ = fuzz_settings(deadline_ms=2000)
CALL_TIMEOUT_S = 1.5
# thriftpy2's untyped in-memory transport and protocol, as ``Any`` for mypy.
MemoryBuffer: Any = memory.TMemoryBuffer
BinaryProtocol: Any = binary.TBinaryProtocol


# --- Nimbus: a Thrift server on loopback answering each call with the current frame -----------------


@pytest.fixture(scope="module")
def nimbus_answer() -> Iterator[tuple[NimbusClient, list[bytes]]]:
    """A client for a loopback server that reads a request and answers with ``answer[0]`` (the whole
    frame, length header included), then closes the connection."""
    answer = [b""]
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                try:
                    conn.recv(65536)
                    conn.sendall(answer[0])
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = NimbusClient(Endpoint("127.0.0.1", listener.getsockname()[1]), timeout_s=CALL_TIMEOUT_S)
    yield client, answer
    stop.set()
    thread.join()
    listener.close()


#: Thrift method → the client call that makes it (the reads the operator and the profiler make).
CALLS: dict[str, Callable[[NimbusClient], object]] = {
    "getClusterInfo": lambda c: c.cluster_summary(),
    "getTopologySummaries": lambda c: c.topologies(),
    "getTopologyInfoByNameWithOpts": lambda c: c.topology_info("t"),
    "getTopologyPageInfo": lambda c: c.topology_page("t-1"),
    "getUserTopology": lambda c: c.structure("t-1"),
    "getTopologyConf": lambda c: c.topology_conf("t-1"),
}
I32 = st.integers(-(2**31), 2**31 - 1)
PRIMITIVES: dict[int, st.SearchStrategy[Any]] = {
    TType.BOOL: st.booleans(),
    TType.BYTE: st.integers(-128, 127),
    TType.I16: st.integers(-(2**15), 2**15 - 1),
    TType.I32: st.one_of(I32, st.sampled_from([0, 1, -1])),
    TType.I64: st.integers(-(2**63), 2**63 - 1),
    TType.DOUBLE: st.floats(allow_nan=True, allow_infinity=True),
    TType.STRING: st.one_of(st.text(max_size=8), st.sampled_from(["default", "__system", "t", ""])),
    TType.BINARY: st.one_of(st.binary(max_size=8), st.just(b"PartialKeyGrouping")),
}


def of_type(spec: Any, depth: int) -> st.SearchStrategy[Any]:
    """Any value of the Thrift type ``spec`` (a ttype, or ``(ttype, arguments)`` for containers and
    structs); containers hold at most 3 items, structs nest at most ``depth`` deep."""
    ttype, args = (spec, None) if isinstance(spec, int) else spec
    args = cast(Any, args)
    if ttype in PRIMITIVES:
        return PRIMITIVES[ttype]
    if ttype == TType.STRUCT:
        return struct_of(args, depth - 1) if depth > 0 else st.builds(args)
    if ttype in (TType.LIST, TType.SET):
        return st.lists(of_type(args, depth), max_size=3 if depth > 0 else 0)
    if ttype == TType.MAP:
        keys, values = args
        return st.dictionaries(of_type(keys, depth), of_type(values, depth), max_size=3 if depth > 0 else 0)
    raise AssertionError(f"unexpected Thrift type {ttype}")


def struct_of(cls: Any, depth: int = 4) -> st.SearchStrategy[Any]:
    """``cls`` with each field missing or holding any value of its type."""
    fields = {}
    for spec in cls.thrift_spec.values():
        ttype, name = spec[0], spec[1]
        declared = ttype if len(spec) == 3 else (ttype, spec[2])
        fields[name] = st.one_of(st.none(), of_type(declared, depth))
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


def reply_frame(method: str, result: Any) -> bytes:
    """The framed binary-protocol reply to ``method`` carrying ``result`` (a ``<method>_result``)."""
    buffer = MemoryBuffer()
    protocol = BinaryProtocol(buffer)
    protocol.write_message_begin(method, TMessageType.REPLY, 0)
    result.write(protocol)
    protocol.write_message_end()
    payload: bytes = buffer.getvalue()
    return struct.pack("!i", len(payload)) + payload


def success_type(method: str) -> Any:
    result = getattr(NIMBUS.Nimbus, f"{method}_result")
    spec = result.thrift_spec[0]
    return result, (spec[0] if len(spec) == 3 else (spec[0], spec[2]))


@st.composite
def replies(draw: st.DrawFn) -> tuple[str, bytes]:
    """A method and a well-formed reply to it with any values, any fields missing."""
    method = draw(st.sampled_from(sorted(CALLS)))
    result, declared = success_type(method)
    return method, reply_frame(method, result(success=draw(st.one_of(st.none(), of_type(declared, 4)))))


@st.composite
def garbage(draw: st.DrawFn) -> tuple[str, bytes]:
    """A method and a broken answer: a reply with bytes changed, cut or added, or random bytes."""
    method, frame = draw(replies())
    kind = draw(st.sampled_from(["flip", "cut", "insert", "random", "length"]))
    body = bytearray(frame[4:])
    if kind == "random":
        return method, draw(st.binary(max_size=64))
    if kind == "length":  # a header that lies about the body's length
        return method, struct.pack("!i", draw(st.integers(-(2**31), len(body) + 64))) + bytes(body)
    if kind == "cut":
        body = body[: draw(st.integers(0, max(0, len(body) - 1)))]
    elif kind == "flip" and body:
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(body) - 1))
            body[at] = draw(st.integers(0, 255))
    else:
        at = draw(st.integers(0, len(body)))
        body[at:at] = draw(st.binary(min_size=1, max_size=8))
    return method, struct.pack("!i", len(body)) + bytes(body)


@FUZZ
@given(replies())
def test_any_well_formed_nimbus_answer_gives_a_value_or_a_nimbus_error(
    nimbus_answer: tuple[NimbusClient, list[bytes]], reply: tuple[str, bytes]
) -> None:
    client, answer = nimbus_answer
    method, answer[0] = reply
    outcome(lambda _: CALLS[method](client), None, NimbusError)


@FUZZ
@given(garbage())
def test_any_broken_nimbus_answer_gives_a_value_or_a_nimbus_error(
    nimbus_answer: tuple[NimbusClient, list[bytes]], reply: tuple[str, bytes]
) -> None:
    client, answer = nimbus_answer
    method, answer[0] = reply
    outcome(lambda _: CALLS[method](client), None, NimbusError)


# --- Prometheus: an HTTP server on loopback answering every query with the current body -------------


class _Answer(BaseHTTPRequestHandler):
    status = 200
    body: ClassVar[bytes] = b""

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_POST = do_GET  # noqa: N815 - the name http.server dispatches to

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture(scope="module")
def prometheus_answer() -> Iterator[tuple[SampleReader, type[_Answer]]]:
    """A reader (no retries) of a loopback server answering every query with ``status`` and ``body``."""
    answer = type("Answer", (_Answer,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield (
        SampleReader(f"http://127.0.0.1:{server.server_address[1]}", timeout_s=CALL_TIMEOUT_S, retries=0),
        answer,
    )
    server.shutdown()
    server.server_close()


SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["1.5", "NaN", "+Inf", "-Inf", "1e400", "x", "", "1700000000", 10**400]),
    st.text(max_size=6),
)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
LABELS = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            k: st.one_of(st.text(max_size=4), JSON)
            for k in ("topology", "component", "executor", "stream", "source", "pod")
        },
    ),
    JSON,
)
POINT = st.one_of(st.tuples(st.one_of(st.floats(), st.integers(), JSON), st.one_of(SCALAR, JSON)), JSON)
SERIES = st.one_of(
    st.fixed_dictionaries({"metric": LABELS, "values": st.one_of(st.lists(POINT, max_size=4), JSON)}),
    st.fixed_dictionaries({"metric": LABELS, "value": st.one_of(POINT, JSON)}),
    JSON,
)
RESULT = st.one_of(st.lists(SERIES, max_size=3), JSON)
BODY = st.one_of(
    RESULT.map(
        lambda r: json.dumps({"status": "success", "data": {"resultType": "matrix", "result": r}}).encode()
    ),
    JSON.map(lambda j: json.dumps(j).encode()),
    st.binary(max_size=64),
)
WINDOW = Window(1_700_000_000, 1_700_000_060, 10)
PODS = (Pod("w-0", "127.0.0.2", "supervisor", 0.5), Pod("w-1", None, "supervisor", None))
READS: dict[str, Callable[[SampleReader], object]] = {
    "read": lambda r: r.read("t", WINDOW),
    "newest": lambda r: r.newest("t"),
    "pod_cpu": lambda r: r.pod_cpu("ns", PODS, WINDOW),
}


@FUZZ
@given(st.sampled_from(sorted(READS)), st.sampled_from([200, 200, 200, 400, 404, 503]), BODY)
def test_any_prometheus_answer_gives_samples_or_a_prometheus_error(
    prometheus_answer: tuple[SampleReader, type[_Answer]], read: str, status: int, body: bytes
) -> None:
    reader, answer = prometheus_answer
    answer.status, answer.body = status, body
    outcome(lambda _: READS[read](reader), None, PrometheusError)


DEEP = [
    pytest.param(b"[" * 500_000, id="an array 500,000 deep"),
    pytest.param(
        b'{"status": "success", "data": {"resultType": "matrix", "result": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}",
        id="a result 100,000 deep",
    ),
    pytest.param(
        b'{"status": "success", "data": {"result": [' + b"7" * 5000 + b"]}}", id="a 5000-digit number"
    ),
]


@pytest.mark.parametrize("body", DEEP)
@pytest.mark.parametrize("read", sorted(READS))
def test_a_deeply_nested_or_oversized_prometheus_answer_is_a_prometheus_error(
    prometheus_answer: tuple[SampleReader, type[_Answer]], read: str, body: bytes
) -> None:
    reader, answer = prometheus_answer
    answer.status, answer.body = 200, body
    with pytest.raises(PrometheusError) as err:
        READS[read](reader)
    assert len(str(err.value).splitlines()) == 1
