"""The decision: from what a pass observed, the spec and the status, what to do. Pure.

``decide(observation, policy, status)`` reads no clock (``now`` is observed), makes no call and
changes nothing it is given: it returns a :class:`Decision`, the status with the decision's own fields
(Auto's state, ``lastPlan``, ``sizing``, ``observed``) and what the pass is to do. When it needs a
profile the observation lacks, it says which (:attr:`Act.MEASURE`); the pass measures and asks again.

The order: a pending intent of another placement strategy is dropped; another field manager that set
the workers' replicas stops everything (:mod:`~stormscale.operator.decision.conflict`); Auto without a
pending intent chooses its budget (a profile needed); an intent for that budget is resumed; a budget
that runs is stable (unless Storm lost its placement); a budget refused already for this spec stays
refused; otherwise the budget is planned on the trusted profile (published or in-process), laid out,
and recommended or applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from stormscale.operator.autoscale import SizedUnits, catching_up, needed_budget, size_units, target_of
from stormscale.operator.decision import assumptions, learning
from stormscale.operator.decision.auto import (
    AutoTarget,
    Change,
    Needed,
    auto_target,
    congestion_need,
    sizing_need,
)
from stormscale.operator.decision.conflict import replicas_conflict
from stormscale.operator.decision.demand import at_percentile
from stormscale.operator.decision.lookahead import sized_ahead
from stormscale.operator.decision.observation import Need, Observation, ProfileFailure, PublishedRead
from stormscale.operator.decision.placement import (
    LayoutError,
    Running,
    check_layout,
    grow,
    pack,
    replicas,
    summary,
)
from stormscale.operator.decision.planning import (
    InvalidProfileError,
    UnknownOverrideError,
    plan_summary,
    planning_model,
    planning_start,
    sized_plan_summary,
    sizing_summary,
    strategy_plans,
)
from stormscale.operator.policy import Mode, PlacementKind, Policy, ProfileSource
from stormscale.operator.ports import MeasuredProfile
from stormscale.operator.profiles import PublishedVerdict, judge_published
from stormscale.operator.status import (
    ASSUMPTIONS_CHECKED,
    DEGRADED,
    PUBLISHED_PROFILE,
    SCALING_LIMITED,
    Observed,
    PendingApply,
    PlacementStatus,
    Reason,
    StormTopologyStatus,
    timestamp,
)
from stormscale.planner import (
    MappingError,
    OptimalLimitError,
    SizingError,
    TargetRateError,
    Topology,
    scaled_to,
)

#: Seconds between Auto's passes over a stable topology.
AUTO_PERIOD_S = 60.0
#: Fewest seconds between passes while the window is not steady (a tiny ``metrics.step`` makes no busy loop).
MIN_UNSTEADY_RETRY_S = 5.0
#: Degraded reasons that end an apply for good: held until the spec (or Auto's budget) changes.
GIVEN_UP = (Reason.APPLY_REFUSED, Reason.REBALANCE_NOT_APPLIED)
#: An event to post: its type (Normal, Warning), reason and message.
Event = tuple[str, Reason, str]


class Act(StrEnum):
    """What the pass does with a decision."""

    MEASURE = "Measure"  # measure what ``need`` says, then decide again
    DEGRADED = "Degraded"  # no action: ``reason`` and ``message`` say why
    SETTLING = "Settling"  # no action yet, nothing wrong
    STABLE = "Stable"  # the budget runs
    HOLD_REFUSED = "HoldRefused"  # refused before for this spec: stays refused (scaled back)
    RECOMMEND = "Recommend"  # the plan is shown only
    APPLY = "Apply"  # save ``intent``, then realize it
    RESUME = "Resume"  # realize the saved ``intent``


@dataclass(frozen=True)
class Decision:
    """What to do, and the status as the decision leaves it (conditions and events are the pass's to
    set and post, in order)."""

    act: Act
    status: StormTopologyStatus
    budget: int = 0
    reason: Reason | None = None
    message: str = ""
    need: Need | None = None
    intent: PendingApply | None = None
    conditions: tuple[Change, ...] = ()
    events: tuple[Event, ...] = ()
    #: Whether the decision planned every strategy for its budget (the pass times it).
    planned: bool = False
    #: Manual and Recommend: why no sizing is shown beside the plan (``None``: it is, or none asked).
    note: str | None = None
    #: Stable: when to look again (``None``: only on a change); Degraded: ``None`` is the reason's
    #: usual wait (:data:`~stormscale.operator.status.RETRY_AFTER`).
    retry_after: float | None = None


@dataclass
class _Draft:
    """A decision in the making: the status copy it changes, and the conditions and events so far."""

    observation: Observation
    policy: Policy
    status: StormTopologyStatus
    conditions: list[Change] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    planned: bool = False
    note: str | None = None

    def done(self, act: Act, budget: int = 0, **fields: object) -> Decision:
        return Decision(
            act,
            self.status,
            budget,
            conditions=tuple(self.conditions),
            events=tuple(self.events),
            planned=self.planned,
            note=self.note,
            **fields,  # type: ignore[arg-type]
        )

    def degraded(self, reason: Reason, message: str) -> Decision:
        return self.done(Act.DEGRADED, reason=reason, message=message)


def decide(observation: Observation, policy: Policy, state: StormTopologyStatus) -> Decision:
    """One pass's decision (module docstring); ``state`` is the status as observed, left unchanged."""
    draft = _Draft(observation, policy, state.model_copy(deep=True))
    status = draft.status
    if policy.sizing is None:  # scaling.sizing and targetRate removed: no sizing to show
        status.sizing = None
    pending = status.pending
    if pending and _kind(pending.placement) != policy.placement:  # workers.placement changed meanwhile
        pending = status.pending = None
    conflict = replicas_conflict(observation.topology, status, policy)
    if conflict is not None:  # another writer set the replicas: reverting it would loop
        return draft.degraded(Reason.REPLICAS_CONFLICT, conflict)
    auto = AutoTarget(policy.budget)
    measured: MeasuredProfile | None = None
    if policy.mode is Mode.AUTO and pending:  # finish what Auto started
        auto = AutoTarget(pending.budget)
    elif policy.mode is Mode.AUTO:
        trusted = _profile(draft)
        if isinstance(trusted, Decision):
            return trusted
        measured = trusted
        chosen = _auto(draft, measured)
        if isinstance(chosen, Decision):
            return chosen
        auto = chosen
    budget = auto.budget
    if pending and pending.budget == budget:
        return draft.done(Act.RESUME, budget, intent=pending)
    status.pending = None
    if converged(status, budget, observation, policy):
        if observation.topology.drift:
            return draft.degraded(Reason.PLACEMENT_NOT_APPLIED, observation.topology.drift)
        retry = AUTO_PERIOD_S if policy.mode is Mode.AUTO else None
        return draft.done(Act.STABLE, budget, retry_after=retry)
    if refused_before(status, observation.generation, budget):
        degraded = status.condition(DEGRADED)
        reason = Reason(degraded.reason) if degraded is not None else Reason.APPLY_REFUSED
        message = degraded.message if degraded is not None else "apply refused"
        return draft.done(Act.HOLD_REFUSED, budget, reason=reason, message=message)
    return _plan(draft, auto, measured)


