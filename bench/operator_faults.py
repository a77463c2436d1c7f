"""Faults injected into real parts while the operator applies a budget, and what it converged to:
the tests (tests/integration/test_operator_faults.py, a few runs of each) and
``make bench-faults`` (20 runs of each, the fault table) share this.

The bed: the real API server, the operator as a real ``kopf run`` process, Storm and Prometheus behind
the light fakes of ``tests/harness/fakes`` (one topology; the fake Nimbus keeps every rebalance it
accepted and runs what the last one asked for). One run: ``kubectl apply`` of the next budget (they
alternate 1, 2, so runs scale out and in), the fault, and the run ends when the status says the budget
is applied and Ready. The faults (:class:`Fault`):

* ``operator-kill``: after a random delay in [0, :data:`KILL_WITHIN_S`) the operator's process group
  gets SIGKILL, no goodbye; a new operator process starts at once;
* ``operator-kill-at-intent``: the same SIGKILL a random [0, :data:`AFTER_INTENT_S`) after a watch on
  the StormTopology shows the intent (``status.pending``): the apply's writes that follow it (the
  Deployment's replicas, the rebalance) take milliseconds, so uniform delays almost never land
  between them (19 of 20 landed after the rebalance) and this one does;
* ``apiserver-restart``: after such a delay kube-apiserver gets SIGKILL (etcd keeps every object), stays
  down for a random [1, 5) s and starts again on the same port; the operator process must live through
  it, and its watch must deliver again: a spec change after the run gets a spec pass within
  :data:`WATCH_S` (a timer pass would re-read the resource anyway, so only the watch's own handler
  proves it);
* ``nimbus-restart``: the fake Nimbus closes every connection for a random [3, 10) s and forgets the
  rebalances still in their wait (the topology runs what it ran, as STORM-3516 lost them), right after
  the operator's rebalance arrives (``at_request``, the tests) or after a random delay (the benchmark);
* ``nimbus-loses``: every rebalance is accepted and forgotten: the operator must ask
  ``MAX_REBALANCES`` times, then give up (``Degraded/RebalanceNotApplied``, the Deployment scaled back)
  and ask no more until the spec changes; then Nimbus is mended and the spec changed, and it applies.

The metrics faults (``prometheus-stop``, ``metrics-stale``) need a real Prometheus and run on their own
bed (:mod:`bench.metrics_faults`). Every run checks what a user relies on:

* it converges: ``status.appliedBudget`` is the budget, Ready, within :data:`CONVERGE_S` of the fault's
  end;
* nothing added twice: the Deployment's replicas, the units Storm runs (the fake Nimbus) and
  ``status.units`` agree and add up to the baseline plus the budget (the operator *sets* replicas and
  executors, so a rebalance re-issued after the fault asks for the same numbers);
* one ``ScalingApplied`` event per applied budget; at most ``MAX_REBALANCES`` rebalances per attempt.
"""

from __future__ import annotations

import functools
import json
import random
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from bench import fleet
from stormscale.operator.adapters.kube import GROUP, PLURAL, VERSION
from stormscale.operator.realizer import MAX_REBALANCES
from stormscale.planner import load_profile
from tests.harness.fakes import nimbus as fake_nimbus
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.process import Daemon, signal_group
from tests.harness.waiting import seconds_until

NAMESPACE = "faults"
NAME = "t-000"  # the fakes' first topology
INTERVAL_S = 5.0
#: Faults land anywhere from the apply to a little after the verifying pass (the rebalance waits
#: REBALANCE_WAIT_SECS = 5 s, a timer pass every INTERVAL_S verifies it).
KILL_WITHIN_S = 14.0
#: ``operator-kill-at-intent``: the kill comes this long after the intent at most (seconds).
AFTER_INTENT_S = 0.03
CONVERGE_S = 90.0
#: A spec change after an API server restart must reach the operator's spec handler this soon.
WATCH_S = 10.0
#: How often a run polls the bed while it waits for a condition.
POLL_S = 0.25
APISERVER_DOWN_S = (1.0, 5.0)
NIMBUS_DOWN_S = (3.0, 10.0)
#: ``nimbus-loses``: how long the operator must stay quiet once it gave up (two timer passes).
HOLD_S = 2 * INTERVAL_S
BUDGETS = (1, 2)


