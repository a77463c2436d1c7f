"""The sample reader: Prometheus range queries over the exporter's series → tidy samples
(:mod:`stormscale.samples`, docs/formats/samples.md).

Errors are this package's own two kinds: :class:`PrometheusUnavailableError` (down, past the call's
deadline, a 5xx or 429, a malformed answer: try again later) and :class:`PrometheusError` (Prometheus
refused the query: retrying will not help), of which :class:`PrometheusTooLargeError` is an answer over
one of :class:`Limits`' caps. Callers map them to their own. Every call is bounded in time and bytes
(:mod:`~stormscale.storm.samples.fetch`), every answer in series and points.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any, TypeVar

from stormscale.samples import KEY, Sample
from stormscale.storm.errors import one_line, redact
from stormscale.storm.exporter import names as n
from stormscale.storm.samples.cpu import Pod, PodCpu
from stormscale.storm.samples.demand import (
    Demand,
    DemandRows,
    KafkaDemand,
    offered_rows,
    running_integral,
    slope_per_s,
    summed_points,
)
from stormscale.storm.samples.fetch import (
    RETRYABLE_STATUS,
    AnswerTooLargeError,
    Auth,
    Call,
    DeadlineExceededError,
    env_number,
)
from stormscale.storm.samples.queries import QUERIES, SeriesQuery, cpu_limit_query, cpu_usage_query, escape

T = TypeVar("T")

MAX_POINTS = 11_000  # Prometheus refuses range queries with more points per series
#: What parsing an answer raises when a 200 is not Prometheus's JSON (a field missing or of another
#: shape, labels that are not an object, a timestamp of 1e400 or NaN, ``[`` nested 500,000 deep, a
#: body too large to hold).
MALFORMED = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
    ArithmeticError,
    RecursionError,
    MemoryError,
)


class PrometheusError(RuntimeError):
    """Prometheus refused the query (a 4xx such as 400 bad query, 401, 403): retrying will not help.
    Userinfo of the URL in the message is redacted (:func:`~stormscale.storm.errors.redact`)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class PrometheusUnavailableError(PrometheusError):
    """Prometheus cannot answer now (connection, timeout, 5xx, 429, a malformed answer): retry later."""


@dataclass(frozen=True)
class Window:
    """A range query's whole-second start and end (Unix seconds) and step (seconds); a window that
    Prometheus would refuse raises :class:`PrometheusError` here, before any query is sent."""

    start: int
    end: int
    step_s: int

    def __post_init__(self) -> None:
        if self.step_s < 1 or self.end < self.start:
            raise PrometheusError(f"bad window {self}: need step >= 1 s and end >= start")
        if (self.end - self.start) // self.step_s + 1 > MAX_POINTS:
            raise PrometheusError(
                f"window {self} has more than {MAX_POINTS} points per series; raise the step"
            )


def samples_from_result(query: SeriesQuery, result: Iterable[Mapping[str, Any]]) -> list[Sample]:
    """Prometheus's matrix result for ``query`` as schema rows (absent labels become "")."""
    rows = []
    for series in result:
        labels = series["metric"]
        for ts, value in series["values"]:
            rows.append(
                Sample(
                    ts_ms=round(float(ts) * 1000),
                    topology=labels.get("topology", ""),
                    component=labels.get("component", ""),
                    executor=labels.get("executor", ""),
                    metric=query.metric,
                    stream=labels.get("stream", ""),
                    source=labels.get("source", ""),
                    value=float(value),
                )
            )
    return rows


def pod_series(result: Iterable[Mapping[str, Any]]) -> dict[str, dict[int, float]]:
    """A matrix result by its ``pod`` label: Unix milliseconds → value (NaN points left out)."""
    out: dict[str, dict[int, float]] = {}
    for series in result:
        points = out.setdefault(series["metric"]["pod"], {})
        for ts, value in series["values"]:
            if float(value) == float(value):
                points[round(float(ts) * 1000)] = float(value)
    return out


def check_unique(rows: Sequence[Sample]) -> None:
    """Raise ValueError naming a duplicated key, if any."""
    seen: set[tuple[object, ...]] = set()
    for row in rows:
        if row.key in seen:
            raise ValueError(f"duplicate sample {dict(zip(KEY, row.key, strict=True))}")
        seen.add(row.key)


#: Environment variable: a PEM CA bundle for https Prometheus URLs (operator-wide, never from the spec).
CA_FILE_ENV = "STORMSCALE_PROMETHEUS_CA_FILE"

