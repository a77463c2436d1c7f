"""Reconcile one StormTopology: observe → (plan) → make it so → verify → status. No Kopf here.

The decision is a function of the spec, the status and what the ports report; applying it *sets*
replicas and executor counts, never adds to them, so a crash between the two writes converges on the
next pass. The plan being applied is written to ``status.pending`` before the first write, so the pass
after a crash finishes that plan instead of planning anew. Storm is not trusted to run what it
accepted: a rebalance it forgot (a Nimbus restart, STORM-3516) is asked for again, at most
:data:`MAX_REBALANCES` times in all (see :func:`_rebalance`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from stormscale.operator.autoscale import decide, needed_budget
from stormscale.operator.policy import Mode, Policy
from stormscale.operator.ports import (
    Events,
    MeasuredProfile,
    Ports,
    RefusedError,
    StaleMetricsError,
    StormTopologyState,
    UnavailableError,
    UnknownDemandError,
    Workers,
)
from stormscale.operator.status import (
    DEGRADED,
    PROGRESSING,
    READY,
    RETRY_AFTER,
    SCALING_LIMITED,
    AutoscalerState,
    Observed,
    PendingApply,
    PlanSummary,
    Predicted,
    Reason,
    StormTopologyStatus,
    seconds_since,
    timestamp,
)
from stormscale.planner import OptimalLimitError, Plan, Strategy, Topology, make_plan

AUTO_PERIOD_S = 60.0
RETRY_REBALANCE_S = 15.0
REBALANCE_WAIT_SECS = 5
#: Rebalance requests for one pending plan, the first included: Storm running other executors or
#: workers than asked for after the last one had time to finish is asked again, up to this many.
MAX_REBALANCES = 3
#: Seconds past the rebalance's wait before Storm's executors are judged: Nimbus schedules the new
#: assignment right after the wait (the next pass comes RETRY_REBALANCE_S after a request anyway).
REBALANCE_GRACE_S = 10.0
#: Seconds past the wait after which a topology still REBALANCING is reported stalled: a restarted
#: Nimbus re-arms the wait once it leads again (tens of seconds), one that lost the delayed
#: rebalance never ends it (STORM-3516, fixed in Storm 2.1).
REBALANCE_STALL_S = 120.0
OPTIMAL_TIME_LIMIT_S = 10.0
LOG = logging.getLogger("stormscale.operator")


@dataclass(frozen=True)
class Resource:
    namespace: str
    name: str
    generation: int


@dataclass
class Outcome:
    """The new status, and when to look again (``None``: nothing pending)."""

    status: StormTopologyStatus
    retry_after: float | None = None
    #: Seconds the pass spent planning (every strategy for its budget); ``None``: it did not plan.
    plan_seconds: float | None = None

    @property
    def waiting(self) -> bool:
        """Degraded or progressing: the pass wants another look after ``retry_after``."""
        return self.status.holds(DEGRADED) or self.status.holds(PROGRESSING)

    @property
    def summary(self) -> str:
        """The Ready condition's reason and message, in one line (for logs and retries)."""
        ready = self.status.condition(READY)
        return f"{ready.reason}: {ready.message}" if ready else "no Ready condition"


class InvalidProfileError(ValueError):
    """The measured profile does not match the running topology (components differ)."""


class UnknownOverrideError(InvalidProfileError):
    """``spec.components`` overrides a component the topology does not have: the spec is wrong."""


