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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from stormscale.aggregation import PublishedError, configmap_name
from stormscale.operator import packing
from stormscale.operator.autoscale import (
    SizedUnits,
    catching_up,
    decide,
    needed_budget,
    size_units,
    target_of,
)
from stormscale.operator.policy import Mode, PlacementKind, Policy, ProfileSource
from stormscale.operator.ports import (
    Events,
    MeasuredProfile,
    Ports,
    RefusedError,
    SettlingError,
    StaleMetricsError,
    StormTopologyState,
    UnavailableError,
    UnknownDemandError,
    Workers,
)
from stormscale.operator.profiles import PublishedVerdict, judge_published
from stormscale.operator.status import (
    DEGRADED,
    PROGRESSING,
    PUBLISHED_PROFILE,
    READY,
    RETRY_AFTER,
    SCALING_LIMITED,
    AutoscalerState,
    Observed,
    PendingApply,
    PlacementStatus,
    PlanSummary,
    Predicted,
    Reason,
    SizingSummary,
    StormTopologyStatus,
    seconds_since,
    timestamp,
)
from stormscale.planner import OptimalLimitError, Plan, Strategy, Topology, make_plan, throughput
from stormscale.planner.placement.shukla import MappingError
from stormscale.planner.sizing.exact import TargetRateError, scaled_to
from stormscale.planner.sizing.strategies import SizingError
from stormscale.storm.placement import PlacementError

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
#: Seconds after a rebalance that carried a placement during which a layout Nimbus does not report
#: yet is waited for (Progressing); after it, Degraded/PlacementNotApplied.
PLACEMENT_GRACE_S = 120.0
#: A condition's message names at most this many of the problems it lists (then "…").
SHOWN_PROBLEMS = 3
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

    def settling(self, message: str, retry_after: float) -> Outcome:
        """No action yet, and nothing wrong: the samples show a recent change (a rebalance, a restarted
        worker) and too few steady intervals after it. Not Degraded and no Warning; ``Progressing``
        (looked at again after ``retry_after``); Ready kept when True (the units run), else False."""
        self.set(DEGRADED, False, Reason.SETTLING, message)
        self.set(PROGRESSING, True, Reason.SETTLING, message)
        if not self.status.holds(READY):
            self.set(READY, False, Reason.SETTLING, message)
        return Outcome(self.status, retry_after)

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
    plan: Plan,
    plans: Mapping[Strategy, Plan],
    now: datetime,
    budget: int,
    start: Mapping[str, int],
    *,
    measured: MeasuredProfile | None = None,
) -> PlanSummary:
    """``status.lastPlan``: the chosen plan for ``budget``, every strategy's predicted Θ, and which
    profile it rests on (``measured``'s source and window)."""
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
        profile_source=None if measured is None else measured.source.value,
        profile_window=None if measured is None else measured.window,
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
    #: Auto with a sizing: why its units fall short of the target (``None``: they do not).
    limited: str | None = None
    #: Auto with a sizing, moving to it now: the units to apply (not a budget strategy's plan).
    sized: SizedUnits | None = None


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
    too_few = slots_problem(storm, spec.workers.slots_per_pod)
    if too_few:
        return st.degraded(Reason.INVALID_SPEC, too_few)
    if st.status.baseline is not None and set(st.status.baseline) != set(storm.executors):
        _refresh_baseline(st, storm)
    baseline = dict(st.status.baseline or storm.executors)
    st.status.baseline = baseline
    if policy.sizing is None:  # scaling.sizing and targetRate removed: no sizing to show
        st.status.sizing = None
    seen = _Pass(resource, policy, st, ports, workers, storm, policy.budget)
    measured: MeasuredProfile | None = None
    pending = st.status.pending
    if pending and _kind(pending.placement) != policy.placement:  # workers.placement changed meanwhile
        pending = st.status.pending = None
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
    if _converged(st.status, budget, storm, workers, policy):
        drift = placement_drift(st.status.placement, storm, policy)
        if drift:
            return st.degraded(Reason.PLACEMENT_NOT_APPLIED, drift)
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


