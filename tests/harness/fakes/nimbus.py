"""A fake Nimbus: Storm 2.8's Thrift service with the project's IDL (``storm/nimbus.thrift``) over the
framed binary protocol, for a fleet of topologies that each run a planner profile's graph.

It answers the calls the operator and the exporter make, as Nimbus does:

* ``getClusterInfo``: the Supervisors (their slots, the used ones spread evenly), every topology's
  summary, and itself as the leader;
* ``getTopologySummaries``; ``getTopologyInfoByNameWithOpts``: each user component's executors
  (contiguous task ranges, larger first, as Storm splits them) placed on the Supervisors' hosts, an
  ``__acker`` and a ``__system`` executor, and each executor's stats over Storm's four windows from
  the profile's backpressure rates at the executors that run;
* ``getTopologyPageInfo`` (per-component aggregates) and ``getUserTopology`` (the submitted graph,
  shuffle groupings on ``default``);
* ``getTopologyConf``: the conf set by rebalances over load-aware messaging off (the fake splits a
  shuffle grouping evenly, as Storm does with it off);
* ``rebalance``: the topology is ``REBALANCING`` for the request's ``wait_secs``, then runs the new
  executors and workers (new executor ids, uptime from 0) with the request's conf overrides merged
  into its conf. Each accepted request is kept, with the time it arrived on the fake's clock and its
  conf overrides (:attr:`Fleet.requests`: bench/reaction.py's apply → rebalance).
* placement: a topology whose conf has a ``stormscale.placement`` that covers its executors runs
  them as it says (pod i on its pinned host, else on a Supervisor of its own; worker j on port
  6700 + j), as Stormscale's scheduler does; ``sched_status`` says which.

Faults a real Nimbus shows only now and then (bench/operator_faults.py): :attr:`Fleet.down`
(every connection is closed at once, as while Nimbus restarts), :meth:`Fleet.lose_in_flight` (a
restart forgets the rebalances still in their wait: the topology runs what it ran, ``ACTIVE``, as
STORM-3516 lost them) and :attr:`Fleet.lose_next` (the next rebalances are accepted and never run).

An unknown topology raises ``NotAliveException``; a rebalance naming an unknown component or more
executors than tasks raises ``InvalidTopologyException``. Kill, activate and deactivate are not served.
"""

from __future__ import annotations

import dataclasses
import json
import socketserver
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from thriftpy2.protocol import binary
from thriftpy2.thrift import TProcessor
from thriftpy2.transport import TTransportException, framed
from thriftpy2.transport import socket as tsocket

from stormscale.planner import FlowModel, Topology, evaluate
from stormscale.storm import placement as placement_format
from stormscale.storm.idl import NIMBUS
from stormscale.storm.model import Executor
from stormscale.storm.placement import PLACEMENT_KEY

VERSION = "2.8.3"
WINDOWS = (":all-time", "600", "10800", "86400")
FIRST_PORT = 6700
ACKER = "__acker"
# thriftpy2's untyped pure-Python transports and protocol, as ``Any`` for mypy.
_TSocket: Any = tsocket.TSocket
_TFramedTransport: Any = framed.TFramedTransport
_TBinaryProtocol: Any = binary.TBinaryProtocol


def task_ranges(first_task: int, tasks: int, executors: int) -> list[tuple[int, int]]:
    """Storm's split of ``tasks`` consecutive task ids over ``executors``: contiguous, larger first.

    base, extra = divmod(tasks, executors); executor i holds base + (1 if i < extra else 0)
    """
    base, extra = divmod(tasks, executors)
    out, task = [], first_task
    for i in range(executors):
        size = base + (1 if i < extra else 0)
        out.append((task, task + size - 1))
        task += size
    return out


def component_rates(profile: Topology, executors: Mapping[str, int]) -> dict[str, tuple[float, float]]:
    """Per component (executed, emitted) tuples/s at ``executors`` units, the backpressure model's
    (a spout executes nothing)."""
    units = tuple(executors[c.id] for c in profile.components)
    state = evaluate(profile, units, FlowModel.BACKPRESSURE)
    return {
        c.id: (0.0 if c.is_spout else f.processed, f.output)
        for c, f in zip(profile.components, state.components, strict=True)
    }