@dataclass
class _Book:
    """The working copy of the status, with the condition bookkeeping and the events to post."""

    status: StormTopologyStatus
    now: datetime
    generation: int
    events: list[tuple[str, Reason, str]] = field(default_factory=list)
    plan_seconds: float | None = None
    #: The status as the pass found it: conditions change (transition time, Warning) against it, not
    #: against what the pass itself set on the way (Healthy before acting, then the same failure).
    before: StormTopologyStatus = field(init=False)

    def __post_init__(self) -> None:
        self.before = self.status.model_copy(deep=True)

    def set(self, kind: str, status: bool, reason: Reason, message: str) -> None:
        self.status.set_condition(
            kind,
            status=status,
            reason=reason,
            message=message,
            now=self.now,
            generation=self.generation,
            previous=self.before.condition(kind),
        )

    def degraded(self, reason: Reason, message: str) -> Outcome:
        """No action: say why, once (a Warning only when the reason changes), and when to look again."""
        if not self.before.holds(DEGRADED, reason):
            self.events.append(("Warning", reason, message))
        self.set(DEGRADED, True, reason, message)
        self.set(READY, False, reason, message)
        self.set(PROGRESSING, False, reason, "No action while degraded")
        return Outcome(self.status, RETRY_AFTER[reason])

    def healthy(self) -> None:
        self.set(DEGRADED, False, Reason.HEALTHY, "Inputs are valid and fresh")


def planning_start(
    baseline: Mapping[str, int], status: StormTopologyStatus, budget: int
) -> tuple[dict[str, int], int]:
    """Where a plan for ``budget`` starts: (units per component, units to add, < 0 to remove).

    Once a budget is applied, the next one starts from the units that run and moves only the
    difference: ``start = status.units``, ``delta = budget − appliedBudget``. A rise therefore never
    takes a unit away from a component, as in Stela's scale-out, which adds machines to the running
    configuration; a fall removes units from what runs. Before anything is applied the plan starts
    from the baseline with the whole budget. (Replanning every budget from the baseline let one noisy
    capacity estimate move a unit back and forth: in the end-to-end run a rise 2 → 3 took bolt 2's
    second unit away and throughput fell from 18.4 to 15.9 tuples/s.)
    """
    units, applied = status.units, status.applied_budget
    if units is None or applied is None or set(units) != set(baseline):
        return dict(baseline), budget
    return dict(units), budget - applied


def planning_model(
    measured: Topology, start: Mapping[str, int], tasks: Mapping[str, int], policy: Policy
) -> Topology:
    """The measured profile with each component's units set to ``start`` (see :func:`planning_start`)
    and its bounds from Storm.

    ``maxUnits`` = min(the profile's bound, the task count, the spec's override): a spout the profile
    fixes stays fixed. ``capacityPerUnit`` may be overridden too. The task count is kept as the
    component's ``tasks``: a bolt's capacity is ``P·T/⌈T/u⌉`` (executors share its input by task).

    Auto mode plans for the demand over ``scaling.targetUtilization`` ρ: each spout offers
    ``outputPerUnit / ρ``, so a plan that leaves nothing congested leaves every bolt at most ρ busy
    under the measured demand (the headroom a load's next rise is met with). Its predicted Θ is the
    throughput at that inflated demand.
    """
    ids = {c.id for c in measured.components}
    if ids != set(start):
        missing = sorted(set(start) - ids) or sorted(ids - set(start))
        raise InvalidProfileError(f"profile and topology disagree on components: {', '.join(missing)}")
    overrides = {o.name: o for o in policy.spec.components}
    unknown = sorted(set(overrides) - ids)
    if unknown:  # a typo'd override silently ignored would leave a bound the user believes in unset
        known = ", ".join(sorted(ids))
        raise UnknownOverrideError(
            f"spec.components: unknown component {', '.join(unknown)} (the topology has {known})"
        )
    headroom = policy.spec.scaling.target_utilization if policy.mode is Mode.AUTO else 1.0
    comps = []
    for c in measured.components:
        o = overrides.get(c.id)
        limits = [c.max_units, tasks.get(c.id), o.max_units if o is not None else None]
        bounds = [b for b in limits if b is not None]
        bound = min(bounds) if bounds else None
        units = start[c.id]
        capacity = o.capacity_per_unit if o is not None and o.capacity_per_unit else c.capacity_per_unit
        comps.append(
            dataclasses.replace(
                c,
                output_per_unit=c.output_per_unit / headroom if c.is_spout else c.output_per_unit,
                units=units,
                max_units=None if bound is None else max(bound, units),
                min_units=min(units, 1) if c.max_units is None or not c.is_spout else min(units, c.min_units),
                capacity_per_unit=capacity,
                tasks=_task_count(tasks.get(c.id, c.tasks), units),
            )
        )
    return Topology(name=measured.name, components=tuple(comps))


