"""The StormTopology's status as one typed value: what the operator writes, and the reasons it gives.

:class:`StormTopologyStatus` mirrors the CRD's ``status`` schema (camelCase on the wire, snake_case
here). Reconcile works on a copy of it; the Kubernetes adapter turns two values (stored, new) into one
JSON merge patch (:func:`status_patch`). Condition and event reasons are :class:`Reason` members, and
each says how soon a degraded resource is looked at again (:data:`RETRY_AFTER`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from stormscale.storm.errors import redact

READY = "Ready"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"
SCALING_LIMITED = "ScalingLimited"
#: Only with ``spec.metrics.profile: Published``: True while plans rest on the fleet job's ConfigMap,
#: False (with why) while they fall back to the in-process profile.
PUBLISHED_PROFILE = "PublishedProfile"
#: True while the topology's conf and graph fit the model's assumptions (even shuffle splits, units
#: that divide tasks); False lists those that do not. The operator plans either way.
ASSUMPTIONS_CHECKED = "AssumptionsChecked"
CONDITION_TYPES = (READY, PROGRESSING, DEGRADED, SCALING_LIMITED, PUBLISHED_PROFILE, ASSUMPTIONS_CHECKED)
MAX_MESSAGE = 32768  # metav1.Condition's limit


class Reason(StrEnum):
    """Every reason the operator writes into a condition or an event."""

    # Degraded: no action, and why
    WORKERS_NOT_FOUND = "WorkersNotFound"
    KUBERNETES_UNAVAILABLE = "KubernetesUnavailable"
    KUBERNETES_REFUSED = "KubernetesRefused"
    HPA_CONFLICT = "HPAConflict"
    #: Another field manager (a GitOps controller, a hand edit) owns the workers' ``spec.replicas``
    #: and set a count the operator did not: no action until it lets go of the field.
    REPLICAS_CONFLICT = "ReplicasConflict"
    NO_CPU_LIMIT = "NoCPULimit"
    TOPOLOGY_NOT_FOUND = "TopologyNotFound"
    NIMBUS_UNAVAILABLE = "NimbusUnavailable"
    TOPOLOGY_NOT_ACTIVE = "TopologyNotActive"
    STALE_METRICS = "StaleMetrics"
    METRICS_UNAVAILABLE = "MetricsUnavailable"
    METRICS_REFUSED = "MetricsRefused"
    #: A Prometheus answer over the reader's byte, series or points-per-series cap (named in the message).
    METRICS_TOO_LARGE = "MetricsTooLarge"
    DEMAND_UNKNOWN = "DemandUnknown"
    INVALID_PROFILE = "InvalidProfile"
    PLANNING_FAILED = "PlanningFailed"
    APPLY_REFUSED = "ApplyRefused"
    APPLY_UNAVAILABLE = "ApplyUnavailable"
    PLACEMENT_NOT_APPLIED = "PlacementNotApplied"
    REBALANCE_NOT_APPLIED = "RebalanceNotApplied"
    REBALANCE_STALLED = "RebalanceStalled"
    INVALID_SPEC = "InvalidSpec"
    INVALID_STATUS = "InvalidStatus"
    INTERNAL_ERROR = "InternalError"
    #: The spec names a Nimbus endpoint or a URL the operator's endpoint policy does not allow.
    ENDPOINT_REFUSED = "EndpointRefused"
    #: A Secret or a key the spec's ``metrics.auth`` names is missing, unreadable or unusable.
    CREDENTIALS_UNAVAILABLE = "CredentialsUnavailable"
    # Healthy, progressing, applied
    HEALTHY = "Healthy"
    STABLE = "Stable"
    APPLIED = "Applied"
    RECOMMENDED = "Recommended"
    REBALANCE_REQUESTED = "RebalanceRequested"
    WAITING_FOR_SLOTS = "WaitingForSlots"
    WAITING_FOR_PLACEMENT = "WaitingForPlacement"
    REBALANCING = "Rebalancing"
    #: Not Degraded: the samples show a recent change and too few steady intervals after it.
    SETTLING = "Settling"
    # ScalingLimited
    MAX_UNITS_REACHED = "MaxUnitsReached"
    UNITS_UNALLOCATED = "UnitsUnallocated"
    WITHIN_LIMITS = "WithinLimits"
    # PublishedProfile: used, or why the in-process profile is used instead
    PUBLISHED_PROFILE_USED = "PublishedProfileUsed"
    PUBLISHED_PROFILE_MISSING = "PublishedProfileMissing"
    PUBLISHED_PROFILE_STALE = "PublishedProfileStale"
    PUBLISHED_PROFILE_INVALID = "PublishedProfileInvalid"
    PUBLISHED_PROFILE_UNAVAILABLE = "PublishedProfileUnavailable"
    # AssumptionsChecked: the model's assumptions hold, or which do not (not Degraded)
    MODEL_ASSUMPTIONS_HOLD = "ModelAssumptionsHold"
    MODEL_ASSUMPTIONS_VIOLATED = "ModelAssumptionsViolated"
    # Events only
    SCALING_APPLIED = "ScalingApplied"
    BASELINE_REFRESHED = "BaselineRefreshed"
    REBALANCE_REISSUED = "RebalanceReissued"


#: Seconds until a degraded resource is looked at again; ``None``: only a change of the spec (or of
#: what it points at, seen by the periodic pass) can help.
RETRY_WAITING_S = 30.0
RETRY_AFTER: Mapping[Reason, float | None] = {
    Reason.WORKERS_NOT_FOUND: None,
    Reason.NO_CPU_LIMIT: None,
    Reason.APPLY_REFUSED: None,
    Reason.REBALANCE_NOT_APPLIED: None,
    Reason.INVALID_SPEC: None,
    Reason.KUBERNETES_UNAVAILABLE: RETRY_WAITING_S,
    Reason.HPA_CONFLICT: RETRY_WAITING_S,
    Reason.REPLICAS_CONFLICT: RETRY_WAITING_S,
    Reason.TOPOLOGY_NOT_FOUND: RETRY_WAITING_S,
    Reason.NIMBUS_UNAVAILABLE: RETRY_WAITING_S,
    Reason.TOPOLOGY_NOT_ACTIVE: RETRY_WAITING_S,
    Reason.STALE_METRICS: RETRY_WAITING_S,
    Reason.METRICS_UNAVAILABLE: RETRY_WAITING_S,
    Reason.DEMAND_UNKNOWN: RETRY_WAITING_S,
    Reason.INVALID_PROFILE: RETRY_WAITING_S,
    Reason.APPLY_UNAVAILABLE: RETRY_WAITING_S,
    Reason.PLACEMENT_NOT_APPLIED: RETRY_WAITING_S,
    Reason.REBALANCE_STALLED: RETRY_WAITING_S,
    Reason.METRICS_REFUSED: 5 * RETRY_WAITING_S,
    Reason.METRICS_TOO_LARGE: 5 * RETRY_WAITING_S,
    Reason.KUBERNETES_REFUSED: 5 * RETRY_WAITING_S,
    Reason.PLANNING_FAILED: 5 * RETRY_WAITING_S,
    Reason.INVALID_STATUS: 5 * RETRY_WAITING_S,
    Reason.INTERNAL_ERROR: 5 * RETRY_WAITING_S,
    Reason.ENDPOINT_REFUSED: None,
    Reason.CREDENTIALS_UNAVAILABLE: RETRY_WAITING_S,
}


def timestamp(now: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, as Kubernetes writes times."""
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime:
    """The UTC time :func:`timestamp` wrote (``2026-11-22T12:00:00Z``)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def seconds_since(text: str | None, now: datetime) -> float:
    """Seconds from the time :func:`timestamp` wrote to ``now`` (infinite when there is none)."""
    if not text:
        return float("inf")
    then = parse_timestamp(text).replace(tzinfo=now.tzinfo)
    return (now - then).total_seconds()


class _Status(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class Condition(_Status):
    """A metav1.Condition."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    last_transition_time: str
    observed_generation: int | None = None


