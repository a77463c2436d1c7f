"""The StormTopology spec (``stormscale.io/v1alpha1``) as typed, validated policy.

The CRD schema refuses most invalid specs at the API server; this model checks the same rules again
(the operator must not act on a spec an older CRD let through) and turns the camelCase resource into
a frozen :class:`Policy` for the reconcile logic.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from stormscale.planner import DemandStatistic, FlowModel, SizingStrategy, Strategy
from stormscale.samples import parse_duration
from stormscale.samples.durations import MAX_LENGTH as DURATION_MAX_LENGTH
from stormscale.samples.durations import PATTERN as DURATION
from stormscale.storm.samples import MAX_POINTS
from stormscale.storm.samples.demand import Demand, KafkaDemand, QueryDemand

MIN_STEPS = 5  # a profile needs this many steady intervals (the aggregation's min_intervals)
#: The CRD's maxLength of a CPU quantity, and the largest overhead a worker pod may declare (1000 cores).
CPU_MAX_LENGTH = 12
MAX_OVERHEAD_MILLICORES = 1_000_000
#: The CRD's maximum of a component's capacity per unit and of the target rate (tuples/s).
MAX_RATE = 1e12


class InvalidSpecError(ValueError):
    """The spec breaks a rule; the message names the field."""


class Mode(StrEnum):
    MANUAL = "Manual"
    RECOMMEND = "Recommend"
    AUTO = "Auto"


class ProfileSource(StrEnum):
    """Where a plan's profile comes from: measured by the operator over ``metrics.window``
    (``InProcess``), or the fleet job's ConfigMap (``Published``; docs/operator/design.md)."""

    IN_PROCESS = "InProcess"
    PUBLISHED = "Published"


def _checked_duration(text: str) -> str:
    """``text`` when :func:`parse_duration` takes it (at most 366 days), else its ``ValueError``."""
    parse_duration(text)
    return text


#: A duration field: the CRD's pattern and maxLength, and a value of at most 366 days.
Duration = Annotated[
    str,
    Field(max_length=DURATION_MAX_LENGTH, pattern=DURATION),
    AfterValidator(_checked_duration),
]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


def _no_userinfo(url: str) -> str:
    """``url`` when it carries no userinfo (``user:password@``); credentials go in ``metrics.auth``,
    never in a URL that is echoed in conditions, events and logs. The message does not repeat it."""
    if "@" in urlsplit(url).netloc:
        raise ValueError("a URL must not carry userinfo (user:password@): name a Secret in metrics.auth")
    return url


#: An endpoint URL: http(s), no userinfo (the CRD's pattern refuses an ``@`` before the path too).
Url = Annotated[str, Field(max_length=2048, pattern=r"^https?://"), AfterValidator(_no_userinfo)]


def _no_host_userinfo(host: str) -> str:
    if "@" in host:
        raise ValueError("a host must not carry userinfo (user:password@)")
    return host


class NimbusSpec(_Model):
    host: Annotated[str, Field(min_length=1, max_length=253), AfterValidator(_no_host_userinfo)]
    port: int = Field(default=6627, ge=1, le=65535)
    #: The scheduler's placement endpoint on the leader Nimbus; ``None``: placements go in the conf.
    placement_port: int | None = Field(default=None, ge=1, le=65535)


class UiSpec(_Model):
    url: Url | None = None


_CPU_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m?)$")


def millicores(quantity: str) -> int:
    """A Kubernetes CPU quantity (``"500m"``, ``"1"``, ``"1.5"``) in millicores."""
    match = _CPU_QUANTITY.match(quantity.strip())
    if not match:
        raise ValueError(f"not a CPU quantity: {quantity!r}")
    value = float(match.group(1))
    return round(value if match.group(2) else value * 1000)


class PlacementKind(StrEnum):
    """Who decides which executors share a worker and a pod (absent: Storm's own scheduler)."""

    SAM = "SAM"  # Shukla & Simmhan's Slot Aware Mapping, repacked on every apply
    PDEPLOYER = "PDeployer"  # P-Deployer's bin packing, one slot per pod
    MULTI_LEVEL = "MultiLevel"  # multi-level elasticity's container level per new unit, LIFO scale-in


class SizingKind(StrEnum):
    """The planner's sizing strategies for a target rate (``stormscale size``)."""

    EXACT = "Exact"
    LSA = "LSA"
    MBA = "MBA"
    PDEPLOYER = "PDeployer"


