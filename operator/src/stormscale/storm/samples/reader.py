"""The sample reader: Prometheus range queries over the exporter's series → tidy samples
(:mod:`stormscale.samples`, docs/formats/samples.md).

Errors are this package's own two kinds: :class:`PrometheusUnavailableError` (down, timing out, a 5xx
or 429, a malformed answer: try again later) and :class:`PrometheusError` (Prometheus refused the
query: retrying will not help). Callers map them to their own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from stormscale.samples import KEY, Sample
from stormscale.storm.errors import one_line
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
from stormscale.storm.samples.queries import QUERIES, SeriesQuery, cpu_limit_query, cpu_usage_query, escape

T = TypeVar("T")

MAX_POINTS = 11_000  # Prometheus refuses range queries with more points per series
_STATUS = re.compile(r"HTTP Status Code (\d{3})")
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
#: Answers that mean "not now" rather than "never": overload, rate limits, gateways, restarts.
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


class PrometheusError(RuntimeError):
    """Prometheus refused the query (a 4xx such as 400 bad query, 401, 403): retrying will not help."""


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


def status_code(err: PrometheusApiClientException) -> int | None:
    """The HTTP status the client put into its message (``HTTP Status Code 503 (...)``), if any."""
    match = _STATUS.search(str(err))
    return int(match.group(1)) if match else None


#: Environment variable: a PEM CA bundle for https Prometheus URLs (operator-wide, never from the spec).
CA_FILE_ENV = "STORMSCALE_PROMETHEUS_CA_FILE"


class SampleReader:
    """Reads every schema metric of one topology from Prometheus."""

    def __init__(
        self, url: str, timeout_s: float = 30.0, retries: int = 2, ca_file: str | None = None
    ) -> None:
        """``retries``: how often an answer in :data:`RETRYABLE_STATUS` is asked again (with backoff)
        before the reader gives up with :class:`PrometheusUnavailableError`. A connection that fails or
        times out is not asked again: the caller's next pass asks (three ``timeout_s`` attempts held the
        operator's pass, and its thread of Kopf's pool, 91 s on a Prometheus that never answered).

        TLS certificates are verified (the URL comes from a StormTopology's spec: an unverified https
        Prometheus could be anyone). ``ca_file``, else :data:`CA_FILE_ENV`, names a PEM bundle to trust
        instead of the system's store.
        """
        self.url = url
        retry = Retry(
            total=retries,
            connect=0,
            read=0,
            backoff_factor=0.5,
            status_forcelist=sorted(RETRYABLE_STATUS),
            raise_on_status=False,  # the last answer's status then names the problem
        )
        self.prometheus = PrometheusConnect(url=url, disable_ssl=False, timeout=timeout_s, retry=retry)
        ca = ca_file if ca_file is not None else os.environ.get(CA_FILE_ENV)
        if ca:  # requests takes a bundle's path as `verify`; the client has no argument for it
            self.prometheus._session.verify = ca

    def _call(self, promql: str, call: Callable[[], T]) -> T:
        """Run one query; every failure becomes one of this module's two errors, with one line."""
        try:
            return call()
        except requests.RequestException as err:
            raise PrometheusUnavailableError(
                one_line(f"Prometheus {self.url}: {type(err).__name__}: {err}")
            ) from None
        except PrometheusApiClientException as err:
            code = status_code(err)
            kind = PrometheusUnavailableError if code is None or code in RETRYABLE_STATUS else PrometheusError
            raise kind(f"Prometheus {self.url} answered {code or '?'} to {promql!r}") from None
        except MALFORMED as err:  # a 200 that is not Prometheus's JSON
            message = f"Prometheus {self.url}: malformed answer to {promql!r} ({type(err).__name__}: {err})"
            raise PrometheusUnavailableError(one_line(message)) from None

    def _range(self, promql: str, window: Window) -> list[Mapping[str, Any]]:
        start = datetime.fromtimestamp(window.start, UTC)
        end = datetime.fromtimestamp(window.end, UTC)
        result: list[Mapping[str, Any]] = self._call(
            promql,
            lambda: self.prometheus.custom_query_range(
                promql, start_time=start, end_time=end, step=str(window.step_s)
            ),
        )
        return result

    def newest(self, topology: str) -> float | None:
        """Unix time of the newest scraped executed-count sample of ``topology`` (None: none in
        Prometheus's lookback). Range queries repeat a series' last value for up to five minutes, so
        freshness is read from the samples' own timestamps."""
        promql = f'max(timestamp({n.EXECUTED}{{topology="{escape(topology)}"}}))'
        result: list[Mapping[str, Any]] = self._call(promql, lambda: self.prometheus.custom_query(promql))
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