def _kind(placement: PlacementStatus | None) -> PlacementKind | None:
    return None if placement is None else PlacementKind(placement.strategy)


def converged(status: StormTopologyStatus, budget: int, observation: Observation, policy: Policy) -> bool:
    """Budget applied, Storm runs its units and the Deployment has its pods (with ``workers.placement``:
    the last placement's, by the same strategy; whether Storm still runs it is the observed drift)."""
    units, placement, seen = status.units, status.placement, observation.topology
    if status.applied_budget != budget or units is None or dict(seen.executors) != units:
        return False
    if policy.placement is None:
        return seen.replicas == replicas(units, None, policy.spec.workers.slots_per_pod)
    return placement is not None and _kind(placement) == policy.placement and seen.replicas == placement.pods


def refused_before(status: StormTopologyStatus, generation: int, budget: int) -> bool:
    """Whether applying ``budget`` was refused (or Storm ignored every rebalance of it) already for
    this very spec (generation).

    A refusal is, by the ports' contract, not mended by retrying: re-planning and re-applying every
    pass only scaled the Deployment up and down and posted a Warning each time. Held until the spec
    changes (a new generation) or the budget to apply does (Auto mode under another load). The same
    holds once the realizer's bounded rebalances were accepted and none ran.
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


def _profile(draft: _Draft) -> MeasuredProfile | Decision:
    """The profile to plan on (:func:`_trusted_profile`); in Auto mode with each spout's demand at
    ``scaling.demandPercentile`` of its per-step demand over the window (:func:`at_percentile`), and
    with ``scaling.lookAhead`` scaled to the forecast over the lead (:func:`sized_ahead`)."""
    trusted = _trusted_profile(draft)
    if isinstance(trusted, Decision):
        return trusted
    trusted = _learned(draft, trusted)
    if draft.policy.mode is not Mode.AUTO:
        return trusted
    scaling = draft.policy.spec.scaling
    demand = at_percentile(trusted, scaling.demand_percentile)
    if scaling.look_ahead is None:
        return demand
    ahead, draft.status.autoscaler = sized_ahead(
        demand, draft.status.autoscaler, scaling.look_ahead, draft.observation.now
    )
    return ahead


def _learned(draft: _Draft, measured: MeasuredProfile) -> MeasuredProfile:
    """``measured`` remembered in ``status.capacityHistory`` and its bolts with room planned on their
    saturated readings (:mod:`~stormscale.operator.decision.learning`)."""
    status = draft.status
    at = timestamp(measured.measured_at or draft.observation.now)
    present = {c.id for c in measured.topology.components}
    found = learning.readings(measured, at)
    history = learning.remember(status.capacity_history, found, status.unit_cpu, present)
    planned_on, history.in_use = learning.learned(history, measured)
    status.capacity_history = history if history.components else None  # nothing read saturated yet
    return planned_on


def unsteady_retry_s(policy: Policy) -> float:
    """When a window that was not steady is looked at again: one ``metrics.step`` later (at least
    :data:`MIN_UNSTEADY_RETRY_S`). The window moves a step at a time and a load's change leaves it a
    step at a time, so a later look finds nothing new and an earlier one delays Auto's reaction: with
    the stale-metrics wait of 30 s, a rise was planned up to 30 s after its window had become steady."""
    return max(policy.step_s, MIN_UNSTEADY_RETRY_S)


def _trusted_profile(draft: _Draft) -> MeasuredProfile | Decision:
    """The profile to plan on: the published one where the spec asks for it and it is usable, else
    the in-process one; or the decision that measures one, or says why there is none."""
    policy, seen = draft.policy, draft.observation
    if policy.spec.metrics.profile is ProfileSource.PUBLISHED:
        if seen.published is None:
            return draft.done(Act.MEASURE, need=Need.PUBLISHED)
        verdict = _judge(draft, seen.published)
        if verdict.profile is not None:
            return verdict.profile
    else:
        draft.status.drop_condition(PUBLISHED_PROFILE)
    measured = seen.measured
    if measured is None:
        return draft.done(Act.MEASURE, need=Need.IN_PROCESS)
    if isinstance(measured, ProfileFailure):
        age = measured.newest_age_s
        if age is not None and age <= policy.max_age_s:
            message = f"Waiting for a steady window after a change: {measured.message}"
            return draft.done(Act.SETTLING, message=message)
        if measured.unsteady:
            return draft.done(
                Act.DEGRADED,
                reason=measured.reason,
                message=measured.message,
                retry_after=unsteady_retry_s(policy),
            )
        if age is not None:
            return draft.degraded(
                Reason.STALE_METRICS, f"{measured.message}; newest samples are {age:.0f}s old"
            )
        return draft.degraded(measured.reason, measured.message)
    if measured.age_s > policy.max_age_s:
        message = (
            f"Newest samples are {measured.age_s:.0f}s old (metrics.maxAge {policy.spec.metrics.max_age})"
        )
        return draft.degraded(Reason.STALE_METRICS, message)
    return measured


def _judge(draft: _Draft, read: PublishedRead) -> PublishedVerdict:
    """The published profile's verdict (:func:`~stormscale.operator.profiles.judge_published`) as the
    ``PublishedProfile`` condition, with a Warning when the pass falls back for a new reason."""
    policy, seen = draft.policy, draft.observation
    if read.failure is not None:
        verdict = PublishedVerdict(None, *read.failure)
    else:
        verdict = judge_published(
            read.data,
            where=read.where,
            topology=policy.spec.topology_name,
            components=set(seen.topology.executors),
            now=seen.now,
            max_age_s=policy.published_max_age_s,
        )
    before = draft.status.condition(PUBLISHED_PROFILE)
    if not verdict.used and (before is None or before.reason != verdict.reason.value):
        draft.events.append(("Warning", verdict.reason, verdict.message))
    draft.conditions.append((PUBLISHED_PROFILE, verdict.used, verdict.reason, verdict.message))
    return verdict


def _auto(draft: _Draft, measured: MeasuredProfile) -> AutoTarget | Decision:
    """Auto's budget: needed by congestion, or by the sizing for Ω (then its units are applied)."""
    policy, seen = draft.policy, draft.observation
    scaling = policy.spec.scaling
    try:
        model = planning_model(measured.topology, seen.baseline, seen.topology.tasks, policy)
    except InvalidProfileError:
        return AutoTarget(policy.budget)  # reported where the budget is planned
    needed: Needed
    if policy.sizing is not None:
        sized = _sizing(draft, measured, bounds=(scaling.min_units, scaling.max_units))
        if not isinstance(sized, SizedUnits):
            return draft.degraded(*sized)
        draft.status.sizing = sizing_summary(sized, applied=True, now=seen.now)
        needed = sizing_need(sized)
    else:
        try:
            sizing = needed_budget(
                model,
                (scaling.min_units, scaling.max_units),
                strategy=policy.strategy,
                model=policy.flow_model,
                threshold=scaling.congestion_threshold,
            )
        except OptimalLimitError as err:
            return draft.degraded(Reason.PLANNING_FAILED, str(err))
        needed = congestion_need(sizing, scaling.max_units)
    target = auto_target(
        needed, draft.status, policy, seen.now, catching_up=bool(catching_up(measured.confidence))
    )
    draft.status.autoscaler = target.state
    if target.condition is not None:
        draft.conditions.append(target.condition)
    return target


