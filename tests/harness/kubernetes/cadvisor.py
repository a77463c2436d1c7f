"""What a kubelet serves at ``/metrics/cadvisor``, for the pod runner's replicas.

A kubelet exposes each container's CPU from its cgroup under cAdvisor's names; Prometheus scrapes it
and keeps the series' own ``namespace``, ``pod`` and ``container`` labels. The pod runner serves the
same three series per running replica from the replica's cgroup:

* ``container_cpu_usage_seconds_total`` (counter): the cgroup's usage counter (v1 ``cpuacct.usage``,
  v2 ``cpu.stat`` usage_usec) in seconds;
* ``container_spec_cpu_quota`` and ``container_spec_cpu_period`` (gauges, µs): the CFS quota and
  period, present only when the container has a CPU limit (as in cAdvisor).

As a kubelet does, it also serves the pod-level cgroup's usage with ``container=""`` (here equal to
the container's: a replica is a one-container pod), so a query that forgets to select the container
counts the CPU twice and a test can see it. What it leaves out: cAdvisor's explicit sample timestamps,
and every other series (memory, network, file system).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATH = "/metrics/cadvisor"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
USAGE = "container_cpu_usage_seconds_total"
QUOTA = "container_spec_cpu_quota"
PERIOD = "container_spec_cpu_period"


@dataclass(frozen=True)
class ContainerCpu:
    """One container's CPU as cAdvisor reports it: where it runs, its usage, its limit."""

    namespace: str
    pod: str
    container: str
    image: str
    cgroup: str  # cAdvisor's ``id`` label: the container's cgroup path
    usage_seconds: float
    quota_us: int | None  # None: no CPU limit
    period_us: int


def _escape(value: str) -> str:
    """A label value as the text format writes it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: str) -> str:
    """``{k="v",...}`` in key order."""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items())) + "}"


def exposition(containers: Iterable[ContainerCpu]) -> str:
    """The text exposition of every container's series, plus each pod's ``container=""`` usage."""
    containers = sorted(containers, key=lambda c: (c.namespace, c.pod, c.container))
    usage, quota, period = [], [], []
    for c in containers:
        common = {"namespace": c.namespace, "pod": c.pod, "container": c.container}
        labels = _labels(**common, image=c.image, id=c.cgroup, name=c.pod)
        pod_labels = _labels(**{**common, "container": ""}, image="", id=f"{c.cgroup}/..", name="")
        usage += [f"{USAGE}{labels} {c.usage_seconds:.9f}", f"{USAGE}{pod_labels} {c.usage_seconds:.9f}"]
        if c.quota_us is not None:
            quota.append(f"{QUOTA}{labels} {c.quota_us}")
            period.append(f"{PERIOD}{labels} {c.period_us}")
    blocks = [
        (USAGE, "counter", "Cumulative cpu time consumed in seconds.", usage),
        (QUOTA, "gauge", "CPU quota of the container.", quota),
        (PERIOD, "gauge", "CPU period of the container.", period),
    ]
    lines = []
    for name, kind, help_text, samples in blocks:
        if samples:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def serving(collect: Callable[[], Iterable[ContainerCpu]], port: int) -> Iterator[ThreadingHTTPServer]:
    """Serve ``exposition(collect())`` at ``http://127.0.0.1:<port>/metrics/cadvisor`` until exit."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != PATH:
                self.send_error(404)
                return
            body = exposition(collect()).encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a scrape that timed out
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # scrapes every 2 s: keep the test log quiet
            return

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, name="cadvisor", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
