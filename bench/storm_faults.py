"""Faults of the real parts (Storm, ZooKeeper, Kafka) while the operator applies a budget, and what it
converged to: ``make bench-faults FAULTS=real`` (:mod:`bench.faults`).

The bed: one :class:`~tests.harness.bed.stack.Stack` for every run of every fault (the API server,
Nimbus with Stormscale's scheduler, ZooKeeper, Kafka, Prometheus, the worker pods' Supervisors, the
operator as a ``kopf run`` process), with the Kafka-fed JVM linear topology on it and a steady load of
:data:`LOAD_RATE` records/s, between what budget 0 carries and what budget 1 does: the plans of the two
budgets differ (a budget the demand does not need adds no unit, and its apply changes nothing), so
that every run is a rebalance. Budget 0 is applied first; then each run ``kubectl apply``\\ s the other
of :data:`BUDGETS` (1, 0, 1, ...: out and in), waits for the operator's intent (``status.pending``), waits a
random [0, :data:`INJECT_WITHIN_S`) s more (the rebalance and its verification follow the intent) and
injects the fault (:class:`RealFault`):

* ``storm-nimbus-restart``: the Nimbus process SIGKILLed and started again (ZooKeeper keeps its state);
* ``storm-supervisor-kill``: one worker pod's Supervisor SIGKILLed with its process group; the pod
  runner restarts the replica as a kubelet restarts a pod's container (its workers go with it);
* ``storm-worker-kill``: one worker JVM SIGKILLed; its Supervisor starts it again;
* ``zookeeper-restart``: ZooKeeper SIGKILLed, down 1-5 s, started again on its data;
* ``kafka-restart``: the broker SIGKILLed, down 1-5 s, started again on its log folders.

A part that died of the fault's knock-on (Nimbus exiting when ZooKeeper went) is reported and started
again, as Kubernetes would restart its pod. Each run then checks what a user relies on:

* it converges: ``status.appliedBudget`` is the budget, Ready, nothing pending, within
  :data:`CONVERGE_S` of the fault's end;
* the rebalance's effect is there once: the executors Nimbus runs per component are the plan's
  (``status.units``), the worker Deployment's replicas are the pods those units need, and one
  ``ScalingApplied`` event announces the budget (nothing applied twice);
* nothing is lost: every record the load produced from the previous run's convergence (the first
  run: from the start) to this one's reaches the sink (its ``seen`` files). The sink falls behind at
  budget 0 and catches up at budget 1, so this is checked once the runs are over: budget 1 applied,
  the load stopped, the sink given :data:`DRAIN_S` to catch up (at-least-once: repeats are counted,
  not failed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import random
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.harness.kafka.seen import read_seen
from tests.harness.process import signal_group
from tests.harness.waiting import seconds_until

if TYPE_CHECKING:
    from tests.harness.bed.stack import Scenario, Stack
    from tests.harness.kafka.load import LoadGenerator
    from tests.harness.kubernetes.pod_runner import RunningReplica

NAMESPACE = "faults-real"
#: Runs per fault unless ``--runs`` says otherwise (a run takes minutes on the real stack).
RUNS = 10
#: Records/s of the load: above budget 0's capacity (bolt 3, 12.5 ms a tuple, carries 12-13.6/s a
#: unit at 200m) and below budget 1's (bolt 3 on two units; bolt 2, 8 ms a tuple, ~20/s a unit). At 6/s
#: no budget added a unit (the plan met the demand at budget 0) and no apply rebalanced.
LOAD_RATE = 16
#: The runs' budgets, alternating: every run changes the plan (a scale-out, then a scale-in).
BUDGETS = (1, 0)
#: The load runs this long at most (longer than any bench; it is stopped at the end).
LOAD_HOURS = 12
#: From the apply, how long the operator may take to save its intent (it plans on a settled window:
#: the scenario's 60 s settle after the previous rebalance, then a steady profile).
INTENT_S = 420.0
#: From the intent, the fault comes within this many seconds (the rebalance, its wait, the workers'
#: start and the verifying pass follow the intent).
INJECT_WITHIN_S = 8.0
#: From the fault's end, the operator must report the budget applied and Ready within this bound.
CONVERGE_S = 480.0
#: Once the runs are over (budget 1, the load stopped), every record must reach the sink within this
#: bound (the backlog of the budget-0 phases, and what a KafkaSpout replays after the topology's
#: message timeout for the tuples a killed worker lost).
DRAIN_S = 600.0
#: A restarted part stays down this long (seconds, uniform) before it starts again.
DOWN_S = (1.0, 5.0)
POLL_S = 1.0
#: A worker pod's restarted Supervisor, or a killed worker's successor, must be back within this bound.
BACK_S = 180.0
#: Storm's worker JVM main class (the LogWriter JVM that launches it names it too, as an argument).
WORKER_MAIN = "org.apache.storm.daemon.worker.Worker"
LOG_WRITER = "org.apache.storm.LogWriter"


class RealFault(StrEnum):
    """A fault of a real part of the test bed, injected while a budget is applied."""

    NIMBUS_RESTART = "storm-nimbus-restart"
    SUPERVISOR_KILL = "storm-supervisor-kill"
    WORKER_KILL = "storm-worker-kill"
    ZOOKEEPER_RESTART = "zookeeper-restart"
    KAFKA_RESTART = "kafka-restart"


#: What each fault does, as the fault table prints it.
REAL_FAULTS: Mapping[RealFault, str] = {
    RealFault.NIMBUS_RESTART: "the real Nimbus SIGKILLed mid-apply and started again",
    RealFault.SUPERVISOR_KILL: "one worker pod's Supervisor SIGKILLed mid-apply, the pod restarted",
    RealFault.WORKER_KILL: "one worker JVM SIGKILLed mid-apply (its Supervisor restarts it)",
    RealFault.ZOOKEEPER_RESTART: "ZooKeeper SIGKILLed mid-apply, down 1-5 s, restarted on its data",
    RealFault.KAFKA_RESTART: "the Kafka broker SIGKILLed mid-apply, down 1-5 s, restarted on its data",
}

PHASES = ("before the intent", "intent saved", "applied already")


@dataclass(frozen=True)
class RealObserved:
    """What the API server and Nimbus held at one moment."""

    pending: bool
    applied_budget: int | None
    ready: bool
    replicas: int
    #: Executors Nimbus runs per user component ({} while Nimbus does not answer).
    storm_units: dict[str, int]
    status_units: dict[str, int]
    #: Every event reason in the namespace, with its count.
    reasons: dict[str, int] = field(default_factory=dict)


def phase_of(now: RealObserved, budget: int) -> str:
    """Where the apply of ``budget`` was when the fault hit: its intent saved (``status.pending``),
    done already, or not yet planned."""
    if now.pending:
        return PHASES[1]
    if now.applied_budget == budget:
        return PHASES[2]
    return PHASES[0]


def is_converged(status: Mapping[str, Any], budget: int) -> bool:
    """A StormTopology's status says ``budget`` is applied, Ready, and nothing is pending."""
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
    return status.get("appliedBudget") == budget and ready and not status.get("pending")


