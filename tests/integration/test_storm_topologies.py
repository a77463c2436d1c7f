"""The benchmark topologies run on a real Storm cluster and tuples reach every sink.

Light settings (2 tasks per component, a few hundred microseconds of CPU per tuple, 20-40 tuples/s)
keep a run within the 2-core budget; counts come from Nimbus (stats sampled at rate 1.0).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.harness.nimbus_client import ComponentStats
from tests.harness.storm_cluster import StormCluster
from tests.harness.storm_topology import Topology, kill, submit, wait_for_stats

pytestmark = pytest.mark.storm

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


def executed(stats: dict[str, ComponentStats], *components: str) -> int:
    """Tuples executed by ``components`` together."""
    return sum(stats[c].executed for c in components)


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
        assert total <= stats[parent].emitted
        assert executed(stats, big) / total == pytest.approx(0.6, abs=0.08), (parent, stats)
    middle = executed(stats, "2", "3", "4")
    assert executed(stats, "2") / middle == pytest.approx(0.45, abs=0.08)
    assert executed(stats, "4") / middle == pytest.approx(0.22, abs=0.08)