class PodLayout(_Status):
    """One worker pod of a placement: its workers in order, each component -> executors (system
    components such as ``__acker`` included)."""

    workers: list[dict[str, int]]


class UnitChoice(_Status):
    """Where one unit went (``Added``) or came from (``Removed``), the container level, and why."""

    component: str
    action: Literal["Added", "Removed"]
    level: Literal["Executor", "Worker", "Pod"]
    pod: int
    worker: int
    reason: str


class ProvisionedUnit(_Status):
    """A unit MultiLevel added beyond the base layout: the executor of ``component`` in ``pod``'s
    ``worker`` (the LIFO stack, oldest first)."""

    component: str
    pod: int
    worker: int


class PlacementStatus(_Status):
    """``status.placement``: the pods, workers and executors the operator asks Nimbus for, by which
    strategy, with each unit's container choice (MultiLevel) and its LIFO stack."""

    strategy: str
    slots_per_pod: int
    pods: int
    workers: int
    layout: list[PodLayout]
    choices: list[UnitChoice] = Field(default_factory=list)
    stack: list[ProvisionedUnit] = Field(default_factory=list)
    at: str

    def counts(self) -> list[list[dict[str, int]]]:
        """The layout as nested lists (pods, then workers), component -> executors."""
        return [[dict(w) for w in pod.workers] for pod in self.layout]


