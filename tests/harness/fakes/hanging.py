"""A server that accepts every connection and never answers: a peer stuck under load, a black hole.

Nimbus and Prometheus clients alike connect, send their request and wait. What the peer sends is read
and dropped (a hung process's kernel buffers it anyway), and connections the peer closed are closed
too, so a long run does not pile up descriptors.
"""

from __future__ import annotations

import selectors
import socket
import threading
from types import TracebackType

POLL_S = 0.2


class HangingServer:
    """Listens on ``127.0.0.1:port`` (chosen at start); use as a context manager."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="hanging-server", daemon=True)
        self.accepted = 0

    @property
    def port(self) -> int:
        port: int = self._listener.getsockname()[1]
        return port

    def start(self) -> HangingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def __enter__(self) -> HangingServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in selector.select(POLL_S):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if sock is self._listener:
                        conn, _ = sock.accept()
                        self.accepted += 1
                        selector.register(conn, selectors.EVENT_READ)
                    elif not _drain(sock):
                        selector.unregister(sock)
                        sock.close()
            for key in list(selector.get_map().values()):
                if key.fileobj is not self._listener:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]


def _drain(conn: socket.socket) -> bool:
    """Read and drop what the peer sent; False once it has closed the connection."""
    try:
        return bool(conn.recv(65536))
    except OSError:
        return False