def _kind(placement: PlacementStatus | None) -> PlacementKind | None:
    return None if placement is None else PlacementKind(placement.strategy)


def slots_problem(storm: StormTopologyState, slots_per_pod: int) -> str | None:
    """Why ``slotsPerPod`` cannot hold: a Supervisor that runs the topology's workers (else every
    Supervisor Nimbus lists) has fewer slots (``supervisor.slots.ports``); ``None`` when it holds
    or Nimbus does not say."""
    offered = storm.supervisor_slots
    ours = {e.host for e in storm.assignment} & set(offered)
    pool = {h: offered[h] for h in ours} or dict(offered)
    if not pool:
        return None
    small = sorted(h for h, n in pool.items() if n < slots_per_pod) if ours else []
    if not ours and max(pool.values()) < slots_per_pod:
        small = sorted(pool)
    if not small:
        return None
    host = small[0]
    return (
        f"spec.workers.slotsPerPod {slots_per_pod} exceeds the {pool[host]} slot(s) of Supervisor {host} "
        f"(supervisor.slots.ports): a worker pod cannot run {slots_per_pod} workers"
    )


def _converged(
    status: StormTopologyStatus, budget: int, storm: StormTopologyState, workers: Workers, policy: Policy
) -> bool:
    """Budget applied, Storm runs its units and the Deployment has its pods (with ``workers.placement``:
    the last placement's, by the same strategy; whether Storm still runs it is
    :func:`placement_drift`'s)."""
    units, placement = status.units, status.placement
    if status.applied_budget != budget or units is None or dict(storm.executors) != units:
        return False
    if policy.placement is None:
        return workers.replicas == replicas_for(units, policy.spec.workers.slots_per_pod)
    return (
        placement is not None and _kind(placement) == policy.placement and workers.replicas == placement.pods
    )


def placement_drift(
    placement: PlacementStatus | None, storm: StormTopologyState, policy: Policy
) -> str | None:
    """Why Nimbus no longer runs the applied placement (a worker pod restarted, a Supervisor gone), or
    ``None``. Nothing is sent again: Stormscale's scheduler assigns the placement once a Supervisor
    is free, and a rebalance would only restart every worker."""
    if policy.placement is None or placement is None:
        return None
    try:
        problems = packing.problems(
            packing.as_placement(placement.counts()), storm, policy.spec.topology_name
        )
    except PlacementError as err:
        return f"status.placement: {err}"
    if not problems:
        return None
    said = [f"the scheduler says: {storm.sched_status}"] if storm.sched_status else []
    return (
        f"Nimbus no longer runs status.placement: {first_problems([*said, *problems])} "
        "(its scheduler assigns it again once a Supervisor is free)"
    )


def _measure(seen: _Pass) -> MeasuredProfile | Outcome:
    """A profile to plan on: the published one where the spec asks for it and it is usable
    (:func:`_published`), else a fresh one from the profiler; or the Degraded outcome that says why
    there is none."""
    policy, st = seen.policy, seen.st
    verdict = _published(seen)
    if verdict is not None and verdict.profile is not None:
        return verdict.profile
    try:
        measured = seen.ports.profiler.profile(policy.spec.topology_name, policy.window_s)
    except UnknownDemandError as err:
        return st.degraded(Reason.DEMAND_UNKNOWN, str(err))
    except SettlingError as err:
        if err.newest_age_s <= policy.max_age_s:
            return st.settling(f"Waiting for a steady window after a change: {err}", RETRY_REBALANCE_S)
        return st.degraded(Reason.STALE_METRICS, f"{err}; newest samples are {err.newest_age_s:.0f}s old")
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


