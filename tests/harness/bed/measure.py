"""Measuring a running test-bed topology: Nimbus's own counts, the exporter, samples and structure.

- ``ExecutedCounter`` / ``rate_over``: executed tuples/s of some components over a window, from Nimbus's
  all-time counts read when an executor heartbeat changes them (independent of Prometheus), and of
  every component at the same two moments.
- ``running_exporter``: ``python -m stormscale.storm.exporter`` on a free loopback port.
- ``write_samples``: a window of the sample reader's rows (Prometheus → Parquet).
- ``write_structure``: the aggregation's structure JSON from Nimbus (``getUserTopology`` + tasks).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from stormscale.samples import write_parquet
from stormscale.storm import NimbusClient
from stormscale.storm.samples.export import structure_document
from stormscale.storm.samples.reader import SampleReader, Window
from tests.harness.process import Daemon, DaemonError, LaunchSpec, free_port
from tests.harness.storm.daemons import StormEndpoints
from tests.harness.waiting import wait_for

POLL_S = 0.25
REPORT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Sighting:
    """A count and the Unix time it was first seen on Nimbus; with a snapshot, every counted
    component's all-time count read right then."""

    at: float
    count: int
    components: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Measured:
    """Counts at the start and end of a window, each seen when a heartbeat brought it."""

    start: Sighting
    end: Sighting

    @property
    def seconds(self) -> float:
        """Length of the window."""
        return self.end.at - self.start.at

    @property
    def rate(self) -> float:
        """Tuples per second over the window."""
        return (self.end.count - self.start.count) / self.seconds

    def component_rates(self) -> dict[str, float]:
        """Each snapshotted component's tuples/s over the window (read at the same two moments)."""
        ends = self.end.components
        return {c: (ends[c] - n) / self.seconds for c, n in self.start.components.items() if c in ends}


@dataclass(frozen=True)
class ExecutedCounter:
    """Sum of the all-time executed counts of ``components`` of one topology, read from Nimbus."""

    nimbus: NimbusClient
    topology_id: str
    components: tuple[str, ...]

    def __call__(self) -> int:
        """The current sum (0 for a component Nimbus does not show yet)."""
        return sum(self.each().values())

    def each(self) -> dict[str, int]:
        """Each component's all-time executed count (0 while Nimbus does not show it yet)."""
        stats = self.nimbus.topology_page(self.topology_id).components
        return {c: stats[c].executed if c in stats else 0 for c in self.components}


def next_report(
    read: Callable[[], int],
    timeout_s: float = REPORT_TIMEOUT_S,
    snapshot: Callable[[], Mapping[str, int]] | None = None,
) -> Sighting:
    """Wait for the next change of ``read()`` (a heartbeat reaching Nimbus); when and what it was, and
    ``snapshot()`` read right after it."""
    before = read()

    def sighted() -> Sighting | None:
        count = read()
        if count == before:
            return None
        return Sighting(time.time(), count, {} if snapshot is None else dict(snapshot()))

    return wait_for(
        sighted, timeout_s, f"new stats on Nimbus (count {before} before)", every_s=POLL_S, error=DaemonError
    )


def rate_over(
    read: Callable[[], int], window_s: float, snapshot: Callable[[], Mapping[str, int]] | None = None
) -> Measured:
    """Counts at two heartbeats about ``window_s`` apart, timed at their arrival on Nimbus; with
    ``snapshot`` (e.g. every bolt's executed count), it too at both moments
    (:meth:`Measured.component_rates`: workers heartbeat on their own clocks, so a component's count
    may be up to one heartbeat older than the sinks'; over the window that shifts both ends alike)."""
    start = next_report(read, snapshot=snapshot)
    time.sleep(max(0.0, start.at + window_s - time.time()))
    return Measured(start, next_report(read, snapshot=snapshot))


def healthz(url: str) -> str | None:
    """The exporter's /healthz body, or None while it does not answer."""
    try:
        return requests.get(f"{url}/healthz", timeout=2).text
    except requests.RequestException:
        return None


@contextlib.contextmanager
def running_exporter(endpoints: StormEndpoints, log: Path, timeout_s: float = 30.0) -> Iterator[str]:
    """``python -m stormscale.storm.exporter`` on a free loopback port; its URL. Stopped on exit."""
    port = free_port()
    argv = [sys.executable, "-m", "stormscale.storm.exporter"]
    argv += ["--nimbus", f"{endpoints.host}:{endpoints.nimbus_port}", "--port", str(port)]
    argv += ["--listen", "127.0.0.1", "--cache-seconds", "1"]
    log.parent.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}"
    exporter = Daemon(LaunchSpec("exporter", argv, dict(os.environ), Path.cwd(), log, log))
    try:
        exporter.wait_ready(lambda: healthz(url) is not None, timeout_s, f"{url}/healthz answers")
        yield url
    finally:
        exporter.stop()


def write_samples(prometheus_url: str, topology: str, window: Window, out: Path) -> int:
    """The sample reader's rows of ``topology`` over ``window`` written to ``out``; how many."""
    rows = SampleReader(prometheus_url).read(topology, window)
    write_parquet(rows, out)
    return len(rows)


def write_structure(nimbus: NimbusClient, name: str, out: Path) -> Path:
    """Write ``structure_document`` of ``name`` to ``out`` (JSON)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(structure_document(nimbus, name), indent=1) + "\n")
    return out


def sinks(document: dict[str, Any]) -> tuple[str, ...]:
    """Ids of the components without children in a structure document."""
    return tuple(c["id"] for c in document["components"] if not c["children"])


def run_aggregation(samples: Path, structure: Path, out: Path, extra: Sequence[str] = ()) -> dict[str, Any]:
    """``python -m stormscale.aggregation`` on one samples file and one structure; the profile it wrote."""
    argv = [sys.executable, "-m", "stormscale.aggregation", "--samples", str(samples)]
    argv += ["--structure", str(structure), "--output", str(out), *extra]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise DaemonError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    topology = json.loads(structure.read_text())["topology"]
    profile: dict[str, Any] = json.loads((out / f"{topology}.json").read_text())
    return profile
