"""A pass's bookkeeping: the working copy of the status, its conditions, the events to post, and
the outcome a pass returns (no decision here)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from stormscale.operator.decision.placement import choices_text
from stormscale.operator.ports import Events
from stormscale.operator.status import (
    DEGRADED,
    PROGRESSING,
    READY,
    RETRY_AFTER,
    PlacementStatus,
    Reason,
    StormTopologyStatus,
)

#: Seconds before a pass looks again at a change on its way (a rebalance, a settling window).
RETRY_REBALANCE_S = 15.0


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
    #: Run after the status is saved: measure to keep a profile at hand for the next spec change
    #: (``observe.refresh_kept``; whether it measured). ``None``: nothing to refresh.
    refresh: Callable[[], bool] | None = None

    @property
    def waiting(self) -> bool:
        """Degraded or progressing: the pass wants another look after ``retry_after``."""
        return self.status.holds(DEGRADED) or self.status.holds(PROGRESSING)

    @property
    def summary(self) -> str:
        """The Ready condition's reason and message, in one line (for logs and retries)."""
        ready = self.status.condition(READY)
        return f"{ready.reason}: {ready.message}" if ready else "no Ready condition"


@dataclass
class Book:
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

    def degraded(self, reason: Reason, message: str, retry_after: float | None = None) -> Outcome:
        """No action: say why, once (a Warning only when the reason changes), and when to look again
        (``retry_after``, else the reason's :data:`RETRY_AFTER`)."""
        if not self.before.holds(DEGRADED, reason):
            self.events.append(("Warning", reason, message))
        self.set(DEGRADED, True, reason, message)
        self.set(READY, False, reason, message)
        self.set(PROGRESSING, False, reason, "No action while degraded")
        return Outcome(self.status, RETRY_AFTER[reason] if retry_after is None else retry_after)

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

    def progressing(self, reason: Reason, message: str) -> Outcome:
        self.set(PROGRESSING, True, reason, message)
        self.set(READY, False, reason, message)
        return Outcome(self.status, RETRY_REBALANCE_S)

    def ready(
        self, progressing: Reason, ready: Reason, message: str, retry_after: float | None = None
    ) -> Outcome:
        """Nothing left to do: ``Progressing`` False and ``Ready`` True, with ``message``."""
        self.set(PROGRESSING, False, progressing, message)
        self.set(READY, True, ready, message)
        return Outcome(self.status, retry_after)

    def applied(self, budget: int, target: Mapping[str, int], placement: PlacementStatus | None) -> Outcome:
        """Storm runs the target executors (and the placement): record the applied plan, announce it once."""
        self.status.units = dict(target)
        self.status.total_units = sum(target.values())
        self.status.applied_budget = budget
        self.status.pending = None
        self.status.placement = placement
        message = f"Applied budget {budget}: {units_text(target)}"
        plan = self.status.last_plan
        if plan is not None:
            before, after = plan.predicted.before, plan.predicted.after
            message += f"; predicted {before:.0f} → {after:.0f} tuples/s ({plan.chosen})"
        if placement is not None:
            message += f"; {choices_text(placement)}"
        self.events.append(("Normal", Reason.SCALING_APPLIED, message))
        return self.ready(Reason.APPLIED, Reason.APPLIED, message)

    def post(self, events: Events) -> None:
        for kind, reason, message in self.events:
            (events.normal if kind == "Normal" else events.warning)(reason, message)


def units_text(units: Mapping[str, int]) -> str:
    return ", ".join(f"{cid}={n}" for cid, n in sorted(units.items()))