class WorkersSpec(_Model):
    deployment: str = Field(min_length=1, max_length=253)
    slots_per_pod: int = Field(default=1, ge=1, le=64)
    placement: PlacementKind | None = None
    #: CPU a worker pod uses whatever its tuples (Supervisor, heartbeats, Storm's idle polling):
    #: busy = (pod CPU - overhead) / (limit - overhead). See docs/operator/design.md.
    pod_overhead_cpu: str = Field(
        default="0", alias="podOverheadCPU", max_length=CPU_MAX_LENGTH, pattern=_CPU_QUANTITY.pattern
    )

    @property
    def pod_overhead_cores(self) -> float:
        return millicores(self.pod_overhead_cpu) / 1000

    @model_validator(mode="after")
    def _overhead_bounded(self) -> WorkersSpec:
        if millicores(self.pod_overhead_cpu) > MAX_OVERHEAD_MILLICORES:
            raise ValueError(
                f"workers.podOverheadCPU must be at most {MAX_OVERHEAD_MILLICORES // 1000} cores"
            )
        return self

    @model_validator(mode="after")
    def _one_slot_for_pdeployer(self) -> WorkersSpec:
        if self.placement is PlacementKind.PDEPLOYER and self.slots_per_pod != 1:
            raise ValueError(
                "workers.placement PDeployer packs pods of one slot (as P-Deployer does): "
                "set workers.slotsPerPod 1"
            )
        return self


#: A Secret's name (a DNS subdomain) and a key of its data, in the StormTopology's namespace.
SECRET_NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"


class SecretKeyRef(_Model):
    name: str = Field(min_length=1, max_length=253, pattern=SECRET_NAME)
    key: str = Field(min_length=1, max_length=253, pattern=SECRET_KEY)


class BasicAuthSpec(_Model):
    username: SecretKeyRef
    password: SecretKeyRef


class TlsClientSpec(_Model):
    """A client certificate and its private key (PEM), e.g. a ``kubernetes.io/tls`` Secret's
    ``tls.crt`` and ``tls.key``."""

    certificate: SecretKeyRef
    key: SecretKeyRef


class MetricsAuthSpec(_Model):
    """How the operator authenticates to Prometheus: Secrets in the resource's namespace, read
    through the API server on every pass, never shown."""

    bearer_token: SecretKeyRef | None = None
    basic: BasicAuthSpec | None = None
    tls: TlsClientSpec | None = None
    #: A PEM bundle trusted for an https Prometheus instead of the operator's own.
    ca: SecretKeyRef | None = None

    @model_validator(mode="after")
    def _one_header(self) -> MetricsAuthSpec:
        if self.bearer_token is not None and self.basic is not None:
            raise ValueError("metrics.auth: bearerToken and basic are exclusive; set one")
        return self


class MetricsSpec(_Model):
    prometheus: Url
    auth: MetricsAuthSpec | None = None
    window: Duration = "5m"
    max_age: Duration = "2m"
    step: Duration = "10s"
    settle: Duration = "2m"
    #: ``Published``: plan on the fleet job's ConfigMap ``<name>-profile`` while its window ended less
    #: than ``publishedMaxAge`` ago, else on the in-process profile (with a condition saying why).
    profile: ProfileSource = ProfileSource.IN_PROCESS
    published_max_age: Duration = "26h"

    @model_validator(mode="after")
    def _tls_needs_https(self) -> MetricsSpec:
        auth = self.auth
        if auth is not None and (auth.tls or auth.ca) and not self.prometheus.startswith("https://"):
            raise ValueError("metrics.auth.tls and metrics.auth.ca need an https:// metrics.prometheus")
        return self

    @model_validator(mode="after")
    def _steps(self) -> MetricsSpec:
        if parse_duration(self.step) < 1:
            raise ValueError("metrics.step must be at least 1s")
        window, step = parse_duration(self.window), parse_duration(self.step)
        if window < MIN_STEPS * step:
            raise ValueError(f"metrics.window must hold at least {MIN_STEPS} steps of metrics.step")
        settle, max_age = parse_duration(self.settle), parse_duration(self.max_age)
        if settle >= window:
            # after a rebalance the first `settle` of the window is dropped: with nothing left, no
            # pass after an apply ever measures a profile
            raise ValueError("metrics.settle must be shorter than metrics.window")
        if max_age < step:
            # samples arrive once a step: a maxAge below it (0s) calls fresh metrics stale
            raise ValueError("metrics.maxAge must be at least metrics.step")
        if parse_duration(self.published_max_age) < 1:
            raise ValueError("metrics.publishedMaxAge must be at least 1s")
        if window // step + 1 > MAX_POINTS:
            raise ValueError(
                f"metrics.window holds {window // step + 1} steps of metrics.step; Prometheus answers "
                f"at most {MAX_POINTS} points per series: raise metrics.step"
            )
        return self


#: The longest lead a look-ahead may have (the CRD's rule says the same).
MAX_LEAD_S = 3600.0
#: The most steps a demand schedule may list.
MAX_SCHEDULE_STEPS = 168
_RFC3339_UTC = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"


