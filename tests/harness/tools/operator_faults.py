"""SIGKILL the operator in the middle of applying a budget, restart it, and check what it converged to
(issue 17, item 2): the test (tests/integration/test_operator_faults.py, a few runs) and
``make bench-faults`` (20 runs, the fault table) share this.

The bed: the real API server, the operator as a real ``kopf run`` process, Storm and Prometheus behind
the light fakes of ``tests/harness/fakes`` (one topology; the fake Nimbus keeps every rebalance it
accepted and runs what the last one asked for). One run: ``kubectl apply`` of the next budget (they
alternate 1, 2, so runs scale out and in); after a random delay in [0, :data:`KILL_WITHIN_S`) the
operator's process group gets SIGKILL, no goodbye; the state at that moment says where the apply was
(:func:`phase_of`); a new operator process starts, and the run ends when the status says the budget
is applied and Ready. Each run checks what a user relies on:

* it converges: ``status.appliedBudget`` is the budget, Ready, within :data:`CONVERGE_S`;
* nothing added twice: the Deployment's replicas, the units Storm runs (the fake Nimbus) and
  ``status.units`` agree and add up to the baseline plus the budget (the operator *sets* replicas and
  executors, so a rebalance re-issued after the crash asks for the same numbers);
* one ``ScalingApplied`` event per applied budget.
"""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client

from bench import fleet
from stormscale.operator.adapters.kube import GROUP, PLURAL, VERSION
from stormscale.planner import load_profile
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.process import Daemon, signal_group

NAMESPACE = "faults"
NAME = "t-000"  # the fakes' first topology
INTERVAL_S = 5.0
#: Kills land anywhere from the apply to a little after the verifying pass (the rebalance waits
#: REBALANCE_WAIT_SECS = 5 s, a timer pass every INTERVAL_S verifies it).
KILL_WITHIN_S = 14.0
CONVERGE_S = 90.0
BUDGETS = (1, 2)
PHASES = (
    "before the intent",
    "intent saved, replicas not set",
    "replicas set, no rebalance",
    "rebalanced, not verified",
    "after the apply",
)


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


def phase_of(at_kill: Observed, budget: int, target_replicas: int) -> str:
    """Where the apply of ``budget`` was when the operator died, from the state it left.

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
class KillRun:
    index: int
    budget: int
    killed_after_s: float
    phase: str
    converged_s: float | None
    after: Observed
    baseline_units: int
    new_events: int

    @property
    def problems(self) -> list[str]:
        """What went wrong in this run (empty: it converged to the budget, nothing twice)."""
        found = []
        if self.converged_s is None:
            return [f"not applied and Ready within {CONVERGE_S:.0f} s"]
        want = self.baseline_units + self.budget
        if self.after.replicas != want:
            found.append(f"{self.after.replicas} replicas, not {want}")
        if sum(self.after.storm_units.values()) != want:
            found.append(f"Storm runs {sum(self.after.storm_units.values())} units, not {want}")
        if self.after.status_units != self.after.storm_units:
            found.append(f"status.units {self.after.status_units} != Storm's {self.after.storm_units}")
        if self.new_events != 1:
            found.append(f"{self.new_events} ScalingApplied events for one budget")
        return found


def observe(api: client.ApiClient, fakes: fleet.Fakes, since: float) -> Observed:
    custom, apps = client.CustomObjectsApi(api), client.AppsV1Api(api)
    status = custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME).get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))
    deployment = apps.read_namespaced_deployment(f"{NAME}-workers", NAMESPACE)
    with fakes.nimbus.lock:
        rebalanced = sum(1 for r in fakes.nimbus.requests if r.name == NAME and r.at >= since)
    storm = dict(fakes.nimbus.running(NAME).executors)
    events = client.CoreV1Api(api).list_namespaced_event(NAMESPACE).items
    return Observed(
        pending=bool(status.get("pending")),
        applied_budget=status.get("appliedBudget"),
        ready=ready,
        replicas=int(deployment.spec.replicas or 0),
        storm_units=storm,
        status_units=dict(status.get("units") or {}),
        rebalanced_since_apply=rebalanced,
        events=sum(e.count or 1 for e in events if e.reason == "ScalingApplied"),
    )


@contextmanager
def fault_bed(plane: ControlPlane, api: client.ApiClient) -> Iterator[fleet.Fakes]:
    """The namespace, the CRD, the worker Deployment and the fakes; the namespace goes after."""
    plane.kubectl("apply", "-f", str(fleet.CRD))
    plane.kubectl("wait", "--for=condition=Established", "crd/stormtopologies.stormscale.io", "--timeout=60s")
    plane.kubectl("create", "namespace", NAMESPACE)
    try:
        deployment = fleet.deployment_manifest(NAME, fleet.BASELINE_UNITS)
        plane.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(deployment))
        with fleet.fakes(load_profile(fleet.PROFILE), 1, 3600.0) as fakes:
            yield fakes
    finally:
        plane.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def apply_budget(plane: ControlPlane, fakes: fleet.Fakes, budget: int) -> None:
    body = fleet.storm_topology_manifest(NAME, fakes.nimbus.port, fakes.prometheus_url, budget)
    body["metadata"]["namespace"] = NAMESPACE
    plane.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def wait_for(check: Callable[[], Any], timeout_s: float, daemon: Daemon | None = None) -> float | None:
    """Seconds until ``check()`` is truthy, or None after ``timeout_s``; raise if ``daemon`` exits."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if check():
            return time.monotonic() - started
        if daemon is not None and daemon.exited() is not None:
            raise daemon.failure("exited")
        time.sleep(0.25)
    return None