def _task_count(tasks: int | None, units: int) -> int | None:
    """Storm's task count, or ``None`` where it is below the units planned from (a state Storm never
    runs: the plan then treats the executors as sharing the input evenly)."""
    return tasks if tasks is not None and tasks >= units else None


def replicas_for(units: Mapping[str, int], slots_per_pod: int) -> int:
    """Worker pods needed: one slot per unit, ``slots_per_pod`` slots per pod."""
    return math.ceil(sum(units.values()) / slots_per_pod)


def plan_summary(
    plan: Plan, plans: Mapping[Strategy, Plan], now: datetime, budget: int, start: Mapping[str, int]
) -> PlanSummary:
    """``status.lastPlan``: the chosen plan for ``budget`` and every strategy's predicted Θ."""
    return PlanSummary(
        budget=budget,
        strategy=plan.strategy.value,
        flow_model=plan.flow_model.value,
        chosen=(plan.chosen or plan.strategy).value,
        start=dict(start),
        allocation=dict(plan.allocation),
        unallocated=plan.unallocated,
        predicted=Predicted(before=round(plan.before, 3), after=round(plan.after, 3)),
        alternatives={s.value: round(p.after, 3) for s, p in plans.items()},
        at=timestamp(now),
    )


def strategy_plans(topology: Topology, delta: int, policy: Policy) -> dict[Strategy, Plan]:
    """Every strategy's plan side by side; a strategy that cannot plan this topology (the exact
    program past its size limit) is left out, unless it is the one the spec chose (then it raises)."""
    plans: dict[Strategy, Plan] = {}
    for strategy in Strategy:
        try:
            plans[strategy] = make_plan(topology, delta, strategy, policy.flow_model, OPTIMAL_TIME_LIMIT_S)
        except OptimalLimitError:
            if strategy is policy.strategy:
                raise
    return plans


@dataclass(frozen=True)
class _Pass:
    """What one pass has observed so far."""

    resource: Resource
    policy: Policy
    st: _Book
    ports: Ports
    workers: Workers
    storm: StormTopologyState
    budget: int  # the spec's, or Auto's choice
    at_max_units: bool = False  # Auto: even scaling.maxUnits leaves components congested


def reconcile(
    resource: Resource, policy: Policy, status: StormTopologyStatus, ports: Ports, now: datetime
) -> Outcome:
    """One pass; the returned status replaces the old one. Posts the pass's events at its end."""
    st = _Book(status.model_copy(deep=True), now, resource.generation)
    st.status.observed_generation = resource.generation
    outcome = _reconcile(resource, policy, st, ports)
    outcome.plan_seconds = st.plan_seconds
    _post(st, ports.events)
    return outcome


def degraded_pass(
    resource: Resource,
    status: StormTopologyStatus,
    *,
    reason: Reason,
    message: str,
    now: datetime,
    events: Events,
) -> Outcome:
    """A pass that cannot even start (invalid spec or status, an unexpected error): the same Degraded
    bookkeeping as any other, and its Warning posted once per change of reason."""
    st = _Book(status.model_copy(deep=True), now, resource.generation)
    st.status.observed_generation = resource.generation
    outcome = st.degraded(reason, message)
    _post(st, events)
    return outcome


def _post(st: _Book, events: Events) -> None:
    for kind, reason, message in st.events:
        (events.normal if kind == "Normal" else events.warning)(reason, message)