class ForecastKind(StrEnum):
    """Where Auto's look-ahead takes the coming demand from."""

    REGRESSION = "Regression"  # a least-squares line through the recent windows' demand
    SCHEDULE = "Schedule"  # the user's schedule of rates


class ScheduleStepSpec(_Model):
    """From ``offset`` after the schedule's start (of each period), the spouts are offered ``rate``."""

    offset: Duration
    rate: float = Field(ge=0, le=MAX_RATE, allow_inf_nan=False)


class DemandScheduleSpec(_Model):
    """A known demand: steps from ``start`` (RFC 3339, UTC), repeated every ``period`` if set."""

    start: str = Field(max_length=20, pattern=_RFC3339_UTC)
    period: Duration | None = None
    steps: tuple[ScheduleStepSpec, ...] = Field(min_length=1, max_length=MAX_SCHEDULE_STEPS)

    @model_validator(mode="after")
    def _ordered(self) -> DemandScheduleSpec:
        offsets = [parse_duration(s.offset) for s in self.steps]
        if len(set(offsets)) != len(offsets):
            raise ValueError("scaling.lookAhead.schedule.steps: two steps at the same offset")
        if self.period is not None and max(offsets) >= parse_duration(self.period):
            raise ValueError("scaling.lookAhead.schedule.steps: every offset must be below the period")
        return self


class LookAheadSpec(_Model):
    """Auto sizes for the largest demand forecast over ``[now, now + lead]`` (the multi-level
    elasticity paper's proactive mode): it scales out ``lead`` early, and in once the peak has passed."""

    lead: Duration = "2m"
    forecast: ForecastKind = ForecastKind.REGRESSION
    #: Regression: how many recent windows' demand the line goes through.
    windows: int = Field(default=6, ge=2, le=60)
    #: The highest total rate a forecast may reach (never below the current demand).
    max_rate: float | None = Field(default=None, gt=0, le=MAX_RATE, allow_inf_nan=False)
    schedule: DemandScheduleSpec | None = None

    @model_validator(mode="after")
    def _complete(self) -> LookAheadSpec:
        if parse_duration(self.lead) > MAX_LEAD_S:
            raise ValueError(f"scaling.lookAhead.lead must be at most {MAX_LEAD_S:g}s")
        if self.forecast is ForecastKind.SCHEDULE and self.schedule is None:
            raise ValueError("scaling.lookAhead: forecast Schedule needs scaling.lookAhead.schedule")
        return self


class ScalingSpec(_Model):
    mode: Mode = Mode.MANUAL
    budget: int = Field(default=0, ge=-1000, le=1000)
    min_units: int = Field(default=0, ge=-1000, le=1000)
    max_units: int = Field(default=16, ge=-1000, le=1000)
    strategy: str = Field(default="Best", pattern="^(Combined|Stela|Predictive|Optimal|Best)$")
    flow_model: str = Field(default="Backpressure", pattern="^(Backpressure|Drop)$")
    cooldown: Duration = "5m"
    scale_in_delay: Duration = "15m"
    congestion_threshold: float = Field(default=0.05, ge=0, le=1)
    #: Auto sizes for the measured demand over this (0.8: 25 % headroom); 1 plans for the demand itself.
    target_utilization: float = Field(default=1.0, gt=0, le=1)
    #: Tuples/s offered at the spouts to size for; absent: the measured demand / targetUtilization.
    target_rate: float | None = Field(default=None, gt=0, le=MAX_RATE, allow_inf_nan=False)
    #: The sizing strategy; absent: no sizing (or Exact when targetRate is set).
    sizing: SizingKind | None = None
    #: Which statistic of each spout's per-step demand over the profile's window Auto sizes for
    #: (``mean``, ``p50``, ``p95``, ``max``); a profile without the distribution offers its mean.
    demand_percentile: DemandStatistic = DemandStatistic.P95
    #: Auto sizes ahead for the demand forecast over a lead time (absent: reactive only).
    look_ahead: LookAheadSpec | None = None

    @model_validator(mode="after")
    def _bounds(self) -> ScalingSpec:
        if self.min_units > self.max_units:
            raise ValueError("scaling.minUnits must not exceed scaling.maxUnits")
        if self.budget > self.max_units:
            raise ValueError("scaling.budget must not exceed scaling.maxUnits")
        both_set = {"budget", "min_units"} <= self.model_fields_set
        if self.mode is Mode.AUTO and both_set and self.budget < self.min_units:
            # the CRD's rule, which holds only where the spec sets both
            raise ValueError("in Auto mode scaling.budget must not be below scaling.minUnits")
        if self.target_rate is not None and self.mode is Mode.MANUAL:
            raise ValueError(
                "scaling.targetRate: Manual mode applies scaling.budget only; use Recommend to see the "
                "sizing for a target rate, or Auto to apply it"
            )
        return self

    @property
    def sizing_strategy(self) -> SizingKind | None:
        """The sizing in effect: ``sizing``, else Exact when a target rate is set, else none."""
        if self.sizing is not None:
            return self.sizing
        return SizingKind.EXACT if self.target_rate is not None else None