class Fault(StrEnum):
    """A fault of one part of the system, injected while a budget is applied."""

    OPERATOR_KILL = "operator-kill"
    OPERATOR_KILL_AT_INTENT = "operator-kill-at-intent"
    APISERVER_RESTART = "apiserver-restart"
    NIMBUS_RESTART = "nimbus-restart"
    NIMBUS_LOSES = "nimbus-loses"
    PROMETHEUS_STOP = "prometheus-stop"
    METRICS_STALE = "metrics-stale"


#: What each fault does, as the fault table prints it.
FAULTS: Mapping[Fault, str] = {
    Fault.OPERATOR_KILL: "operator SIGKILLed mid-apply, restarted",
    Fault.OPERATOR_KILL_AT_INTENT: "operator SIGKILLed 0-30 ms after its intent is saved, restarted",
    Fault.APISERVER_RESTART: "kube-apiserver SIGKILLed mid-apply, down 1-5 s, restarted (etcd kept)",
    Fault.NIMBUS_RESTART: "Nimbus down 3-10 s mid-apply, forgetting the rebalance in its wait",
    Fault.NIMBUS_LOSES: "Nimbus accepts every rebalance and runs none; then mended, spec changed",
    Fault.PROMETHEUS_STOP: "Prometheus stopped, a budget applied, Prometheus started again",
    Fault.METRICS_STALE: "exporter stopped (series stale, Prometheus answers), budget applied, exporter back",
}
FAKE_BED = (
    Fault.OPERATOR_KILL,
    Fault.OPERATOR_KILL_AT_INTENT,
    Fault.APISERVER_RESTART,
    Fault.NIMBUS_RESTART,
    Fault.NIMBUS_LOSES,
)

PHASES = (
    "before the intent",
    "intent saved, replicas not set",
    "replicas set, no rebalance",
    "rebalanced, not verified",
    "after the apply",
)
NIMBUS_PHASES = ("before the rebalance", "in the rebalance's wait (lost)", "after the rebalance")


@dataclass(frozen=True)
class Observed:
    """What the API server and the fake Nimbus held at one moment."""

    pending: bool
    applied_budget: int | None
    ready: bool
    replicas: int
    storm_units: dict[str, int]
    status_units: dict[str, int]
    rebalanced_since_apply: int
    events: int
    #: Every event reason in the namespace, with its count.
    reasons: dict[str, int] = field(default_factory=dict)
    #: The Degraded condition's reason while it holds.
    degraded: str | None = None


def phase_of(at_kill: Observed, budget: int, target_replicas: int) -> str:
    """Where the apply of ``budget`` was when the fault hit, from the state it left.

    The operator writes the intent (``status.pending``), then sets the Deployment's replicas, then asks
    Nimbus to rebalance; a later pass verifies and records ``appliedBudget``."""
    if at_kill.applied_budget == budget and not at_kill.pending:
        return PHASES[4]
    if at_kill.rebalanced_since_apply:
        return PHASES[3]
    if at_kill.replicas == target_replicas and at_kill.pending:
        return PHASES[2]
    if at_kill.pending:
        return PHASES[1]
    return PHASES[0]


@dataclass(frozen=True)
class FaultRun:
    """One apply with one fault, and what the operator converged to."""

    fault: Fault
    index: int
    budget: int
    injected_after_s: float
    phase: str
    converged_s: float | None
    after: Observed
    baseline_units: int
    new_events: int
    #: What the runner of this fault found wrong besides the common checks.
    found: tuple[str, ...] = ()
    #: How long the part was down (the fault's own duration).
    outage_s: float = 0.0
    #: The Degraded reason while the part was down, where the run watched for one.
    during: str | None = None
    #: Seconds from a spec change to the operator's spec pass after the fault (``apiserver-restart``).
    watch_s: float | None = None
    #: Events posted by this run, by reason.
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def problems(self) -> list[str]:
        """What went wrong in this run (empty: it converged to the budget, nothing twice)."""
        if self.converged_s is None:
            return [f"not applied and Ready within {CONVERGE_S:.0f} s", *self.found]
        found = []
        want = self.baseline_units + self.budget
        if self.after.replicas != want:
            found.append(f"{self.after.replicas} replicas, not {want}")
        if sum(self.after.storm_units.values()) != want:
            found.append(f"Storm runs {sum(self.after.storm_units.values())} units, not {want}")
        if self.after.status_units != self.after.storm_units:
            found.append(f"status.units {self.after.status_units} != Storm's {self.after.storm_units}")
        if self.new_events != 1:
            found.append(f"{self.new_events} ScalingApplied events for one budget")
        return [*found, *self.found]


