"""What the pod runner shows as a kubelet would: cAdvisor's CPU series and the Pod ↔ replica binding."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.kubernetes import cadvisor
from tests.harness.kubernetes.cgroups import CpuCgroup, CpuResources
from tests.harness.kubernetes.pod_runner import Command, Replica, RunningReplica, bind
from tests.harness.process import free_port


def container(pod: str, usage: float, quota: int | None) -> cadvisor.ContainerCpu:
    return cadvisor.ContainerCpu(
        "ns", pod, "supervisor", "apache/storm", f"/stormscale/{pod}", usage, quota, 100_000
    )


def samples(text: str) -> dict[tuple[str, str, str], float]:
    """(metric, pod, container) → value, parsed as a Prometheus client parses the text format."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, s.labels["pod"], s.labels["container"])] = s.value
    return out


def test_exposition_has_cadvisors_names_and_labels() -> None:
    text = cadvisor.exposition([container("b", 2.5, 20_000), container("a", 1.25, None)])
    parsed = samples(text)
    assert parsed[("container_cpu_usage_seconds_total", "a", "supervisor")] == 1.25
    assert parsed[("container_cpu_usage_seconds_total", "b", "supervisor")] == 2.5
    assert parsed[("container_spec_cpu_quota", "b", "supervisor")] == 20_000
    assert parsed[("container_spec_cpu_period", "b", "supervisor")] == 100_000
    # No limit, no quota series (as in cAdvisor); the pod-level series has container="".
    assert ("container_spec_cpu_quota", "a", "supervisor") not in parsed
    assert parsed[("container_cpu_usage_seconds_total", "a", "")] == 1.25
    assert "# TYPE container_cpu_usage_seconds_total counter" in text


def test_label_values_are_escaped() -> None:
    odd = cadvisor.ContainerCpu('n"s', "p\\1", "c\nx", "i", "/g", 1.0, None, 100_000)
    (family, *_) = text_string_to_metric_families(cadvisor.exposition([odd]))
    assert family.samples[0].labels["namespace"] == 'n"s'
    assert family.samples[0].labels["pod"] == "p\\1"


def test_the_endpoint_serves_the_exposition_at_the_kubelets_path() -> None:
    port = free_port()
    with cadvisor.serving(lambda: [container("a", 3.0, 10_000)], port):
        ok = requests.get(f"http://127.0.0.1:{port}{cadvisor.PATH}", timeout=5)
        missing = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    assert ok.status_code == 200
    assert ok.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert samples(ok.text)[("container_cpu_usage_seconds_total", "a", "supervisor")] == 3.0
    assert missing.status_code == 404


# --- binding -------------------------------------------------------------------------------------


def pod(name: str, created: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created}}


class _Proc:
    """Just enough of a Popen for ``RunningReplica.live``."""

    def __init__(self, alive: bool) -> None:
        self.alive = alive

    def poll(self) -> int | None:
        return None if self.alive else 1


def replica(index: int, alive: bool = True, bound: str | None = None) -> RunningReplica:
    r = Replica("ns", "d", index, CpuResources(200), {"name": "c"}, Path("/tmp"))
    group = CpuCgroup(Path(f"/nonexistent/{index}"), v2=False)
    proc: Any = _Proc(alive)
    return RunningReplica(r, Command(["x"], pod_ip=f"127.0.1.{index + 1}"), group, proc, 0.0, pod=bound)


def test_live_replicas_get_the_newest_pods_and_keep_them() -> None:
    running = [replica(0), replica(1)]
    pods = [
        pod("old", "2026-01-01T00:00:00Z"),
        pod("new", "2026-01-02T00:00:00Z"),
        pod("mid", "2026-01-01T12:00:00Z"),
    ]
    assert bind(running, pods) == {"new": "127.0.1.1", "mid": "127.0.1.2"}
    newer = [*pods, pod("newest", "2026-01-03T00:00:00Z")]
    assert bind(running, newer) == {"new": "127.0.1.1", "mid": "127.0.1.2"}  # kept, not reshuffled


def test_a_dead_replica_or_a_deleted_pod_ends_the_binding() -> None:
    running = [replica(0, bound="a"), replica(1, alive=False, bound="b"), replica(2, bound="gone")]
    pods = [pod("a", "2026-01-01T00:00:00Z"), pod("b", "2026-01-02T00:00:00Z")]
    assert bind(running, pods) == {"a": "127.0.1.1", "b": "127.0.1.3"}
    assert running[1].pod is None


def test_an_unbound_replica_serves_no_cpu_series() -> None:
    assert replica(0).container_cpu() is None
    assert replica(0, alive=False, bound="a").container_cpu() is None


def test_a_bound_replica_serves_its_cgroups_counter(tmp_path: Path) -> None:
    (tmp_path / "stormscale" / "ns-d-0").mkdir(parents=True)
    group_dir = tmp_path / "stormscale" / "ns-d-0"
    (group_dir / "cpuacct.usage").write_text("2500000000\n")  # ns
    (group_dir / "cpu.cfs_quota_us").write_text("20000\n")
    (group_dir / "cpu.cfs_period_us").write_text("100000\n")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        r = RunningReplica(
            Replica("ns", "d", 0, CpuResources(200), {"name": "c", "image": "img"}, tmp_path),
            Command(["x"]),
            CpuCgroup(group_dir, v2=False),
            live,
            0.0,
            pod="d-abc",
        )
        cpu = r.container_cpu()
    finally:
        live.kill()
        live.wait()
    assert cpu == cadvisor.ContainerCpu("ns", "d-abc", "c", "img", "/stormscale/ns-d-0", 2.5, 20_000, 100_000)