def _sizing(
    draft: _Draft, measured: MeasuredProfile, bounds: tuple[int, int] | None
) -> SizedUnits | tuple[Reason, str]:
    """The sizing for Ω from the units that run, or why nothing can be sized."""
    policy, seen = draft.policy, draft.observation
    assert policy.sizing is not None
    scaling = policy.spec.scaling
    start, _ = planning_start(seen.baseline, draft.status, 0)
    try:
        model = planning_model(measured.topology, start, seen.topology.tasks, policy)
        omega, source = target_of(measured.topology, scaling.target_rate, scaling.target_utilization)
        return size_units(
            model,
            seen.baseline,
            strategy=policy.sizing,
            target_rate=omega,
            source=source,
            slots_per_pod=policy.spec.workers.slots_per_pod,
            bounds=bounds,
            plan_strategy=policy.strategy,
            flow_model=policy.flow_model,
        )
    except UnknownOverrideError as err:
        return Reason.INVALID_SPEC, str(err)
    except InvalidProfileError as err:
        return Reason.INVALID_PROFILE, str(err)
    except (SizingError, TargetRateError, OptimalLimitError) as err:
        return Reason.PLANNING_FAILED, f"sizing {policy.sizing.value}: {err}"


def _plan(draft: _Draft, auto: AutoTarget, measured: MeasuredProfile | None) -> Decision:
    """Plan the budget on the trusted profile, lay it out, and recommend or apply it."""
    policy, seen, status = draft.policy, draft.observation, draft.status
    topology = seen.topology
    if not topology.active:
        return draft.degraded(
            Reason.TOPOLOGY_NOT_ACTIVE, f"Topology {policy.spec.topology_name} is {topology.state}"
        )
    if measured is None:
        trusted = _profile(draft)
        if isinstance(trusted, Decision):
            return trusted
        measured = trusted
    start, delta = planning_start(seen.baseline, status, auto.budget)
    try:
        model = planning_model(measured.topology, start, topology.tasks, policy)
    except UnknownOverrideError as err:
        return draft.degraded(Reason.INVALID_SPEC, str(err))
    except InvalidProfileError as err:
        return draft.degraded(Reason.INVALID_PROFILE, str(err))
    planned = _budget_plan(draft, model, start, delta, measured=measured, auto=auto)
    if isinstance(planned, Decision):
        return planned
    target, unallocated = planned
    _check_assumptions(draft, target)
    if policy.sizing is None:
        status.sizing = None
    elif policy.mode is not Mode.AUTO:
        _show_sizing(draft, measured)
    status.observed = Observed(
        throughput=round(measured.throughput, 3),
        window=measured.window or policy.spec.metrics.window,
        at=timestamp(measured.measured_at or seen.now),
    )
    if unallocated:
        message = f"{unallocated} of {abs(delta)} units could not be used (maxUnits or no gain)"
        draft.conditions.append((SCALING_LIMITED, True, Reason.UNITS_UNALLOCATED, message))
    elif auto.limited:  # every unit used, and still not enough: say that, not "within limits"
        draft.conditions.append((SCALING_LIMITED, True, Reason.MAX_UNITS_REACHED, auto.limited))
    else:
        draft.conditions.append(
            (SCALING_LIMITED, False, Reason.WITHIN_LIMITS, "Every unit of the budget is used")
        )
    placement: PlacementStatus | None = None
    if policy.placement is not None:
        laid = _placement(draft, measured, target, auto.sized)
        if isinstance(laid, Decision):
            return laid
        placement = laid
    if policy.mode is Mode.RECOMMEND:
        status.placement = placement
        return draft.done(Act.RECOMMEND, auto.budget)
    intent = status.pending = PendingApply(
        budget=auto.budget,
        units=target,
        replicas=replicas(target, placement, policy.spec.workers.slots_per_pod),
        since=timestamp(seen.now),
        placement=placement,
    )
    return draft.done(Act.APPLY, auto.budget, intent=intent)


