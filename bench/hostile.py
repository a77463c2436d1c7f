"""One hostile tenant among healthy topologies on one operator: does it hurt the operator or the others?

Run: ``make bench-hostile`` (or ``.venv/bin/python -m bench.hostile [--resources 50] [--steady 45]
[--interval 10] [--behaviours nimbus-empty-structs,prometheus-drip,...]``); about 15 minutes for the
defaults. Prints one table (a row per behaviour, PASS/FAIL per target), writes
``bench/out/hostile.json`` and exits non-zero if a target fails. It holds the real-stack lock of
``make accuracy`` meanwhile.

What runs: the fleet benchmark's machinery (bench/fleet.py): a real control plane with the CRD, one
fake Nimbus and one fake Prometheus on loopback serving every healthy topology, and the operator as
users run it (``python -m kopf run -m stormscale.operator.handlers --standalone``, its own process).
Phases on that control plane, one after the other, each in its own namespace with its own operator
process (a process keeps its peak memory, so a behaviour sharing one would be charged the peak of the
one before):

* *baseline*: N healthy StormTopology objects (Manual mode, budget B); once all are Ready/Applied,
  ``steady`` seconds of timer passes;
* one *hostile* phase per behaviour: the same N, and once all are Ready, ONE more StormTopology whose
  endpoint misbehaves (tests/harness/fakes/hostile.py), watched for ``steady`` seconds (at least the
  deadline). Behaviours: a Nimbus answering 16 MB of empty structs; a Prometheus body of 500 MB;
  100,000 series per query; a body dripped at 1 byte/s; ``Retry-After: 15`` and a ``Retry-After`` of
  10³⁰ s; a result 100,000 arrays deep; and, with healthy endpoints and ``metrics.profile:
  Published``, a published profile ConfigMap whose ``profile.json`` is ``[`` × 500,000.

Measured per window (the baseline's steady passes, each behaviour's):

* the operator's RSS, ``VmRSS`` of ``/proc/<pid>/status`` sampled every 0.5 s: the maximum over the
  window, and ``VmHWM`` (the peak since the process started, which no sample can miss) at its end;
* the healthy topologies' pass latency (the operator's ``pass took`` log lines in the window), p50 and
  p99 by nearest rank, and their ratio to the baseline's;
* the time from the hostile resource's creation until its condition names the reason (polled every
  0.5 s): ``Degraded`` True, or, for the ConfigMap, ``PublishedProfile`` False (the operator falls
  back to its in-process profile and stays Ready: a bad published profile is not Degraded);
* how many healthy resources are still Ready/Applied at the window's end.

Targets: RSS ≤ 256 MiB throughout (VmHWM), healthy p99 ≤ 2 × the baseline's, and the named condition
within one pass deadline. A pass that meets a hostile endpoint ends at its first failing call, so it
lasts at most one Nimbus call's deadline (10 s) and one Prometheus query's (30 s) beyond its healthy
calls: the deadline checked is their sum, 40 s (``--deadline``). The machine is shared and noisy:
compare the phases of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubernetes import client, config

from bench import fleet
from bench.accuracy import heavy_lock
from stormscale.operator.adapters.kube import GROUP, PLURAL, VERSION
from stormscale.operator.status import DEGRADED, PUBLISHED_PROFILE
from stormscale.planner import load_profile
from stormscale.storm.client import DEFAULT_TIMEOUT_S as NIMBUS_DEADLINE_S
from stormscale.storm.samples.reader import DEFAULT_TIMEOUT_S as PROMETHEUS_DEADLINE_S
from tests.harness.fakes import hostile
from tests.harness.kubernetes import binaries
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.process import Daemon, new_run_dir
from tests.harness.waiting import wait_for

OUT = Path(__file__).parent / "out"
RSS_LIMIT_MIB = 256.0
P99_LIMIT_RATIO = 2.0
PASS_DEADLINE_S = NIMBUS_DEADLINE_S + PROMETHEUS_DEADLINE_S
SAMPLE_EVERY_S = 0.5
#: ``[`` × this many: the published profile's ``profile.json`` (a ConfigMap holds at most 1 MiB).
PROFILE_BRACKETS = 500_000
_progress = print


# --- the behaviours: pure -----------------------------------------------------------------------


@dataclass(frozen=True)
class Behaviour:
    """One way the hostile tenant misbehaves: at which endpoint (``nimbus``, ``prometheus`` or
    ``configmap``), how its server answers, and the condition that must name it."""

    name: str
    endpoint: str
    what: str
    answer: Callable[[], hostile.Answer] | None = None
    condition: str = DEGRADED


BEHAVIOURS: dict[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour("nimbus-empty-structs", "nimbus", "Nimbus: 16 MB of empty structs", hostile.empty_structs),
        Behaviour("prometheus-500mb", "prometheus", "Prometheus: a 500 MB body", hostile.endless_body),
        Behaviour("prometheus-100k-series", "prometheus", "Prometheus: 100,000 series", hostile.many_series),
        Behaviour("prometheus-drip", "prometheus", "Prometheus: a body at 1 byte/s", hostile.drip),
        Behaviour(
            "retry-after-15",
            "prometheus",
            "Prometheus: 503, Retry-After: 15",
            lambda: hostile.retry_after("15"),
        ),
        Behaviour(
            "retry-after-huge",
            "prometheus",
            "Prometheus: 503, Retry-After: 10^30",
            lambda: hostile.retry_after("1" + "0" * 30),
        ),
        Behaviour("nested-json", "prometheus", "Prometheus: a result 100,000 deep", hostile.nested),
        Behaviour(
            "profile-configmap",
            "configmap",
            'published profile: "[" x 500,000',
            condition=PUBLISHED_PROFILE,
        ),
    )
}


def hostile_name(behaviour: str) -> str:
    """The hostile StormTopology of ``behaviour`` (its Deployment is ``<name>-workers``)."""
    return f"h-{behaviour}"


def hostile_manifest(
    behaviour: Behaviour, topology: str, shared: fleet.Fakes, port: int | None, budget: int
) -> dict[str, Any]:
    """The hostile tenant's StormTopology: Storm topology ``topology`` (the fakes serve it), with its
    Nimbus or Prometheus at the hostile server's ``port``, or its profile published."""
    nimbus = port if behaviour.endpoint == "nimbus" and port is not None else shared.nimbus.port
    prometheus = shared.prometheus_url
    if behaviour.endpoint == "prometheus" and port is not None:
        prometheus = f"http://127.0.0.1:{port}"
    body = fleet.storm_topology_manifest(hostile_name(behaviour.name), nimbus, prometheus, budget)
    body["spec"]["topologyName"] = topology
    if behaviour.endpoint == "configmap":
        body["spec"]["metrics"]["profile"] = "Published"
    return body