def _published(seen: _Pass) -> PublishedVerdict | None:
    """With ``metrics.profile: Published``: read the fleet job's ConfigMap and judge it
    (:func:`~stormscale.operator.profiles.judge_published`), set the ``PublishedProfile`` condition, and
    post a Warning when the pass falls back for a new reason. ``None`` (and no condition) otherwise."""
    policy, st, resource = seen.policy, seen.st, seen.resource
    if policy.spec.metrics.profile is not ProfileSource.PUBLISHED:
        st.status.drop_condition(PUBLISHED_PROFILE)
        return None
    fallback = "; planning on the in-process profile"
    try:
        name = configmap_name(resource.name)
        where = f"{resource.namespace}/{name}"
        data = seen.ports.published.read(resource.namespace, name)
    except PublishedError as err:
        verdict = PublishedVerdict(None, Reason.PUBLISHED_PROFILE_INVALID, f"{err}{fallback}")
    except (UnavailableError, RefusedError) as err:
        verdict = PublishedVerdict(None, Reason.PUBLISHED_PROFILE_UNAVAILABLE, f"{err}{fallback}")
    else:
        verdict = judge_published(
            data,
            where=where,
            topology=policy.spec.topology_name,
            components=set(seen.storm.executors),
            now=st.now,
            max_age_s=policy.published_max_age_s,
        )
    before = st.before.condition(PUBLISHED_PROFILE)
    if not verdict.used and (before is None or before.reason != verdict.reason.value):
        st.events.append(("Warning", verdict.reason, verdict.message))
    st.set(PUBLISHED_PROFILE, verdict.used, verdict.reason, verdict.message)
    return verdict


def _auto_budget(seen: _Pass, measured: MeasuredProfile, baseline: dict[str, int]) -> _Pass | Outcome:
    """Auto mode: size the budget from congestion, then apply cooldown and delayed scale-in."""
    policy, st = seen.policy, seen.st
    scaling = policy.spec.scaling
    try:
        model = planning_model(measured.topology, baseline, seen.storm.tasks, policy)
    except InvalidProfileError:
        return seen  # _plan_and_apply reports it
    if policy.sizing is not None:
        return _auto_sized(seen, measured, baseline)
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
        catching_up=bool(catching_up(measured.confidence)),
    )
    st.status.autoscaler = decision.state
    if not sizing.sufficient:
        _max_units_reached(st, scaling.max_units)
    elif st.status.holds(SCALING_LIMITED, Reason.MAX_UNITS_REACHED):  # the load fell back into range
        st.set(SCALING_LIMITED, False, Reason.WITHIN_LIMITS, f"Within scaling.maxUnits {scaling.max_units}")
    return dataclasses.replace(seen, budget=decision.budget, at_max_units=not sizing.sufficient)


def _max_units_reached(st: _Book, max_units: int, why: str | None = None) -> None:
    message = why or f"Even scaling.maxUnits {max_units} leaves components congested"
    st.set(SCALING_LIMITED, True, Reason.MAX_UNITS_REACHED, message)


def _auto_sized(seen: _Pass, measured: MeasuredProfile, baseline: dict[str, int]) -> _Pass | Outcome:
    """Auto with ``scaling.sizing``: the sizing's units for Ω, its budget under cooldown and delayed
    scale-in; when the decision is that budget, the sizing's units are what is applied."""
    policy, st = seen.policy, seen.st
    scaling = policy.spec.scaling
    sized = _size(seen, measured, baseline, bounds=(scaling.min_units, scaling.max_units))
    if isinstance(sized, Outcome):
        return sized
    state = st.status.autoscaler or AutoscalerState()
    current = state.desired_budget if state.desired_budget is not None else policy.budget
    decision = decide(
        current,
        sized.budget,
        state,
        st.now,
        cooldown_s=policy.cooldown_s,
        scale_in_delay_s=policy.scale_in_delay_s,
        catching_up=bool(catching_up(measured.confidence)),
    )
    st.status.autoscaler = decision.state
    limited = "; ".join(sized.limits) or None
    if limited:
        _max_units_reached(st, scaling.max_units, limited)
    elif st.status.holds(SCALING_LIMITED, Reason.MAX_UNITS_REACHED):
        st.set(SCALING_LIMITED, False, Reason.WITHIN_LIMITS, f"Within scaling.maxUnits {scaling.max_units}")
    return dataclasses.replace(
        seen,
        budget=decision.budget,
        at_max_units=limited is not None,
        limited=limited,
        sized=sized if decision.budget == sized.budget else None,
    )


