"""The placement the operator hands to Nimbus: which executors run together in which worker of which pod.

The contract with Stormscale's scheduler (``scheduler/``, a Java ``IScheduler`` on Nimbus), version 1,
is in docs/scheduler.md. A placement travels in the topology conf under :data:`PLACEMENT_KEY` as a
JSON string, given at submit time or set by a rebalance (``topology_conf_overrides``, see
:meth:`Placement.conf_overrides`)::

    {"version": 1,
     "pods": [{"workers": [{"2": 1, "__acker": 1}, {"3": 2}]},
              {"workers": [{"4": 1}], "supervisor": "10.0.0.7"}]}

* a pod is one Supervisor (distinct pods, distinct Supervisors); ``supervisor`` (optional) pins it to
  the Supervisor with that hostname, as Nimbus reports it;
* a worker is one slot of its pod's Supervisor: component id -> how many of its executors run there;
* every executor is placed exactly once (:meth:`Placement.coverage_problems`); ``__system`` is never
  placed (Storm adds one to every worker);
* a component's executors, in ascending start-task order, fill the workers that list it in the order
  listed (pods in order, then their workers in order): :func:`expected_workers`.

The API: build with :meth:`Placement.of`, write with :meth:`Placement.to_json`, read with
:func:`parse`, check against a topology with :meth:`Placement.check_covers` (executor counts from
:func:`executor_counts`), apply with :func:`rebalance_request` (``NimbusClient.rebalance`` checks it
with :func:`override_problems`), and check what Nimbus reports with :func:`layout_problems`. Every
error is a :class:`PlacementError` with a one-line message. Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stormscale.storm.model import SYSTEM_COMPONENT, Executor, RebalanceRequest, TopologyInfo

#: The topology conf key that carries the placement (a JSON string).
PLACEMENT_KEY = "stormscale.placement"
#: The version of the format this module reads and writes.
FORMAT_VERSION = 1
#: Components a placement never lists: Storm adds one ``__system`` executor to every worker itself.
UNPLACED = frozenset({SYSTEM_COMPONENT})
#: The largest executor count (Storm's executor ids are Java ints).
MAX_COUNT = 2**31 - 1

_TOP_KEYS = frozenset({"version", "pods"})
_POD_KEYS = frozenset({"workers", "supervisor"})


class PlacementError(ValueError):
    """A placement that cannot be read, or that does not fit a topology; ``str()`` is one line."""


@dataclass(frozen=True)
class Worker:
    """One worker (one slot): ``(component, executors)`` pairs sorted by component, counts >= 1."""

    executors: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, counts: Mapping[str, int]) -> Worker:
        """A worker running ``counts[c]`` executors of each component ``c`` (checked)."""
        worker = cls(tuple(sorted(counts.items())))
        _check_worker(worker, "worker")
        return worker

    @property
    def counts(self) -> dict[str, int]:
        """Component -> executors in this worker."""
        return dict(self.executors)


@dataclass(frozen=True)
class Pod:
    """One worker pod (one Supervisor): its workers in order, and the Supervisor it is pinned to, if any."""

    workers: tuple[Worker, ...]
    supervisor: str | None = None


@dataclass(frozen=True)
class Placement:
    """Pods in order, each with its workers in order (version :data:`FORMAT_VERSION`)."""

    pods: tuple[Pod, ...]

    @classmethod
    def of(
        cls, pods: Sequence[Sequence[Mapping[str, int]]], supervisors: Sequence[str | None] = ()
    ) -> Placement:
        """A placement from each pod's workers (component -> executors), with ``supervisors[i]`` (if
        given) pinning pod ``i``; raises :class:`PlacementError` for anything :func:`parse` refuses."""
        if len(supervisors) > len(pods):
            raise PlacementError(f"{PLACEMENT_KEY}: {len(supervisors)} supervisors for {len(pods)} pods")
        pins = [*supervisors, *[None] * (len(pods) - len(supervisors))]
        placement = cls(
            tuple(
                Pod(tuple(Worker(tuple(sorted(w.items()))) for w in ws), pin)
                for ws, pin in zip(pods, pins, strict=True)
            )
        )
        _check(placement)
        return placement

    @property
    def workers(self) -> int:
        """How many workers (slots) the placement uses: the rebalance's ``num_workers``."""
        return sum(len(pod.workers) for pod in self.pods)

    def executors(self) -> dict[str, int]:
        """Executors placed per component: the rebalance's ``num_executors`` (sorted by component)."""
        total: Counter[str] = Counter()
        for pod in self.pods:
            for worker in pod.workers:
                total.update(worker.counts)
        return dict(sorted(total.items()))

    def to_json(self) -> str:
        """The placement as its compact JSON string (keys sorted; pods and workers in order)."""
        pods: list[dict[str, Any]] = []
        for pod in self.pods:
            entry: dict[str, Any] = {"workers": [worker.counts for worker in pod.workers]}
            if pod.supervisor is not None:
                entry["supervisor"] = pod.supervisor
            pods.append(entry)
        return json.dumps({"version": FORMAT_VERSION, "pods": pods}, separators=(",", ":"), sort_keys=True)

    def conf_overrides(self) -> str:
        """The rebalance's ``topology_conf_overrides``: ``{"stormscale.placement": "<to_json()>"}``."""
        return json.dumps({PLACEMENT_KEY: self.to_json()}, separators=(",", ":"))

    def coverage_problems(self, executors: Mapping[str, int]) -> list[str]:
        """Why this placement does not place a topology with ``executors`` per component (system
        components included, ``__system`` ignored) exactly once each; empty if it does."""
        placed = self.executors()
        wanted = {c: n for c, n in executors.items() if c not in UNPLACED}
        problems = []
        for component in sorted(set(placed) | set(wanted)):
            have, want = placed.get(component, 0), wanted.get(component, 0)
            if want == 0:
                problems.append(f"component {component!r} is not in the topology")
            elif have != want:
                problems.append(f"component {component!r}: {have} executors placed, the topology has {want}")
        return problems

    def check_covers(self, executors: Mapping[str, int]) -> None:
        """Raise :class:`PlacementError` naming every coverage problem (see :meth:`coverage_problems`)."""
        problems = self.coverage_problems(executors)
        if problems:
            raise PlacementError(f"{PLACEMENT_KEY} does not cover the topology: " + "; ".join(problems))