class PendingApply(_Status):
    """The plan being applied, saved before the first write (the intent a crash resumes).

    ``rebalances`` counts the rebalance requests made for it and ``last_rebalance`` is when the last
    one was made: Storm may accept a rebalance and never run it (a Nimbus restart lost it, STORM-3516),
    so a pass that finds other executors or workers than asked for, once the last request had time to
    finish, asks again (with ``placement``, carried again), a bounded number of times (the realizer's
    ``MAX_REBALANCES``). A ``placement`` Nimbus does not run yet while it runs the executors is waited
    for from ``last_rebalance`` on (the realizer's ``PLACEMENT_GRACE_S``), never asked for again."""

    budget: int
    units: dict[str, int]
    replicas: int
    since: str
    placement: PlacementStatus | None = None
    rebalances: int | None = None
    last_rebalance: str | None = None


class SizingSummary(_Status):
    """``status.sizing``: the planner's sizing for a target rate, beside ``lastPlan``'s budget plan.

    ``targetRate`` is the spec's, or the measured demand over ``targetUtilization`` (``source``);
    ``sizedRate`` is below it when some component's ``maxUnits`` cannot sustain it (``message``).
    ``budget`` is ``Σ units − Σ baseline``; ``applied``: Auto applies it, Manual and Recommend show it.
    """

    strategy: str
    source: Literal["targetRate", "demand"]
    target_rate: float
    sized_rate: float
    units: dict[str, int]
    total_units: int
    budget: int
    slots: int
    pods: int | None = None
    exact_units: int
    predicted: float
    applied: bool
    message: str = ""
    at: str


class Predicted(_Status):
    before: float
    after: float


class PlanSummary(_Status):
    """``status.lastPlan``: the chosen plan for ``budget`` (its allocation moves units from ``start``)
    and every strategy's predicted Θ side by side."""

    budget: int
    strategy: str
    flow_model: str
    chosen: str
    start: dict[str, int]
    allocation: dict[str, int]
    unallocated: int
    predicted: Predicted
    alternatives: dict[str, float]
    at: str
    #: ``Published`` (the fleet job's ConfigMap) or ``InProcess`` (measured by this pass's profiler),
    #: and the window the profile's samples span.
    profile_source: str | None = None
    profile_window: str | None = None
    #: When the in-process profile was measured and how old it was when planned on (a spec change
    #: plans on the profile an earlier pass kept, when it is fresh: :mod:`stormscale.operator.kept_profiles`).
    profile_measured: str | None = None
    #: Auto: the demand the plan sizes for, e.g. ``demand p95 of 5m00s (30 steps of 10s): 23.4/s
    #: (mean 18.1/s)`` (``scaling.demandPercentile`` of the profile's per-step demand).
    demand: str | None = None
    #: For ``Best``: the exact program stopped at its time limit (or could not run), so the plan
    #: applied is the best found, not a proven optimum.
    note: str | None = None


class Observed(_Status):
    throughput: float
    window: str
    at: str


#: The most demand points Auto's look-ahead keeps (its largest ``windows``).
MAX_DEMAND_POINTS = 60


class DemandPoint(_Status):
    """The demand Auto planned for (tuples/s at the spouts) from the window ending ``at``."""

    at: str
    rate: float