def _size(
    seen: _Pass, measured: MeasuredProfile, baseline: dict[str, int], bounds: tuple[int, int] | None
) -> SizedUnits | Outcome:
    """The sizing for Ω from the units that run, recorded in ``status.sizing`` (``applied`` in Auto);
    Degraded/PlanningFailed when nothing can be sized."""
    policy, st, storm = seen.policy, seen.st, seen.storm
    assert policy.sizing is not None
    scaling = policy.spec.scaling
    start, _ = planning_start(baseline, st.status, 0)
    try:
        model = planning_model(measured.topology, start, storm.tasks, policy)
        omega, source = target_of(measured.topology, scaling.target_rate, scaling.target_utilization)
        sized = size_units(
            model,
            baseline,
            strategy=policy.sizing,
            target_rate=omega,
            source=source,
            slots_per_pod=policy.spec.workers.slots_per_pod,
            bounds=bounds,
            plan_strategy=policy.strategy,
            flow_model=policy.flow_model,
        )
    except UnknownOverrideError as err:
        return st.degraded(Reason.INVALID_SPEC, str(err))
    except InvalidProfileError as err:
        return st.degraded(Reason.INVALID_PROFILE, str(err))
    except (SizingError, TargetRateError, OptimalLimitError) as err:
        return st.degraded(Reason.PLANNING_FAILED, f"sizing {policy.sizing.value}: {err}")
    st.status.sizing = sizing_summary(sized, applied=policy.mode is Mode.AUTO, now=st.now)
    return sized


def sizing_summary(sized: SizedUnits, *, applied: bool, now: datetime) -> SizingSummary:
    """``status.sizing`` from a sizing."""
    return SizingSummary(
        strategy=sized.strategy.value,
        source="targetRate" if sized.source == "targetRate" else "demand",
        target_rate=round(sized.target_rate, 3),
        sized_rate=round(sized.sized_rate, 3),
        units=dict(sized.units),
        total_units=sum(sized.units.values()),
        budget=sized.budget,
        slots=sized.sized.slots,
        pods=sized.sized.pods,
        exact_units=sized.exact_units,
        predicted=round(sized.predicted, 3),
        applied=applied,
        message="; ".join(sized.limits) or sized.sized.note,
        at=timestamp(now),
    )


def _plan_and_apply(seen: _Pass, baseline: dict[str, int], measured: MeasuredProfile | None) -> Outcome:
    policy, st, storm = seen.policy, seen.st, seen.storm
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
    planned = _budget_plan(seen, model, start, delta, measured)
    if isinstance(planned, Outcome):
        return planned
    target, unallocated = planned
    if policy.sizing is None:
        st.status.sizing = None
    elif policy.mode is not Mode.AUTO:
        _show_sizing(seen, measured, baseline)
    st.healthy()
    st.status.observed = Observed(
        throughput=round(measured.throughput, 3),
        window=measured.window or policy.spec.metrics.window,
        at=timestamp(st.now),
    )
    if unallocated:
        st.set(
            SCALING_LIMITED,
            True,
            Reason.UNITS_UNALLOCATED,
            f"{unallocated} of {abs(delta)} units could not be used (maxUnits or no gain)",
        )
    elif seen.at_max_units:  # every unit used, and still not enough: say that, not "within limits"
        _max_units_reached(st, policy.spec.scaling.max_units, seen.limited)
    else:
        st.set(SCALING_LIMITED, False, Reason.WITHIN_LIMITS, "Every unit of the budget is used")
    return _lay_out_and_apply(seen, measured, target)