def _reconcile(resource: Resource, policy: Policy, st: _Book, ports: Ports) -> Outcome:
    spec = policy.spec
    try:
        workers = ports.deployments.read(resource.namespace, spec.workers.deployment)
    except RefusedError as err:
        return st.degraded(Reason.WORKERS_NOT_FOUND, str(err))
    except UnavailableError as err:
        return st.degraded(Reason.KUBERNETES_UNAVAILABLE, str(err))
    if workers.hpa:
        message = f"HorizontalPodAutoscaler {workers.hpa} targets Deployment {spec.workers.deployment}"
        return st.degraded(Reason.HPA_CONFLICT, message + "; Stormscale does not fight another writer")
    if not workers.cpu_limit_millicores:
        message = (
            f"Deployment {spec.workers.deployment} sets no container CPU limit: a resource unit is undefined"
        )
        return st.degraded(Reason.NO_CPU_LIMIT, message)
    st.status.unit_cpu = f"{workers.cpu_limit_millicores // spec.workers.slots_per_pod}m"
    try:
        storm = ports.nimbus.describe(spec.topology_name)
    except RefusedError as err:
        return st.degraded(Reason.TOPOLOGY_NOT_FOUND, str(err))
    except UnavailableError as err:
        return st.degraded(Reason.NIMBUS_UNAVAILABLE, str(err))
    if st.status.baseline is not None and set(st.status.baseline) != set(storm.executors):
        _refresh_baseline(st, storm)
    baseline = dict(st.status.baseline or storm.executors)
    st.status.baseline = baseline
    seen = _Pass(resource, policy, st, ports, workers, storm, policy.budget)
    measured: MeasuredProfile | None = None
    pending = st.status.pending
    if policy.mode is Mode.AUTO and pending:  # finish what Auto started
        seen = dataclasses.replace(seen, budget=pending.budget)
    elif policy.mode is Mode.AUTO:
        fresh = _measure(seen)
        if isinstance(fresh, Outcome):
            return fresh
        measured = fresh
        sized = _auto_budget(seen, measured, baseline)
        if isinstance(sized, Outcome):
            return sized
        seen = sized
    budget = seen.budget
    if pending and pending.budget == budget:
        return _apply(seen, pending)
    st.status.pending = None
    if _converged(st.status, budget, storm, workers, spec.workers.slots_per_pod):
        st.healthy()
        st.set(PROGRESSING, False, Reason.STABLE, f"Budget {budget} is applied")
        st.set(READY, True, Reason.APPLIED, f"Budget {budget} is applied")
        return Outcome(st.status, AUTO_PERIOD_S if policy.mode is Mode.AUTO else None)
    if refused_before(st.status, resource.generation, budget):
        return _hold_refused(seen)
    return _plan_and_apply(seen, baseline, measured)


#: Degraded reasons that end an apply for good: held until the spec (or Auto's budget) changes.
GIVEN_UP = (Reason.APPLY_REFUSED, Reason.REBALANCE_NOT_APPLIED)


def refused_before(status: StormTopologyStatus, generation: int, budget: int) -> bool:
    """Whether applying ``budget`` was refused (or Storm ignored every rebalance of it) already for
    this very spec (generation).

    A refusal is, by the ports' contract, not mended by retrying: re-planning and re-applying every
    pass only scaled the Deployment up and down and posted a Warning each time. Held until the spec
    changes (a new generation) or the budget to apply does (Auto mode under another load). The same
    holds once :data:`MAX_REBALANCES` rebalances were accepted and none ran.
    """
    degraded, plan = status.condition(DEGRADED), status.last_plan
    return (
        degraded is not None
        and degraded.status == "True"
        and degraded.reason in GIVEN_UP
        and degraded.observed_generation == generation
        and plan is not None
        and plan.budget == budget
    )


def _hold_refused(seen: _Pass) -> Outcome:
    """The refused apply stays refused: no plan, no write but the scale back, no new Warning."""
    st = seen.st
    degraded = st.status.condition(DEGRADED)
    reason = Reason(degraded.reason) if degraded is not None else Reason.APPLY_REFUSED
    message = degraded.message if degraded is not None else "apply refused"
    return _refused(seen, message, seen.workers.replicas, reason)


