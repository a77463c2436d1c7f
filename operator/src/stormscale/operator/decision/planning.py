"""Planning a budget: where a plan starts, the model it plans on, every strategy's plan, and the
summaries ``status.lastPlan`` and ``status.sizing`` show. Pure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime

from stormscale.operator.autoscale import SizedUnits
from stormscale.operator.policy import Mode, Policy, ProfileSource
from stormscale.operator.ports import MeasuredProfile
from stormscale.operator.status import PlanSummary, Predicted, SizingSummary, StormTopologyStatus, timestamp
from stormscale.planner import Plan, Strategy, Topology, compare_strategies, make_plan, throughput

OPTIMAL_TIME_LIMIT_S = 10.0


class InvalidProfileError(ValueError):
    """The measured profile does not match the running topology (components differ)."""


class UnknownOverrideError(InvalidProfileError):
    """``spec.components`` overrides a component the topology does not have: the spec is wrong."""


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
    profile it rests on (``measured``'s source and window). For ``best``, ``chosen`` names the strategy
    whose plan won and ``note`` says when the exact program did not prove its optimum."""
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
        profile_measured=profile_measured(measured, now),
        demand=None if measured is None else measured.demand_used,
        note=plan.note,
    )


def profile_measured(measured: MeasuredProfile | None, now: datetime) -> str | None:
    """When the in-process profile a plan rests on was measured, and how old it is at ``now``:
    ``profile of <time>, measured in this pass`` or ``profile of <time>, <age> s old, kept from an
    earlier pass`` (``None``: no profile, or the published one, whose window says when)."""
    if measured is None or measured.source is not ProfileSource.IN_PROCESS:
        return None
    if measured.measured_at is None:
        return f"profile of {timestamp(now)}, measured in this pass"
    age = (now - measured.measured_at).total_seconds()
    return f"profile of {timestamp(measured.measured_at)}, {age:.1f} s old, kept from an earlier pass"


def strategy_plans(topology: Topology, delta: int, policy: Policy) -> dict[Strategy, Plan]:
    """Every strategy's plan side by side, ``best`` among them; a strategy that cannot plan this
    topology (the exact program past its size limit) is left out, unless it is the one the spec chose
    (then it raises; ``best`` plans without it and its note says why)."""
    plans = compare_strategies(topology, delta, policy.flow_model, OPTIMAL_TIME_LIMIT_S)
    if policy.strategy not in plans:
        make_plan(topology, delta, policy.strategy, policy.flow_model, OPTIMAL_TIME_LIMIT_S)
    return plans


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
        profile_measured=profile_measured(measured, now),
        demand=None if measured is None else measured.demand_used,
    )
