"""Endpoints of a hostile tenant: a Nimbus or a Prometheus that answers, but badly.

Each behaviour is an *answer*: what the server does on one connection once it has read the
request's first bytes (for HTTP, the request line tells the instant query from the range query). The
server (:class:`HostileServer`) runs each connection in its own thread on loopback, as the unit tests'
servers do (tests/unit/operator/test_bounded_io.py), for as long as a benchmark phase needs it:

* :func:`empty_structs` — Nimbus: a Thrift reply of ``n`` empty structs in one frame (16 MB);
* :func:`endless_body` — Prometheus: a 200 whose body (no length, ``Connection: close``) runs on for
  ``total`` bytes (500 MB) while the reader reads;
* :func:`many_series` — Prometheus: a well-formed answer of ``n`` series (100,000);
* :func:`drip` — Prometheus: the head at once, then the body one byte every ``every_s`` (1 s);
* :func:`retry_after` — Prometheus: 503 with ``Retry-After: <value>`` (15, or a number too large to wait);
* :func:`nested` — Prometheus: a 200 whose ``data.result`` is ``depth`` arrays deep (100,000).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from types import TracebackType

Answer = Callable[[socket.socket, bytes], None]
"""What the server does on one connection, given the first bytes the client sent."""

ACCEPT_POLL_S = 0.1
CHUNK_BYTES = 1 << 20
OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"


class HostileServer:
    """Listens on ``127.0.0.1:port`` (chosen at start) and gives each connection ``answer`` in its own
    thread; use as a context manager. ``connections`` counts what it accepted."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self._listener.settimeout(ACCEPT_POLL_S)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="hostile-server", daemon=True)
        self.connections = 0

    @property
    def port(self) -> int:
        port: int = self._listener.getsockname()[1]
        return port

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), name="hostile-connection", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(None)
                request = conn.recv(65536)
                self._answer(conn, request)
            except OSError:
                pass  # the client gave up (its deadline, its cap): what a hostile server hopes for


def is_range_query(request: bytes) -> bool:
    """Whether an HTTP request's line asks ``/api/v1/query_range`` (else: an instant query)."""
    return b"/api/v1/query_range" in request.split(b"\r\n", 1)[0]


def http_answer(body: bytes, status: str = "200 OK", headers: str = "") -> bytes:
    """A whole HTTP/1.1 answer with ``body`` and its ``Content-Length``."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{headers}"
    return head.encode() + b"Connection: close\r\n\r\n" + body


# --- Nimbus -----------------------------------------------------------------------------------------


def empty_structs_reply(n: int, method: str = "getClusterInfo") -> bytes:
    """A Thrift reply (binary protocol, strict) to ``method`` whose result is a list of ``n`` empty
    structs: one ``STOP`` byte each on the wire, an object each once decoded."""
    name = method.encode()
    head = struct.pack("!I", 0x80010002) + struct.pack("!i", len(name)) + name + struct.pack("!i", 0)
    return head + b"\x0f\x00\x00" + b"\x0c" + struct.pack("!i", n) + b"\x00" * n + b"\x00"


def empty_structs(n: int = 16_000_000) -> Answer:
    """Nimbus: every call answered with one frame of ``n`` empty structs (16 MB for 16 M)."""
    frame = empty_structs_reply(n)
    framed = struct.pack("!i", len(frame)) + frame

    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(framed)

    return answer


# --- Prometheus -------------------------------------------------------------------------------------


def endless_body(total: int = 500 * 1024 * 1024) -> Answer:
    """A 200 without a length whose body is ``total`` bytes of series (ended by closing), sent in 1 MiB
    chunks for as long as the client reads."""
    start = b'{"status":"success","data":{"resultType":"matrix","result":['
    one = b'{"metric":{"component":"c","executor":"[1-1]"},"values":[[1700000000,"1"]]},'
    chunk = one * (CHUNK_BYTES // len(one))

    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(OK_HEAD + b"\r\n" + start)
        sent = len(start)
        while sent < total:
            piece = chunk[: total - sent]
            conn.sendall(piece)
            sent += len(piece)

    return answer


def series_answer(n: int, matrix: bool) -> bytes:
    """A well-formed success answer of ``n`` series (a matrix of one point each, or a vector)."""
    result: list[dict[str, object]] = []
    for i in range(n):
        metric = {"component": f"c{i}", "executor": f"[{i}-{i}]"}
        result.append(
            {"metric": metric, "values": [[1_700_000_000, "1"]]}
            if matrix
            else {"metric": metric, "value": [1_700_000_000, "1700000000"]}
        )
    kind = "matrix" if matrix else "vector"
    return json.dumps({"status": "success", "data": {"resultType": kind, "result": result}}).encode()


def many_series(n: int = 100_000) -> Answer:
    """Every query answered with ``n`` series (instant: a vector; range: a matrix), all well-formed."""
    vector, matrix = http_answer(series_answer(n, False)), http_answer(series_answer(n, True))

    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(matrix if is_range_query(request) else vector)

    return answer


def drip(every_s: float = 1.0, length: int = 100_000) -> Answer:
    """A 200 head with ``Content-Length: length`` at once, then the body one byte every ``every_s``."""
    head = OK_HEAD + f"Content-Length: {length}\r\n\r\n".encode()
    body = b" " * length

    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(head)
        for i in range(length):
            conn.sendall(body[i : i + 1])
            time.sleep(every_s)

    return answer


def retry_after(value: str) -> Answer:
    """503 Service Unavailable with ``Retry-After: value`` (seconds, as Prometheus's proxies send it)."""
    whole = http_answer(b"{}", "503 Service Unavailable", f"Retry-After: {value}\r\n")

    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(whole)

    return answer


def nested_answer(depth: int) -> bytes:
    """A success answer whose ``data.result`` is ``depth`` arrays deep."""
    start = b'{"status": "success", "data": {"resultType": "matrix", "result": '
    return start + b"[" * depth + b"]" * depth + b"}}"


def nested(depth: int = 100_000) -> Answer:
    """Every query answered with a result ``depth`` arrays deep."""
    whole = http_answer(nested_answer(depth))

    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(whole)

    return answer
