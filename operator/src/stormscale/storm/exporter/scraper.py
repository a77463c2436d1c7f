"""Reads Nimbus at most once per cache interval and keeps the exporter's own health counters."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from stormscale.storm.client import NimbusClient
from stormscale.storm.errors import NimbusError, TopologyNotFoundError
from stormscale.storm.exporter import names as n
from stormscale.storm.exporter.families import TopologyReport, storm_families


@dataclass(frozen=True)
class Snapshot:
    """One read of Nimbus: the topologies' reports, or why the read failed."""

    taken_at: float
    reports: tuple[TopologyReport, ...] = ()
    error: str | None = None
    seconds: float = 0.0


class Scraper(Collector):
    """A Prometheus collector over Nimbus: 1 + (number of topologies) calls per cache interval."""

    def __init__(
        self,
        client: NimbusClient,
        cache_s: float,
        topologies: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.cache_s = cache_s
        self.only = frozenset(topologies)
        self.clock = clock
        self.lock = threading.Lock()
        self.last: Snapshot | None = None
        self.errors = 0
        self.calls = 0

    def snapshot(self) -> Snapshot:
        """The cached snapshot, or a fresh one when it is older than ``cache_s``."""
        with self.lock:
            if self.last is None or self.clock() - self.last.taken_at >= self.cache_s:
                self.last = self._read()
            return self.last

    def _read(self) -> Snapshot:
        started = self.clock()
        try:
            reports = self._reports()
        except NimbusError as err:
            self.errors += 1
            return Snapshot(started, error=str(err), seconds=self.clock() - started)
        return Snapshot(started, reports, seconds=self.clock() - started)

    def _reports(self) -> tuple[TopologyReport, ...]:
        self.calls += 1
        summaries = [t for t in self.client.topologies() if not self.only or t.name in self.only]
        reports = []
        for summary in summaries:
            self.calls += 1
            try:
                reports.append(TopologyReport(summary, self.client.topology_info(summary.name)))
            except TopologyNotFoundError:
                continue  # killed between the two calls
        return tuple(reports)

    def collect(self) -> Iterable[Metric]:
        """Storm's families (none while Nimbus is down) and the exporter's own."""
        snap = self.snapshot()
        yield from storm_families(snap.reports)
        yield GaugeMetricFamily(n.UP, "1 if the last read of Nimbus succeeded", value=int(snap.error is None))
        yield CounterMetricFamily(n.SCRAPE_ERRORS, "Failed reads of Nimbus", value=self.errors)
        yield CounterMetricFamily(n.NIMBUS_CALLS, "Thrift calls made to Nimbus", value=self.calls)
        yield GaugeMetricFamily(n.SCRAPE_SECONDS, "Duration of the last read of Nimbus", value=snap.seconds)

    def health(self) -> str:
        """One line for /healthz: the exporter serves; whether Nimbus answered last time."""
        snap = self.last
        if snap is None:
            return "ok: no scrape yet"
        return "ok: nimbus up" if snap.error is None else f"ok: nimbus down: {snap.error}"
