"""The exporter's HTTP server: /metrics (Prometheus text) and /healthz, 404 elsewhere; threaded, quiet."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from stormscale.storm.exporter.scraper import Scraper

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


def app(scraper: Scraper) -> WsgiApp:
    """Route /metrics to the metrics, /healthz to the scraper's health line, anything else to a 404.

    Only one path serves metrics: every other path (a crawler's, a probe's) costs no Nimbus call and
    reveals nothing.
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(scraper)
    metrics = make_wsgi_app(registry)

    def route(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [(scraper.health() + "\n").encode()]
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"not found: metrics are on /metrics\n"]
        body: Iterable[bytes] = metrics(environ, start_response)
        return body

    return route


def serve(scraper: Scraper, listen: str, port: int) -> WSGIServer:
    """A server bound to ``listen:port`` (call ``serve_forever``; ``server_port`` when port is 0)."""
    return make_server(listen, port, app(scraper), server_class=_Server, handler_class=_QuietHandler)