#: The largest topology the defaults below are sized for: 500 components, 4,000 executors, each
#: executor's series split over up to 2 streams or sources, read over a 1 h window at a 10 s step
#: (361 points per series); the byte cap holds its answers over windows up to 20 min at that step.
SIZED_EXECUTORS, SIZED_SERIES_PER_EXECUTOR, SIZED_POINTS = 4_000, 2, 361
SIZED_BYTE_CAP_POINTS = 121

TIMEOUT_ENV = "STORMSCALE_PROMETHEUS_TIMEOUT_SECONDS"
DEFAULT_TIMEOUT_S = 30.0
"""The deadline of one whole Prometheus call (connect, send, every read, the waits between retries):
a query of the sized topology answers in well under a second; 30 s leaves room for a busy Prometheus.
Environment: :data:`TIMEOUT_ENV`."""

MAX_BYTES_ENV = "STORMSCALE_PROMETHEUS_MAX_BYTES"
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
"""The largest answer body read. The sized topology's biggest query is ``SIZED_EXECUTORS ×
SIZED_SERIES_PER_EXECUTOR`` = 8,000 series, each of its labels (about 250 bytes) and one point per
step of at most about 28 bytes (``[1700000000,"123456.789"],``): at the default 5 m window and 10 s step
(31 points) about 9 MB; 32 MiB holds windows up to about 20 min at that step (121 points, 29 MB). A
longer window on a topology that large raises it (the sized 1 h window weighs about 83 MB) and the
operator's memory limit with it: a body is parsed into about three times its size (a 500 MB body reached
1.58 GB RSS), and a refused one is held up to the cap first (96 MiB raised the operator's peak from
289 to 373 MiB). Environment: :data:`MAX_BYTES_ENV`."""

MAX_SERIES_ENV = "STORMSCALE_PROMETHEUS_MAX_SERIES"
DEFAULT_MAX_SERIES = 10_000
"""The most series one answer may hold: the sized topology's ``SIZED_EXECUTORS ×
SIZED_SERIES_PER_EXECUTOR`` = 8,000 with a quarter's room (100,000 series took 1.27 GB and 69 s).
Environment: :data:`MAX_SERIES_ENV`."""

MAX_POINTS_ENV = "STORMSCALE_PROMETHEUS_MAX_POINTS"
DEFAULT_MAX_POINTS = MAX_POINTS
"""The most points one series may hold: Prometheus's own limit for a range query (:data:`MAX_POINTS`),
so more means the answer is not Prometheus's. Environment: :data:`MAX_POINTS_ENV`."""


class PrometheusTooLargeError(PrometheusError):
    """An answer over one of the reader's caps (:class:`Limits`); ``cap`` names its environment
    variable. Not retried within the pass: the same query would give the same answer."""

    def __init__(self, message: str, cap: str) -> None:
        super().__init__(message)
        self.cap = cap