def repeats(counts: Mapping[int, int], first: int, end: int) -> int:
    """Lines beyond the first of each key of ``first .. end-1`` (at-least-once replays)."""
    return sum(n - 1 for k, n in counts.items() if first <= k < end and n > 1)


def pods_for(units: Mapping[str, int], slots_per_pod: int) -> int:
    """The worker pods a plan needs: ⌈Σ units / slots per pod⌉ (one unit is one slot)."""
    return math.ceil(sum(units.values()) / slots_per_pod)


def missing_keys(seen: set[int], first: int, end: int) -> list[int]:
    """The keys of ``first .. end-1`` the sink has not seen."""
    return [k for k in range(first, end) if k not in seen]


@dataclass(frozen=True)
class RealRun:
    """One apply with one fault on the real stack, and what the operator converged to."""

    fault: RealFault
    index: int
    budget: int
    #: Seconds from the intent (or, with none seen, from the apply) to the fault.
    injected_after_s: float
    phase: str
    #: How long the part was down (until it served again).
    outage_s: float
    #: Seconds from the fault's end to the budget applied and Ready (None: not within CONVERGE_S).
    converged_s: float | None
    after: RealObserved
    slots_per_pod: int
    #: ScalingApplied events posted during the run.
    applied_events: int
    #: The run's records: keys ``first_key .. end_key-1`` (what the load produced from the previous
    #: run's convergence to this one's), those the sink never saw, and repeated lines (both filled
    #: in once the runs are over: :func:`with_records`).
    first_key: int
    end_key: int
    missing: tuple[int, ...] = ()
    duplicates: int = 0
    #: What the fault's injection or the bed found wrong besides the common checks.
    found: tuple[str, ...] = ()
    #: Events posted by this run, by reason.
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def problems(self) -> list[str]:
        """What went wrong in this run (empty: applied once, as planned, nothing lost)."""
        found = []
        if self.converged_s is None:
            found.append(f"not applied and Ready within {CONVERGE_S:.0f} s")
        else:
            units = self.after.status_units
            if self.after.storm_units != units:
                found.append(f"Nimbus runs {self.after.storm_units}, the plan says {units}")
            if self.after.replicas != pods_for(units, self.slots_per_pod):
                found.append(
                    f"{self.after.replicas} replicas, the plan needs {pods_for(units, self.slots_per_pod)}"
                )
            if self.applied_events != 1:
                found.append(f"{self.applied_events} ScalingApplied events for one budget")
        if self.missing:
            found.append(
                f"{len(self.missing)} of {self.end_key - self.first_key} records never reached the sink"
            )
        return [*found, *self.found]


