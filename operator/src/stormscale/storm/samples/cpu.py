"""Busy time from the unit's CPU: worker pods' cAdvisor series → per-executor ``cpu_seconds_total``
and ``cpu_limit_cores`` rows of the sample contract (docs/formats/samples.md).

Pure: the caller brings the executors (Nimbus's ``ExecutorSummary``: component, id, worker host),
the worker pods (name, IP, container, CPU limit from the pod spec; from the API server) and the pods'
series as Prometheus returned them (:class:`PodCpu`, read by
:meth:`~stormscale.storm.samples.reader.SampleReader.pod_cpu`).

The join, and the choices made where the design left room:

* **Executor → pod.** An executor runs on the worker host Nimbus reports (``Executor.host``: what
  the Supervisor announces, ``storm.local.hostname``); its pod is the one whose IP or, failing that,
  whose name equals that host. An executor whose host matches no pod gets no rows.
* **Only pods that run one component.** A pod's CPU is the container's: with executors of two user
  components in it, nobody can say whose CPU it is, so none of them gets rows (they keep Storm's
  busy time). Storm's own executors (``__acker``, ``__system``, ``__metrics…``) do not count as a
  component: every worker runs them, and their CPU (acking, heartbeats, metrics) is overhead of the
  component the worker serves, which is charged with it (the busy fraction errs high, the capacity
  low, never the other way).
* **A unit is a slot's share of the pod.** With S slots per pod (the spec's ``workers.slotsPerPod``)
  and k executors of one component on it, each executor gets the pod's counter / k and the limit
  / max(k, S)::

      b_e = (Δcpu / k) / dt / (limit / max(k, S))

  so the aggregation's capacity R / (n · b_max) is the rate per slot's CPU (limit / S) whenever the
  pod runs at most S executors, the unit the planner sizes in. A lone executor in a 2-slot pod may
  then read busy up to 2: it uses the CPU of the slot left empty, which a second unit would not get.
  With more executors than slots (the container level adds executors into a worker), each is 1/k of
  the pod, as with S = 1.
* **The limit** is ``container_spec_cpu_quota / container_spec_cpu_period`` at the same step where
  cAdvisor has it, else the pod spec's ``resources.limits.cpu``; a pod with neither gets no rows (a
  busy fraction needs a limit).
* **A pod's overhead** (``overhead_cores``, the spec's ``workers.podOverheadCPU``): CPU the pod
  spends whatever its tuples (the Supervisor, heartbeats, metrics, Storm's wait strategies polling
  idle queues). It is taken off both the usage and the limit, so the busy fraction is
  (cpu − o) / (limit − o): a pod at its overhead is idle, a pod at its limit is saturated, and in
  between the capacity scales with what the component's tuples really use. Each step's usage
  increment loses o·Δt, never below 0. With o = 0 (the default) this is plain cpu / limit, which
  counts the overhead as work and so reads an unsaturated component's capacity low by about
  o / limit (on the test bed: ~50m of a 200m unit, see docs/testbed.md). A limit at or below the
  overhead gives no rows (listed with the pods without a limit).
* The mapping is Nimbus's now, applied to the whole window: a rebalance or a restart that moved
  executors also changed executor counts or reset counters, and the aggregation's steady window
  starts after that change anyway.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from stormscale.samples import Sample
from stormscale.samples.names import CPU_LIMIT, CPU_SECONDS
from stormscale.storm.model import Executor, is_system


@dataclass(frozen=True)
class Pod:
    """A worker pod as the API server lists it."""

    name: str
    ip: str | None
    container: str  # the worker container, whose CPU and limit are read
    cpu_limit_cores: float | None  # the container's resources.limits.cpu, None if unset
    terminating: bool = False  # deleted, still shutting down (``metadata.deletionTimestamp`` set)

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts its Supervisor may announce to Nimbus: its IP, its name."""
        return tuple(h for h in (self.ip, self.name) if h)


