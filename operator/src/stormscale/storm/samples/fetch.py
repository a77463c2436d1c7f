"""One Prometheus HTTP call with bounds a hostile or broken server cannot stretch.

* **One deadline per call**: connecting, sending, every read of the headers and of the body, and the
  waits between retries all get only the time left until it (a per-read timeout let a server dripping
  a byte a second hold a call for ever);
* **a byte cap**: the body is read streaming and refused once it passes :attr:`Limits.max_bytes`
  (the reader never holds more than the cap plus one chunk);
* **retries** only for the statuses that say "not now", after ``Retry-After`` (or a backoff) when that
  wait ends before the deadline; a longer ``Retry-After`` ends the call at once.

Plain :mod:`http.client` over a socket whose every receive is given the time left: no proxies are
used (Prometheus is reached directly, as from inside the cluster). Credentials (:class:`Auth`: an
``Authorization`` header, a TLS client certificate, a CA bundle) go with every attempt and are never
shown (their ``repr`` hides them).
"""

from __future__ import annotations

import base64
import http.client
import io
import math
import os
import socket
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlencode, urlsplit

#: Answers that mean "not now" rather than "never": overload, rate limits, gateways, restarts.
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
#: Bytes read from the socket at a time.
CHUNK_BYTES = 64 * 1024
#: Seconds of the first backoff between retries (doubled each time) when no ``Retry-After`` is given.
BACKOFF_S = 0.5


class DeadlineExceededError(TimeoutError):
    """The call's deadline passed (connecting, sending, reading or waiting to retry)."""


class AnswerTooLargeError(ValueError):
    """An answer over one of :class:`Limits`' caps; ``cap`` names it (its environment variable)."""

    def __init__(self, message: str, cap: str) -> None:
        super().__init__(message)
        self.cap = cap


@dataclass(frozen=True)
class Answer:
    """A status and a body read whole (within the byte cap)."""

    status: int
    body: bytes | bytearray


@dataclass(frozen=True)
class Auth:
    """Credentials for one server: the ``Authorization`` header's value and a TLS context (with a
    client certificate and/or a CA bundle); both hidden from ``repr``."""

    authorization: str | None = field(default=None, repr=False)
    context: ssl.SSLContext | None = field(default=None, repr=False)

    def headers(self) -> dict[str, str]:
        return {} if self.authorization is None else {"Authorization": self.authorization}


def tls_context(
    ca_pem: bytes | None = None,
    certificate_pem: bytes | None = None,
    key_pem: bytes | None = None,
    ca_file: str | None = None,
) -> ssl.SSLContext:
    """A verifying client context that trusts ``ca_pem`` (else ``ca_file``, else the system's store)
    and presents ``certificate_pem`` with ``key_pem`` when both are given. :mod:`ssl` loads a
    certificate and key from files only: they are written to a private directory (mode 0700) and
    removed once loaded. ``ssl.SSLError`` (a ``ValueError``-like ``OSError``) for PEM it cannot use."""
    cadata = ca_pem.decode("ascii", errors="replace") if ca_pem else None
    context = ssl.create_default_context(cafile=None if cadata else ca_file or None, cadata=cadata)
    if certificate_pem is not None and key_pem is not None:
        with tempfile.TemporaryDirectory(prefix="stormscale-tls-") as private:
            certificate, key = Path(private) / "tls.crt", Path(private) / "tls.key"
            for path, pem in ((certificate, certificate_pem), (key, key_pem)):
                path.touch(mode=0o600)
                path.write_bytes(pem)
            context.load_cert_chain(certificate, key)
    return context


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlineExceededError("the call's deadline passed")
    return left


class _DeadlineReader(io.RawIOBase):
    """A socket's receiving side whose every receive waits at most until ``deadline``."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # io's own signature
        self._sock.settimeout(_left(self._deadline))
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            raise DeadlineExceededError("the call's deadline passed while reading") from None


class _DeadlineSocket:
    """What :class:`http.client.HTTPResponse` needs of a socket, each operation bounded by ``deadline``."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(_left(self._deadline))
        self._sock.sendall(data)

    def close(self) -> None:
        """Nothing: http.client closes "the connection" while the body is still being read (a
        ``Connection: close`` answer); the call closes the socket itself once it is done."""