@dataclass(frozen=True)
class Limits:
    """What one Prometheus answer may cost: bytes, series, points per series."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_series: int = DEFAULT_MAX_SERIES
    max_points: int = DEFAULT_MAX_POINTS

    @classmethod
    def from_env(cls) -> Limits:
        """The defaults, each replaced by its environment variable where that is a number >= 1."""
        return cls(
            int(env_number(MAX_BYTES_ENV, DEFAULT_MAX_BYTES, 1)),
            int(env_number(MAX_SERIES_ENV, DEFAULT_MAX_SERIES, 1)),
            int(env_number(MAX_POINTS_ENV, DEFAULT_MAX_POINTS, 1)),
        )


def parse(body: bytes | bytearray) -> Any:
    """An answer's ``data.result`` (a shape that is not Prometheus's raises one of :data:`MALFORMED`)."""
    return json.loads(body)["data"]["result"]


#: The key every series of a Prometheus answer has once; a label may have the same name, no more.
SERIES_KEY = b'"metric":'


def series_at_least(body: bytes | bytearray) -> int:
    """How many series ``body`` holds at least, counted without parsing it (parsing holds about three
    times an answer's size as objects: 100,000 series cost the operator 80 MiB before the series cap
    refused them).

    Every series has one ``"metric"`` key, and at most one of its labels has that name; a JSON
    string cannot hold an unescaped quote, so the bytes ``"metric":`` occur only as keys:
    ``series ≥ ⌈count / 2⌉``. A body that spaces its keys differently counts fewer, never more, and
    is still checked exactly once parsed (:func:`check_result`)."""
    return -(-body.count(SERIES_KEY) // 2)


def check_unparsed(body: bytes | bytearray, limits: Limits) -> None:
    """:class:`PrometheusTooLargeError` before parsing where ``body`` surely holds more series than the
    cap (:func:`series_at_least`)."""
    least = series_at_least(body)
    if least > limits.max_series:
        raise PrometheusTooLargeError(
            f"at least {least:,} series, over the {limits.max_series:,}-series cap ({MAX_SERIES_ENV})",
            MAX_SERIES_ENV,
        )


def check_result(result: Any, limits: Limits) -> list[Mapping[str, Any]]:
    """``result`` (an answer's ``data.result``) if it is a list within ``limits``' series and points
    per series; :class:`PrometheusTooLargeError` naming the cap otherwise (a shape that is not
    Prometheus's raises one of :data:`MALFORMED`)."""
    if not isinstance(result, list):
        raise TypeError(f"result is a {type(result).__name__}, not a list")
    if len(result) > limits.max_series:
        raise PrometheusTooLargeError(
            f"{len(result):,} series, over the {limits.max_series:,}-series cap ({MAX_SERIES_ENV})",
            MAX_SERIES_ENV,
        )
    for series in result:
        values = series.get("values", ())
        if len(values) > limits.max_points:
            raise PrometheusTooLargeError(
                f"a series of {len(values):,} points, over the {limits.max_points:,}-point cap "
                f"({MAX_POINTS_ENV})",
                MAX_POINTS_ENV,
            )
    return result


class SampleReader:
    """Reads every schema metric of one topology from Prometheus."""

    def __init__(
        self,
        url: str,
        timeout_s: float | None = None,
        retries: int = 2,
        ca_file: str | None = None,
        limits: Limits | None = None,
        *,
        auth: Auth | None = None,
    ) -> None:
        """``timeout_s`` (else :data:`TIMEOUT_ENV`, else :data:`DEFAULT_TIMEOUT_S`) is the deadline of
        each whole call, retries included. ``retries``: how often an answer in :data:`RETRYABLE_STATUS`
        is asked again (after its ``Retry-After`` or a backoff, only while that wait ends before the
        deadline) before the reader gives up with :class:`PrometheusUnavailableError`. A connection
        that fails or times out is not asked again: the caller's next pass asks (three attempts held
        the operator's pass, and its thread of Kopf's pool, 91 s on a Prometheus that never answered).
        ``limits`` (else :meth:`Limits.from_env`) caps each answer.

        TLS certificates are verified (the URL comes from a StormTopology's spec: an unverified https
        Prometheus could be anyone). ``ca_file``, else :data:`CA_FILE_ENV`, names a PEM bundle to trust
        instead of the system's store. Userinfo in ``url`` is sent as basic auth and never shown
        (:func:`~stormscale.storm.errors.redact`). ``auth``: an ``Authorization`` header and a TLS
        context (client certificate, CA; it replaces ``ca_file``) sent with every call.
        """
        self.url = url
        self.where = redact(url)
        self.limits = limits if limits is not None else Limits.from_env()
        deadline_s = timeout_s if timeout_s is not None else env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT_S, 0.1)
        ca = ca_file if ca_file is not None else os.environ.get(CA_FILE_ENV)
        self.call = Call(
            url, deadline_s, retries, self.limits.max_bytes, MAX_BYTES_ENV, ca or None, auth=auth or Auth()
        )

    def _call(self, promql: str, call: Callable[[], T]) -> T:
        """Run one step of a query; a malformed answer becomes :class:`PrometheusUnavailableError`."""
        try:
            return call()
        except MALFORMED as err:  # a 200 that is not Prometheus's JSON
            message = f"Prometheus {self.where}: malformed answer to {promql!r} ({type(err).__name__}: {err})"
            raise PrometheusUnavailableError(one_line(redact(message))) from None

    def _get(self, path: str, params: Mapping[str, str]) -> Any:
        """``data.result`` of the answer to ``path``; every failure becomes one of this module's errors,
        with one line (the URL's userinfo redacted)."""
        promql = params["query"]
        try:
            answer = self.call.get(path, params)
        except DeadlineExceededError as err:
            within = f"within {self.call.deadline_s:g}s"
            message = f"Prometheus {self.where}: no answer to {promql!r} {within}: {err}"
            raise PrometheusUnavailableError(one_line(redact(message))) from None
        except AnswerTooLargeError as err:
            message = f"Prometheus {self.where}: answer to {promql!r} refused: {err} ({err.cap})"
            raise PrometheusTooLargeError(one_line(redact(message)), err.cap) from None
        except (OSError, HTTPException) as err:
            message = f"Prometheus {self.where}: {type(err).__name__}: {err}"
            raise PrometheusUnavailableError(one_line(redact(message))) from None
        except ValueError as err:  # a URL http.client cannot use (a port that is not a number, …)
            message = f"Prometheus {self.where}: unusable URL: {type(err).__name__}: {err}"
            raise PrometheusError(one_line(redact(message))) from None
        if answer.status != 200:
            kind = PrometheusUnavailableError if answer.status in RETRYABLE_STATUS else PrometheusError
            raise kind(f"Prometheus {self.where} answered {answer.status} to {promql!r}")
        try:
            check_unparsed(answer.body, self.limits)
        except PrometheusTooLargeError as err:
            message = f"Prometheus {self.where}: answer to {promql!r} refused: {err}"
            raise PrometheusTooLargeError(one_line(redact(message)), err.cap) from None
        return self._call(promql, lambda: check_result(parse(answer.body), self.limits))

    def _range(self, promql: str, window: Window) -> list[Mapping[str, Any]]:
        bounds = {"start": str(window.start), "end": str(window.end), "step": str(window.step_s)}
        params = {"query": promql, **bounds}
        result: list[Mapping[str, Any]] = self._get("/api/v1/query_range", params)
        return result

    def newest(self, topology: str) -> float | None:
        """Unix time of the newest scraped executed-count sample of ``topology`` (None: none in
        Prometheus's lookback). Range queries repeat a series' last value for up to five minutes, so
        freshness is read from the samples' own timestamps."""
        promql = f'max(timestamp({n.EXECUTED}{{topology="{escape(topology)}"}}))'
        result: list[Mapping[str, Any]] = self._get("/api/v1/query", {"query": promql})
        return self._call(promql, lambda: float(result[0]["value"][1]) if result else None)

    def pod_cpu(self, namespace: str, pods: Sequence[Pod], window: Window) -> dict[str, PodCpu]:
        """The pods' CPU over ``window`` from the kubelet's cAdvisor series, by pod name: the worker
        container's ``container_cpu_usage_seconds_total`` and, where cAdvisor has them,
        ``container_spec_cpu_quota / container_spec_cpu_period`` (pods without a usage series are
        left out). One query each per container name (a Deployment's pods share theirs)."""
        by_container: dict[str, list[str]] = {}
        for pod in pods:
            by_container.setdefault(pod.container, []).append(pod.name)
        out: dict[str, PodCpu] = {}
        for container, names in sorted(by_container.items()):
            usage_q = cpu_usage_query(namespace, names, container)
            limit_q = cpu_limit_query(namespace, names, container)
            usage_r, limit_r = self._range(usage_q, window), self._range(limit_q, window)
            usage = self._call(usage_q, lambda: pod_series(usage_r))  # noqa: B023 - called at once
            limits = self._call(limit_q, lambda: pod_series(limit_r))  # noqa: B023 - called at once
            for name, points in usage.items():
                out[name] = PodCpu(points, limits.get(name, {}))
        return out

    def demand(self, topology: str, component: str, source: Demand, window: Window) -> DemandRows:
        """The spout ``component``'s offered tuples as ``offered_total`` rows over ``window``, from a
        Kafka topic or a demand query (:mod:`~stormscale.storm.samples.demand`); no rows when the
        source has no samples there."""
        if isinstance(source, KafkaDemand):
            offered_q, lag_q = source.offered_query(), source.lag_query()
            offered_r, lag_r = self._range(offered_q, window), self._range(lag_q, window)
            counter = self._call(offered_q, lambda: summed_points(offered_r))
            lag = self._call(lag_q, lambda: summed_points(lag_r))
            return DemandRows(offered_rows(topology, component, counter), slope_per_s(lag))
        rates_r = self._range(source.promql, window)
        rates = self._call(source.promql, lambda: summed_points(rates_r))
        return DemandRows(offered_rows(topology, component, running_integral(rates, window.step_s)))

    def read(self, topology: str, window: Window) -> list[Sample]:
        """Every sample of ``topology`` in ``window``, sorted, unique on the schema's key."""
        rows: list[Sample] = []
        for query in QUERIES:
            promql = query.promql(topology)
            result = self._range(promql, window)
            rows += self._call(promql, lambda: samples_from_result(query, result))  # noqa: B023 - called at once
        rows.sort()
        self._call("(all queries)", lambda: check_unique(rows))
        return rows