def new_reasons(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Events posted between two observations, by reason."""
    counts = {r: n - before.get(r, 0) for r, n in after.items()}
    return {r: n for r, n in sorted(counts.items()) if n > 0}


def is_worker_jvm(argv: Sequence[str]) -> bool:
    """Whether a command line is a Storm worker JVM (not the LogWriter JVM that launched it)."""
    return WORKER_MAIN in argv and LOG_WRITER not in argv


def line(run: RealRun) -> str:
    took = "never" if run.converged_s is None else f"{run.converged_s:.1f} s"
    verdict = "; ".join(run.problems) or "ok"
    return (
        f"{run.fault} run {run.index + 1}: budget {run.budget}, fault {run.injected_after_s:.1f} s after "
        f"the intent ({run.phase}), down {run.outage_s:.1f} s, converged {took} after it, "
        f"{run.applied_events} ScalingApplied, units {run.after.status_units}, "
        f"records {run.first_key}..{run.end_key - 1} ({len(run.missing)} lost, {run.duplicates} repeats): "
        f"{verdict}"
    )


def _max(values: Sequence[float]) -> str:
    return f"{max(values):.1f}" if values else "–"


def fault_table(runs: Sequence[RealRun]) -> str:
    """Fault → where it hit → runs → outcome: converged, problems, converge time (max, from the
    fault's end), the part's outage (max), records of the runs and those lost, repeats, other events."""
    rows = [
        "| fault | hit | runs | converged | problems | converge after the fault (s, max) "
        "| down (s, max) | records | lost | repeats | other events |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fault in RealFault:
        mine = [r for r in runs if r.fault is fault]
        for phase in dict.fromkeys(r.phase for r in mine):
            hit = [r for r in mine if r.phase == phase]
            times = [r.converged_s for r in hit if r.converged_s is not None]
            others: dict[str, int] = {}
            for r in hit:
                for reason, n in r.reasons.items():
                    if reason != "ScalingApplied":
                        others[reason] = others.get(reason, 0) + n
            other = ", ".join(f"{reason} {n}" for reason, n in sorted(others.items())) or "–"
            records = sum(r.end_key - r.first_key for r in hit)
            rows.append(
                f"| {fault} | {phase} | {len(hit)} | {len(times)} | {sum(1 for r in hit if r.problems)} "
                f"| {_max(times)} | {_max([r.outage_s for r in hit])} | {records} "
                f"| {sum(len(r.missing) for r in hit)} | {sum(r.duplicates for r in hit)} | {other} |"
            )
    return "\n".join(rows)


# --- the bed -------------------------------------------------------------------------------------------


@dataclass
class RealBed:
    """The stack, the scenario on it and its running load."""

    stack: Stack
    scenario: Scenario
    load: LoadGenerator
    rng: random.Random
    say: Callable[[str], None]
    #: The end of the keys the runs so far have checked: the next run checks from here.
    checked_to: int = 0
    #: What :func:`revive` found while a run waited (taken by the run).
    found: list[str] = field(default_factory=list)

    def observe(self) -> RealObserved:
        from kubernetes import client

        from stormscale.operator.adapters.kube import GROUP, PLURAL, VERSION

        api, ns, name = self.stack.api, self.stack.namespace, self.scenario.name
        body = client.CustomObjectsApi(api).get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
        status = body.get("status") or {}
        conditions = {c["type"]: c for c in status.get("conditions", [])}
        deployment = client.AppsV1Api(api).read_namespaced_deployment(self.scenario.deployment, ns)
        reasons: dict[str, int] = {}
        for e in client.CoreV1Api(api).list_namespaced_event(ns).items:
            reasons[str(e.reason)] = reasons.get(str(e.reason), 0) + (e.count or 1)
        return RealObserved(
            pending=bool(status.get("pending")),
            applied_budget=status.get("appliedBudget"),
            ready=conditions.get("Ready", {}).get("status") == "True",
            replicas=int(deployment.spec.replicas or 0),
            storm_units=self.storm_units(),
            status_units={str(k): int(v) for k, v in (status.get("units") or {}).items()},
            reasons=reasons,
        )

    def storm_units(self) -> dict[str, int]:
        """Executors per user component as Nimbus runs them now ({} while it does not answer)."""
        try:
            info = self.stack.nimbus().topology_info(self.scenario.name)
        except Exception:  # Nimbus restarting: no answer is an answer here
            return {}
        units: dict[str, int] = {}
        for e in info.user_executors():
            units[e.component] = units.get(e.component, 0) + 1
        return units

    def status(self) -> dict[str, Any]:
        """The StormTopology's status now ({} while the API server does not answer)."""
        from kubernetes import client

        from stormscale.operator.adapters.kube import GROUP, PLURAL, VERSION

        custom = client.CustomObjectsApi(self.stack.api)
        try:
            body = custom.get_namespaced_custom_object(
                GROUP, VERSION, self.stack.namespace, PLURAL, self.scenario.name
            )
        except Exception:  # the API server busy: look again
            return {}
        status: dict[str, Any] = body.get("status") or {}
        return status

    def converged(self, budget: int) -> bool:
        """``budget`` applied, Ready, nothing pending; Nimbus restarted meanwhile if it died."""
        self.found += revive(self)
        return is_converged(self.status(), budget)

    def intent_or_done(self, budget: int) -> bool:
        status = self.status()
        return bool(status.get("pending")) or is_converged(status, budget)

    def produced_keys(self) -> int:
        """The end of the keys the broker has acknowledged so far (keys start at the load's first)."""
        return self.load.first_key + self.load.delivered

    def replicas(self) -> list[RunningReplica]:
        return [r for r in self.stack.pods.replicas(self.stack.namespace, self.scenario.deployment) if r.live]

    def worker_jvms(self, replica: RunningReplica) -> list[int]:
        """The worker JVMs running in a worker pod's cgroup now."""
        found = []
        for pid in replica.cgroup.pids():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if is_worker_jvm(argv):
                found.append(pid)
        return found


# --- the faults ----------------------------------------------------------------------------------------


@dataclass
class Injection:
    """How long the part was down, and what the injection found wrong."""

    outage_s: float = 0.0
    found: list[str] = field(default_factory=list)


def _restart_nimbus(bed: RealBed) -> Injection:
    bed.stack.storm.kill_nimbus()
    return Injection(bed.stack.storm.restart_nimbus())


def _kill_supervisor(bed: RealBed) -> Injection:
    """SIGKILL one worker pod's Supervisor with its process group; the pod runner starts the replica
    again (its resync, a second of back-off), as a kubelet restarts a container."""
    replica = bed.rng.choice(bed.replicas())
    restarts, started = replica.restarts, time.monotonic()
    signal_group(replica.proc.pid, signal.SIGKILL)
    back = seconds_until(
        lambda: replica.restarts > restarts and replica.live,
        BACK_S,
        f"{replica.replica.name} restarted",
        every_s=0.2,
        raise_on_timeout=False,
    )
    found = [] if back is not None else [f"{replica.replica.name} not restarted within {BACK_S:.0f} s"]
    return Injection(time.monotonic() - started, found)


def _kill_worker(bed: RealBed) -> Injection:
    """SIGKILL one worker JVM (of a pod that runs one); its Supervisor starts a new one."""
    candidates = [(r, pids) for r in bed.replicas() if (pids := bed.worker_jvms(r))]
    if not candidates:
        return Injection(found=["no worker JVM to kill"])
    replica, pids = bed.rng.choice(candidates)
    pid = bed.rng.choice(pids)
    started = time.monotonic()
    kill_pid(pid)
    back = seconds_until(
        lambda: any(p != pid for p in bed.worker_jvms(replica)),
        BACK_S,
        f"a new worker JVM in {replica.replica.name}",
        every_s=0.5,
        raise_on_timeout=False,
    )
    found = (
        [] if back is not None else [f"no worker JVM back in {replica.replica.name} within {BACK_S:.0f} s"]
    )
    return Injection(time.monotonic() - started, found)


def kill_pid(pid: int) -> None:
    """SIGKILL ``pid``; one that has gone already is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _restart_zookeeper(bed: RealBed) -> Injection:
    started = time.monotonic()
    bed.stack.storm.kill_zookeeper()
    time.sleep(bed.rng.uniform(*DOWN_S))
    bed.stack.storm.restart_zookeeper()
    return Injection(time.monotonic() - started)


def _restart_kafka(bed: RealBed) -> Injection:
    broker = bed.stack.kafka
    if broker is None:
        return Injection(found=["no Kafka broker on the bed"])
    started = time.monotonic()
    broker.kill()
    time.sleep(bed.rng.uniform(*DOWN_S))
    broker.restart()
    return Injection(time.monotonic() - started)


INJECT: Mapping[RealFault, Callable[[RealBed], Injection]] = {
    RealFault.NIMBUS_RESTART: _restart_nimbus,
    RealFault.SUPERVISOR_KILL: _kill_supervisor,
    RealFault.WORKER_KILL: _kill_worker,
    RealFault.ZOOKEEPER_RESTART: _restart_zookeeper,
    RealFault.KAFKA_RESTART: _restart_kafka,
}


def revive(bed: RealBed) -> list[str]:
    """Start again, as Kubernetes would restart their pods, the parts that died of a fault's knock-on
    (the pod runner restarts Supervisors itself); what was found dead."""
    found = []
    code = bed.stack.storm.nimbus_exited()
    if code is not None:
        found.append(f"Nimbus exited ({code}) and was started again")
        bed.stack.storm.restart_nimbus()
    broker = bed.stack.kafka
    if broker is not None and broker.daemon is not None and broker.daemon.exited() is not None:
        found.append(f"the Kafka broker exited ({broker.daemon.exited()}) and was started again")
        broker.restart()
    return found


# --- the runs ------------------------------------------------------------------------------------------


def one_run(bed: RealBed, fault: RealFault, index: int) -> RealRun:
    """Apply the next budget, inject ``fault`` once the intent is saved, check what it converged to."""
    before = bed.observe()
    budget = next_budget(before.applied_budget)
    first_key = bed.checked_to
    applied_at = time.monotonic()
    bed.stack.apply_budget(bed.scenario, budget)
    intent = seconds_until(
        lambda: bed.intent_or_done(budget),
        INTENT_S,
        "the intent",
        every_s=0.25,
        raise_on_timeout=False,
    )
    found = [] if intent is not None else [f"no intent within {INTENT_S:.0f} s of the apply"]
    time.sleep(bed.rng.uniform(0, INJECT_WITHIN_S))
    injected_after = time.monotonic() - applied_at - (intent or 0.0)
    phase = phase_of(bed.observe(), budget)
    injection = INJECT[fault](bed)
    found += injection.found + revive(bed)
    took = seconds_until(
        lambda: bed.converged(budget), CONVERGE_S, "converged", every_s=POLL_S, raise_on_timeout=False
    )
    found += bed.found
    bed.found = []
    after = bed.observe()
    end_key = bed.checked_to = bed.produced_keys()
    events = new_reasons(before.reasons, after.reasons)
    if bed.load.failed:
        found.append(f"the producer gave up on {bed.load.failed} records so far")
    return RealRun(
        fault=fault,
        index=index,
        budget=budget,
        injected_after_s=injected_after,
        phase=phase,
        outage_s=injection.outage_s,
        converged_s=took,
        after=after,
        slots_per_pod=bed.scenario.slots_per_pod,
        applied_events=events.get("ScalingApplied", 0),
        first_key=first_key,
        end_key=end_key,
        found=tuple(found),
        reasons=events,
    )


def broken_run(fault: RealFault, index: int, key: int, why: str) -> RealRun:
    """A run that could not be carried out (the bed raised): no convergence, the reason as found."""
    nothing = RealObserved(False, None, False, 0, {}, {})
    return RealRun(fault, index, 0, 0.0, PHASES[0], 0.0, None, nothing, 1, 0, key, key, found=(why,))


def next_budget(applied: int | None) -> int:
    """The budget of the next run: the other of :data:`BUDGETS` than the applied one."""
    return BUDGETS[1] if applied == BUDGETS[0] else BUDGETS[0]


def with_records(run: RealRun, counts: Mapping[int, int]) -> RealRun:
    """``run`` with its records checked against what the sink saw (``counts``: key → lines)."""
    missing = tuple(missing_keys(set(counts), run.first_key, run.end_key))
    return dataclasses.replace(run, missing=missing, duplicates=repeats(counts, run.first_key, run.end_key))


def drain(bed: RealBed) -> tuple[int, float | None]:
    """Budget 1 (the sink's pace above the load's), the load stopped, every record at the sink within
    :data:`DRAIN_S`: the end of the keys produced, and the seconds it took (None: not all)."""
    stack, target = bed.stack, bed.scenario
    if not is_converged(bed.status(), BUDGETS[0]):
        stack.apply_budget(target, BUDGETS[0])
        seconds_until(lambda: bed.converged(BUDGETS[0]), CONVERGE_S, "budget 1", raise_on_timeout=False)
    bed.load.stop()
    produced = bed.produced_keys()
    bed.say(f"[faults] the load stopped at key {produced}; waiting for the sink to catch up")
    took = seconds_until(
        lambda: not missing_keys(stack.seen_keys(target), 0, produced),
        DRAIN_S,
        "every record at the sink",
        every_s=5.0,
        raise_on_timeout=False,
    )
    return produced, took


def scenario() -> Scenario:
    """The Kafka-fed JVM linear topology with names of its own and no load of its own (the bench's)."""
    from tests.harness.bed.scenarios import JVM_KAFKA_LINEAR

    name = "faults-kafka-linear"
    return dataclasses.replace(JVM_KAFKA_LINEAR, name=name, topic=name, load="")


def run_real_faults(
    faults: Sequence[RealFault],
    *,
    runs: int,
    seed: int,
    run_dir: Path,
    progress: Callable[[str], None] = print,
) -> list[RealRun]:
    """``runs`` applies for each of ``faults`` on one stack (see the module's docstring)."""
    from tests.harness.bed.stack import Stack
    from tests.harness.bed.steady import wait_running

    done: list[RealRun] = []
    target = scenario()
    with Stack(run_dir, namespace=NAMESPACE, log=progress, kafka=True) as stack:
        stack.deploy(target)
        load = stack.load(target, f"{LOAD_RATE}@{LOAD_HOURS}h")
        stack.start_operator()
        stack.apply_budget(target, 0)
        stack.wait_applied(target, 0)
        wait_running(stack, target, len(target.components))
        bed = RealBed(stack, target, load, random.Random(seed), progress, checked_to=load.first_key)
        progress(f"[faults] budget 0 applied; the runs check the records from key {bed.checked_to} on")
        for fault in faults:
            for index in range(runs):
                try:
                    run = one_run(bed, fault, index)
                except Exception as err:  # the bed broke: say so in the table, go on with the next run
                    run = broken_run(fault, index, bed.checked_to, f"the run broke: {err!r}"[:300])
                done.append(run)
                progress(line(run))
        try:
            produced, took = drain(bed)
        except Exception as err:  # the bed broke: check the records the sink has anyway
            progress(f"[faults] the sink's catch-up broke: {err!r}"[:300])
            produced, took = bed.produced_keys(), None
        counts = read_seen(stack.seen_dir(target))
        done = [with_records(r, counts) for r in done]
        report = stack.seen_report(target, produced)
        caught_up = "never" if took is None else f"{took:.0f} s"
        progress(f"the whole run: {report} (caught up {caught_up} after the load stopped)")
        (run_dir / "real-faults-seen.json").write_text(
            json.dumps({"produced": produced, "missing": list(report.missing), "lines": report.lines})
        )
    return done


def as_json(runs: Sequence[RealRun]) -> list[dict[str, Any]]:
    return [{**dataclasses.asdict(r), "problems": r.problems} for r in runs]
