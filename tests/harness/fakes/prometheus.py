"""A fake Prometheus: ``/api/v1/query`` and ``/api/v1/query_range`` over synthetic series of many
topologies.

Each topology's series are the exporter's (``stormscale.storm.exporter.names``), generated once with
:func:`tests.synthetic.samples.steady_series` and laid on the wall clock: sample *k* is scraped at
``origin + k·step``. As in Prometheus, a query evaluated at time *t* sees the newest sample scraped at
or before min(*t*, now), if it is at most :data:`LOOKBACK_S` older than *t*; nothing scraped after
now exists yet.

It understands the queries the operator's sample reader sends (``storm/samples/queries.py``):

* ``max by (l1, l2, …) (series{topology="name"})`` and the same with ``sum``: the topology's series
  of that name grouped by the labels, each group's maximum or sum at every step;
* ``max(timestamp(series{topology="name"}))``: the newest scrape time of the topology's series.

Anything else is a 400 ``bad_data`` (Prometheus's answer to a query it cannot parse), and so is a
range of more than :data:`MAX_POINTS` steps. The worker pods' cAdvisor queries are not served: the
fleet benchmark's Deployments have no pods, so the profiler asks none.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import numpy.typing as npt

from stormscale.storm.samples.queries import QUERIES
from tests.synthetic.samples import SeriesMatrix

LOOKBACK_S = 300.0
MAX_POINTS = 11_000
#: The exporter's series name → the sample schema's metric it carries (the reader's own table).
SCHEMA_METRIC = {q.series: q.metric for q in QUERIES}
_STRING = r'"((?:[^"\\]|\\.)*)"'
_SELECTOR = rf"(\w+)\{{topology={_STRING}\}}"
_AGGREGATE = re.compile(rf"^(max|sum) by \(([\w, ]*)\) \({_SELECTOR}\)$")
_NEWEST = re.compile(rf"^max\(timestamp\({_SELECTOR}\)\)$")


class BadQueryError(ValueError):
    """A query the fake (and, for its shape, Prometheus) refuses: HTTP 400, ``bad_data``."""


@dataclass(frozen=True)
class Aggregate:
    """``<aggregation> by (<by>) (<series>{topology="<topology>"})``."""

    aggregation: str
    by: tuple[str, ...]
    series: str
    topology: str


@dataclass(frozen=True)
class Newest:
    """``max(timestamp(<series>{topology="<topology>"}))``."""

    series: str
    topology: str


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value)


def parse_query(promql: str) -> Aggregate | Newest:
    """The query's parts, or :class:`BadQueryError` for any other query."""
    text = promql.strip()
    if match := _AGGREGATE.match(text):
        aggregation, by, series, topology = match.groups()
        labels = tuple(label.strip() for label in by.split(",") if label.strip())
        return Aggregate(aggregation, labels, series, _unescape(topology))
    if match := _NEWEST.match(text):
        return Newest(match.group(1), _unescape(match.group(2)))
    raise BadQueryError(f"1:1: parse error: the fake Prometheus does not serve {promql!r}")


@dataclass(frozen=True)
class Scraped:
    """One topology's series on the wall clock: sample ``k`` scraped at ``origin_s + k·step_s``."""

    topology: str
    matrix: SeriesMatrix
    origin_s: float

    @property
    def step_s(self) -> float:
        return float(self.matrix.times_s[1] - self.matrix.times_s[0])

    def sample_at(self, t: float, now: float) -> int | None:
        """The sample a query at ``t`` sees:

        k = min(⌊(min(t, now) − origin) / step⌋, K − 1),  seen if k ≥ 0 and t − (origin + k·step) ≤ lookback
        """
        k = min(math.floor((min(t, now) - self.origin_s) / self.step_s + 1e-9), len(self.matrix.times_s) - 1)
        if k < 0 or t - (self.origin_s + k * self.step_s) > LOOKBACK_S:
            return None
        return k

    def rows(self, series: str) -> list[int]:
        """The matrix rows of the exporter series ``series``."""
        metric = SCHEMA_METRIC.get(series)
        return [i for i, m in enumerate(self.matrix.metric) if m == metric]

    def groups(self, query: Aggregate) -> dict[tuple[tuple[str, str], ...], list[int]]:
        """The series' rows grouped by ``query.by`` (each group's labels, empty values left out)."""
        out: dict[tuple[tuple[str, str], ...], list[int]] = {}
        for row in self.rows(query.series):
            labels = {"topology": self.topology, **self.matrix.labels(row)}
            key = tuple((k, labels[k]) for k in query.by if labels.get(k))
            out.setdefault(key, []).append(row)
        return out