@dataclass(frozen=True)
class PodCpu:
    """One pod's cAdvisor series over the window: CPU seconds used (a counter) and, where cAdvisor
    has it, the limit in cores (quota / period), both by Unix milliseconds."""

    usage: Mapping[int, float]
    limit: Mapping[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CpuRows:
    """The join's rows, and what it could not place (for the caller to say so)."""

    rows: list[Sample]
    shared: Mapping[str, tuple[str, ...]]  # pod → its user components, when more than one
    unmatched: tuple[str, ...]  # hosts of user executors that match no pod
    no_limit: tuple[str, ...]  # pods without a CPU limit in cAdvisor or the spec


def pod_of(host: str, pods: Iterable[Pod]) -> Pod | None:
    """The pod whose IP, else whose name, equals ``host`` (None: none does)."""
    pods = list(pods)
    return next((p for p in pods if p.ip and p.ip == host), None) or next(
        (p for p in pods if p.name == host), None
    )


def cpu_samples(
    topology: str,
    executors: Iterable[Executor],
    pods: Sequence[Pod],
    cpu: Mapping[str, PodCpu],
    overhead_cores: float = 0.0,
    *,
    slots_per_pod: int = 1,
) -> CpuRows:
    """Per-executor CPU rows of ``topology`` (see the module's docstring for the join's rules)."""
    placed: dict[str, list[Executor]] = defaultdict(list)
    unmatched = set()
    by_name = {p.name: p for p in pods}
    for e in executors:
        if is_system(e.component):
            continue
        pod = pod_of(e.host, pods)
        if pod is None:
            unmatched.add(e.host)
        else:
            placed[pod.name].append(e)
    rows: list[Sample] = []
    shared: dict[str, tuple[str, ...]] = {}
    no_limit: list[str] = []
    for name, on_pod in sorted(placed.items()):
        components = tuple(sorted({e.component for e in on_pod}))
        if len(components) > 1:
            shared[name] = components
            continue
        series = cpu.get(name)
        if series is None:
            continue
        pod_rows = _pod_rows(
            topology,
            components[0],
            on_pod,
            by_name[name],
            series,
            overhead_cores=overhead_cores,
            slots_per_pod=slots_per_pod,
        )
        if pod_rows is None:
            no_limit.append(name)
        else:
            rows += pod_rows
    return CpuRows(sorted(rows), shared, tuple(sorted(unmatched)), tuple(no_limit))


def _pod_rows(
    topology: str,
    component: str,
    executors: Sequence[Executor],
    pod: Pod,
    series: PodCpu,
    *,
    overhead_cores: float,
    slots_per_pod: int,
) -> list[Sample] | None:
    """Each executor's share of the pod's counter (1/k) and limit (1/max(k, S)), less the pod's
    overhead, at every step with a limit above the overhead."""
    k = len(executors)
    shares = max(k, slots_per_pod)
    rows = []
    for ts_ms, used in less_overhead(series.usage, overhead_cores):
        limit = series.limit.get(ts_ms)
        if limit is None or not limit > 0:
            limit = pod.cpu_limit_cores
        if limit is None or not limit > overhead_cores:
            return None
        for e in executors:
            rows.append(Sample(ts_ms, topology, component, e.id, CPU_SECONDS, "", "", used / k))
            rows.append(
                Sample(ts_ms, topology, component, e.id, CPU_LIMIT, "", "", (limit - overhead_cores) / shares)
            )
    return rows


def pod_busy(series: PodCpu, limit_cores: float | None) -> float | None:
    """A pod's CPU over its limit across the window (multi-level elasticity's ``totalCPU_T``, as usage
    over limit), its overhead included::

        busy = Σ Δu_i / (t_last − t_first) / limit,    Δu_i = u_i − u_{i−1}, or u_i after a reset

    (a counter that went down restarted from 0, as Prometheus's ``rate`` reads it); the limit is
    cAdvisor's mean over the window, else the pod spec's ``limit_cores``. ``None`` with fewer than two
    points or no limit.
    """
    points = sorted(series.usage.items())
    limits = [v for v in series.limit.values() if v > 0]
    limit = sum(limits) / len(limits) if limits else limit_cores
    if len(points) < 2 or limit is None or not limit > 0:
        return None
    used = sum(u1 - u0 if u1 >= u0 else u1 for (_, u0), (_, u1) in itertools.pairwise(points))
    seconds = (points[-1][0] - points[0][0]) / 1000
    return used / seconds / limit if seconds > 0 else None


def less_overhead(usage: Mapping[int, float], overhead_cores: float) -> list[tuple[int, float]]:
    """The counter less ``overhead_cores`` per second: u'₀ = u₀, u'ᵢ = u'ᵢ₋₁ + max(0, Δu − o·Δt)."""
    points = sorted(usage.items())
    if not overhead_cores or not points:
        return points
    out = [points[0]]
    for (t0, u0), (t1, u1) in itertools.pairwise(points):
        out.append((t1, out[-1][1] + max(0.0, (u1 - u0) - overhead_cores * (t1 - t0) / 1000)))
    return out
