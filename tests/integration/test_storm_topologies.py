"""The benchmark topologies run on a real Storm cluster and tuples reach every sink.

Light settings (2 tasks per component, a few hundred microseconds of CPU per tuple, 20-40 tuples/s)
keep a run within the 2-core budget; counts come from Nimbus (stats sampled at rate 1.0).
Run by ``make bed-multilang``, not by ``make test``: multilang is the unusual case, and CI's time
budget goes to the JVM bolts and the Kafka source.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from stormscale.storm.model import ComponentAggregate
from tests.harness.process import marked_pids
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.topology import Topology, kill, submit, wait_for_stats

pytestmark = [pytest.mark.storm, pytest.mark.multilang_bed]

FIRST_TUPLES_TIMEOUT_S = 150.0
LIGHT = {"max.tasks": 2, "c1.tasks": 2, "c1.executors": 1}


@contextmanager
def running(cluster: StormCluster, shape: str, overrides: dict[str, object]) -> Iterator[Topology]:
    """Submit ``shape``, yield it, and kill it whatever happens."""
    topology = submit(cluster.endpoints, shape, {**LIGHT, **overrides})
    try:
        yield topology
    finally:
        kill(cluster.endpoints, topology.name)


def describe(pids: list[int]) -> list[str]:
    """Pid, state and command line of each process (for failure messages)."""
    out = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:300]
            out.append(f"{pid} {Path(f'/proc/{pid}/stat').read_text().split()[2]} {cmdline.decode()}")
        except OSError:
            out.append(f"{pid} (gone)")
    return out


def executed(stats: dict[str, ComponentAggregate], *components: str) -> int:
    """Tuples executed by ``components`` together (a component not reported yet counts 0)."""
    return sum(stats[c].executed for c in components if c in stats)


def test_linear_topology_sink_counts_grow(storm_cluster: StormCluster, storm_supervisor: str) -> None:
    overrides = {"topology.name": "it-linear", "c1.rate": 20, "c2.cost_us": 300, "c3.cost_us": 300}
    with running(storm_cluster, "linear", {**overrides, "c4.cost_us": 100}) as topo:
        ep = storm_cluster.endpoints
        first = wait_for_stats(ep, topo.id, lambda s: executed(s, "4") > 0, FIRST_TUPLES_TIMEOUT_S)
        later = wait_for_stats(ep, topo.id, lambda s: executed(s, "4") >= executed(first, "4") + 50, 60)
    assert {c: s.tasks for c, s in later.items()} == {"1": 2, "2": 2, "3": 2, "4": 2}
    assert later["1"].emitted >= later["2"].executed >= later["3"].executed >= later["4"].executed
    assert later["4"].emitted == 0, "the sink emits nothing"


def test_diamond_topology_splits_the_spout_evenly(storm_cluster: StormCluster, storm_supervisor: str) -> None:
    with running(storm_cluster, "diamond", {"topology.name": "it-diamond", "c1.rate": 40}) as topo:
        stats = wait_for_stats(
            storm_cluster.endpoints, topo.id, lambda s: executed(s, "4") >= 200, FIRST_TUPLES_TIMEOUT_S
        )
    left, right = executed(stats, "2"), executed(stats, "3")
    assert abs(left - right) <= 0.1 * (left + right) + 10, (left, right)
    assert executed(stats, "4") <= left + right


def test_topology10_feeds_all_six_sinks_in_thesis_proportions(
    storm_cluster: StormCluster, storm_supervisor: str
) -> None:
    costs = {f"c{c}.cost_us": 200 for c in range(2, 11)}
    with running(
        storm_cluster, "topology10", {"topology.name": "it-topology10", "c1.rate": 40, **costs}
    ) as topo:
        stats = wait_for_stats(
            storm_cluster.endpoints,
            topo.id,
            lambda s: all(executed(s, str(c)) >= 40 for c in range(5, 11)),
            FIRST_TUPLES_TIMEOUT_S + 60,
        )
    for parent, (big, small) in {"2": ("5", "6"), "3": ("7", "8"), "4": ("9", "10")}.items():
        total = executed(stats, big, small)
        # executors report on their own heartbeats: children may be a few tuples ahead of the parent
        assert total <= stats[parent].emitted * 1.05 + 20
        assert executed(stats, big) / total == pytest.approx(0.6, abs=0.08), (parent, stats)
    middle = executed(stats, "2", "3", "4")
    assert executed(stats, "2") / middle == pytest.approx(0.45, abs=0.08)
    assert executed(stats, "4") / middle == pytest.approx(0.22, abs=0.08)


def test_two_workers_on_two_supervisors_and_stopping_one_ends_its_worker(
    storm_cluster: StormCluster, storm_supervisor: str
) -> None:
    name = "it-second-supervisor"
    spec_marker = storm_cluster.launcher(name).marker
    storm_cluster.start_supervisor(name)
    try:
        overrides = {"topology.name": "it-two-workers", "topology.workers": 2, "c1.rate": 20}
        with running(storm_cluster, "linear", overrides) as topo:
            stats = wait_for_stats(
                storm_cluster.endpoints, topo.id, lambda s: executed(s, "4") >= 100, FIRST_TUPLES_TIMEOUT_S
            )
            info = storm_cluster.nimbus.topology(topo.name)
            on_second = marked_pids(spec_marker)
            storm_cluster.stop_supervisor(name)
            left = marked_pids(spec_marker)
    finally:
        storm_cluster.stop_supervisor(name)
    assert info is not None
    assert info.workers == 2
    assert (
        stats["1"].emitted > 0
    )  # workers report separately, so counts of different components are not comparable
    assert len(on_second) >= 3, "the second supervisor runs a worker with multilang children"
    assert left == [], f"processes left after stopping the supervisor: {describe(left)}"