@dataclass
class RunningTopology:
    """One topology as Nimbus holds it."""

    name: str
    profile: Topology
    tasks: dict[str, int]
    executors: dict[str, int]
    workers: int
    index: int
    submitted_s: float
    started_s: float
    status: str = "ACTIVE"
    #: A rebalance in progress: (when it ends, executors, workers, conf overrides).
    rebalancing: tuple[float, dict[str, int], int, dict[str, Any]] | None = None
    #: The topology conf's keys set by rebalances (``topology_conf_overrides``).
    conf: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.name}-1-{int(self.submitted_s)}"

    def settle(self, now: float) -> None:
        """Finish a rebalance whose wait has passed: new executors, new workers, uptime from 0."""
        if self.rebalancing is not None and now >= self.rebalancing[0]:
            _, self.executors, self.workers, overrides = self.rebalancing
            self.conf.update(overrides)
            self.rebalancing, self.status, self.started_s = None, "ACTIVE", now


@dataclass(frozen=True)
class Rebalanced:
    """A rebalance Nimbus accepted: when it arrived (the fleet's clock, as the call was decoded), for
    which topology, the executors and workers it asked for, and its conf overrides (parsed)."""

    at: float
    name: str
    executors: dict[str, int]
    workers: int
    conf_overrides: dict[str, Any] = field(default_factory=dict)
    #: Accepted and then forgotten (:attr:`Fleet.lose_next`, :meth:`Fleet.lose_in_flight`).
    lost: bool = False


@dataclass
class Fleet:
    """Nimbus's state: the topologies and the Supervisors (``supervisors`` × ``slots`` worker slots)."""

    host: str
    port: int
    supervisors: int = 100
    slots: int = 24
    clock: Callable[[], float] = time.time
    topologies: dict[str, RunningTopology] = field(default_factory=dict)
    rebalances: int = 0
    #: Every accepted rebalance, in arrival order.
    requests: list[Rebalanced] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    started_s: float = field(default_factory=time.time)
    #: While True every connection is closed at once (Nimbus restarting).
    down: bool = False
    #: This many of the next rebalances are accepted and forgotten at once.
    lose_next: int = 0

    def lose_in_flight(self) -> list[str]:
        """A restart forgets every rebalance still in its wait: each such topology runs what it ran
        (``ACTIVE``), and its last request is marked lost; the names of those topologies."""
        now, lost = self.clock(), []
        with self.lock:
            for t in self.topologies.values():
                t.settle(now)
                if t.rebalancing is not None:
                    t.rebalancing, t.status = None, "ACTIVE"
                    lost.append(t.name)
            for name in lost:
                last = max(i for i, r in enumerate(self.requests) if r.name == name)
                self.requests[last] = dataclasses.replace(self.requests[last], lost=True)
        return lost

    def submit(
        self, name: str, profile: Topology, tasks: Mapping[str, int], submitted_s: float | None = None
    ) -> None:
        """Run topology ``name`` with ``profile``'s units as executors (one worker per executor),
        submitted at ``submitted_s`` (default now)."""
        executors = {c.id: c.units for c in profile.components}
        now = self.clock() if submitted_s is None else submitted_s
        with self.lock:
            index = self.topologies[name].index if name in self.topologies else len(self.topologies)
            self.topologies[name] = RunningTopology(
                name, profile, dict(tasks), executors, sum(executors.values()), index, now, now
            )

    def restart(self, name: str) -> None:
        """Run topology ``name`` as submitted again: the profile's units, no rebalance under way."""
        with self.lock:
            t = self.topologies[name]
            t.executors = {c.id: c.units for c in t.profile.components}
            t.workers, t.rebalancing, t.status = sum(t.executors.values()), None, "ACTIVE"
            t.conf.clear()
            t.started_s = self.clock()

    def host_of(self, index: int) -> str:
        return f"10.1.{index // 250}.{index % 250 + 1}"

    def running(self, name: str) -> RunningTopology:
        """The topology ``name`` as of now (a finished rebalance applied); NotAliveException if none."""
        topology = self.topologies.get(name)
        if topology is None:
            raise NIMBUS.NotAliveException(msg=f"{name} is not alive")
        topology.settle(self.clock())
        return topology

    def by_id(self, topology_id: str) -> RunningTopology:
        found = next((t for t in self.topologies.values() if t.id == topology_id), None)
        if found is None:
            raise NIMBUS.NotAliveException(msg=f"{topology_id} is not alive")
        return self.running(found.name)


def _uptime(since: float, now: float) -> int:
    return max(0, int(now - since))


