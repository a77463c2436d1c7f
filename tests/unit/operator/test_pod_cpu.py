"""Busy time from the unit's CPU, operator side: the executor → pod join (pure), the cAdvisor queries,
the worker-pods adapter on JSON objects and fake APIs, and the profiler with the three sources faked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from stormscale.aggregation.structure import Structure, parse_structure
from stormscale.operator.adapters.kube import REQUEST_TIMEOUT_S, KubePods, label_selector, pods_from
from stormscale.operator.adapters.profiler import PrometheusProfiler, WorkerCpu
from stormscale.operator.ports import RefusedError, UnavailableError
from stormscale.planner import load_profile
from stormscale.samples import Sample
from stormscale.storm.model import Executor
from stormscale.storm.samples import Pod, PodCpu, Window, cpu_samples, pod_busy
from stormscale.storm.samples.demand import Demand, DemandRows
from stormscale.storm.samples.queries import cpu_limit_query, cpu_usage_query
from stormscale.storm.samples.reader import pod_series
from tests.synthetic import samples as synthetic

T = 1_700_000_000_000


def executor(component: str, task: int, host: str) -> Executor:
    return Executor(component, task, task, host, 6700, 60)


def pod(name: str, ip: str | None, limit: float | None = 0.5) -> Pod:
    return Pod(name, ip, "worker", limit)


def usage(*values: float, limit: float | None = None) -> PodCpu:
    return PodCpu(
        {T + 10_000 * i: v for i, v in enumerate(values)},
        {} if limit is None else {T + 10_000 * i: limit for i in range(len(values))},
    )


def by_executor(rows: Sequence[Sample]) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        out[r.executor, r.metric].append(r.value)
    return dict(out)


# --- the join ---------------------------------------------------------------------------------------


def test_one_component_per_pod_gets_the_pods_cpu_and_limit() -> None:
    pods = [pod("w-0", "10.0.0.1"), pod("w-1", "10.0.0.2")]
    executors = [executor("split", 3, "10.0.0.1"), executor("count", 4, "10.0.0.2")]
    joined = cpu_samples("t", executors, pods, {"w-0": usage(1.0, 2.0), "w-1": usage(5.0, 5.5)})
    assert by_executor(joined.rows) == {
        ("[3-3]", "cpu_seconds_total"): [1.0, 2.0],
        ("[3-3]", "cpu_limit_cores"): [0.5, 0.5],  # from the pod spec: cAdvisor had no quota
        ("[4-4]", "cpu_seconds_total"): [5.0, 5.5],
        ("[4-4]", "cpu_limit_cores"): [0.5, 0.5],
    }
    assert {(r.topology, r.component, r.stream, r.source) for r in joined.rows if r.executor == "[3-3]"} == {
        ("t", "split", "", "")
    }
    assert (joined.shared, joined.unmatched, joined.no_limit) == ({}, (), ())


def test_k_executors_of_one_component_share_the_pod_by_k() -> None:
    executors = [executor("split", t, "10.0.0.1") for t in (3, 4, 5, 6)]
    joined = cpu_samples("t", executors, [pod("w-0", "10.0.0.1")], {"w-0": usage(8.0, limit=2.0)})
    rows = by_executor(joined.rows)
    for e in ("[3-3]", "[4-4]", "[5-5]", "[6-6]"):
        assert rows[e, "cpu_seconds_total"] == [2.0]
        assert rows[e, "cpu_limit_cores"] == [0.5]  # cAdvisor's quota/period (2 cores) over 4


def test_a_unit_is_a_slots_share_so_a_lone_executor_in_a_two_slot_pod_may_read_busier_than_one() -> None:
    """A 0.4-core pod with 2 slots runs one executor that used 0.3 cores over 10 s: its unit is the
    slot's 0.2 cores, so it reads 1.5 busy (the aggregation's capacity per unit is its rate per 0.2
    cores); one per slot, each reads its pod's busy fraction; more than the slots, each is 1/k."""

    def busy(k: int, slots: int) -> float:
        executors = [executor("split", t, "10.0.0.1") for t in range(3, 3 + k)]
        joined = cpu_samples(
            "t", executors, [pod("w-0", "10.0.0.1", 0.4)], {"w-0": usage(1.0, 4.0)}, slots_per_pod=slots
        )
        rows = by_executor(joined.rows)
        used, limit = rows["[3-3]", "cpu_seconds_total"], rows["[3-3]", "cpu_limit_cores"]
        return (used[1] - used[0]) / 10 / limit[0]

    assert busy(1, 2) == pytest.approx(1.5)
    assert busy(2, 2) == pytest.approx(0.75)
    assert busy(4, 2) == pytest.approx(0.75)
    assert busy(1, 1) == pytest.approx(0.75)