def _refresh_baseline(st: _Book, storm: StormTopologyState) -> None:
    """Storm runs other components than the baseline names: the topology was resubmitted.

    What the status says of units, budgets and plans belongs to the old topology (kept, it stayed
    ``Degraded/InvalidProfile`` for ever); the new one starts from what Storm runs now, as a topology
    seen for the first time. Auto's last scale time is kept: the cooldown protects the pods, which
    are the same.
    """
    old = ", ".join(sorted(st.status.baseline or {}))
    st.status.baseline = dict(storm.executors)
    st.status.units = st.status.total_units = st.status.applied_budget = st.status.pending = None
    st.status.last_plan = None  # also lifts a refusal's hold (refused_before): Storm changed
    if st.status.autoscaler is not None:
        st.status.autoscaler = st.status.autoscaler.model_copy(
            update={"desired_budget": None, "scale_in_since": None}
        )
    message = (
        f"Storm runs other components than the baseline's ({old}): baseline {_units_text(storm.executors)}"
    )
    st.events.append(("Normal", Reason.BASELINE_REFRESHED, message))


def _converged(
    status: StormTopologyStatus, budget: int, storm: StormTopologyState, workers: Workers, slots: int
) -> bool:
    units = status.units
    return (
        status.applied_budget == budget
        and units is not None
        and dict(storm.executors) == units
        and workers.replicas == replicas_for(units, slots)
    )


def _measure(seen: _Pass) -> MeasuredProfile | Outcome:
    """A fresh profile, or the Degraded outcome that says why there is none."""
    policy, st = seen.policy, seen.st
    try:
        measured = seen.ports.profiler.profile(policy.spec.topology_name, policy.window_s)
    except UnknownDemandError as err:
        return st.degraded(Reason.DEMAND_UNKNOWN, str(err))
    except StaleMetricsError as err:
        return st.degraded(Reason.STALE_METRICS, str(err))
    except UnavailableError as err:
        return st.degraded(Reason.METRICS_UNAVAILABLE, str(err))
    except RefusedError as err:
        return st.degraded(Reason.METRICS_REFUSED, str(err))
    if measured.age_s > policy.max_age_s:
        message = (
            f"Newest samples are {measured.age_s:.0f}s old (metrics.maxAge {policy.spec.metrics.max_age})"
        )
        return st.degraded(Reason.STALE_METRICS, message)
    return measured


def _auto_budget(seen: _Pass, measured: MeasuredProfile, baseline: dict[str, int]) -> _Pass | Outcome:
    """Auto mode: size the budget from congestion, then apply cooldown and delayed scale-in."""
    policy, st = seen.policy, seen.st
    scaling = policy.spec.scaling
    try:
        model = planning_model(measured.topology, baseline, seen.storm.tasks, policy)
    except InvalidProfileError:
        return seen  # _plan_and_apply reports it
    try:
        sizing = needed_budget(
            model,
            (scaling.min_units, scaling.max_units),
            strategy=policy.strategy,
            model=policy.flow_model,
            threshold=scaling.congestion_threshold,
        )
    except OptimalLimitError as err:
        return st.degraded(Reason.PLANNING_FAILED, str(err))
    state = st.status.autoscaler or AutoscalerState()
    current = state.desired_budget if state.desired_budget is not None else policy.budget
    decision = decide(
        current,
        sizing.budget,
        state,
        st.now,
        cooldown_s=policy.cooldown_s,
        scale_in_delay_s=policy.scale_in_delay_s,
    )
    st.status.autoscaler = decision.state
    if not sizing.sufficient:
        _max_units_reached(st, scaling.max_units)
    elif st.status.holds(SCALING_LIMITED, Reason.MAX_UNITS_REACHED):  # the load fell back into range
        st.set(SCALING_LIMITED, False, Reason.WITHIN_LIMITS, f"Within scaling.maxUnits {scaling.max_units}")
    return dataclasses.replace(seen, budget=decision.budget, at_max_units=not sizing.sufficient)