def observe(api: client.ApiClient, nimbus: fake_nimbus.Fleet, namespace: str, since: float) -> Observed:
    """The resource's status, its Deployment, the fake Nimbus and the namespace's events now;
    ``rebalanced_since_apply`` counts the rebalances Nimbus accepted from ``since`` (Unix seconds)."""
    custom, apps = client.CustomObjectsApi(api), client.AppsV1Api(api)
    status = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME).get("status") or {}
    conditions = {c["type"]: c for c in status.get("conditions", [])}
    ready = conditions.get("Ready", {}).get("status") == "True"
    degraded = conditions.get("Degraded", {})
    deployment = apps.read_namespaced_deployment(f"{NAME}-workers", namespace)
    with nimbus.lock:
        rebalanced = sum(1 for r in nimbus.requests if r.name == NAME and r.at >= since)
    storm = dict(nimbus.running(NAME).executors)
    reasons: dict[str, int] = {}
    for e in client.CoreV1Api(api).list_namespaced_event(namespace).items:
        reason = str(e.reason)
        reasons[reason] = reasons.get(reason, 0) + (e.count or 1)
    return Observed(
        pending=bool(status.get("pending")),
        applied_budget=status.get("appliedBudget"),
        ready=ready,
        replicas=int(deployment.spec.replicas or 0),
        storm_units=storm,
        status_units=dict(status.get("units") or {}),
        rebalanced_since_apply=rebalanced,
        events=reasons.get("ScalingApplied", 0),
        reasons=reasons,
        degraded=degraded.get("reason") if degraded.get("status") == "True" else None,
    )


def new_reasons(before: Observed, after: Observed) -> dict[str, int]:
    """Events posted between two observations, by reason."""
    counts = {r: n - before.reasons.get(r, 0) for r, n in after.reasons.items()}
    return {r: n for r, n in sorted(counts.items()) if n > 0}


@dataclass
class Bed:
    """The fault bed: the control plane, a client, the fake Nimbus and the StormTopology's spec."""

    plane: ControlPlane
    api: client.ApiClient
    nimbus: fake_nimbus.Fleet
    prometheus_url: str
    run_dir: Path
    namespace: str = NAMESPACE
    #: ``spec.metrics`` (None: the fleet manifest's) and ``spec.components``.
    metrics: dict[str, str] | None = None
    components: list[dict[str, Any]] = field(default_factory=list)
    #: The generation-changing field of :meth:`touch` (a fresh value each time).
    touched: int = 0

    def manifest(self, budget: int) -> dict[str, Any]:
        body = fleet.storm_topology_manifest(NAME, self.nimbus.port, self.prometheus_url, budget)
        body["metadata"]["namespace"] = self.namespace
        if self.metrics is not None:
            body["spec"]["metrics"] = {"prometheus": self.prometheus_url, **self.metrics}
        if self.components:
            body["spec"]["components"] = self.components
        return body

    def apply_budget(self, budget: int) -> None:
        self.plane.kubectl("apply", "-f", "-", stdin=json.dumps(self.manifest(budget)))

    def touch(self) -> float:
        """Change the spec without changing what it asks for (``scaling.cooldown``): a new generation,
        as a user's edit; the Unix time of the change."""
        self.touched += 1
        patch = {"spec": {"scaling": {"cooldown": f"{300 + self.touched}s"}}}
        at = time.time()
        client.CustomObjectsApi(self.api).patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, NAME, patch
        )
        return at

    def observe(self, since: float = 0.0) -> Observed:
        return observe(self.api, self.nimbus, self.namespace, since)

    def converged(self, budget: int) -> bool:
        """Whether ``budget`` is applied, Ready, and nothing is pending."""
        now = self.observe()
        return now.applied_budget == budget and now.ready and not now.pending

    def start_operator(self) -> Daemon:
        return fleet.start_operator(self.plane, self.namespace, self.run_dir, INTERVAL_S)


@contextmanager
def namespace_with_workers(plane: ControlPlane, namespace: str) -> Iterator[None]:
    """The CRD, the namespace and the worker Deployment (paused: no pods); the namespace is deleted
    after (it stays Terminating: the stopped operator's finalizer holds the StormTopology)."""
    plane.apply_crds(fleet.CRD)
    plane.kubectl("create", "namespace", namespace)
    try:
        deployment = fleet.deployment_manifest(NAME, fleet.BASELINE_UNITS)
        plane.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(deployment))
        yield
    finally:
        plane.kubectl("delete", "namespace", namespace, "--wait=false")