def summary(t: RunningTopology, now: float) -> Any:
    """A TopologySummary."""
    user = sum(t.tasks.values())
    return NIMBUS.TopologySummary(
        id=t.id,
        name=t.name,
        num_tasks=user + 2,
        num_executors=sum(t.executors.values()) + 2,
        num_workers=t.workers,
        uptime_secs=_uptime(t.submitted_s, now),
        status=t.status,
    )


def _count(rate: float, window: str, elapsed_s: float) -> int:
    """Tuples counted over ``window`` (seconds, or all time): rate × min(elapsed, window), from the
    time the executor has run to the sub-second (its whole-second uptime would make the counts move
    in steps of up to a second's tuples between two scrapes)."""
    span = elapsed_s if window == ":all-time" else min(elapsed_s, float(window))
    return round(rate * span)


def executor_stats(executed: float, emitted: float, parents: list[str], latency_ms: float, up: float) -> Any:
    """An ExecutorStats of one executor that has run ``up`` seconds: ``executed`` tuples/s split
    evenly over ``parents``' default streams (a bolt) or none (a spout), ``emitted`` tuples/s on
    ``default``."""
    out = {w: {"default": _count(emitted, w, up)} for w in WINDOWS}
    if not parents:
        acked = {w: {"default": _count(emitted, w, up)} for w in WINDOWS}
        spout = NIMBUS.SpoutStats(
            acked=acked,
            failed={w: {} for w in WINDOWS},
            complete_ms_avg={w: {"default": 5.0} for w in WINDOWS},
        )
        specific = NIMBUS.ExecutorSpecificStats(spout=spout)
    else:
        streams = [NIMBUS.GlobalStreamId(componentId=p, streamId="default") for p in parents]
        share = executed / len(parents)
        counts = {w: {s: _count(share, w, up) for s in streams} for w in WINDOWS}
        means = {w: dict.fromkeys(streams, latency_ms) for w in WINDOWS}
        bolt = NIMBUS.BoltStats(
            acked=counts,
            failed={w: {} for w in WINDOWS},
            process_ms_avg=means,
            executed=counts,
            execute_ms_avg=means,
        )
        specific = NIMBUS.ExecutorSpecificStats(bolt=bolt)
    return NIMBUS.ExecutorStats(emitted=out, transferred=out, specific=specific, rate=1.0)


def topology_info(fleet: Fleet, t: RunningTopology, now: float) -> Any:
    """A TopologyInfo: every executor with its host, port, uptime and stats."""
    rates = component_rates(t.profile, t.executors)
    up, elapsed = _uptime(t.started_s, now), max(0.0, now - t.started_s)
    executors, task, slot = [], 1, 0
    for v, c in enumerate(t.profile.components):
        parents = [t.profile.components[p].id for p, _ in t.profile.parents[v]]
        n = t.executors[c.id]
        executed, emitted = rates[c.id]
        latency = 1000.0 / c.capacity_per_unit if c.capacity_per_unit else 0.0
        for start, end in task_ranges(task, t.tasks[c.id], n):
            worker = slot % t.workers
            slot += 1
            stats = executor_stats(executed / n, emitted / n, parents, latency, elapsed)
            executors.append(_executor(fleet, t, c.id, (start, end), worker=worker, up=up, stats=stats))
        task += t.tasks[c.id]
    executors.append(_executor(fleet, t, ACKER, (task, task), worker=0, up=up, stats=None))
    status = _place(fleet, t, executors)
    executors.append(_executor(fleet, t, "__system", (-1, -1), worker=0, up=up, stats=None))
    return NIMBUS.TopologyInfo(
        id=t.id,
        name=t.name,
        uptime_secs=_uptime(t.submitted_s, now),
        executors=executors,
        status=t.status,
        sched_status=status,
    )