def _budget_plan(
    seen: _Pass, model: Topology, start: dict[str, int], delta: int, measured: MeasuredProfile
) -> tuple[dict[str, int], int] | Outcome:
    """Every budget strategy's plan for ``delta`` units from ``start`` (``status.lastPlan``), and the
    target units with those the plan could not use. Auto with a sizing applies the sizing's units
    and plans the strategies for as many units, beside it."""
    policy, st, sized = seen.policy, seen.st, seen.sized
    if sized is not None:
        delta = sum(sized.units.values()) - sum(start.values())
    started = time.perf_counter()
    try:
        plans = strategy_plans(model, delta, policy)
    except OptimalLimitError as err:
        return st.degraded(Reason.PLANNING_FAILED, str(err))
    finally:
        st.plan_seconds = time.perf_counter() - started
    if sized is not None:
        st.status.last_plan = sized_plan_summary(
            model,
            sized,
            plans,
            now=st.now,
            budget=seen.budget,
            start=start,
            strategy=policy.strategy,
            measured=measured,
        )
        return dict(sized.units), 0
    plan = plans[policy.strategy]
    st.status.last_plan = plan_summary(plan, plans, st.now, seen.budget, start, measured=measured)
    return {cid: start[cid] + plan.allocation.get(cid, 0) for cid in start}, plan.unallocated


def _lay_out_and_apply(seen: _Pass, measured: MeasuredProfile, target: dict[str, int]) -> Outcome:
    """The placement of ``target`` (with ``workers.placement``); Recommend stops here, Manual and
    Auto save the intent and apply."""
    resource, policy, st, ports = seen.resource, seen.policy, seen.st, seen.ports
    placement: PlacementStatus | None = None
    if policy.placement is not None:
        laid = _placement(seen, measured, target)
        if isinstance(laid, Outcome):
            return laid
        placement = laid
    if policy.mode is Mode.RECOMMEND:
        st.status.placement = placement
        st.set(PROGRESSING, False, Reason.RECOMMENDED, "Recommend mode: the plan is in status.lastPlan only")
        st.set(READY, True, Reason.RECOMMENDED, f"Plan for budget {seen.budget} recommended, not applied")
        return Outcome(st.status)
    pending = st.status.pending = PendingApply(
        budget=seen.budget,
        units=target,
        replicas=_replicas(target, placement, policy),
        since=timestamp(st.now),
        placement=placement,
    )
    try:  # intent first: a crash from here on resumes this very plan (baseline and autoscaler too)
        ports.status.save(resource.namespace, resource.name, st.status)
    except UnavailableError as err:
        return st.degraded(Reason.KUBERNETES_UNAVAILABLE, str(err))
    except RefusedError as err:
        return st.degraded(Reason.KUBERNETES_UNAVAILABLE, f"status not saved, so nothing applied: {err}")
    return _apply(seen, pending)


def sized_plan_summary(
    model: Topology,
    sized: SizedUnits,
    plans: Mapping[Strategy, Plan],
    *,
    now: datetime,
    budget: int,
    start: Mapping[str, int],
    strategy: Strategy,
    measured: MeasuredProfile | None = None,
) -> PlanSummary:
    """``status.lastPlan`` for Auto's sizing: its units as the allocation from ``start``, Θ before and
    after on the model planned on, and beside it every budget strategy's Θ for as many units."""
    flow = next(iter(plans.values())).flow_model
    units = tuple(sized.units[c.id] for c in model.components)
    alternatives = {s.value: round(p.after, 3) for s, p in plans.items()}
    after = throughput(model, units, flow)
    alternatives[sized.strategy.value] = round(after, 3)
    return PlanSummary(
        budget=budget,
        strategy=strategy.value,
        flow_model=flow.value,
        chosen=sized.strategy.value,
        start=dict(start),
        allocation={c: n - start[c] for c, n in sized.units.items() if n != start[c]},
        unallocated=0,
        predicted=Predicted(before=round(throughput(model, model.units, flow), 3), after=round(after, 3)),
        alternatives=alternatives,
        at=timestamp(now),
        profile_source=None if measured is None else measured.source.value,
        profile_window=None if measured is None else measured.window,
    )