def _max_units_reached(st: _Book, max_units: int) -> None:
    message = f"Even scaling.maxUnits {max_units} leaves components congested"
    st.set(SCALING_LIMITED, True, Reason.MAX_UNITS_REACHED, message)


def _plan_and_apply(seen: _Pass, baseline: dict[str, int], measured: MeasuredProfile | None) -> Outcome:
    resource, policy, st, ports, storm = seen.resource, seen.policy, seen.st, seen.ports, seen.storm
    if not storm.active:
        return st.degraded(
            Reason.TOPOLOGY_NOT_ACTIVE, f"Topology {policy.spec.topology_name} is {storm.status}"
        )
    if measured is None:
        fresh = _measure(seen)
        if isinstance(fresh, Outcome):
            return fresh
        measured = fresh
    start, delta = planning_start(baseline, st.status, seen.budget)
    try:
        model = planning_model(measured.topology, start, storm.tasks, policy)
    except UnknownOverrideError as err:
        return st.degraded(Reason.INVALID_SPEC, str(err))
    except InvalidProfileError as err:
        return st.degraded(Reason.INVALID_PROFILE, str(err))
    started = time.perf_counter()
    try:
        plans = strategy_plans(model, delta, policy)
    except OptimalLimitError as err:
        return st.degraded(Reason.PLANNING_FAILED, str(err))
    finally:
        st.plan_seconds = time.perf_counter() - started
    plan = plans[policy.strategy]
    st.healthy()
    st.status.last_plan = plan_summary(plan, plans, st.now, seen.budget, start)
    st.status.observed = Observed(
        throughput=round(measured.throughput, 3), window=policy.spec.metrics.window, at=timestamp(st.now)
    )
    if plan.unallocated:
        st.set(
            SCALING_LIMITED,
            True,
            Reason.UNITS_UNALLOCATED,
            f"{plan.unallocated} of {abs(delta)} units could not be used (maxUnits or no gain)",
        )
    elif seen.at_max_units:  # every unit used, and still not enough: say that, not "within limits"
        _max_units_reached(st, policy.spec.scaling.max_units)
    else:
        st.set(SCALING_LIMITED, False, Reason.WITHIN_LIMITS, "Every unit of the budget is used")
    if policy.mode is Mode.RECOMMEND:
        st.set(PROGRESSING, False, Reason.RECOMMENDED, "Recommend mode: the plan is in status.lastPlan only")
        st.set(READY, True, Reason.RECOMMENDED, f"Plan for budget {seen.budget} recommended, not applied")
        return Outcome(st.status)
    target = {cid: start[cid] + plan.allocation.get(cid, 0) for cid in start}
    pending = st.status.pending = PendingApply(
        budget=seen.budget,
        units=target,
        replicas=replicas_for(target, policy.spec.workers.slots_per_pod),
        since=timestamp(st.now),
    )
    try:  # intent first: a crash from here on resumes this very plan (baseline and autoscaler too)
        ports.status.save(resource.namespace, resource.name, st.status)
    except UnavailableError as err:
        return st.degraded(Reason.KUBERNETES_UNAVAILABLE, str(err))
    except RefusedError as err:
        return st.degraded(Reason.KUBERNETES_UNAVAILABLE, f"status not saved, so nothing applied: {err}")
    return _apply(seen, pending)