def _place(fleet: Fleet, t: RunningTopology, executors: list[Any]) -> str:
    """Move ``executors`` to the hosts and ports of the topology's placement, if its conf has one that
    covers them; the scheduler's status either way."""
    if PLACEMENT_KEY not in t.conf:
        return ""
    try:
        placement = placement_format.parse(t.conf[PLACEMENT_KEY])
        placement.check_covers(Counter(e.component_id for e in executors))
    except placement_format.PlacementError as err:
        return f"{err}: scheduled by DefaultScheduler"
    by_task = {(e.component_id, e.executor_info.task_start): e for e in executors}
    ids = [Executor(e.component_id, e.executor_info.task_start, 0, "", 0, 0) for e in executors]
    workers = iter(placement_format.expected_workers(placement, ids))
    for i, pod in enumerate(placement.pods):
        host = pod.supervisor or fleet.host_of((t.index * 7 + i) % fleet.supervisors)
        for port, _ in enumerate(pod.workers, start=FIRST_PORT):
            for e in next(workers):
                by_task[(e.component, e.task_start)].host = host
                by_task[(e.component, e.task_start)].port = port
    return f"placed as {PLACEMENT_KEY} says"


def _executor(
    fleet: Fleet,
    t: RunningTopology,
    component: str,
    tasks: tuple[int, int],
    *,
    worker: int,
    up: int,
    stats: Any,
) -> Any:
    supervisor = (t.index * 7 + worker) % fleet.supervisors
    return NIMBUS.ExecutorSummary(
        executor_info=NIMBUS.ExecutorInfo(task_start=tasks[0], task_end=tasks[1]),
        component_id=component,
        host=fleet.host_of(supervisor),
        port=FIRST_PORT + (t.index + worker) % fleet.slots,
        uptime_secs=up,
        stats=stats,
    )


def user_topology(t: RunningTopology) -> Any:
    """The submitted graph: each component's inputs (shuffle on its parents' ``default``) and streams."""
    spouts, bolts = {}, {}
    stream = {"default": NIMBUS.StreamInfo(output_fields=["value"], direct=False)}
    for v, c in enumerate(t.profile.components):
        inputs = {
            NIMBUS.GlobalStreamId(
                componentId=t.profile.components[p].id, streamId="default"
            ): NIMBUS.Grouping(shuffle=NIMBUS.NullStruct())
            for p, _ in t.profile.parents[v]
        }
        common = NIMBUS.ComponentCommon(inputs=inputs, streams=stream, parallelism_hint=c.units)
        if c.is_spout:
            spouts[c.id] = NIMBUS.SpoutSpec(common=common)
        else:
            bolts[c.id] = NIMBUS.Bolt(common=common)
    return NIMBUS.StormTopology(spouts=spouts, bolts=bolts)


def page_info(t: RunningTopology, window: str, now: float) -> Any:
    """A TopologyPageInfo over ``window``: per-component executors, tasks and counts."""
    rates = component_rates(t.profile, t.executors)
    up = max(0.0, now - t.started_s)
    spouts, bolts = {}, {}
    for c in t.profile.components:
        executed, emitted = rates[c.id]
        common = NIMBUS.CommonAggregateStats(
            num_executors=t.executors[c.id],
            num_tasks=t.tasks[c.id],
            emitted=_count(emitted, window, up),
            transferred=_count(emitted, window, up),
            acked=_count(executed or emitted, window, up),
            failed=0,
        )
        if c.is_spout:
            specific = NIMBUS.SpecificAggregateStats(
                spout=NIMBUS.SpoutAggregateStats(complete_latency_ms=5.0)
            )
            spouts[c.id] = NIMBUS.ComponentAggregateStats(
                type=2, common_stats=common, specific_stats=specific
            )
        else:
            latency = 1000.0 / c.capacity_per_unit if c.capacity_per_unit else 0.0
            capacity = executed * latency / 1000.0 / t.executors[c.id]
            bolt = NIMBUS.BoltAggregateStats(
                execute_latency_ms=latency,
                process_latency_ms=latency,
                executed=_count(executed, window, up),
                capacity=capacity,
            )
            specific = NIMBUS.SpecificAggregateStats(bolt=bolt)
            bolts[c.id] = NIMBUS.ComponentAggregateStats(type=1, common_stats=common, specific_stats=specific)
    return NIMBUS.TopologyPageInfo(
        id=t.id,
        name=t.name,
        uptime_secs=_uptime(t.submitted_s, now),
        status=t.status,
        num_tasks=sum(t.tasks.values()),
        num_workers=t.workers,
        num_executors=sum(t.executors.values()),
        id_to_spout_agg_stats=spouts,
        id_to_bolt_agg_stats=bolts,
    )