def published_configmap(name: str, now: datetime) -> dict[str, Any]:
    """The fleet job's ConfigMap ``<name>-profile`` with a fresh window and ``profile.json`` of
    ``[`` × :data:`PROFILE_BRACKETS` (the only thing wrong with it)."""
    start, end = now - timedelta(hours=1), now - timedelta(minutes=1)
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-profile"},
        "data": {
            "profile.json": "[" * PROFILE_BRACKETS,
            "window": f"{start:{stamp}}/{end:{stamp}}",
            "computedAt": f"{now:{stamp}}",
        },
    }


def named_reason(resource: Mapping[str, Any], condition: str) -> str | None:
    """The reason of ``condition`` where it names a problem: ``Degraded`` True, ``PublishedProfile``
    False (a fallback); ``None`` otherwise."""
    conditions = (resource.get("status") or {}).get("conditions") or []
    found = next((c for c in conditions if c.get("type") == condition), None)
    problem = "True" if condition == DEGRADED else "False"
    return (
        str(found.get("reason")) if found and found.get("status") == problem and found.get("reason") else None
    )


# --- what was measured: pure --------------------------------------------------------------------


def vm_kib(status: str, key: str) -> int:
    """``VmRSS`` or ``VmHWM`` (kB) of a ``/proc/<pid>/status`` text."""
    match = re.search(rf"^{key}:\s+(\d+) kB", status, re.MULTILINE)
    if match is None:
        raise ValueError(f"no {key} in the process's status")
    return int(match.group(1))


def max_within(samples: Sequence[tuple[float, float]], start: float, end: float) -> float:
    """The largest value sampled at ``start ≤ t ≤ end`` (NaN if none)."""
    return max((v for t, v in samples if start <= t <= end), default=math.nan)