def _show_sizing(seen: _Pass, measured: MeasuredProfile, baseline: dict[str, int]) -> None:
    """Manual and Recommend: the sizing beside the budget plan, in ``status.sizing`` only. A sizing
    that fails takes nothing from the budget plan: ``status.sizing`` is dropped and the log says why."""
    book = _Book(seen.st.status.model_copy(deep=True), seen.st.now, seen.st.generation)
    shown = _size(dataclasses.replace(seen, st=book), measured, baseline, bounds=None)
    if isinstance(shown, Outcome):
        seen.st.status.sizing = None
        LOG.warning("[%s/%s] no sizing shown: %s", seen.resource.namespace, seen.resource.name, shown.summary)
        return
    seen.st.status.sizing = book.status.sizing


def _placement(
    seen: _Pass, measured: MeasuredProfile, target: Mapping[str, int]
) -> PlacementStatus | Outcome:
    """``workers.placement``: the layout of ``target`` (:mod:`.packing`) with Storm's own executors.

    The executors are packed at their busy fractions under the flow they are to run: Auto's sizing for
    Ω_s at Ω_s (every source scaled to it, as ``stormscale place`` places a sizing plan), a budget plan
    at the demand it was planned for. (Packed at the demand measured now, a sizing for a higher
    target put executors that each need most of a slot at Ω into one: too few pods for the target.)
    """
    policy, st, storm = seen.policy, seen.st, seen.storm
    kind = policy.placement
    assert kind is not None
    slots = policy.spec.workers.slots_per_pod
    try:
        model = planning_model(measured.topology, target, storm.tasks, policy)
        if seen.sized is not None:
            model = scaled_to(model, seen.sized.sized_rate)
        if kind is PlacementKind.MULTI_LEVEL:
            now = packing.running(st.status.placement, storm, policy.spec.topology_name)
            planned = packing.grow(now, target, model, measured.pods, slots)
        else:
            planned = packing.pack(kind, model, target, slots)
        placement = packing.summary(planned, storm.system_executors, slots, st.now)
        packing.as_placement(placement.counts())  # what the rebalance carries: every count checked
    except (SizingError, MappingError, PlacementError, ValueError) as err:
        return st.degraded(Reason.PLANNING_FAILED, f"workers.placement {kind.value}: {err}")
    return placement


def _replicas(target: Mapping[str, int], placement: PlacementStatus | None, policy: Policy) -> int:
    """Worker pods: the placement's, else one slot per unit and ``slotsPerPod`` slots per pod."""
    return (
        placement.pods if placement is not None else replicas_for(target, policy.spec.workers.slots_per_pod)
    )


def _workers_asked(target: Mapping[str, int], placement: PlacementStatus | None) -> int:
    """Workers a rebalance to ``target`` asks for: the placement's, else one per unit."""
    return placement.workers if placement is not None else sum(target.values())