def test_a_pod_shared_by_components_gives_nobody_its_cpu() -> None:
    executors = [executor("split", 3, "10.0.0.1"), executor("count", 4, "10.0.0.1")]
    joined = cpu_samples("t", executors, [pod("w-0", "10.0.0.1")], {"w-0": usage(1.0, 2.0)})
    assert joined.rows == []
    assert joined.shared == {"w-0": ("count", "split")}


def test_storms_own_executors_do_not_make_a_pod_shared() -> None:
    executors = [
        executor("split", 3, "10.0.0.1"),
        executor("__acker", 9, "10.0.0.1"),
        executor("__system", -1, "10.0.0.1"),
    ]
    joined = cpu_samples("t", executors, [pod("w-0", "10.0.0.1")], {"w-0": usage(1.0)})
    assert {r.executor for r in joined.rows} == {"[3-3]"}
    assert by_executor(joined.rows)["[3-3]", "cpu_seconds_total"] == [1.0]  # not split with the acker


def test_hosts_match_the_pod_ip_else_its_name_and_the_rest_is_said() -> None:
    pods = [pod("w-0", "10.0.0.1"), pod("w-1", None)]
    executors = [
        executor("a", 3, "10.0.0.1"),
        executor("b", 4, "w-1"),
        executor("c", 5, "storm-node-7.example"),
    ]
    joined = cpu_samples("t", executors, pods, {"w-0": usage(1.0), "w-1": usage(2.0)})
    assert {r.component for r in joined.rows} == {"a", "b"}
    assert joined.unmatched == ("storm-node-7.example",)


def test_a_pod_without_any_limit_gets_no_rows_and_one_without_series_neither() -> None:
    pods = [pod("w-0", "10.0.0.1", limit=None), pod("w-1", "10.0.0.2")]
    executors = [executor("a", 3, "10.0.0.1"), executor("b", 4, "10.0.0.2")]
    joined = cpu_samples("t", executors, pods, {"w-0": usage(1.0)})  # w-1: no cAdvisor series
    assert joined.rows == []
    assert joined.no_limit == ("w-0",)


def test_the_pods_overhead_comes_off_usage_and_limit() -> None:
    """0.2 core limit, 0.05 overhead; the pod used 0.125 cores over 10 s: busy (0.125 - 0.05) / 0.15."""
    joined = cpu_samples(
        "t", [executor("a", 3, "10.0.0.1")], [pod("w-0", "10.0.0.1", 0.2)], {"w-0": usage(4.0, 5.25)}, 0.05
    )
    rows = by_executor(joined.rows)
    used, limit = rows["[3-3]", "cpu_seconds_total"], rows["[3-3]", "cpu_limit_cores"]
    assert limit == [pytest.approx(0.15)] * 2
    busy = (used[1] - used[0]) / 10 / limit[0]
    assert busy == pytest.approx(0.5)


def test_usage_below_the_overhead_counts_as_idle_not_negative() -> None:
    joined = cpu_samples(
        "t",
        [executor("a", 3, "10.0.0.1")],
        [pod("w-0", "10.0.0.1", 0.2)],
        {"w-0": usage(1.0, 1.2, 2.7)},
        0.05,
    )
    used = by_executor(joined.rows)["[3-3]", "cpu_seconds_total"]
    assert used == [1.0, 1.0, pytest.approx(2.0)]  # 10 s steps: +0.2 < 0.5 overhead: 0; +1.5 - 0.5