@contextmanager
def fault_bed(
    plane: ControlPlane, api: client.ApiClient, run_dir: Path, namespace: str = NAMESPACE
) -> Iterator[Bed]:
    """The namespace, the CRD, the worker Deployment and the fakes (Nimbus, and Prometheus with 20
    minutes of steady series)."""
    with (
        namespace_with_workers(plane, namespace),
        fleet.fakes(load_profile(fleet.PROFILE), 1, 3600.0) as fakes,
    ):
        yield Bed(plane, api, fakes.nimbus, fakes.prometheus_url, run_dir, namespace)


def spec_pass_after(operator: Daemon, namespace: str, at: float) -> bool:
    """Whether the operator logged a pass of its spec handler that ended after ``at`` (Unix seconds)."""
    passes = fleet.parse_passes(operator.spec.log.read_text(errors="replace").splitlines(), namespace)
    return any(p.cause == "spec" and p.at >= at for p in passes)


@dataclass
class Injection:
    """What a fault's injection reports: where the apply was, how long the part was down, and any
    problem it saw on the way (the operator exiting, a condition missing)."""

    phase: str
    outage_s: float = 0.0
    found: list[str] = field(default_factory=list)
    during: str | None = None


@dataclass
class Session:
    """A running operator on a bed, and the randomness of the runs."""

    bed: Bed
    rng: random.Random
    operator: Daemon
    at_request: bool = False


Inject = Callable[[Session, int, float, float], Injection]


def _kill_operator(s: Session, budget: int, applied_at: float, delay: float) -> Injection:
    time.sleep(delay)
    return _killed(s, budget, applied_at)


def _kill_operator_at_intent(s: Session, budget: int, applied_at: float, delay: float) -> Injection:
    seen = wait_for_intent(s.bed, KILL_WITHIN_S)
    time.sleep(delay)
    injection = _killed(s, budget, applied_at)
    if not seen:
        injection.found.append(f"no intent within {KILL_WITHIN_S:g} s of the apply")
    return injection


def wait_for_intent(bed: Bed, timeout_s: float) -> bool:
    """Block until a watch on the StormTopology shows ``status.pending`` (True), or ``timeout_s``."""
    custom = client.CustomObjectsApi(bed.api)
    events: Iterable[Any] = watch.Watch().stream(  # closed with the generator when we return
        custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        bed.namespace,
        PLURAL,
        field_selector=f"metadata.name={NAME}",
        timeout_seconds=max(1, round(timeout_s)),
    )
    return any((event["object"].get("status") or {}).get("pending") for event in events)


def _killed(s: Session, budget: int, applied_at: float) -> Injection:
    """SIGKILL the operator's process group now, note where the apply was, start a new operator."""
    signal_group(s.operator.pid, signal.SIGKILL)
    s.operator.proc.wait(timeout=10)
    phase = phase_of(s.bed.observe(applied_at), budget, fleet.BASELINE_UNITS + budget)
    s.operator = s.bed.start_operator()
    return Injection(phase)


def _restart_apiserver(s: Session, budget: int, applied_at: float, delay: float) -> Injection:
    time.sleep(delay)
    phase = phase_of(s.bed.observe(applied_at), budget, fleet.BASELINE_UNITS + budget)
    started = time.monotonic()
    s.bed.plane.stop_apiserver()
    time.sleep(s.rng.uniform(*APISERVER_DOWN_S))
    s.bed.plane.start_apiserver()
    found = [] if s.operator.exited() is None else [f"the operator exited ({s.operator.exited()})"]
    return Injection(phase, time.monotonic() - started, found)


def _restart_nimbus(s: Session, budget: int, applied_at: float, delay: float) -> Injection:
    nimbus = s.bed.nimbus
    if s.at_request:  # right after the operator's rebalance arrived: inside its 5 s wait
        arrived = seconds_until(
            lambda: s.bed.observe(applied_at).rebalanced_since_apply,
            30.0,
            "the rebalance at Nimbus",
            daemons=(s.operator,),
            every_s=POLL_S,
            raise_on_timeout=False,
        )
        if arrived is None:
            return Injection(NIMBUS_PHASES[0], found=["no rebalance arrived within 30 s of the apply"])
    else:
        time.sleep(delay)
    started = time.monotonic()
    nimbus.down = True
    lost = nimbus.lose_in_flight()
    asked = s.bed.observe(applied_at).rebalanced_since_apply
    phase = NIMBUS_PHASES[1] if lost else NIMBUS_PHASES[2] if asked else NIMBUS_PHASES[0]
    time.sleep(s.rng.uniform(*NIMBUS_DOWN_S))
    nimbus.down = False
    return Injection(phase, time.monotonic() - started)