class AutoscalerState(_Status):
    """Auto mode's stabilization state: kept in status, never in memory."""

    desired_budget: int | None = None
    last_scale_time: str | None = None
    scale_in_since: str | None = None
    #: With ``scaling.lookAhead``: the recent windows' demand (oldest first, at most
    #: :data:`MAX_DEMAND_POINTS`) and the line saying what the last pass sized for.
    demand_history: list[DemandPoint] | None = None
    forecast: str | None = None


class CapacityReading(_Status):
    """One component's capacity per unit as a steady window read it, and how busy it was then."""

    units: int
    tasks: int | None = None
    capacity_per_unit: float
    #: The busiest executor's busy fraction (executed over the capacity of the units that ran).
    utilization: float
    saturated: bool
    at: str


class CapacityHistory(_Status):
    """What earlier steady windows read of each bolt's capacity per unit while it was saturated, for
    plans to learn from (:mod:`~stormscale.operator.decision.learning`): at most a few readings per
    component, one per (units, tasks), newest last; all of one unit CPU (a new one starts afresh)."""

    unit_cpu: str | None = Field(default=None, alias="unitCPU")
    components: dict[str, list[CapacityReading]] = Field(default_factory=dict)
    #: Components whose capacity the last plan took from the history, and from which reading.
    in_use: dict[str, str] = Field(default_factory=dict)


class StatusError(ValueError):
    """The stored status does not have the CRD's shape (an older operator or a hand edit)."""


class StormTopologyStatus(_Status):
    """Everything the operator writes under ``status``."""

    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    unit_cpu: str | None = Field(default=None, alias="unitCPU")
    baseline: dict[str, int] | None = None
    pending: PendingApply | None = None
    last_plan: PlanSummary | None = None
    observed: Observed | None = None
    units: dict[str, int] | None = None
    total_units: int | None = None
    applied_budget: int | None = None
    autoscaler: AutoscalerState | None = None
    sizing: SizingSummary | None = None
    placement: PlacementStatus | None = None
    capacity_history: CapacityHistory | None = None

    @classmethod
    def from_json(cls, document: Mapping[str, Any] | None) -> StormTopologyStatus:
        """The stored status (Kopf's own ``kopf`` key and unknown keys ignored)."""
        try:
            return cls.model_validate(dict(document or {}))
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "status"
            raise StatusError(f"status.{where}: {first['msg']}") from None

    def to_json(self) -> dict[str, Any]:
        """The status as the API server stores it (camelCase, unset fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True)

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    def holds(self, kind: str, reason: str | None = None) -> bool:
        """Condition ``kind`` is True (and, if given, for ``reason``)."""
        found = self.condition(kind)
        return found is not None and found.status == "True" and reason in (None, found.reason)

    def set_condition(
        self,
        kind: str,
        *,
        status: bool,
        reason: Reason,
        message: str,
        now: datetime,
        generation: int,
        previous: Condition | None = None,
    ) -> None:
        """Set condition ``kind``; its ``lastTransitionTime`` moves only when its status flips from
        ``previous`` (by default the condition as it stands; reconcile passes the one the pass started
        from, so a pass that says Healthy before acting and then fails as before is no transition)."""
        value: Literal["True", "False"] = "True" if status else "False"
        previous = previous or self.condition(kind)
        since = previous.last_transition_time if previous and previous.status == value else timestamp(now)
        fresh = Condition(
            type=kind,
            status=value,
            reason=reason.value,
            message=redact(message)[:MAX_MESSAGE],
            last_transition_time=since,
            observed_generation=generation,
        )
        others = [c for c in self.conditions if c.type != kind]
        self.conditions = sorted([*others, fresh], key=_condition_order)

    def drop_condition(self, kind: str) -> None:
        """Remove condition ``kind`` (one that no longer applies to the spec)."""
        self.conditions = [c for c in self.conditions if c.type != kind]


def _condition_order(condition: Condition) -> int:
    types = CONDITION_TYPES
    return types.index(condition.type) if condition.type in types else len(types)


def status_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``, at every depth.

    A merge patch merges nested objects, so a key gone from a nested map (a component no longer in
    ``lastPlan.allocation``, say) is sent as ``None``, or it would stay behind. Kopf's own ``kopf``
    key is left alone.
    """
    patch: dict[str, Any] = {k: None for k in old if k not in new and k != "kopf"}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            nested = status_patch(before, value)
            if nested:
                patch[key] = nested
        elif value != before:
            patch[key] = value
    return patch