@dataclass
class Window:
    """One measured window: the baseline's steady passes, or one behaviour's phase."""

    name: str
    what: str
    start: float
    end: float
    rss_max_mib: float = math.nan
    hwm_mib: float = math.nan
    latencies: list[float] = field(default_factory=list)
    healthy_ready: int = 0
    healthy: int = 0
    reason: str | None = None
    named_after_s: float = math.nan
    hostile_passes: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return fleet.percentile(self.latencies, 50)

    @property
    def p99(self) -> float:
        return fleet.percentile(self.latencies, 99)


@dataclass(frozen=True)
class Verdict:
    """One window's three targets against the baseline: passed or not (``None``: not measured)."""

    rss: bool
    p99_ratio: float
    p99: bool
    named: bool | None


def verdict(window: Window, baseline: Window, deadline_s: float) -> Verdict:
    """RSS: VmHWM and every sample ≤ :data:`RSS_LIMIT_MIB`; p99: healthy p99 / baseline p99 ≤
    :data:`P99_LIMIT_RATIO`; named: the condition's reason seen within ``deadline_s`` of creation."""
    peak = max(window.hwm_mib, window.rss_max_mib)
    ratio = window.p99 / baseline.p99 if baseline.p99 > 0 else math.nan
    named = None if window is baseline else window.reason is not None and window.named_after_s <= deadline_s
    return Verdict(peak <= RSS_LIMIT_MIB, ratio, ratio <= P99_LIMIT_RATIO, named)


def _mark(ok: bool | None) -> str:
    return "–" if ok is None else "PASS" if ok else "FAIL"


def _num(value: float, digits: int = 3) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