def _lose_rebalances(s: Session, budget: int, applied_at: float, delay: float) -> Injection:
    """Nimbus loses every rebalance (armed before the apply, see :func:`run_faults`): the operator
    asks ``MAX_REBALANCES`` times, gives up, stays quiet; then Nimbus is mended and the spec changed."""
    bed, found = s.bed, []
    gave_up = seconds_until(
        lambda: bed.observe().degraded == "RebalanceNotApplied",
        CONVERGE_S,
        "RebalanceNotApplied",
        daemons=(s.operator,),
        every_s=POLL_S,
        raise_on_timeout=False,
    )
    if gave_up is None:
        found.append(f"not Degraded/RebalanceNotApplied within {CONVERGE_S:.0f} s")
    held = bed.observe(applied_at)
    time.sleep(HOLD_S)
    later = bed.observe(applied_at)
    if held.rebalanced_since_apply != MAX_REBALANCES:
        found.append(f"{held.rebalanced_since_apply} rebalances before giving up, not {MAX_REBALANCES}")
    if later.rebalanced_since_apply != held.rebalanced_since_apply:
        found.append(
            f"{later.rebalanced_since_apply - held.rebalanced_since_apply} rebalance(s) after giving up"
        )
    want = sum(held.storm_units.values())  # one slot per pod
    if held.replicas != want:
        found.append(f"{held.replicas} replicas after giving up, not the {want} Storm's executors need")
    if new_reasons(held, later):
        found.append(f"events while held: {new_reasons(held, later)}")
    bed.nimbus.lose_next = 0
    bed.touch()
    return Injection("every rebalance lost", found=found, during=held.degraded)


INJECT: Mapping[Fault, Inject] = {
    Fault.OPERATOR_KILL: _kill_operator,
    Fault.OPERATOR_KILL_AT_INTENT: _kill_operator_at_intent,
    Fault.APISERVER_RESTART: _restart_apiserver,
    Fault.NIMBUS_RESTART: _restart_nimbus,
    Fault.NIMBUS_LOSES: _lose_rebalances,
}


def next_budget(applied: int | None) -> int:
    """The budget of the next run: another than the applied one (so every run applies something)."""
    return BUDGETS[1] if applied == BUDGETS[0] else BUDGETS[0]


def ensure_ready(bed: Bed, operator: Daemon) -> None:
    """The resource exists and is Ready (budget 0 as submitted, the first time)."""
    custom = client.CustomObjectsApi(bed.api)
    found = custom.list_namespaced_custom_object(GROUP, VERSION, bed.namespace, PLURAL)["items"]
    if not found:
        bed.apply_budget(0)
    if (
        seconds_until(
            lambda: bed.observe().ready,
            CONVERGE_S,
            "Ready",
            daemons=(operator,),
            every_s=POLL_S,
            raise_on_timeout=False,
        )
        is None
    ):
        raise RuntimeError(f"{NAME} never became Ready (operator log: {operator.spec.log})")


