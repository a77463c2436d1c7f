"""Which profile a plan rests on, and whether a profile may be planned on at all (pure).

With ``spec.metrics.profile: Published`` the fleet job's ConfigMap (``<name>-profile``, written by
``stormscale-publish``; :mod:`stormscale.aggregation.published`) is used when it is there, parses,
describes this topology's running components, its window ended less than ``metrics.publishedMaxAge``
ago, and it passes the same checks as a profile measured in-process (:func:`check_usable`). Otherwise
the pass falls back to the in-process profile, and the ``PublishedProfile`` condition says why
(:func:`judge_published`): a published profile that fails a check is never planned on.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stormscale.aggregation import PublishedError, parse_published
from stormscale.operator.policy import ProfileSource
from stormscale.operator.ports import (
    MeasuredProfile,
    StaleMetricsError,
    UnavailableError,
    UnknownDemandError,
    UnsteadyWindowError,
)
from stormscale.operator.status import Reason
from stormscale.planner import (
    ComponentConfidence,
    FlowModel,
    Profile,
    ProfileConfidence,
    Topology,
    evaluate,
    throughput,
)

#: A bolt this busy under the measured load (input over its capacity at its units) holds its spouts
#: back: their emitted rate is its pace, not their demand.
SATURATED = 0.9
#: Children may receive this much more than a spout emits before it counts as copying (the
#: aggregation's own noise margin on a plain split).
COPY_NOISE = 0.05
#: A published window may end this far in the future (the job's clock against the operator's); beyond,
#: it would look fresh for ever.
CLOCK_SKEW_S = 300.0


def saturated_bolts(model: Topology) -> list[tuple[str, float]]:
    """Bolts at or above :data:`SATURATED` of their capacity under the measured load, with their
    utilization ``input / capacity`` (backpressure model, the measured units)."""
    state = evaluate(model, model.units, FlowModel.BACKPRESSURE)
    out = []
    for component, flow in zip(model.components, state.components, strict=True):
        if not component.is_spout and flow.capacity > 0 and flow.input >= SATURATED * flow.capacity:
            out.append((component.id, flow.input / flow.capacity))
    return out


def check_demand_known(model: Topology, confidence: ProfileConfidence) -> None:
    """Raise :class:`UnknownDemandError` when a spout's output is its emitted rate (no demand signal)
    while a bolt is saturated: the spout is throttled to the bottleneck's pace, and sizing on that
    rate would find nothing congested."""
    blind = [c.id for c in model.components if c.is_spout and confidence.of(c.id).output_source == "emitted"]
    saturated = saturated_bolts(model) if blind else []
    if saturated:
        busy = ", ".join(f"{c} at {u:.0%}" for c, u in saturated)
        raise UnknownDemandError(
            f"spout {', '.join(blind)} is throttled ({busy} of capacity) and has no demand signal: "
            "set spec.components[].demandQuery or .kafka"
        )


def contradicted_spouts(confidence: ProfileConfidence) -> list[str]:
    """Kafka-fed spouts whose emitted count both of its witnesses contradict: the topic (append rate
    against emitted plus the lag's growth, :class:`~stormscale.planner.DemandCheck`) and the children
    (they received ``fanout`` times what it emitted)::

        contradicted  ⇔  demand.disagreement  ∧  fanout > 1 + COPY_NOISE

    Either alone has a cause in a steady topology (a lag regressed over a ramp; copies to several
    subscribers or an all-grouping); copies do not enter the topic's balance, so both at once leave
    only the emitted count itself wrong: counters read across a worker's restart. A profile folding
    that false fan-out into the spout's rate asks for units the load does not need (measured once:
    children at 1.62× the spout, and Auto sized for 34/s instead of 23/s)."""
    out = []
    for cid, c in sorted(confidence.components.items()):
        if c.demand is not None and c.demand.disagreement and c.fanout > 1.0 + COPY_NOISE:
            out.append(cid)
    return out


def check_usable(profile: Profile) -> None:
    """The checks every profile passes before a plan rests on it, measured or published: a steady
    window (``confidence.steady``) whose spouts' counts are not contradicted
    (:func:`contradicted_spouts`), some flow at the measured units, and a known demand wherever a
    bolt throttles a spout. Raises :class:`StaleMetricsError` (:class:`UnsteadyWindowError` for an
    unsteady window) or :class:`UnknownDemandError`."""
    model, confidence = profile.topology, profile.confidence
    if not confidence.steady:
        unstable = ", ".join(confidence.unstable) or "unknown components"
        raise UnsteadyWindowError(f"rates of {unstable} are not steady over the window; not planning on them")
    contradicted = contradicted_spouts(confidence)
    if contradicted:
        raise StaleMetricsError(
            f"the emitted counts of spout {', '.join(contradicted)} disagree with both its topic and its "
            "children (a window across a worker restart); not planning on them"
        )
    if throughput(model, model.units, FlowModel.BACKPRESSURE) <= 0:
        idle = ", ".join(c.id for c in model.components if c.is_spout and not c.output_per_unit)
        raise StaleMetricsError(f"the profile carries no flow (spouts without output: {idle or 'none'})")
    check_demand_known(model, confidence)


def document_throughput(profile: Profile) -> float:
    """Σ over sinks (components without children) of their executed tuples/s (``confidence.executedRate``;
    a sink without one, or with a negative one, counts 0)."""
    rates = (
        component_confidence(profile, c.id).executed_rate
        for c in profile.topology.components
        if not c.children
    )
    return sum(r for r in rates if r is not None and r >= 0)


def component_confidence(profile: Profile, component: str) -> ComponentConfidence:
    """Where ``component``'s numbers in ``profile`` came from (one that says nothing when unsaid)."""
    return profile.confidence.of(component)