class NimbusHandler:
    """The Thrift service's methods (thriftpy2 calls them by their IDL names)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def getClusterInfo(self) -> Any:  # noqa: N802 - the IDL's name
        fleet, now = self.fleet, self.fleet.clock()
        with fleet.lock:
            for t in fleet.topologies.values():
                t.settle(now)
            topologies = [summary(t, now) for t in fleet.topologies.values()]
            used = sum(t.workers for t in fleet.topologies.values())
        base, extra = divmod(used, fleet.supervisors)
        supervisors = [
            NIMBUS.SupervisorSummary(
                host=fleet.host_of(i),
                uptime_secs=_uptime(fleet.started_s, now),
                num_workers=fleet.slots,
                num_used_workers=min(fleet.slots, base + (1 if i < extra else 0)),
                supervisor_id=f"supervisor-{i:04d}",
            )
            for i in range(fleet.supervisors)
        ]
        leader = NIMBUS.NimbusSummary(
            host=fleet.host,
            port=fleet.port,
            uptime_secs=_uptime(fleet.started_s, now),
            isLeader=True,
            version=VERSION,
        )
        return NIMBUS.ClusterSummary(supervisors=supervisors, topologies=topologies, nimbuses=[leader])

    def getTopologySummaries(self) -> Any:  # noqa: N802 - the IDL's name
        now = self.fleet.clock()
        with self.fleet.lock:
            for t in self.fleet.topologies.values():
                t.settle(now)
            return [summary(t, now) for t in self.fleet.topologies.values()]

    def getTopologyInfoByNameWithOpts(self, name: str, options: Any) -> Any:  # noqa: N802 - the IDL's name
        with self.fleet.lock:
            return topology_info(self.fleet, self.fleet.running(name), self.fleet.clock())

    def getTopologyPageInfo(self, topology_id: str, window: str, is_include_sys: bool) -> Any:  # noqa: N802
        with self.fleet.lock:
            return page_info(self.fleet.by_id(topology_id), window, self.fleet.clock())

    def getUserTopology(self, topology_id: str) -> Any:  # noqa: N802 - the IDL's name
        with self.fleet.lock:
            return user_topology(self.fleet.by_id(topology_id))

    def getTopologyConf(self, topology_id: str) -> str:  # noqa: N802 - the IDL's name
        with self.fleet.lock:
            conf = {"topology.disable.loadaware.messaging": True} | self.fleet.by_id(topology_id).conf
        return json.dumps(conf)

    def rebalance(self, name: str, options: Any) -> None:
        fleet = self.fleet
        arrived = fleet.clock()
        with fleet.lock:
            t = fleet.running(name)
            tasks = {**t.tasks, ACKER: 1}  # the fake runs one acker task
            for cid, count in sorted((options.num_executors or {}).items()):
                if cid not in tasks or not 1 <= count <= tasks[cid]:
                    raise NIMBUS.InvalidTopologyException(msg=f"{cid}: {count} executors for {name}")
            executors = {**t.executors, **(options.num_executors or {})}
            executors.pop(ACKER, None)
            overrides = json.loads(options.topology_conf_overrides or "{}")
            workers = options.num_workers if options.num_workers is not None else t.workers
            fleet.rebalances += 1
            if fleet.lose_next > 0:  # accepted, and forgotten at once
                fleet.lose_next -= 1
                fleet.requests.append(Rebalanced(arrived, name, executors, workers, overrides, lost=True))
                return
            t.rebalancing = (fleet.clock() + (options.wait_secs or 0), executors, workers, overrides)
            t.status = "REBALANCING"
            fleet.requests.append(Rebalanced(arrived, name, executors, workers, overrides))


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


@contextmanager
def serving(fleet_factory: Callable[[int], Fleet]) -> Iterator[Fleet]:
    """Serve a fake Nimbus on a loopback port until exit; ``fleet_factory(port)`` makes its state
    (the leader Nimbus reports its own port)."""
    holder: list[Fleet] = []

    class Connection(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            transport = _TFramedTransport(_TSocket(sock=self.request))
            protocol = _TBinaryProtocol(transport)
            processor = TProcessor(NIMBUS.Nimbus, NimbusHandler(holder[0]))
            if holder[0].down:
                return  # restarting: the connection is closed before any answer
            try:
                while True:
                    processor.process(protocol, protocol)
            except (TTransportException, OSError, EOFError):
                return  # the client closed the connection (each of its calls opens its own)

    server = _Server(("127.0.0.1", 0), Connection)
    holder.append(fleet_factory(server.server_address[1]))
    thread = threading.Thread(target=server.serve_forever, name="fake-nimbus", daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