def test_a_limit_not_above_the_overhead_gives_no_rows() -> None:
    joined = cpu_samples(
        "t", [executor("a", 3, "10.0.0.1")], [pod("w-0", "10.0.0.1", 0.05)], {"w-0": usage(1.0, 2.0)}, 0.05
    )
    assert joined.rows == []
    assert joined.no_limit == ("w-0",)


def test_cadvisor_queries_name_the_worker_container_of_the_pods_only() -> None:
    assert cpu_usage_query("streaming", ["w-1", "w-0.x"], "worker") == (
        "max by (namespace, pod, container) (container_cpu_usage_seconds_total"
        '{namespace="streaming", pod=~"w\\\\-0\\\\.x|w\\\\-1", container="worker"})'
    )
    limit = cpu_limit_query("streaming", ["w-0"], "worker")
    assert limit.startswith("max by (namespace, pod, container) (container_spec_cpu_quota{")
    assert " / max by (namespace, pod, container) (container_spec_cpu_period{" in limit


def test_matrix_results_by_pod_skip_nan_points() -> None:
    result = [
        {"metric": {"pod": "w-0"}, "values": [[1700000000, "1.5"], [1700000010, "NaN"]]},
        {"metric": {"pod": "w-1"}, "values": [[1700000000, "0.25"]]},
    ]
    assert pod_series(result) == {"w-0": {T: 1.5}, "w-1": {T: 0.25}}


# --- the worker-pods adapter ------------------------------------------------------------------------

DEPLOYMENT: dict[str, Any] = {
    "metadata": {"name": "workers"},
    "spec": {
        "selector": {
            "matchLabels": {"app": "storm", "role": "worker"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        },
        "template": {"spec": {"containers": [{"name": "supervisor"}, {"name": "sidecar"}]}},
    },
}


def pod_json(name: str, ip: str | None, cpu: str | None, container: str = "supervisor") -> dict[str, Any]:
    resources = {"limits": {"cpu": cpu}} if cpu else {}
    status = {"podIP": ip} if ip else {}
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "sidecar"}, {"name": container, "resources": resources}]},
        "status": status,
    }


def test_the_deployments_selector_becomes_a_label_selector() -> None:
    assert label_selector(DEPLOYMENT["spec"]["selector"]) == "app=storm,role=worker,tier in (a,b),!canary"
    assert label_selector({"matchExpressions": [{"key": "x", "operator": "Exists"}]}) == "x"


def test_worker_pods_carry_ip_and_the_template_containers_limit() -> None:
    pods = [
        pod_json("w-1", "10.0.0.2", "1500m"),
        pod_json("w-0", None, "1"),
        pod_json("x", "1.1.1.1", "1", "other"),
    ]
    assert pods_from(DEPLOYMENT, pods) == [
        Pod("w-0", None, "supervisor", 1.0),
        Pod("w-1", "10.0.0.2", "supervisor", 1.5),
    ]


@dataclass
class FakeApps:
    fail: Exception | None = None

    def read_namespaced_deployment(self, name: str, namespace: str, _request_timeout: Any) -> dict[str, Any]:
        assert _request_timeout == REQUEST_TIMEOUT_S  # every call is bounded
        if self.fail:
            raise self.fail
        return DEPLOYMENT


@dataclass
class FakeCore:
    calls: list[tuple[str, str]] = field(default_factory=list)
    fail: Exception | None = None

    def list_namespaced_pod(
        self, namespace: str, label_selector: str, _request_timeout: Any
    ) -> dict[str, Any]:
        assert _request_timeout == REQUEST_TIMEOUT_S  # every call is bounded
        self.calls.append((namespace, label_selector))
        if self.fail:
            raise self.fail
        return {"items": [pod_json("w-0", "10.0.0.1", "500m")]}


def kube_pods(apps: FakeApps, core: FakeCore) -> KubePods:
    adapter = KubePods(client.ApiClient())
    adapter._apps, adapter._core = apps, core  # type: ignore[assignment]
    return adapter