def deadline_connection(
    url: str, deadline: float, ca_file: str | None, tls: ssl.SSLContext | None = None
) -> tuple[http.client.HTTPConnection, socket.socket]:
    """A connected HTTP(S) connection to ``url``'s host whose socket obeys ``deadline``, and that
    socket (for the caller to close); https uses ``tls``, else a context trusting ``ca_file``."""
    parts = urlsplit(url)
    host, timeout = parts.hostname or "", _left(deadline)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        context = tls or ssl.create_default_context(cafile=ca_file or None)
        conn = http.client.HTTPSConnection(host, parts.port or 443, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(host, parts.port or 80, timeout=timeout)
    try:
        conn.connect()
    except TimeoutError:
        raise DeadlineExceededError("the call's deadline passed while connecting") from None
    sock = conn.sock
    assert sock is not None  # connect() set it
    conn.sock = _DeadlineSocket(sock, deadline)
    return conn, sock


def basic_auth(url: str) -> dict[str, str]:
    """The ``Authorization`` header for userinfo in ``url`` (``user:password@host``), if any."""
    parts = urlsplit(url)
    if parts.username is None:
        return {}
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


def read_capped(response: http.client.HTTPResponse, max_bytes: int, cap: str) -> bytearray:
    """The body, read a chunk at a time; past ``max_bytes`` :class:`AnswerTooLargeError` (a
    ``Content-Length`` over the cap is refused before any of the body is read)."""
    declared = response.getheader("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        message = f"an answer of {int(declared):,} bytes is over the {max_bytes:,}-byte cap"
        raise AnswerTooLargeError(message, cap)
    # One buffer grown in place: past the allocator's mmap threshold its memory is the kernel's again
    # the moment it is dropped (a refused answer's many small chunks stayed in the heap as RSS), and
    # no join doubles it at the end.
    body = bytearray()
    while chunk := response.read1(CHUNK_BYTES):
        if len(body) + len(chunk) > max_bytes:
            raise AnswerTooLargeError(f"an answer of over {max_bytes:,} bytes is over the byte cap", cap)
        body += chunk
    return body


def retry_after_s(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the delay form; a date or garbage: None)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Call:
    """One GET with its bounds: ``deadline_s`` for the whole call, ``retries`` for "not now" answers."""

    url: str
    deadline_s: float
    retries: int
    max_bytes: int
    cap: str
    ca_file: str | None = None
    sleep: Callable[[float], None] = time.sleep
    auth: Auth = Auth()

    def get(self, path: str, params: Mapping[str, str]) -> Answer:
        """The answer to ``GET url/path?params``: the last one when retries run out. Raises
        :class:`DeadlineExceededError`, :class:`AnswerTooLargeError` or :class:`OSError`."""
        deadline = time.monotonic() + self.deadline_s
        target = urlsplit(self.url).path.rstrip("/") + path + "?" + urlencode(params)
        for attempt in range(self.retries + 1):
            answer, wait = self._once(target, deadline)
            if answer.status not in RETRYABLE_STATUS or attempt == self.retries:
                return answer
            delay = wait if wait is not None else BACKOFF_S * 2**attempt
            if delay >= deadline - time.monotonic():
                raise DeadlineExceededError(
                    f"asked to retry after {delay:g}s, past the call's {self.deadline_s:g}s deadline "
                    f"(last status {answer.status})"
                )
            self.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _once(self, target: str, deadline: float) -> tuple[Answer, float | None]:
        conn, sock = deadline_connection(self.url, deadline, self.ca_file, self.auth.context)
        try:
            headers = {
                "Accept": "application/json",
                "Accept-Encoding": "identity",
                **basic_auth(self.url),
                **self.auth.headers(),
            }
            conn.request("GET", target, headers=headers)
            response = conn.getresponse()
            body = read_capped(response, self.max_bytes, self.cap)
            return Answer(response.status, body), retry_after_s(response.getheader("Retry-After"))
        except TimeoutError as err:
            raise DeadlineExceededError(str(err) or "the call's deadline passed") from None
        finally:
            conn.close()
            sock.close()


def env_number(name: str, default: float, minimum: float) -> float:
    """The environment variable ``name`` as a number of at least ``minimum``, else ``default``
    (unset, empty, not a number or below the minimum: a typo must not lift a bound)."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= minimum else default