def _check_assumptions(draft: _Draft, units: Mapping[str, int]) -> None:
    """The ``AssumptionsChecked`` condition for the planned ``units``: what of the model's assumptions
    the topology's conf and graph break (:mod:`~stormscale.operator.decision.assumptions`), when
    Nimbus gave both."""
    topology = draft.observation.topology
    if topology.conf is None or topology.groupings is None:
        return
    findings = assumptions.check(topology.conf, topology.groupings, units, topology.tasks)
    reason = Reason.MODEL_ASSUMPTIONS_VIOLATED if findings else Reason.MODEL_ASSUMPTIONS_HOLD
    draft.conditions.append((ASSUMPTIONS_CHECKED, not findings, reason, assumptions.message(findings)))


def _budget_plan(
    draft: _Draft,
    model: Topology,
    start: dict[str, int],
    delta: int,
    *,
    measured: MeasuredProfile,
    auto: AutoTarget,
) -> tuple[dict[str, int], int] | Decision:
    """Every budget strategy's plan for ``delta`` units from ``start`` (``status.lastPlan``), and the
    target units with those the plan could not use. Auto with a sizing applies the sizing's units
    and plans the strategies for as many units, beside it."""
    policy, now, sized = draft.policy, draft.observation.now, auto.sized
    if sized is not None:
        delta = sum(sized.units.values()) - sum(start.values())
    draft.planned = True
    try:
        plans = strategy_plans(model, delta, policy)
    except OptimalLimitError as err:
        return draft.degraded(Reason.PLANNING_FAILED, str(err))
    if sized is not None:
        draft.status.last_plan = sized_plan_summary(
            model,
            sized,
            plans,
            now=now,
            budget=auto.budget,
            start=start,
            strategy=policy.strategy,
            measured=measured,
        )
        return dict(sized.units), 0
    plan = plans[policy.strategy]
    draft.status.last_plan = plan_summary(plan, plans, now, auto.budget, start, measured=measured)
    return {cid: start[cid] + plan.allocation.get(cid, 0) for cid in start}, plan.unallocated