def _apply(seen: _Pass, pending: PendingApply) -> Outcome:
    """Make it so: replicas, then one rebalance (carrying the placement), then verify (on a later pass
    if Storm is busy or has not assigned the placement yet). ``pending`` is the saved intent
    (``status.pending``): the target units and the placement are read from it, and it records the
    rebalance requests (:func:`_rebalance`).

    A rebalance is asked for while Storm runs other executors than the target or, once asked, another
    worker count than asked for (the placement's, else one per unit): a lost rebalance, or a
    placement Stormscale's scheduler assigned nothing of. :func:`_rebalance` bounds those requests
    (:data:`MAX_REBALANCES` in all, then ``RebalanceNotApplied``). A placement Nimbus does not lay out
    while it runs the target executors on those workers is asked for once if no rebalance was made
    yet (the executors already were the target), and never again: Storm ran the rebalance, the layout
    is its scheduler's to assign, and another rebalance would only restart every worker. It is waited
    for, then reported, with the plan kept pending (:func:`_placement_pending`)."""
    resource, spec, st, ports = seen.resource, seen.policy.spec, seen.st, seen.ports
    workers, storm = seen.workers, seen.storm
    target, placement = dict(pending.units), pending.placement
    replicas = _replicas(target, placement, seen.policy)
    slots = _workers_asked(target, placement)
    asked = bool(pending.rebalances)
    st.healthy()
    now_replicas = workers.replicas
    missing: list[str] = []
    try:
        if workers.replicas != replicas:
            ports.deployments.scale(resource.namespace, spec.workers.deployment, replicas)
            now_replicas = replicas
        if storm.status == "REBALANCING":
            return _rebalancing(seen, pending)
        layout = None if placement is None else packing.as_placement(placement.counts())
        missing = [] if layout is None else packing.problems(layout, storm, spec.topology_name)
        if not runs(storm, target, slots, asked=asked) or (missing and not asked):
            if not storm.slots_for(slots):
                # Storm would put two executors in one worker (Even scheduler: slots used = min(workers,
                # free slots)) and keep them there once the late pods' Supervisors register.
                message = (
                    f"waiting for worker pods to register with Nimbus: {slots} slots "
                    f"needed, {storm.free_slots} free + {storm.workers} held"
                )
                return _progressing(st, Reason.WAITING_FOR_SLOTS, message)
            return _rebalance(seen, pending, now_replicas)
    except RefusedError as err:
        return _refused(seen, str(err), now_replicas)
    except UnavailableError as err:
        return st.degraded(Reason.APPLY_UNAVAILABLE, str(err))
    except PlacementError as err:  # a stored placement that no longer reads (a hand edit)
        return st.degraded(Reason.INVALID_STATUS, str(err))
    if missing:
        said = [f"the scheduler says: {storm.sched_status}"] if storm.sched_status else []
        return _placement_pending(st, pending.last_rebalance, [*said, *missing])
    return _verified(st, seen.budget, target, placement)


def _placement_pending(st: _Book, requested: str | None, missing: list[str]) -> Outcome:
    """Nimbus runs the target executors on the placement's worker count but not the placement: waited
    for within :data:`PLACEMENT_GRACE_S` of the last rebalance (``requested``), then
    ``Degraded/PlacementNotApplied`` with the plan kept pending (still checked every pass, never
    rebalanced again, and not counted towards :data:`MAX_REBALANCES`: that bound is for rebalances
    Storm did not run; this one it ran)."""
    shown = first_problems(missing)
    waited = seconds_since(requested, st.now)
    if waited < PLACEMENT_GRACE_S:
        return _progressing(
            st, Reason.WAITING_FOR_PLACEMENT, f"waiting for Nimbus to assign the placement: {shown}"
        )
    message = (
        f"Nimbus does not run the placement {waited:.0f}s after the rebalance: {shown} (is Stormscale's "
        "scheduler Nimbus's storm.scheduler, with enough free Supervisors?)"
    )
    return st.degraded(Reason.PLACEMENT_NOT_APPLIED, message)