def test_kube_pods_lists_by_the_deployments_selector() -> None:
    core = FakeCore()
    assert kube_pods(FakeApps(), core).worker_pods("streaming", "workers") == [
        Pod("w-0", "10.0.0.1", "supervisor", 0.5)
    ]
    assert core.calls == [("streaming", "app=storm,role=worker,tier in (a,b),!canary")]


@pytest.mark.parametrize(
    ("apps", "core", "kind"),
    [
        (FakeApps(), FakeCore(fail=ApiException(status=403, reason="Forbidden")), RefusedError),
        (FakeApps(fail=ApiException(status=404, reason="Not Found")), FakeCore(), RefusedError),
        (FakeApps(), FakeCore(fail=ApiException(status=503, reason="Unavailable")), UnavailableError),
        (FakeApps(), FakeCore(fail=urllib3.exceptions.MaxRetryError(None, "/", "refused")), UnavailableError),  # type: ignore[arg-type]
    ],
)
def test_kube_pods_raises_only_the_ports_two_kinds(
    apps: FakeApps, core: FakeCore, kind: type[Exception]
) -> None:
    with pytest.raises(kind, match="pods of Deployment streaming/workers"):
        kube_pods(apps, core).worker_pods("streaming", "workers")


# --- the profiler with pods, hosts and series faked -------------------------------------------------

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"
LINEAR = load_profile(PROFILES / "thesis-linear.json")
MULTILANG = synthetic.Scenario(
    name="linear",
    duration_s=600,
    noise=0.01,
    cpu_components=("2", "3", "4"),
    storm_busy_scale={"2": 0.05, "4": 0.02},
    cpu_limit_cores=0.5,
    seed=21,
)
END_S = synthetic.EPOCH.timestamp() + MULTILANG.duration_s
CPU_METRICS = {"cpu_seconds_total", "cpu_limit_cores"}


def rows_of(scenario: synthetic.Scenario) -> list[Sample]:
    out = []
    for r in synthetic.generate(LINEAR, scenario).to_pylist():
        ts: datetime = r.pop("ts")
        out.append(Sample(ts_ms=round(ts.timestamp() * 1000), **r))
    return out


ALL_ROWS = rows_of(MULTILANG)
STORM_ROWS = [r for r in ALL_ROWS if r.metric not in CPU_METRICS]
#: one pod per bolt executor, announced by its IP; the pods' counters are what the generator wrote
EXECUTORS = sorted({(r.component, r.executor) for r in ALL_ROWS if r.metric in CPU_METRICS})
PODS = [Pod(f"linear-w-{i}", f"10.1.0.{i}", "supervisor", 0.5) for i in range(len(EXECUTORS))]


@dataclass
class FakeStormSamples:
    rows: list[Sample]

    def read(self, topology: str, window: Window) -> list[Sample]:
        return [r for r in self.rows if window.start * 1000 <= r.ts_ms <= window.end * 1000]

    def newest(self, topology: str) -> float | None:
        return END_S

    def demand(self, topology: str, component: str, source: Demand, window: Window) -> DemandRows:
        raise AssertionError("no demand source is configured")


@dataclass(frozen=True)
class FakeGraphs:
    def structure(self, topology: str) -> Structure:
        return parse_structure(synthetic.structure(LINEAR, MULTILANG))


@dataclass(frozen=True)
class FakePods:
    pods: list[Pod]

    def worker_pods(self, namespace: str, deployment: str) -> list[Pod]:
        assert (namespace, deployment) == ("streaming", "linear-workers")
        return self.pods


@dataclass(frozen=True)
class FakeHosts:
    def executors(self, topology: str) -> list[Executor]:
        out = []
        for (component, eid), p in zip(EXECUTORS, PODS, strict=True):
            start, end = (int(x) for x in eid.strip("[]").split("-"))
            out.append(Executor(component, start, end, p.ip or "", 6700, 600))
        return out