@dataclass(frozen=True)
class PublishedVerdict:
    """What the pass makes of the published profile: the profile to plan on (``None``: fall back to
    the in-process one), and the ``PublishedProfile`` condition's reason and message."""

    profile: MeasuredProfile | None
    reason: Reason
    message: str

    @property
    def used(self) -> bool:
        return self.profile is not None


def _age(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def judge_published(
    data: Mapping[str, Any] | None,
    *,
    where: str,
    topology: str,
    components: Collection[str],
    now: datetime,
    max_age_s: float,
) -> PublishedVerdict:
    """Use the ConfigMap ``where``'s ``data`` (``None``: no such ConfigMap), or say why not.

    Used when: it parses (:func:`stormscale.aggregation.parse_published`: profile, window, time
    computed), its profile is of Storm topology ``topology`` with exactly the running ``components``,
    ``now − window end ≤ max_age_s`` (and the end is at most :data:`CLOCK_SKEW_S` ahead of ``now``),
    and :func:`check_usable` passes. The profile's age is ``now − window end``. Whatever else goes
    wrong on hostile data (an arithmetic, recursion or memory error) falls back the same way.
    """
    try:
        return _judge_published(
            data, where=where, topology=topology, components=components, now=now, max_age_s=max_age_s
        )
    except (RecursionError, MemoryError, ArithmeticError, ValueError, TypeError, AttributeError) as err:
        problem = f"ConfigMap {where}: unreadable ({type(err).__name__}); planning on the in-process profile"
        return PublishedVerdict(None, Reason.PUBLISHED_PROFILE_INVALID, problem)


def _judge_published(
    data: Mapping[str, Any] | None,
    *,
    where: str,
    topology: str,
    components: Collection[str],
    now: datetime,
    max_age_s: float,
) -> PublishedVerdict:
    fallback = "; planning on the in-process profile"
    if data is None:
        return PublishedVerdict(None, Reason.PUBLISHED_PROFILE_MISSING, f"no ConfigMap {where}{fallback}")

    def invalid(problem: str) -> PublishedVerdict:
        return PublishedVerdict(None, Reason.PUBLISHED_PROFILE_INVALID, f"{problem}{fallback}")

    try:
        published = parse_published(data, f"ConfigMap {where}")
    except PublishedError as err:
        return invalid(str(err))
    named = published.document.get("topology")
    if named != topology:
        return invalid(f"ConfigMap {where}: a profile of topology {named!r}, not {topology!r}")
    age = (now - published.end).total_seconds()
    if age < -CLOCK_SKEW_S:
        return invalid(f"ConfigMap {where}: window ends {_age(-age)} in the future ({published.window})")
    if age > max_age_s:
        message = (
            f"ConfigMap {where}: window {published.window} ended {_age(age)} ago "
            f"(metrics.publishedMaxAge {_age(max_age_s)}){fallback}"
        )
        return PublishedVerdict(None, Reason.PUBLISHED_PROFILE_STALE, message)
    found = {c.id for c in published.topology.components}
    if found != set(components):
        differ = ", ".join(sorted(found ^ set(components)))
        return invalid(f"ConfigMap {where}: components differ from the running topology's ({differ})")
    try:
        check_usable(published.profile)
    except UnavailableError as err:  # StaleMetricsError, UnknownDemandError
        return invalid(f"ConfigMap {where}: {err}")
    profile = MeasuredProfile(
        published.topology,
        document_throughput(published.profile),
        max(age, 0.0),
        published.profile.confidence,
        source=ProfileSource.PUBLISHED,
        window=published.window,
        demand=published.profile.demand,
    )
    message = (
        f"ConfigMap {where}: window {published.window}, computed {published.computed_at:%Y-%m-%dT%H:%M:%SZ}"
    )
    return PublishedVerdict(profile, Reason.PUBLISHED_PROFILE_USED, message)