def run_kills(
    plane: ControlPlane,
    api: client.ApiClient,
    fakes: fleet.Fakes,
    run_dir: Path,
    *,
    runs: int,
    seed: int,
    progress: Callable[[str], None] = lambda _: None,
) -> list[KillRun]:
    """``runs`` applies, each with the operator killed at a random moment and restarted."""
    rng = random.Random(seed)
    start: Callable[[], Daemon] = lambda: fleet.start_operator(plane, NAMESPACE, run_dir, INTERVAL_S)  # noqa: E731
    operator = start()
    done: list[KillRun] = []
    try:
        apply_budget(plane, fakes, 0)  # the resource as submitted: budget 0, converged before the first kill
        if wait_for(lambda: observe(api, fakes, 0).ready, CONVERGE_S, operator) is None:
            raise RuntimeError(f"budget 0 never became Ready (operator log: {operator.spec.log})")
        for index in range(runs):
            budget = BUDGETS[index % len(BUDGETS)]
            target = fleet.BASELINE_UNITS + budget
            events_before = observe(api, fakes, 0).events
            delay = rng.uniform(0, KILL_WITHIN_S)
            applied_at = time.time()
            apply_budget(plane, fakes, budget)
            time.sleep(delay)
            signal_group(operator.pid, signal.SIGKILL)
            operator.proc.wait(timeout=10)
            phase = phase_of(observe(api, fakes, applied_at), budget, target)
            operator = start()

            def converged(budget: int = budget, applied_at: float = applied_at) -> bool:
                now = observe(api, fakes, applied_at)
                return now.applied_budget == budget and now.ready and not now.pending

            took = wait_for(converged, CONVERGE_S, operator)
            after = observe(api, fakes, applied_at)
            run = KillRun(
                index, budget, delay, phase, took, after, fleet.BASELINE_UNITS, after.events - events_before
            )
            done.append(run)
            progress(line(run))
    finally:
        operator.stop()
    return done


def line(run: KillRun) -> str:
    took = "never" if run.converged_s is None else f"{run.converged_s:.1f} s"
    verdict = "; ".join(run.problems) or "ok"
    return (
        f"run {run.index + 1}: budget {run.budget}, killed {run.killed_after_s:.1f} s after the apply "
        f"({run.phase}), converged {took} after the restart, {run.after.rebalanced_since_apply} "
        f"rebalance(s), {run.new_events} event(s): {verdict}"
    )


def fault_table(runs: Sequence[KillRun]) -> str:
    """Per phase the operator was killed in: runs, converged, nothing twice, converge time, rebalances."""
    rows = [
        "| killed | runs | converged | problems | converge after restart (s, max) | rebalances per apply |"
    ]
    rows.append("|---|---|---|---|---|---|")
    for phase in PHASES:
        mine = [r for r in runs if r.phase == phase]
        if not mine:
            continue
        times = [r.converged_s for r in mine if r.converged_s is not None]
        per_apply = sorted({r.after.rebalanced_since_apply for r in mine})
        rows.append(
            f"| {phase} | {len(mine)} | {len(times)} | {sum(1 for r in mine if r.problems)} | "
            f"{max(times):.1f} | {', '.join(map(str, per_apply))} |"
            if times
            else f"| {phase} | {len(mine)} | 0 | {len(mine)} | – | {', '.join(map(str, per_apply))} |"
        )
    return "\n".join(rows)