def _show_sizing(draft: _Draft, measured: MeasuredProfile) -> None:
    """Manual and Recommend: the sizing beside the budget plan, in ``status.sizing`` only. A sizing
    that fails takes nothing from the budget plan: ``status.sizing`` is dropped and the note says why."""
    sized = _sizing(draft, measured, bounds=None)
    if isinstance(sized, SizedUnits):
        draft.status.sizing = sizing_summary(sized, applied=False, now=draft.observation.now)
        return
    reason, message = sized
    draft.status.sizing = None
    draft.note = f"{reason}: {message}"


def _placement(
    draft: _Draft, measured: MeasuredProfile, target: Mapping[str, int], sized: SizedUnits | None
) -> PlacementStatus | Decision:
    """``workers.placement``: the layout of ``target`` with Storm's own executors.

    The executors are packed at their busy fractions under the flow they are to run: Auto's sizing for
    Ω_s at Ω_s (every source scaled to it, as ``stormscale place`` places a sizing plan), a budget plan
    at the demand it was planned for. (Packed at the demand measured now, a sizing for a higher
    target put executors that each need most of a slot at Ω into one: too few pods for the target.)
    """
    policy, topology = draft.policy, draft.observation.topology
    kind = policy.placement
    assert kind is not None
    slots = policy.spec.workers.slots_per_pod
    try:
        model = planning_model(measured.topology, target, topology.tasks, policy)
        if sized is not None:
            model = scaled_to(model, sized.sized_rate)
        if kind is PlacementKind.MULTI_LEVEL:
            planned = grow(_running(topology.running), target, model, measured.pods, slots)
        else:
            planned = pack(kind, model, target, slots)
        placement = summary(planned, topology.system_executors, slots, draft.observation.now)
        check_layout(placement.counts())  # what the rebalance carries: every count checked
    except (SizingError, MappingError, ValueError) as err:
        return draft.degraded(Reason.PLANNING_FAILED, f"workers.placement {kind.value}: {err}")
    return placement


def _running(running: Running | str | None) -> Running:
    """The layout that runs, as observed; raises :class:`LayoutError` when it could not be read."""
    if isinstance(running, Running):
        return running
    raise LayoutError(running or "the running layout was not observed")