def _apply(seen: _Pass, pending: PendingApply) -> Outcome:
    """Make it so: replicas, then one rebalance, then verify (on a later pass if Storm is busy).
    ``pending`` is the saved intent (``status.pending``), which records the rebalance requests."""
    resource, spec, st, ports = seen.resource, seen.policy.spec, seen.st, seen.ports
    workers, storm, target = seen.workers, seen.storm, dict(pending.units)
    replicas = replicas_for(target, spec.workers.slots_per_pod)
    st.healthy()
    now_replicas = workers.replicas
    try:
        if workers.replicas != replicas:
            ports.deployments.scale(resource.namespace, spec.workers.deployment, replicas)
            now_replicas = replicas
        if storm.status == "REBALANCING":
            return _rebalancing(seen, pending)
        if not runs(storm, target, asked=bool(pending.rebalances)):
            if not storm.slots_for(sum(target.values())):
                # Storm would put two executors in one worker (Even scheduler: slots used = min(workers,
                # free slots)) and keep them there once the late pods' Supervisors register.
                message = (
                    f"waiting for worker pods to register with Nimbus: {sum(target.values())} slots "
                    f"needed, {storm.free_slots} free + {storm.workers} held"
                )
                return _progressing(st, Reason.WAITING_FOR_SLOTS, message)
            return _rebalance(seen, pending, now_replicas)
    except RefusedError as err:
        return _refused(seen, str(err), now_replicas)
    except UnavailableError as err:
        return st.degraded(Reason.APPLY_UNAVAILABLE, str(err))
    return _verified(st, seen.budget, target)


def runs(storm: StormTopologyState, target: Mapping[str, int], *, asked: bool) -> bool:
    """Whether Storm runs ``target``: those executors per component and, once the operator has asked
    for a rebalance to it (``asked``), on the workers that rebalance asked for, one per unit. (Before,
    the workers are the user's: a topology whose executors already are the target, at budget 0 say,
    is left on the workers it was submitted with.)"""
    executors = dict(storm.executors) == dict(target)
    return executors and (not asked or storm.workers == sum(target.values()))


def _rebalancing(seen: _Pass, pending: PendingApply) -> Outcome:
    """Storm reports REBALANCING: wait, unless it has for :data:`REBALANCE_STALL_S` past our last
    request's wait; then say so (``Degraded/RebalanceStalled``) and keep the plan pending. Nimbus
    refuses a rebalance while one is pending, so asking again cannot help; Storm finishing it later
    is verified as usual."""
    st = seen.st
    waited = seconds_since(pending.last_rebalance, st.now)
    if pending.last_rebalance and waited > REBALANCE_WAIT_SECS + REBALANCE_STALL_S:
        message = (
            f"Storm has been rebalancing topology {seen.policy.spec.topology_name} for {waited:.0f}s since "
            f"the request (wait {REBALANCE_WAIT_SECS}s): Nimbus may have lost the delayed rebalance "
            "(STORM-3516); the plan stays pending"
        )
        return st.degraded(Reason.REBALANCE_STALLED, message)
    return _progressing(st, Reason.REBALANCING, "Storm is rebalancing the topology")


