"""The layouts Storm runs: what Nimbus reports read as pods and workers, and a layout checked against
it (:mod:`stormscale.storm.placement`, which Stormscale's scheduler on Nimbus obeys). The layouts the
operator plans are :mod:`stormscale.operator.decision.placement`'s.

The layout that runs is the last one applied when Storm still runs it exactly (``status.placement``,
with its LIFO stack), else the one Nimbus reports (executors grouped by host, then port; no stack).
"""

from __future__ import annotations

from collections.abc import Sequence

from stormscale.operator.decision.placement import Pods, Running
from stormscale.operator.ports import Layout, StormTopologyState
from stormscale.operator.status import PlacementStatus
from stormscale.planner import Provisioned
from stormscale.storm.model import TopologyInfo, is_system
from stormscale.storm.placement import Placement, expected_workers, layout_problems


def observed(storm: StormTopologyState) -> Running:
    """What Nimbus reports: user executors grouped by host (a pod), then port (a worker), both sorted.

    Without an assignment (not known), every executor is its own worker and pod, host unknown.
    """
    user = [e for e in storm.assignment if not is_system(e.component)]
    if not user:
        alone: Pods = tuple(({cid: 1},) for cid, n in sorted(storm.executors.items()) for _ in range(n))
        return Running(alone, (None,) * len(alone))
    by_host: dict[str, dict[int, dict[str, int]]] = {}
    for e in user:
        worker = by_host.setdefault(e.host, {}).setdefault(e.port, {})
        worker[e.component] = worker.get(e.component, 0) + 1
    hosts = tuple(sorted(by_host))
    pods = tuple(tuple(by_host[h][port] for port in sorted(by_host[h])) for h in hosts)
    return Running(pods, hosts)


def running(previous: PlacementStatus | None, storm: StormTopologyState, topology: str) -> Running:
    """The last applied layout (and its stack) while Storm runs it exactly, else :func:`observed`."""
    if previous is None or not storm.assignment:
        return observed(storm)
    placement = as_placement(previous.counts())
    if problems(placement, storm, topology):
        return observed(storm)
    per_worker = expected_workers(placement, storm.assignment)
    hosts: list[str | None] = []
    index = 0
    for pod in placement.pods:
        found = {e.host for worker in per_worker[index : index + len(pod.workers)] for e in worker}
        hosts.append(found.pop() if len(found) == 1 else None)
        index += len(pod.workers)
    pods = tuple(
        tuple(user for worker in pod if (user := {c: n for c, n in worker.items() if not is_system(c)}))
        for pod in previous.counts()
    )
    stack = tuple(Provisioned(s.component, s.pod, s.worker) for s in previous.stack)
    return Running(pods, tuple(hosts), stack)


def as_placement(pods: Layout) -> Placement:
    """The layout as the placement value the rebalance carries (checked: every count ≥ 1)."""
    return Placement.of(pods)


def problems(placement: Placement, storm: StormTopologyState, topology: str) -> list[str]:
    """How what Nimbus reports differs from ``placement`` (empty: applied exactly)."""
    info = TopologyInfo(id="", name=topology, status=storm.status, uptime_s=0, executors=storm.assignment)
    return layout_problems(placement, info)


#: A message names at most this many of the problems it lists (then "…").
SHOWN_PROBLEMS = 3


def first_problems(problems: Sequence[str]) -> str:
    """The first :data:`SHOWN_PROBLEMS` problems joined by "; ", and "; …" when there are more."""
    more = "; …" if len(problems) > SHOWN_PROBLEMS else ""
    return "; ".join(problems[:SHOWN_PROBLEMS]) + more