class KafkaSourceSpec(_Model):
    topic: str = Field(min_length=1, max_length=249, pattern=r"^[A-Za-z0-9._-]+$")
    consumer_group: str = Field(min_length=1, max_length=255)


class ComponentOverride(_Model):
    name: str = Field(min_length=1, max_length=253)
    capacity_per_unit: float | None = Field(default=None, gt=0, le=MAX_RATE, allow_inf_nan=False)
    max_units: int | None = Field(default=None, ge=1, le=100_000)
    #: A spout's demand: PromQL for the tuples/s offered to it, or the Kafka topic it reads.
    demand_query: str | None = Field(default=None, min_length=1, max_length=4096)
    kafka: KafkaSourceSpec | None = None

    @model_validator(mode="after")
    def _one_demand(self) -> ComponentOverride:
        if self.demand_query is not None and self.kafka is not None:
            raise ValueError(f"components[{self.name}]: demandQuery and kafka are exclusive; set one")
        return self

    def demand(self) -> Demand | None:
        """Where this spout's demand comes from, if the spec says."""
        if self.demand_query is not None:
            return QueryDemand(self.demand_query)
        if self.kafka is not None:
            return KafkaDemand(self.kafka.topic, self.kafka.consumer_group)
        return None


class StormTopologySpec(_Model):
    topology_name: str = Field(min_length=1, max_length=253)
    nimbus: NimbusSpec
    ui: UiSpec = UiSpec()
    workers: WorkersSpec
    metrics: MetricsSpec
    scaling: ScalingSpec = ScalingSpec()
    components: tuple[ComponentOverride, ...] = Field(default=(), max_length=256)

    @model_validator(mode="after")
    def _one_override_each(self) -> StormTopologySpec:
        names = [o.name for o in self.components]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"components: overrides {', '.join(map(repr, twice))} twice")
        return self

    def demand(self) -> dict[str, Demand]:
        """Spout id → its demand source, for the components whose spec names one."""
        return {o.name: d for o in self.components if (d := o.demand()) is not None}


class Policy(_Model):
    """What reconcile needs, in planner terms; built by :func:`parse_spec`."""

    spec: StormTopologySpec
    mode: Mode
    budget: int
    strategy: Strategy
    flow_model: FlowModel
    window_s: float
    max_age_s: float
    step_s: float
    settle_s: float
    #: A published profile whose window ended longer ago than this is stale (``metrics.publishedMaxAge``).
    published_max_age_s: float
    cooldown_s: float
    scale_in_delay_s: float
    #: The planner's sizing strategy in effect (``scaling.sizing``, Exact with a bare targetRate).
    sizing: SizingStrategy | None = None

    @property
    def placement(self) -> PlacementKind | None:
        return self.spec.workers.placement


def parse_spec(raw: dict[str, Any]) -> Policy:
    """Validate ``spec`` and build the :class:`Policy`; raises :class:`InvalidSpecError` naming the field
    in one line, whatever the spec holds (an escape on hostile input is named too, never a traceback)."""
    try:
        return _policy(StormTopologySpec.model_validate(raw))
    except ValidationError as err:
        first = err.errors()[0]
        where = "".join(f".{p}" for p in first["loc"])
        message = " ".join(str(first["msg"]).split())[:512]
        raise InvalidSpecError(f"spec{where}: {message}") from None
    except (RecursionError, MemoryError, ArithmeticError, ValueError, TypeError) as err:
        raise InvalidSpecError(f"spec: unreadable ({type(err).__name__})") from None


def _policy(spec: StormTopologySpec) -> Policy:
    scaling = spec.scaling
    return Policy(
        spec=spec,
        mode=scaling.mode,
        budget=scaling.budget,
        strategy=Strategy(scaling.strategy.lower()),
        flow_model=FlowModel(scaling.flow_model.lower()),
        window_s=parse_duration(spec.metrics.window),
        max_age_s=parse_duration(spec.metrics.max_age),
        step_s=parse_duration(spec.metrics.step),
        settle_s=parse_duration(spec.metrics.settle),
        published_max_age_s=parse_duration(spec.metrics.published_max_age),
        cooldown_s=parse_duration(scaling.cooldown),
        scale_in_delay_s=parse_duration(scaling.scale_in_delay),
        sizing=None if (kind := scaling.sizing_strategy) is None else SizingStrategy(kind.value.lower()),
    )