def runs(storm: StormTopologyState, target: Mapping[str, int], workers: int, *, asked: bool) -> bool:
    """Whether Storm runs ``target``: those executors per component and, once the operator has asked
    for a rebalance to it (``asked``), on the ``workers`` that rebalance asked for (one per unit, or
    the placement's). (Before, the workers are the user's: a topology whose executors already are the
    target, at budget 0 say, is left on the workers it was submitted with.)"""
    executors = dict(storm.executors) == dict(target)
    return executors and (not asked or storm.workers == workers)


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
    """Ask Storm to run the pending plan: once, and again while it runs something else after the last
    request had its wait and :data:`REBALANCE_GRACE_S` (Nimbus accepted it and lost it: a restart
    between the request and its delayed execution, STORM-3516). A rebalance *sets* every component's
    executors and the worker count, and with ``workers.placement`` carries the whole placement
    (``pending.placement``), so asking again is safe and re-sends the same layout. A request again is
    recorded in ``status.pending`` before it is made (intent first) and announced by one Warning. Only
    requests Nimbus may have accepted count: one that failed as unavailable (Nimbus down) is not, and
    is retried after that reason's delay like any other. After :data:`MAX_REBALANCES` requests the
    plan is given up like a refused one
    (``Degraded/RebalanceNotApplied``: the Deployment back to what Storm runs, held until the spec
    changes)."""
    st, storm, spec = seen.st, seen.storm, seen.policy.spec
    target, placement = dict(pending.units), pending.placement
    slots = _workers_asked(target, placement)
    asked = pending.rebalances or 0
    since = seconds_since(pending.last_rebalance, st.now)
    wanted = f"{_units_text(target)} on {slots} workers"
    ran = f"{_units_text(storm.executors)} on {storm.workers} workers"
    if asked and since < REBALANCE_WAIT_SECS + REBALANCE_GRACE_S:
        message = f"Rebalance to {wanted} requested {since:.0f}s ago"
        return _progressing(st, Reason.REBALANCE_REQUESTED, message)
    if asked >= MAX_REBALANCES:
        said = f" (the scheduler says: {storm.sched_status})" if storm.sched_status else ""
        message = f"Storm accepted {asked} rebalances to {wanted} and runs {ran}{said}: none was applied"
        return _refused(seen, message, replicas, Reason.REBALANCE_NOT_APPLIED)
    before = pending.rebalances, pending.last_rebalance
    pending.rebalances, pending.last_rebalance = asked + 1, timestamp(st.now)
    if asked:
        try:  # intent first: a crash from here on counts this request
            seen.ports.status.save(seen.resource.namespace, seen.resource.name, st.status)
        except (UnavailableError, RefusedError) as err:
            return st.degraded(Reason.KUBERNETES_UNAVAILABLE, f"status not saved, so nothing applied: {err}")
    counts = None if placement is None else placement.counts()
    try:
        seen.ports.nimbus.rebalance(spec.topology_name, target, slots, REBALANCE_WAIT_SECS, counts)
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
    where = "" if placement is None else f" ({packing.choices_text(placement)})"
    message = f"Rebalance to {_units_text(target)} requested{again}{where}"
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
    before = st.status.placement
    if seen.policy.placement is not None and before is not None and dict(storm.executors) == st.status.units:
        running = before.pods
    else:
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


def _verified(st: _Book, budget: int, target: dict[str, int], placement: PlacementStatus | None) -> Outcome:
    """Storm runs the target executors (and the placement): record the applied plan, announce it once."""
    st.status.units = target
    st.status.total_units = sum(target.values())
    st.status.applied_budget = budget
    st.status.pending = None
    st.status.placement = placement
    message = f"Applied budget {budget}: {_units_text(target)}"
    plan = st.status.last_plan
    if plan is not None:
        before, after = plan.predicted.before, plan.predicted.after
        message += f"; predicted {before:.0f} → {after:.0f} tuples/s ({plan.chosen})"
    if placement is not None:
        message += f"; {packing.choices_text(placement)}"
    st.events.append(("Normal", Reason.SCALING_APPLIED, message))
    st.set(PROGRESSING, False, Reason.APPLIED, message)
    st.set(READY, True, Reason.APPLIED, message)
    return Outcome(st.status)


def first_problems(problems: Sequence[str]) -> str:
    """The first :data:`SHOWN_PROBLEMS` problems joined by "; ", and "; …" when there are more."""
    more = "; …" if len(problems) > SHOWN_PROBLEMS else ""
    return "; ".join(problems[:SHOWN_PROBLEMS]) + more


def _units_text(units: Mapping[str, int]) -> str:
    return ", ".join(f"{cid}={n}" for cid, n in sorted(units.items()))