def _rebalance(seen: _Pass, pending: PendingApply, replicas: int) -> Outcome:
    """Ask Storm to run ``target``: once, and again while it runs something else after the last
    request had its wait and :data:`REBALANCE_GRACE_S` (Nimbus accepted it and lost it: a restart
    between the request and its delayed execution, STORM-3516). A rebalance *sets* every component's
    executors and the worker count, so asking again is safe. A request again is recorded in
    ``status.pending`` before it is made (intent first) and announced by one Warning. Only requests
    Nimbus may have accepted count: one that failed as unavailable (Nimbus down) is not, and is
    retried after that reason's delay like any other. After :data:`MAX_REBALANCES` requests the
    plan is given up like a refused one
    (``Degraded/RebalanceNotApplied``: the Deployment back to what Storm runs, held until the spec
    changes)."""
    st, storm, spec, target = seen.st, seen.storm, seen.policy.spec, dict(pending.units)
    asked = pending.rebalances or 0
    since = seconds_since(pending.last_rebalance, st.now)
    wanted = f"{_units_text(target)} on {sum(target.values())} workers"
    ran = f"{_units_text(storm.executors)} on {storm.workers} workers"
    if asked and since < REBALANCE_WAIT_SECS + REBALANCE_GRACE_S:
        message = f"Rebalance to {wanted} requested {since:.0f}s ago"
        return _progressing(st, Reason.REBALANCE_REQUESTED, message)
    if asked >= MAX_REBALANCES:
        message = f"Storm accepted {asked} rebalances to {wanted} and runs {ran}: none was applied"
        return _refused(seen, message, replicas, Reason.REBALANCE_NOT_APPLIED)
    before = pending.rebalances, pending.last_rebalance
    pending.rebalances, pending.last_rebalance = asked + 1, timestamp(st.now)
    if asked:
        try:  # intent first: a crash from here on counts this request
            seen.ports.status.save(seen.resource.namespace, seen.resource.name, st.status)
        except (UnavailableError, RefusedError) as err:
            return st.degraded(Reason.KUBERNETES_UNAVAILABLE, f"status not saved, so nothing applied: {err}")
    try:
        seen.ports.nimbus.rebalance(spec.topology_name, target, sum(target.values()), REBALANCE_WAIT_SECS)
    except UnavailableError:
        pending.rebalances, pending.last_rebalance = before  # not accepted: Nimbus is down, try later
        raise
    if asked:
        message = (
            f"Storm runs {ran} {since:.0f}s after the rebalance to {wanted}: asked again "
            f"({asked + 1} of {MAX_REBALANCES})"
        )
        st.events.append(("Warning", Reason.REBALANCE_REISSUED, message))
    again = f" again ({asked + 1} of {MAX_REBALANCES})" if asked else ""
    message = f"Rebalance to {_units_text(target)} requested{again}"
    return _progressing(st, Reason.REBALANCE_REQUESTED, message)


def _refused(seen: _Pass, message: str, replicas: int, reason: Reason = Reason.APPLY_REFUSED) -> Outcome:
    """Storm or Kubernetes refused the apply (or Storm ran none of the rebalances it accepted): forget
    the plan and scale the Deployment back.

    Back to the pods the units Storm runs need, rather than keeping the new ones for a retry: a
    refusal is not mended by retrying (:func:`refused_before` holds it until the spec changes), and
    idle worker pods would hold quota and offer Storm free slots that other topologies' workers could
    take, only to lose them at the next scale-in. A failed scale back is retried on the next pass.
    """
    resource, spec, st, storm = seen.resource, seen.policy.spec, seen.st, seen.storm
    st.status.pending = None
    running = replicas_for(storm.executors, spec.workers.slots_per_pod)
    if replicas == running:
        return st.degraded(reason, message)
    try:
        seen.ports.deployments.scale(resource.namespace, spec.workers.deployment, running)
    except (RefusedError, UnavailableError) as err:
        outcome = st.degraded(reason, message)
        LOG.warning(
            "[%s/%s] scaling back to %d replicas failed: %s", resource.namespace, resource.name, running, err
        )
        return Outcome(outcome.status, RETRY_AFTER[Reason.APPLY_UNAVAILABLE])
    return st.degraded(reason, message)


def _progressing(st: _Book, reason: Reason, message: str) -> Outcome:
    st.set(PROGRESSING, True, reason, message)
    st.set(READY, False, reason, message)
    return Outcome(st.status, RETRY_REBALANCE_S)


def _verified(st: _Book, budget: int, target: dict[str, int]) -> Outcome:
    """Storm runs the target executors: record the applied plan, announce it once."""
    st.status.units = target
    st.status.total_units = sum(target.values())
    st.status.applied_budget = budget
    st.status.pending = None
    message = f"Applied budget {budget}: {_units_text(target)}"
    plan = st.status.last_plan
    if plan is not None:
        before, after = plan.predicted.before, plan.predicted.after
        message += f"; predicted {before:.0f} → {after:.0f} tuples/s ({plan.chosen})"
    st.events.append(("Normal", Reason.SCALING_APPLIED, message))
    st.set(PROGRESSING, False, Reason.APPLIED, message)
    st.set(READY, True, Reason.APPLIED, message)
    return Outcome(st.status)


def _units_text(units: Mapping[str, int]) -> str:
    return ", ".join(f"{cid}={n}" for cid, n in sorted(units.items()))
