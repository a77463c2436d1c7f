"""The pod runner's CPU arithmetic, and the files it writes on either cgroup version.

The integration tests run on the machine's real hierarchy (cgroup v1 here); the layout tests below
use a scratch directory shaped like /sys/fs/cgroup to check the file formats of both versions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.kubernetes.cgroups import (
    Bandwidth,
    CpuCgroup,
    CpuResources,
    QuotaUse,
    parse_cpu_millis,
    quota_us,
    shares,
    weight,
)
from tests.harness.kubernetes.pod_runner import cpu_resources, match_labels_selector


@pytest.mark.parametrize(
    ("quantity", "millis"),
    [("500m", 500), ("1", 1000), ("0.25", 250), ("1.5", 1500), (2, 2000), ("100m", 100)],
)
def test_cpu_quantities_in_millicores(quantity: str | int, millis: int) -> None:
    assert parse_cpu_millis(quantity) == millis


def test_quota_is_the_limit_share_of_the_period() -> None:
    assert quota_us(500) == 50_000
    assert quota_us(1000) == 100_000
    assert quota_us(2500) == 250_000
    assert quota_us(1) == 1_000  # the kernel's minimum


def test_weights_follow_the_kubelet() -> None:
    assert shares(None) == 2
    assert shares(500) == 512
    assert shares(1000) == 1024
    assert weight(2) == 1
    assert weight(262_144) == 10_000
    assert weight(1024) == 39


def deployment(resources: dict[str, dict[str, str]]) -> dict[str, object]:
    container = {"name": "c", "resources": resources}
    return {
        "spec": {
            "selector": {"matchLabels": {"b": "2", "a": "1"}},
            "template": {"spec": {"containers": [container]}},
        }
    }


def test_request_defaults_to_the_limit() -> None:
    assert cpu_resources(deployment({"limits": {"cpu": "500m"}})) == CpuResources(500, 500)
    assert cpu_resources(deployment({"limits": {"cpu": "1"}, "requests": {"cpu": "250m"}})) == CpuResources(
        1000, 250
    )
    assert cpu_resources(deployment({})) == CpuResources(None, None)


def test_selector_from_match_labels() -> None:
    assert match_labels_selector(deployment({})) == "a=1,b=2"


def scratch_hierarchy(root: Path, v2: bool) -> Path:
    if v2:
        (root / "cgroup.controllers").write_text("cpu memory\n")
        (root / "cgroup.subtree_control").write_text("memory\n")
        (root / "pods").mkdir()
        (root / "pods" / "cgroup.subtree_control").write_text("")
    else:
        (root / "cpu").mkdir()
    return root


def test_v1_files(tmp_path: Path) -> None:
    group = CpuCgroup.create("pods", "ns-d-0", CpuResources(500, 250), fs=scratch_hierarchy(tmp_path, False))
    assert group.path == tmp_path / "cpu" / "pods" / "ns-d-0"
    assert (group.path / "cpu.cfs_quota_us").read_text() == "50000"
    assert (group.path / "cpu.cfs_period_us").read_text() == "100000"
    assert (group.path / "cpu.shares").read_text() == "256"
    assert group.limit() == (50_000, 100_000)
    group.apply(CpuResources(None, None))
    assert group.limit() == (None, 100_000)


def test_v2_files(tmp_path: Path) -> None:
    group = CpuCgroup.create("pods", "ns-d-0", CpuResources(1500, 1500), fs=scratch_hierarchy(tmp_path, True))
    assert group.path == tmp_path / "pods" / "ns-d-0"
    assert (group.path / "cpu.max").read_text() == "150000 100000"
    assert (group.path / "cpu.weight").read_text() == str(weight(1536))
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"
    assert (tmp_path / "pods" / "cgroup.subtree_control").read_text() == "+cpu"
    assert group.limit() == (150_000, 100_000)
    group.apply(CpuResources(None, None))
    assert (group.path / "cpu.max").read_text() == "max 100000"
    assert group.limit() == (None, 100_000)


def test_v1_with_cpuacct_apart_joins_a_twin_group_that_counts_cpu_time(tmp_path: Path) -> None:
    fs = scratch_hierarchy(tmp_path, False)
    (fs / "cpuacct").mkdir()
    group = CpuCgroup.create("pods", "ns-d-0", CpuResources(500, 500), fs=fs)
    assert group.acct == fs / "cpuacct" / "pods" / "ns-d-0"
    assert group.join_files == [group.path / "cgroup.procs", group.acct / "cgroup.procs"]
    (group.acct / "cpuacct.usage").write_text("2500000000\n")  # ns
    assert group.usage_us() == 2_500_000


def test_v1_without_cpuacct_and_v2_have_no_twin(tmp_path: Path) -> None:
    unit = CpuResources(500, 500)
    v1 = CpuCgroup.create("pods", "a", unit, fs=scratch_hierarchy(_mkdir(tmp_path / "v1"), False))
    assert v1.acct is None
    assert v1.join_files == [v1.path / "cgroup.procs"]
    v2 = CpuCgroup.create("pods", "a", unit, fs=scratch_hierarchy(_mkdir(tmp_path / "v2"), True))
    assert v2.acct is None
    (v2.path / "cpu.stat").write_text("usage_usec 1234567\nuser_usec 1000000\nnr_throttled 3\n")
    assert v2.usage_us() == 1_234_567
    assert v2.throttled_periods() == 3


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def test_quota_use_between_two_readings() -> None:
    before, after = Bandwidth(1_000_000, 100, 5), Bandwidth(1_950_000, 150, 55)
    use = QuotaUse.between(before, after, seconds=5.0, quota_cores=0.2)
    assert use.received_cores == pytest.approx(0.19)
    assert use.received_share == pytest.approx(0.95)
    assert use.throttled_share == pytest.approx(1.0)
    assert use.saturated
    assert not QuotaUse.between(before, Bandwidth(1_950_000, 150, 45), seconds=5.0, quota_cores=0.2).saturated
    idle = QuotaUse.between(after, Bandwidth(2_000_000, 160, 56), seconds=5.0, quota_cores=0.2)
    assert not idle.saturated
    assert QuotaUse.between(after, after, seconds=5.0, quota_cores=0.2).throttled_share == 0.0
