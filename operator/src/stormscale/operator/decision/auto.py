"""Auto mode's budget: the budget the topology needs, held back by the stabilization.

Where the needed budget comes from is the only difference between Auto's two ways (module
:mod:`stormscale.operator.autoscale`): the smallest budget whose plan leaves nothing congested, or the
sizing's units for the target rate Ω. Either is then moved towards under cooldown and delayed
scale-in (:func:`stormscale.operator.autoscale.decide`), with a draining backlog holding a fall. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from stormscale.operator import autoscale
from stormscale.operator.autoscale import SizedUnits
from stormscale.operator.policy import Policy
from stormscale.operator.status import SCALING_LIMITED, AutoscalerState, Reason, StormTopologyStatus

#: A condition to set: its type, whether it holds, its reason and message.
Change = tuple[str, bool, Reason, str]


@dataclass(frozen=True)
class Needed:
    """The budget Auto needs now, why even it falls short (``None``: it does not), and with a sizing,
    the sizing's units (applied when the budget is moved to)."""

    budget: int
    limited: str | None = None
    sized: SizedUnits | None = None


@dataclass(frozen=True)
class AutoTarget:
    """The budget to run now, the stabilization state to keep, and the sizing to apply (``None``: a
    budget strategy's plan), with ``ScalingLimited`` as the needed budget leaves it."""

    budget: int
    state: AutoscalerState | None = None
    limited: str | None = None
    sized: SizedUnits | None = None
    condition: Change | None = None


def congestion_need(sizing: autoscale.Sizing, max_units: int) -> Needed:
    """The needed budget by congestion (:func:`stormscale.operator.autoscale.needed_budget`)."""
    short = None if sizing.sufficient else f"Even scaling.maxUnits {max_units} leaves components congested"
    return Needed(sizing.budget, short)


def sizing_need(sized: SizedUnits) -> Needed:
    """The needed budget by a sizing for Ω (:func:`stormscale.operator.autoscale.size_units`)."""
    return Needed(sized.budget, "; ".join(sized.limits) or None, sized)


def auto_target(
    needed: Needed, status: StormTopologyStatus, policy: Policy, now: datetime, *, catching_up: bool
) -> AutoTarget:
    """Move from the budget Auto last chose (the spec's at first) towards ``needed.budget`` under
    cooldown and delayed scale-in; ``ScalingLimited`` says when even the needed budget falls short,
    and is lifted once the load is back within ``scaling.maxUnits``."""
    scaling = policy.spec.scaling
    state = status.autoscaler or AutoscalerState()
    current = state.desired_budget if state.desired_budget is not None else policy.budget
    decision = autoscale.decide(
        current,
        needed.budget,
        state,
        now,
        cooldown_s=policy.cooldown_s,
        scale_in_delay_s=policy.scale_in_delay_s,
        catching_up=catching_up,
    )
    condition: Change | None = None
    if needed.limited:
        condition = (SCALING_LIMITED, True, Reason.MAX_UNITS_REACHED, needed.limited)
    elif status.holds(SCALING_LIMITED, Reason.MAX_UNITS_REACHED):  # the load fell back into range
        condition = (
            SCALING_LIMITED,
            False,
            Reason.WITHIN_LIMITS,
            f"Within scaling.maxUnits {scaling.max_units}",
        )
    sized = needed.sized if needed.sized is not None and decision.budget == needed.sized.budget else None
    return AutoTarget(decision.budget, decision.state, needed.limited, sized, condition)