def parse(text: str) -> Placement:
    """The placement in ``text`` (the conf value's JSON); :class:`PlacementError` naming the first
    problem: not JSON, a duplicate or unknown key, a wrong version, an empty list, a bad count."""
    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, TypeError, RecursionError) as err:
        raise PlacementError(f"{PLACEMENT_KEY} is not JSON: {_first_line(err)}") from None
    top = _object(doc, "the placement", _TOP_KEYS)
    version = top.get("version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise PlacementError(f"{PLACEMENT_KEY}: version must be {FORMAT_VERSION}, got {_show(version)}")
    pods: list[Pod] = []
    pinned: dict[str, int] = {}
    for i, raw_pod in enumerate(_list(top.get("pods"), "pods")):
        where = f"pods[{i}]"
        pod = _object(raw_pod, where, _POD_KEYS)
        supervisor = pod.get("supervisor")
        if supervisor is not None and (not isinstance(supervisor, str) or not supervisor):
            raise PlacementError(
                f"{PLACEMENT_KEY}: {where}.supervisor must be a hostname, got {_show(supervisor)}"
            )
        workers = []
        for j, raw_worker in enumerate(_list(pod.get("workers"), f"{where}.workers")):
            counts = _object(raw_worker, f"{where}.workers[{j}]", None)
            workers.append(Worker(tuple(sorted(counts.items()))))
        pods.append(Pod(tuple(workers), supervisor))
        _check_pod(pods[-1], i, pinned)
    return Placement(tuple(pods))


def rebalance_request(placement: Placement, wait_secs: int = 0) -> RebalanceRequest:
    """The rebalance that applies ``placement``: its executors per component (system ones included),
    its worker count, and the placement itself in the conf overrides, in one call."""
    return RebalanceRequest(
        wait_secs=wait_secs,
        workers=placement.workers,
        executors=placement.executors(),
        conf_overrides={PLACEMENT_KEY: placement.to_json()},
    )


def override_problems(request: RebalanceRequest, info: TopologyInfo) -> list[str]:
    """What is wrong with the placement among ``request``'s conf overrides, if any: unreadable, another
    worker count than the request's, or not covering the executors the topology (``info``) has after
    the request; empty without a placement."""
    if PLACEMENT_KEY not in request.conf_overrides:
        return []
    text = request.conf_overrides[PLACEMENT_KEY]
    if not isinstance(text, str):
        return [f"{PLACEMENT_KEY} must be a JSON string, got {_show(text)}"]
    try:
        placement = parse(text)
    except PlacementError as err:
        return [str(err)]
    problems = []
    if request.workers is not None and request.workers != placement.workers:
        problems.append(
            f"{PLACEMENT_KEY} has {placement.workers} workers, the rebalance asks for {request.workers}"
        )
    after = {**executor_counts(info), **request.executors}
    problems += [f"{PLACEMENT_KEY}: {p}" for p in placement.coverage_problems(after)]
    return problems


def executor_counts(info: TopologyInfo) -> dict[str, int]:
    """Executors per component of a running topology as a placement must cover them: user and system
    components, ``__system`` left out (sorted by component)."""
    return dict(sorted(Counter(e.component for e in info.executors if e.component not in UNPLACED).items()))


def expected_workers(placement: Placement, executors: Sequence[Executor]) -> list[list[Executor]]:
    """Which executors each worker of ``placement`` runs (workers in order: pods, then their workers):
    each component's executors in ascending start-task order fill the workers that list it, in order.
    ``executors`` must be covered exactly (:meth:`Placement.check_covers`)."""
    queues: dict[str, list[Executor]] = defaultdict(list)
    for executor in sorted(executors, key=lambda e: (e.component, e.task_start)):
        if executor.component not in UNPLACED:
            queues[executor.component].append(executor)
    workers = []
    for pod in placement.pods:
        for worker in pod.workers:
            mine = []
            for component, count in worker.executors:
                mine += queues[component][:count]
                del queues[component][:count]
            workers.append(mine)
    return workers


def layout_problems(placement: Placement, info: TopologyInfo) -> list[str]:
    """How the executors Nimbus reports (``getTopologyInfo``: executor -> host:port) differ from
    ``placement``; empty when it is applied exactly: each worker's executors (:func:`expected_workers`)
    run in one slot with nothing else, each pod's workers on one host, pods on distinct hosts, a pinned
    pod on its Supervisor."""
    problems = placement.coverage_problems(executor_counts(info))
    if problems:
        return problems
    in_slot: dict[tuple[str, int], set[tuple[str, int]]] = defaultdict(set)
    for e in info.executors:
        if e.component not in UNPLACED:
            in_slot[(e.host, e.port)].add((e.component, e.task_start))
    expected = expected_workers(placement, info.executors)
    first = 0
    pod_of_host: dict[str, int] = {}
    for i, pod in enumerate(placement.pods):
        hosts = set()
        for j, worker in enumerate(expected[first : first + len(pod.workers)]):
            slots = {(e.host, e.port) for e in worker}
            hosts |= {host for host, _ in slots}
            if len(slots) != 1 or in_slot[slots.pop()] != {(e.component, e.task_start) for e in worker}:
                where = ", ".join(f"{e.component}[{e.task_start}]@{e.host}:{e.port}" for e in worker)
                problems.append(f"pods[{i}].workers[{j}] does not run alone in one slot ({where})")
        first += len(pod.workers)
        if len(hosts) != 1:
            problems.append(f"pods[{i}]: workers on {len(hosts)} hosts ({', '.join(sorted(hosts))})")
            continue
        (host,) = hosts
        if host in pod_of_host:
            problems.append(f"pods[{pod_of_host[host]}] and pods[{i}] share host {host}")
        pod_of_host.setdefault(host, i)
        if pod.supervisor is not None and pod.supervisor != host:
            problems.append(f"pods[{i}]: on {host}, pinned to {pod.supervisor}")
    return problems


def _check(placement: Placement) -> None:
    """What :func:`parse` checks beyond the JSON's shape, pod by pod (the first problem in document
    order, as the scheduler reports it): non-empty lists, counts, names, distinct pins."""
    if not placement.pods:
        raise PlacementError(f"{PLACEMENT_KEY}: pods must not be empty")
    pinned: dict[str, int] = {}
    for i, pod in enumerate(placement.pods):
        _check_pod(pod, i, pinned)


def _check_pod(pod: Pod, i: int, pinned: dict[str, int]) -> None:
    """Check pod ``i``; ``pinned`` maps the Supervisors earlier pods are pinned to to their index."""
    if not pod.workers:
        raise PlacementError(f"{PLACEMENT_KEY}: pods[{i}].workers must not be empty")
    for j, worker in enumerate(pod.workers):
        _check_worker(worker, f"pods[{i}].workers[{j}]")
    if pod.supervisor is not None:
        if not pod.supervisor:
            raise PlacementError(f"{PLACEMENT_KEY}: pods[{i}].supervisor must be a hostname, got ''")
        if pod.supervisor in pinned:
            raise PlacementError(
                f"{PLACEMENT_KEY}: pods[{pinned[pod.supervisor]}] and pods[{i}] are both pinned to "
                f"{pod.supervisor!r} (pods are distinct Supervisors)"
            )
        pinned[pod.supervisor] = i


def _check_worker(worker: Worker, where: str) -> None:
    if not worker.executors:
        raise PlacementError(f"{PLACEMENT_KEY}: {where} must not be empty")
    for component, count in worker.executors:
        if not isinstance(component, str) or not component:
            raise PlacementError(f"{PLACEMENT_KEY}: {where}: component ids must be non-empty strings")
        if component in UNPLACED:
            raise PlacementError(
                f"{PLACEMENT_KEY}: {where}: {component!r} is never placed (Storm adds it to every worker)"
            )
        if type(count) is not int or not 1 <= count <= MAX_COUNT:
            raise PlacementError(
                f"{PLACEMENT_KEY}: {where}: {component!r} needs a whole number of executors >= 1, "
                f"got {_show(count)}"
            )


def _object(value: object, where: str, keys: frozenset[str] | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlacementError(f"{PLACEMENT_KEY}: {where} must be a JSON object, got {_show(value)}")
    unknown = sorted(set(value) - keys) if keys is not None else []
    if unknown:
        raise PlacementError(
            f"{PLACEMENT_KEY}: {where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(keys or ()))})"
        )
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise PlacementError(f"{PLACEMENT_KEY}: {where} must be a non-empty JSON list, got {_show(value)}")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted(key for key, n in Counter(keys).items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate key {duplicates[0]!r}")
    return dict(pairs)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _show(value: object) -> str:
    """A short rendering of a JSON value for an error message."""
    if value is None:
        return "nothing"
    try:
        text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    except (TypeError, ValueError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:39] + "…"


def _first_line(err: BaseException) -> str:
    lines = str(err).splitlines()
    return lines[0] if lines else type(err).__name__