def table(windows: Sequence[Window], baseline: Window, deadline_s: float) -> str:
    """A Markdown row per window (the baseline first), its numbers and PASS/FAIL per target."""
    lines = [
        "| behaviour | condition reason | named after (s) | RSS max (MiB) | VmHWM (MiB) | healthy passes "
        "| p50 (s) | p99 (s) | p99 / baseline | healthy Ready | RSS ≤ 256 MiB | p99 ≤ 2× | named ≤ "
        f"{deadline_s:g} s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in [baseline, *windows]:
        v = verdict(w, baseline, deadline_s)
        named = "–" if w is baseline else _num(w.named_after_s, 1)
        reason = "–" if w is baseline else w.reason or "none"
        lines.append(
            f"| {w.what} | {reason} | {named} | {_num(w.rss_max_mib, 0)} | {_num(w.hwm_mib, 0)} "
            f"| {len(w.latencies)} | {_num(w.p50)} | {_num(w.p99)} | {_num(v.p99_ratio, 2)} "
            f"| {w.healthy_ready}/{w.healthy} | {_mark(v.rss)} | {_mark(v.p99)} | {_mark(v.named)} |"
        )
    return "\n".join(lines)


def failed(windows: Sequence[Window], baseline: Window, deadline_s: float) -> list[str]:
    """``<window>: <target>`` for every target missed (the baseline's RSS included)."""
    out = []
    for w in [baseline, *windows]:
        v = verdict(w, baseline, deadline_s)
        checks = {"RSS": v.rss, "p99": v.p99 or w is baseline, "named condition": v.named is not False}
        out += [f"{w.name}: {target}" for target, ok in checks.items() if not ok]
    return out


# --- running it ---------------------------------------------------------------------------------


class RssSampler:
    """``VmRSS`` of one process every :data:`SAMPLE_EVERY_S`, as (Unix time, MiB), in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.time(), vm_kib(self.status(), "VmRSS") / 1024))
            except (OSError, ValueError):
                return  # the process is gone
            self._stop.wait(SAMPLE_EVERY_S)

    def status(self) -> str:
        return Path(f"/proc/{self.pid}/status").read_text()

    def hwm_mib(self) -> float:
        return vm_kib(self.status(), "VmHWM") / 1024

    @contextmanager
    def running(self) -> Iterator[RssSampler]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(timeout=5)


@dataclass
class Tenancy:
    """One phase's namespace on the control plane, its operator and its healthy members."""

    plane: ControlPlane
    custom: client.CustomObjectsApi
    shared: fleet.Fakes
    namespace: str
    healthy: list[str]
    operator: Daemon
    sampler: RssSampler

    def items(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.custom.list_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL
        )["items"]
        return found

    def healthy_ready(self) -> int:
        names = set(self.healthy)
        return sum(
            1 for i in self.items() if i["metadata"]["name"] in names and fleet.time_to_ready(i) is not None
        )

    def measure(self, window: Window) -> Window:
        """Fill ``window``'s RSS, the healthy passes in it and how many are Ready at its end."""
        window.rss_max_mib = max_within(self.sampler.samples, window.start, window.end)
        window.hwm_mib = self.sampler.hwm_mib()
        window.healthy, window.healthy_ready = len(self.healthy), self.healthy_ready()
        return window

    def passes(self) -> list[fleet.Pass]:
        return fleet.parse_passes(self.operator.spec.log.read_text().splitlines(), self.namespace)


@contextmanager
def tenancy(
    name: str,
    *,
    plane: ControlPlane,
    api: client.ApiClient,
    shared: fleet.Fakes,
    healthy: Sequence[str],
    extra_deployments: Sequence[str],
    args: argparse.Namespace,
    run_dir: Path,
) -> Iterator[Tenancy]:
    """Namespace ``hostile-<name>`` with the healthy members' Deployments (and the hostile ones'),
    the operator started on it, the healthy StormTopology objects created and every one Ready."""
    namespace = f"hostile-{name}"
    custom = client.CustomObjectsApi(api)
    plane.kubectl("create", "namespace", namespace)
    deployments = [fleet.deployment_manifest(m, fleet.BASELINE_UNITS) for m in [*healthy, *extra_deployments]]
    items = {"apiVersion": "v1", "kind": "List", "items": deployments}
    plane.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(items))
    for m in healthy:
        shared.nimbus.restart(m)
    operator = fleet.start_operator(plane, namespace, run_dir, args.interval)
    sampler = RssSampler(operator.pid)
    try:
        with sampler.running():
            started = time.monotonic()
            _progress(f"[{name}] creating {len(healthy)} healthy StormTopology objects")
            for m in healthy:
                port, url = shared.endpoints(fleet.Member(m))
                body = fleet.storm_topology_manifest(m, port, url, args.budget)
                custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
            ten = Tenancy(plane, custom, shared, namespace, list(healthy), operator, sampler)

            def all_ready() -> bool:
                return ten.healthy_ready() == len(healthy)

            what = f"[{name}] every healthy resource Ready"
            wait_for(all_ready, args.timeout, what, every_s=fleet.POLL_S, daemons=(operator,))
            _progress(f"[{name}] {len(healthy)} Ready after {time.monotonic() - started:.0f} s")
            yield ten
    finally:
        operator.stop()


def baseline_window(ten: Tenancy, steady_s: float) -> Window:
    """``steady_s`` of timer passes of the healthy fleet alone."""
    start = time.time()
    _progress(f"[baseline] {steady_s:g} s of timer passes")
    time.sleep(steady_s)
    return ten.measure(Window("baseline", "baseline (no hostile tenant)", start, time.time()))


def hostile_window(ten: Tenancy, behaviour: Behaviour, topology: str, args: argparse.Namespace) -> Window:
    """Create the hostile tenant of ``behaviour``, time its named condition, watch ``steady`` seconds
    in all (at least the deadline), delete it."""
    name = hostile_name(behaviour.name)
    with ExitStack() as stack:
        port = None
        if behaviour.answer is not None:
            port = stack.enter_context(hostile.HostileServer(behaviour.answer())).port
        if behaviour.endpoint == "configmap":
            configmap = published_configmap(name, datetime.now(UTC))
            ten.plane.kubectl("create", "-n", ten.namespace, "-f", "-", stdin=json.dumps(configmap))
        ten.shared.nimbus.restart(topology)
        body = hostile_manifest(behaviour, topology, ten.shared, port, args.budget)
        _progress(f"[{behaviour.name}] creating {name}: {behaviour.what}")
        start, created = time.time(), time.monotonic()
        window = Window(behaviour.name, behaviour.what, start, start)
        ten.custom.create_namespaced_custom_object(GROUP, VERSION, ten.namespace, PLURAL, body)
        while time.monotonic() - created < max(args.steady, args.deadline + 2 * SAMPLE_EVERY_S):
            if window.reason is None:
                found = ten.custom.get_namespaced_custom_object(GROUP, VERSION, ten.namespace, PLURAL, name)
                window.reason = named_reason(found, behaviour.condition)
                if window.reason is not None:
                    window.named_after_s = time.monotonic() - created
                    _progress(f"[{behaviour.name}] {window.reason} after {window.named_after_s:.1f} s")
            time.sleep(SAMPLE_EVERY_S)
        window.end = time.time()
        ten.measure(window)
        ten.custom.delete_namespaced_custom_object(GROUP, VERSION, ten.namespace, PLURAL, name)
    return window


