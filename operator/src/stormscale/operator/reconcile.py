"""Reconcile one StormTopology: the order of a pass. No Kopf, no decision and no Storm here.

observe (the worker Deployment, the topology) → decide → [measure → decide] → save the intent →
realize → status and events. The decision (:func:`stormscale.operator.decision.decide`) is pure and
says what to measure when it needs a profile, so a topology that runs its budget is not measured to
decide; once its status is saved, such a pass may refresh the profile kept for the next spec change
(``Outcome.refresh``, :mod:`stormscale.operator.kept_profiles`).
The intent (``status.pending``) is saved before the first write, so the pass after a crash finishes
it instead of planning anew; the realizer (``ports.realizer``) makes it run and reports how far it
got, which the pass turns into conditions and events.

Every status save is conditional on the version of the resource the pass last loaded or saved (a
second operator's write meanwhile: 409), and every act is preceded by a re-read of it
(``ports.status.check``, run by the realizer before each scale, pod mark and rebalance: deleted,
created again or of a new spec meanwhile); either raises ``SupersededError`` out of the pass, which
then acts on nothing more and saves nothing.
"""

from __future__ import annotations

import functools
import logging
import time
from datetime import datetime

from stormscale.operator import observe
from stormscale.operator.book import RETRY_REBALANCE_S, Book, Outcome, Resource
from stormscale.operator.decision import Act, Decision, Observation, decide
from stormscale.operator.policy import Policy
from stormscale.operator.ports import Events, Ports, Progress, Realized, RefusedError, UnavailableError
from stormscale.operator.status import PROGRESSING, READY, PendingApply, Reason, StormTopologyStatus

__all__ = ["Outcome", "Resource", "degraded_pass", "reconcile"]

LOG = logging.getLogger("stormscale.operator")
#: Decisions after which the kept profile still describes the topology: nothing was changed.
KEEPS_PROFILE = frozenset({Act.STABLE, Act.RECOMMEND})


def reconcile(
    resource: Resource, policy: Policy, status: StormTopologyStatus, ports: Ports, now: datetime
) -> Outcome:
    """One pass; the returned status replaces the old one. Posts the pass's events at its end."""
    st = Book(status.model_copy(deep=True), now, resource.generation)
    st.status.observed_generation = resource.generation
    outcome = _reconcile(resource, policy, st, ports)
    outcome.plan_seconds = st.plan_seconds
    st.post(ports.events)
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
    st = Book(status.model_copy(deep=True), now, resource.generation)
    st.status.observed_generation = resource.generation
    outcome = st.degraded(reason, message)
    st.post(events)
    return outcome


def _reconcile(resource: Resource, policy: Policy, st: Book, ports: Ports) -> Outcome:
    seen = observe.topology(resource, policy, st, ports)
    if isinstance(seen, Outcome):
        return seen
    observation = seen.observation
    decision = _decide(observation, policy, st)
    while decision.act is Act.MEASURE:
        assert decision.need is not None
        observation = observe.measure(decision.need, observation, resource, policy, ports)
        decision = _decide(observation, policy, st)
    _take(st, decision)
    if ports.kept is not None and decision.act not in KEEPS_PROFILE:
        ports.kept.forget()  # the topology is about to change, or something is wrong: measure afresh
    refresh = functools.partial(observe.refresh_kept, observation, policy, ports)
    if decision.note:
        LOG.warning("[%s/%s] no sizing shown: %s", resource.namespace, resource.name, decision.note)
    act, budget = decision.act, decision.budget
    if act is Act.DEGRADED:
        assert decision.reason is not None
        return st.degraded(decision.reason, decision.message, decision.retry_after)
    if act is Act.SETTLING:
        return st.settling(decision.message, RETRY_REBALANCE_S)
    if act is Act.STABLE:
        st.healthy()
        outcome = st.ready(Reason.STABLE, Reason.APPLIED, f"Budget {budget} is applied", decision.retry_after)
        outcome.refresh = refresh
        return outcome
    site = observe.site(resource, policy, st, seen)

    def check() -> None:
        ports.status.check(resource.namespace, resource.name)

    if act is Act.HOLD_REFUSED:
        assert decision.reason is not None
        return _realized(st, budget, ports.realizer.give_up(site, decision.reason, decision.message, check))
    st.healthy()
    if act is Act.RECOMMEND:
        st.set(PROGRESSING, False, Reason.RECOMMENDED, "Recommend mode: the plan is in status.lastPlan only")
        st.set(READY, True, Reason.RECOMMENDED, f"Plan for budget {budget} recommended, not applied")
        return Outcome(st.status)
    intent = decision.intent
    assert intent is not None
    if act is Act.APPLY:
        try:  # intent first: a crash from here on resumes this very plan (baseline and autoscaler too)
            ports.status.save(resource.namespace, resource.name, st.status)
        except UnavailableError as err:
            return st.degraded(Reason.KUBERNETES_UNAVAILABLE, str(err))
        except RefusedError as err:
            return st.degraded(Reason.KUBERNETES_UNAVAILABLE, f"status not saved, so nothing applied: {err}")

    def record(again: PendingApply) -> None:
        st.status.pending = again
        ports.status.save(resource.namespace, resource.name, st.status)

    outcome = _realized(st, budget, ports.realizer.realize(site, intent, record, check))
    if outcome.status.holds(READY):  # verified: Storm runs the new executors
        outcome.refresh = refresh
    return outcome


def _decide(observation: Observation, policy: Policy, st: Book) -> Decision:
    """The decision on ``observation``, timed when it planned (``Outcome.plan_seconds``)."""
    started = time.perf_counter()
    decision = decide(observation, policy, st.status)
    if decision.planned:
        st.plan_seconds = time.perf_counter() - started
    return decision


def _take(st: Book, decision: Decision) -> None:
    """The decision's status, conditions and events into the pass's book."""
    st.status = decision.status
    for kind, holds, reason, message in decision.conditions:
        st.set(kind, holds, reason, message)
    st.events.extend(decision.events)


def _realized(st: Book, budget: int, realized: Realized) -> Outcome:
    """The realizer's report as conditions and events: on the way, stopped, or applied."""
    st.events.extend(realized.events)
    if realized.progress is Progress.APPLIED:
        assert realized.intent is not None
        return st.applied(budget, realized.intent.units, realized.intent.placement)
    st.status.pending = realized.intent
    if realized.progress is Progress.PROGRESSING:
        return st.progressing(realized.reason, realized.message)
    outcome = st.degraded(realized.reason, realized.message)
    if realized.retry_after is not None:
        outcome.retry_after = realized.retry_after
    return outcome