def run_faults(
    bed: Bed,
    fault: Fault,
    *,
    runs: int,
    seed: int,
    at_request: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> list[FaultRun]:
    """``runs`` applies on ``bed``, each with ``fault`` injected (see the module's docstring)."""
    inject = INJECT[fault]
    session = Session(bed, random.Random(seed), bed.start_operator(), at_request)
    done: list[FaultRun] = []
    try:
        ensure_ready(bed, session.operator)
        for index in range(runs):
            before = bed.observe()
            budget = next_budget(before.applied_budget)
            delay = session.rng.uniform(
                0, AFTER_INTENT_S if fault is Fault.OPERATOR_KILL_AT_INTENT else KILL_WITHIN_S
            )
            if fault is Fault.NIMBUS_LOSES:
                bed.nimbus.lose_next = 10 * MAX_REBALANCES
            applied_at = time.time()
            bed.apply_budget(budget)
            injected = inject(session, budget, applied_at, delay)

            took = seconds_until(
                functools.partial(bed.converged, budget),
                CONVERGE_S,
                "converged",
                daemons=(session.operator,),
                every_s=POLL_S,
                raise_on_timeout=False,
            )
            watch_s, found = None, list(injected.found)
            if fault is Fault.APISERVER_RESTART and took is not None:
                watch_s, problem = _probe_watch(session)
                found += [problem] if problem else []
            after = bed.observe(applied_at)
            events = new_reasons(before, after)
            found += _rebalance_problems(fault, injected.phase, after.rebalanced_since_apply, events)
            run = FaultRun(
                fault,
                index,
                budget,
                delay,
                injected.phase,
                took,
                after,
                fleet.BASELINE_UNITS,
                events.get("ScalingApplied", 0),
                tuple(found),
                injected.outage_s,
                injected.during,
                watch_s,
                events,
            )
            done.append(run)
            progress(line(run))
    finally:
        session.operator.stop()
    return done


def _probe_watch(s: Session) -> tuple[float | None, str | None]:
    """A spec change must reach the operator's spec handler within :data:`WATCH_S`: its watch
    reconnected after the API server came back."""
    at = s.bed.touch()
    took = seconds_until(
        lambda: spec_pass_after(s.operator, s.bed.namespace, at),
        WATCH_S,
        "a spec pass",
        daemons=(s.operator,),
        every_s=POLL_S,
        raise_on_timeout=False,
    )
    if took is None:
        return None, f"no spec pass within {WATCH_S:.0f} s of a spec change: the watch did not reconnect"
    return took, None


def _rebalance_problems(fault: Fault, phase: str, rebalances: int, events: Mapping[str, int]) -> list[str]:
    """Per attempt at most MAX_REBALANCES rebalances; a lost one is asked for again, announced."""
    if fault is Fault.NIMBUS_LOSES:
        expected = {"RebalanceReissued": MAX_REBALANCES - 1, "RebalanceNotApplied": 1}
        wrong = {r: events.get(r, 0) for r, n in expected.items() if events.get(r, 0) != n}
        extra = (
            [] if rebalances == MAX_REBALANCES + 1 else [f"{rebalances} rebalances, not {MAX_REBALANCES + 1}"]
        )
        return [*extra, *([f"events {wrong}, not {expected}"] if wrong else [])]
    found = [] if rebalances <= MAX_REBALANCES else [f"{rebalances} rebalances for one budget"]
    if phase == NIMBUS_PHASES[1] and not events.get("RebalanceReissued"):
        found.append("the lost rebalance was not asked for again (no RebalanceReissued)")
    return found


def line(run: FaultRun) -> str:
    took = "never" if run.converged_s is None else f"{run.converged_s:.1f} s"
    verdict = "; ".join(run.problems) or "ok"
    during = f", {run.during} meanwhile" if run.during else ""
    watch = f", spec pass {run.watch_s:.1f} s after a spec change" if run.watch_s is not None else ""
    return (
        f"{run.fault} run {run.index + 1}: budget {run.budget}, fault {run.injected_after_s:.1f} s after "
        f"the apply ({run.phase}), down {run.outage_s:.1f} s{during}, converged {took} after it, "
        f"{run.after.rebalanced_since_apply} rebalance(s), {run.new_events} ScalingApplied{watch}: {verdict}"
    )


def _max(values: Sequence[float]) -> str:
    return f"{max(values):.1f}" if values else "–"


def fault_table(runs: Sequence[FaultRun]) -> str:
    """Fault → where it hit → runs → outcome: converged, problems, converge time (max, from the
    fault's end), the operator's Degraded reason meanwhile, rebalances per apply, other events."""
    rows = [
        "| fault | hit | runs | converged | problems | converge after the fault (s, max) "
        "| Degraded meanwhile | rebalances per apply | other events |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for fault in Fault:
        mine = [r for r in runs if r.fault is fault]
        for phase in dict.fromkeys(r.phase for r in mine):
            hit = [r for r in mine if r.phase == phase]
            times = [r.converged_s for r in hit if r.converged_s is not None]
            per_apply = ", ".join(map(str, sorted({r.after.rebalanced_since_apply for r in hit})))
            during = ", ".join(sorted({r.during for r in hit if r.during})) or "–"
            others: dict[str, int] = {}
            for r in hit:
                for reason, n in r.reasons.items():
                    if reason != "ScalingApplied":
                        others[reason] = others.get(reason, 0) + n
            other = ", ".join(f"{reason} {n}" for reason, n in sorted(others.items())) or "–"
            rows.append(
                f"| {fault} | {phase} | {len(hit)} | {len(times)} | {sum(1 for r in hit if r.problems)} "
                f"| {_max(times)} | {during} | {per_apply} | {other} |"
            )
    return "\n".join(rows)