def step_times(start: float, end: float, step: float) -> list[float]:
    """A range query's evaluation times: start, start + step, …, up to end (Prometheus's own grid)."""
    if step <= 0 or end < start:
        raise BadQueryError("end timestamp must not be before start time, and step must be positive")
    count = math.floor((end - start) / step + 1e-9) + 1
    if count > MAX_POINTS:
        raise BadQueryError(f"exceeded maximum resolution of {MAX_POINTS:,} points per timeseries")
    return [start + i * step for i in range(count)]


def _number(t: float) -> float | int:
    return int(t) if t == int(t) else t


def range_result(scraped: Scraped | None, query: Aggregate, times: Sequence[float], now: float) -> list[Any]:
    """The matrix result of ``query`` at ``times``: one series per group, points where a sample is seen."""
    if scraped is None:
        return []
    seen = [(t, scraped.sample_at(t, now)) for t in times]
    points = [(t, k) for t, k in seen if k is not None]
    if not points:
        return []
    ks = np.asarray([k for _, k in points])
    out = []
    for labels, rows in sorted(scraped.groups(query).items()):
        block: npt.NDArray[np.float64] = scraped.matrix.values[np.asarray(rows)][:, ks]
        values = block.max(axis=0) if query.aggregation == "max" else block.sum(axis=0)
        out.append(
            {
                "metric": dict(labels),
                "values": [[_number(t), repr(float(v))] for (t, _), v in zip(points, values, strict=True)],
            }
        )
    return out


def newest_result(scraped: Scraped | None, query: Newest, at: float, now: float) -> list[Any]:
    """The instant vector of the newest scrape time of the topology's series (empty: none seen)."""
    if scraped is None or not scraped.rows(query.series):
        return []
    k = scraped.sample_at(at, now)
    if k is None:
        return []
    return [{"metric": {}, "value": [_number(at), repr(scraped.origin_s + k * scraped.step_s)]}]


def seconds(value: str) -> float:
    """A query's time or step parameter: a number of seconds, or a duration such as ``10s``, ``5m``."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", value.strip())
    try:
        return float(match.group(1)) * units[match.group(2)] if match else float(value)
    except ValueError:
        raise BadQueryError(f"cannot parse {value!r} to a valid timestamp or duration") from None


class FakePrometheus:
    """The series of a fleet of topologies behind Prometheus's HTTP API."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._scraped: dict[str, Scraped] = {}
        self._lock = threading.Lock()
        self.queries = 0

    def add(self, topology: str, matrix: SeriesMatrix, origin_s: float) -> None:
        """Serve ``matrix`` as topology ``topology``'s series, sample 0 scraped at ``origin_s``."""
        with self._lock:
            self._scraped[topology] = Scraped(topology, matrix, origin_s)

    def answer(self, path: str, params: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON body for one API call."""
        now = self.clock()
        self.queries += 1
        try:
            query = parse_query(params.get("query", ""))
            with self._lock:
                scraped = self._scraped.get(query.topology)
            if path == "/api/v1/query_range" and isinstance(query, Aggregate):
                times = step_times(seconds(params["start"]), seconds(params["end"]), seconds(params["step"]))
                data = {"resultType": "matrix", "result": range_result(scraped, query, times, now)}
            elif path == "/api/v1/query" and isinstance(query, Newest):
                at = seconds(params["time"]) if "time" in params else now
                data = {"resultType": "vector", "result": newest_result(scraped, query, at, now)}
            else:
                raise BadQueryError(f"the fake Prometheus does not serve this query at {path}")
        except (BadQueryError, KeyError) as err:
            return 400, {"status": "error", "errorType": "bad_data", "error": str(err)}
        return 200, {"status": "success", "data": data}

    @contextmanager
    def serving(self) -> Iterator[str]:
        """Serve on a loopback port until exit; yields the base URL."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the reader's session expects

            def _reply(self, params: Mapping[str, list[str]]) -> None:
                status, body = fake.answer(urlsplit(self.path).path, {k: v[-1] for k, v in params.items()})
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._reply(parse_qs(urlsplit(self.path).query))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._reply(parse_qs(self.rfile.read(length).decode()))

            def log_message(self, *args: object) -> None:  # thousands of queries: keep quiet
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="fake-prometheus", daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