@dataclass(frozen=True)
class FakeSeries:
    """cAdvisor's answer: the generator's per-executor counters as the pods' (no quota: spec limit)."""

    def pod_cpu(self, namespace: str, pods: Sequence[Pod], window: Window) -> Mapping[str, PodCpu]:
        usage: dict[str, dict[int, float]] = defaultdict(dict)
        for r in ALL_ROWS:
            if r.metric == "cpu_seconds_total" and window.start * 1000 <= r.ts_ms <= window.end * 1000:
                usage[PODS[EXECUTORS.index((r.component, r.executor))].name][r.ts_ms] = r.value
        return {name: PodCpu(points) for name, points in usage.items()}


def profiler(cpu: WorkerCpu | None) -> PrometheusProfiler:
    return PrometheusProfiler(
        FakeStormSamples(STORM_ROWS), FakeGraphs(), 10.0, 120.0, clock=lambda: END_S + 3, cpu=cpu
    )


def capacities(p: PrometheusProfiler) -> dict[str, float]:
    measured = p.profile("linear", 300)
    return {c.id: c.capacity_per_unit for c in measured.topology.components if not c.is_spout}


def busy_sources(p: PrometheusProfiler) -> dict[str, str | None]:
    """Where each bolt's busy time came from, as the measured profile's confidence says."""
    confidence = p.profile("linear", 300).confidence
    return {c.id: confidence.of(c.id).capacity_source for c in LINEAR.components if not c.is_spout}


def test_the_profiler_measures_capacity_from_the_pods_cpu() -> None:
    cpu = WorkerCpu("streaming", "linear-workers", FakePods(PODS), FakeHosts(), FakeSeries())
    truth = {c.id: c.capacity_per_unit for c in LINEAR.components if not c.is_spout}
    assert capacities(profiler(cpu)) == pytest.approx(truth, rel=0.02)
    assert busy_sources(profiler(cpu)) == dict.fromkeys(truth, "pod-cpu")
    # without the pods' CPU, the same Storm samples give bolt 4 fifty times its capacity
    assert capacities(profiler(None))["4"] == pytest.approx(900.0 / 0.02, rel=0.02)
    assert busy_sources(profiler(None)) == dict.fromkeys(truth, "busy-counter")


def test_no_worker_pods_means_storms_busy_time() -> None:
    cpu = WorkerCpu("streaming", "linear-workers", FakePods([]), FakeHosts(), FakeSeries())
    assert capacities(profiler(cpu))["2"] == pytest.approx(400.0 / 0.05, rel=0.02)
    assert busy_sources(profiler(cpu)) == dict.fromkeys(["2", "3", "4"], "busy-counter")


def test_a_pods_busy_fraction_is_its_cpu_over_its_limit_across_the_window() -> None:
    assert pod_busy(usage(0.0, 1.0, 2.0, 3.0, limit=0.5), None) == pytest.approx(0.2)  # 0.1 core / 0.5
    assert pod_busy(usage(0.0, 1.0, 2.0), 0.25) == pytest.approx(0.4)  # the spec's limit without cAdvisor's
    assert pod_busy(usage(5.0, 6.0, 0.5, 1.5), 0.5) == pytest.approx(
        2.5 / 30 / 0.5
    )  # a reset: restarted from 0
    assert pod_busy(usage(1.0), 0.5) is None  # one point: no rate
    assert pod_busy(usage(0.0, 1.0), None) is None  # no limit anywhere


def test_the_profiler_reports_every_worker_pods_cpu_for_the_container_level() -> None:
    cpu = WorkerCpu(
        "streaming", "linear-workers", FakePods([*PODS, pod("idle", "10.1.0.99")]), FakeHosts(), FakeSeries()
    )
    loads = {p.name: p for p in profiler(cpu).profile("linear", 300).pods}
    assert set(loads) == {p.name for p in PODS} | {"idle"}
    assert loads["idle"].cpu is None  # no cAdvisor series
    assert loads[PODS[0].name].hosts == (PODS[0].ip, PODS[0].name)
    busy = [loads[p.name].cpu for p in PODS]
    # bolt 3 (250/s a unit) holds the flow at 250/s: bolts 2 and 4 are busy 250/400 and 250/900 of a pod
    assert busy == pytest.approx([250 / 400, 250 / 250, 250 / 900], abs=0.01)