def with_passes(windows: Sequence[Window], passes: Sequence[fleet.Pass], healthy: set[str]) -> None:
    """Each window's healthy pass latencies (passes that ended in it), and the hostile tenant's."""
    for w in windows:
        inside = [p for p in passes if w.start <= p.at <= w.end]
        w.latencies = [p.took for p in inside if p.name in healthy]
        w.hostile_passes = [p.took for p in inside if p.name == hostile_name(w.name)]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--resources", type=int, default=50, help="healthy StormTopology objects")
    parser.add_argument("--budget", type=int, default=2, help="each resource's Manual budget")
    parser.add_argument("--interval", type=float, default=10.0, help="STORMSCALE_INTERVAL_SECONDS")
    parser.add_argument(
        "--steady",
        type=float,
        default=45.0,
        help="seconds per window (baseline, behaviour; at least the deadline)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a phase waits for Ready")
    parser.add_argument("--deadline", type=float, default=PASS_DEADLINE_S, help="seconds to the condition")
    parser.add_argument(
        "--behaviours",
        default=",".join(BEHAVIOURS),
        help=f"comma-separated, of: {', '.join(BEHAVIOURS)}",
    )
    args = parser.parse_args(argv)
    chosen = [BEHAVIOURS[b.strip()] for b in args.behaviours.split(",") if b.strip()]
    profile = load_profile(fleet.PROFILE)
    healthy = [m.name for m in fleet.fleet(args.resources, 0)]
    topology = f"t-{args.resources:03d}"  # the hostile tenant's Storm topology, served like the others
    horizon = (len(chosen) + 1) * (args.timeout + max(args.steady, args.deadline) + 60) + 600
    run_dir = new_run_dir("hostile-")
    _progress(f"hostile-tenant benchmark: logs in {run_dir}")
    with heavy_lock(), ControlPlane(run_dir, bin_dir=binaries.ensure_binaries()) as plane:
        plane.apply_crds(fleet.CRD)
        api = config.new_client_from_config(config_file=str(plane.kubeconfig))
        with fleet.fakes(profile, args.resources + 1, horizon) as shared:
            windows: list[Window] = []
            for behaviour in [None, *chosen]:
                name = "baseline" if behaviour is None else behaviour.name
                with tenancy(
                    name,
                    plane=plane,
                    api=api,
                    shared=shared,
                    healthy=healthy,
                    extra_deployments=[] if behaviour is None else [hostile_name(name)],
                    args=args,
                    run_dir=run_dir,
                ) as ten:
                    if behaviour is None:
                        windows.append(baseline_window(ten, args.steady))
                    else:
                        windows.append(hostile_window(ten, behaviour, topology, args))
                with_passes(windows[-1:], ten.passes(), set(healthy))
    baseline, windows = windows[0], windows[1:]
    print(f"\n{args.resources} healthy topologies, one hostile tenant at a time, {args.steady:g} s each\n")
    print(table(windows, baseline, args.deadline))
    for w in windows:
        took = max(w.hostile_passes, default=math.nan)
        print(f"{w.name}: the hostile tenant's {len(w.hostile_passes)} passes, longest {_num(took, 1)} s")
    missed = failed(windows, baseline, args.deadline)
    OUT.mkdir(parents=True, exist_ok=True)
    record = {"args": vars(args), "baseline": asdict(baseline), "windows": [asdict(w) for w in windows]}
    (OUT / "hostile.json").write_text(json.dumps(record, default=str))
    print(f"\nrecords in {OUT / 'hostile.json'}")
    if missed:
        print("FAIL: " + "; ".join(missed))
        sys.exit(1)
    print("PASS: every target met")


if __name__ == "__main__":
    main()
