"""The realizer: make a saved intent (``status.pending``: target units, replicas, placement) run on
Storm, behind the one :class:`~stormscale.operator.ports.Realizer` port the pass calls.

To more pods: replicas first (the new units need their Supervisors), then one rebalance (carrying
the placement), then verify (on a later pass if Storm is busy or has not assigned the placement yet).
To fewer pods: the rebalance first, on the pods there are, and only once Storm runs the target are the
pods left without a worker of the topology marked to go first and the replicas lowered
(:meth:`StormRealizer._release`): lowered first, the ReplicaSet would remove pods of its own choosing,
workers included, and Nimbus, still listing their Supervisors for a while, would assign the rebalance
to them (measured: the topology stopped for minutes until Nimbus gave up on those workers).

Applying *sets* replicas and executor counts, never adds to them, so a crash between the two writes
converges on the next pass. Storm is not trusted to run what it accepted: a rebalance it forgot (a
Nimbus restart, STORM-3516) is asked for again, at most :data:`MAX_REBALANCES` times in all; a refusal
scales the workers back. Built from the Deployments and Nimbus ports.

Every act of a pass (scale, mark pods, rebalance) goes through :class:`CheckedActs`, which first
re-reads the StormTopology (the pass's ``check``): one deleted, being deleted, created again or of a
new generation meanwhile stops the pass there (``SupersededError``), before the act.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from stormscale.operator import packing
from stormscale.operator.book import units_text
from stormscale.operator.decision.placement import choices_text, replicas, replicas_for
from stormscale.operator.packing import first_problems
from stormscale.operator.ports import (
    Check,
    Layout,
    Nimbus,
    Progress,
    Realized,
    RefusedError,
    Site,
    StormTopologyState,
    UnavailableError,
    WorkerDeployments,
    Workers,
)
from stormscale.operator.status import (
    RETRY_AFTER,
    PendingApply,
    PlacementStatus,
    Reason,
    seconds_since,
    timestamp,
)
from stormscale.storm.placement import PlacementError
from stormscale.storm.samples import Pod

REBALANCE_WAIT_SECS = 5
#: Rebalance requests for one pending plan, the first included: Storm running other executors or
#: workers than asked for after the last one had time to finish is asked again, up to this many.
MAX_REBALANCES = 3
#: Seconds past the rebalance's wait before Storm's executors are judged: Nimbus schedules the new
#: assignment right after the wait (the next pass comes soon after a request anyway).
REBALANCE_GRACE_S = 10.0
#: Seconds past the wait after which a topology still REBALANCING is reported stalled: a restarted
#: Nimbus re-arms the wait once it leads again (tens of seconds), one that lost the delayed
#: rebalance never ends it (STORM-3516, fixed in Storm 2.1).
REBALANCE_STALL_S = 120.0
#: Seconds after a rebalance that carried a placement during which a layout Nimbus does not report
#: yet is waited for (Progressing); after it, Degraded/PlacementNotApplied.
PLACEMENT_GRACE_S = 120.0
LOG = logging.getLogger("stormscale.operator")


def workers_asked(target: Mapping[str, int], placement: PlacementStatus | None) -> int:
    """Workers a rebalance to ``target`` asks for: the placement's, else one per unit."""
    return placement.workers if placement is not None else sum(target.values())


def runs(storm: StormTopologyState, target: Mapping[str, int], workers: int, *, asked: bool) -> bool:
    """Whether Storm runs ``target``: those executors per component and, once the operator has asked
    for a rebalance to it (``asked``), on the ``workers`` that rebalance asked for (one per unit, or
    the placement's). (Before, the workers are the user's: a topology whose executors already are the
    target, at budget 0 say, is left on the workers it was submitted with.)"""
    executors = dict(storm.executors) == dict(target)
    return executors and (not asked or storm.workers == workers)


def pods_to_release(pods: Sequence[Pod], storm: StormTopologyState, surplus: int) -> list[str]:
    """Up to ``surplus`` pods, by name, that a scale-down may remove without stopping a worker of the
    topology: live pods none of whose hosts (IP, name) carries one of its executors. None while
    Storm's assignment is not known (every pod would look free)."""
    if not storm.assignment or surplus <= 0:
        return []
    busy = {e.host for e in storm.assignment}
    free = [p.name for p in pods if not p.terminating and not busy.intersection(p.hosts)]
    return sorted(free)[:surplus]


def _progressing(reason: Reason, message: str, intent: PendingApply | None) -> Realized:
    return Realized(Progress.PROGRESSING, reason, message, intent)


def _degraded(reason: Reason, message: str, intent: PendingApply | None) -> Realized:
    return Realized(Progress.DEGRADED, reason, message, intent)


class CheckedActs:
    """The worker Deployment and Nimbus as a pass's realizer acts on them: every write (``scale``,
    ``remove_first``, ``rebalance``) only after ``check`` passed, reads as they are. The one place
    where a multi-step apply stops once its StormTopology is no longer the one the pass read."""

    def __init__(self, deployments: WorkerDeployments, nimbus: Nimbus, check: Check) -> None:
        self._deployments = deployments
        self._nimbus = nimbus
        self._check = check

    def read(self, namespace: str, name: str) -> Workers:
        return self._deployments.read(namespace, name)

    def pods(self, namespace: str, name: str) -> Sequence[Pod]:
        return self._deployments.pods(namespace, name)

    def describe(self, topology: str) -> StormTopologyState:
        return self._nimbus.describe(topology)

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        self._check()
        self._deployments.scale(namespace, name, replicas)

    def remove_first(self, namespace: str, pods: Sequence[str]) -> None:
        self._check()
        self._deployments.remove_first(namespace, pods)

    def rebalance(
        self,
        topology: str,
        executors: Mapping[str, int],
        workers: int,
        wait_secs: int,
        placement: Layout | None = None,
    ) -> None:
        self._check()
        self._nimbus.rebalance(topology, executors, workers, wait_secs, placement)


class StormRealizer:
    """The realizer on the worker Deployment and Nimbus."""

    def __init__(self, deployments: WorkerDeployments, nimbus: Nimbus) -> None:
        self.deployments = deployments
        self.nimbus = nimbus

    def _checked(self, check: Check) -> StormRealizer:
        """This realizer with each act after ``check`` (:class:`CheckedActs`)."""
        acts = CheckedActs(self.deployments, self.nimbus, check)
        return StormRealizer(acts, acts)

    def realize(
        self, site: Site, intent: PendingApply, record: Callable[[PendingApply], None], check: Check
    ) -> Realized:
        """Make it so (:meth:`_realize`), each act after ``check``."""
        return self._checked(check)._realize(site, intent, record)

    def give_up(self, site: Site, reason: Reason, message: str, check: Check) -> Realized:
        """The refused apply stays refused: no plan, no write but the scale back (after ``check``),
        no new Warning."""
        return self._checked(check)._refused(site, message, site.replicas, reason)

    def _realize(self, site: Site, intent: PendingApply, record: Callable[[PendingApply], None]) -> Realized:
        """Make it so. A rebalance is asked for while Storm runs other executors than the target or,
        once asked, another worker count than asked for (the placement's, else one per unit): a lost
        rebalance, or a placement Stormscale's scheduler assigned nothing of. :meth:`_rebalance`
        bounds those requests (:data:`MAX_REBALANCES` in all, then ``RebalanceNotApplied``). A
        placement Nimbus does not lay out while it runs the target executors on those workers is asked
        for once if no rebalance was made yet (the executors already were the target), and never
        again: Storm ran the rebalance, the layout is its scheduler's to assign, and another rebalance
        would only restart every worker. It is waited for, then reported, with the plan kept pending
        (:meth:`_placement_pending`)."""
        storm = site.storm
        target, placement = dict(intent.units), intent.placement
        wanted = replicas(target, placement, site.slots_per_pod)
        slots = workers_asked(target, placement)
        asked = bool(intent.rebalances)
        now_replicas = site.replicas
        missing: list[str] = []
        shrinking = wanted < site.replicas
        try:
            if site.replicas != wanted and not shrinking:
                self.deployments.scale(site.namespace, site.deployment, wanted)
                now_replicas = wanted
            if storm.status == "REBALANCING":
                return self._rebalancing(site, intent)
            layout = None if placement is None else packing.as_placement(placement.counts())
            missing = [] if layout is None else packing.problems(layout, storm, site.topology)
            if not runs(storm, target, slots, asked=asked) or (missing and not asked):
                if not storm.slots_for(slots):
                    # Storm would put two executors in one worker (Even scheduler: slots used =
                    # min(workers, free slots)) and keep them there once the late pods' Supervisors
                    # register.
                    message = (
                        f"waiting for worker pods to register with Nimbus: {slots} slots "
                        f"needed, {storm.free_slots} free + {storm.workers} held"
                    )
                    return _progressing(Reason.WAITING_FOR_SLOTS, message, intent)
                return self._rebalance(site, intent, now_replicas, record)
        except RefusedError as err:
            return self._refused(site, str(err), now_replicas)
        except UnavailableError as err:
            return _degraded(Reason.APPLY_UNAVAILABLE, str(err), intent)
        except PlacementError as err:  # a stored placement that no longer reads (a hand edit)
            return _degraded(Reason.INVALID_STATUS, str(err), intent)
        if missing:
            said = [f"the scheduler says: {storm.sched_status}"] if storm.sched_status else []
            return self._placement_pending(site, intent, [*said, *missing])
        if shrinking:
            try:
                self._release(site, wanted)
            except RefusedError as err:
                return self._refused(site, str(err), now_replicas)
            except UnavailableError as err:
                return _degraded(Reason.APPLY_UNAVAILABLE, str(err), intent)
        return Realized(Progress.APPLIED, Reason.APPLIED, "", intent)

    def _release(self, site: Site, wanted: int) -> None:
        """Lower the replicas to ``wanted`` once Storm runs the target on the pods there are: the
        pods none of whose hosts runs a worker of the topology (:func:`pods_to_release`) are marked
        to be removed first, then the replicas set. Where Storm's assignment is not known nothing is
        marked (the ReplicaSet chooses); where fewer pods are free than go, the rest are the
        ReplicaSet's choice and Storm reschedules their workers (said in the log). A pod the
        operator may not mark (RBAC without ``pods: patch``) leaves the choice to the ReplicaSet."""
        where = f"{site.namespace}/{site.deployment}"
        pods = self.deployments.pods(site.namespace, site.deployment)
        surplus = site.replicas - wanted
        chosen = pods_to_release(pods, site.storm, surplus)
        if len(chosen) < surplus:
            LOG.warning(
                "[%s] %d of the %d pods to remove run workers of %s (or Storm's assignment is not known): "
                "the ReplicaSet chooses them, and Storm reschedules their workers",
                where,
                surplus - len(chosen),
                surplus,
                site.topology,
            )
        if chosen:
            try:
                self.deployments.remove_first(site.namespace, chosen)
            except RefusedError as err:
                LOG.warning(
                    "[%s] pods not marked to be removed first, the ReplicaSet chooses: %s", where, err
                )
        self.deployments.scale(site.namespace, site.deployment, wanted)

    def _placement_pending(self, site: Site, intent: PendingApply, missing: list[str]) -> Realized:
        """Nimbus runs the target executors on the placement's worker count but not the placement:
        waited for within :data:`PLACEMENT_GRACE_S` of the last rebalance, then
        ``Degraded/PlacementNotApplied`` with the plan kept pending (still checked every pass, never
        rebalanced again, and not counted towards :data:`MAX_REBALANCES`: that bound is for
        rebalances Storm did not run; this one it ran)."""
        shown = first_problems(missing)
        waited = seconds_since(intent.last_rebalance, site.now)
        if waited < PLACEMENT_GRACE_S:
            message = f"waiting for Nimbus to assign the placement: {shown}"
            return _progressing(Reason.WAITING_FOR_PLACEMENT, message, intent)
        message = (
            f"Nimbus does not run the placement {waited:.0f}s after the rebalance: {shown} (is Stormscale's "
            "scheduler Nimbus's storm.scheduler, with enough free Supervisors?)"
        )
        return _degraded(Reason.PLACEMENT_NOT_APPLIED, message, intent)

    def _rebalancing(self, site: Site, intent: PendingApply) -> Realized:
        """Storm reports REBALANCING: wait, unless it has for :data:`REBALANCE_STALL_S` past our last
        request's wait; then say so (``Degraded/RebalanceStalled``) and keep the plan pending. Nimbus
        refuses a rebalance while one is pending, so asking again cannot help; Storm finishing it
        later is verified as usual."""
        waited = seconds_since(intent.last_rebalance, site.now)
        if intent.last_rebalance and waited > REBALANCE_WAIT_SECS + REBALANCE_STALL_S:
            message = (
                f"Storm has been rebalancing topology {site.topology} for {waited:.0f}s since "
                f"the request (wait {REBALANCE_WAIT_SECS}s): Nimbus may have lost the delayed rebalance "
                "(STORM-3516); the plan stays pending"
            )
            return _degraded(Reason.REBALANCE_STALLED, message, intent)
        return _progressing(Reason.REBALANCING, "Storm is rebalancing the topology", intent)

    def _rebalance(
        self, site: Site, intent: PendingApply, replicas_now: int, record: Callable[[PendingApply], None]
    ) -> Realized:
        """Ask Storm to run the intent: once, and again while it runs something else after the last
        request had its wait and :data:`REBALANCE_GRACE_S` (Nimbus accepted it and lost it: a restart
        between the request and its delayed execution, STORM-3516). A rebalance *sets* every
        component's executors and the worker count, and with ``workers.placement`` carries the whole
        placement, so asking again is safe and re-sends the same layout. A request again is recorded
        (``record``) before it is made (intent first) and announced by one Warning. Only requests
        Nimbus may have accepted count: one that failed as unavailable (Nimbus down) is not, and is
        retried after that reason's delay like any other. After :data:`MAX_REBALANCES` requests the
        plan is given up like a refused one (``Degraded/RebalanceNotApplied``: the Deployment back to
        what Storm runs, held until the spec changes)."""
        storm = site.storm
        target, placement = dict(intent.units), intent.placement
        slots = workers_asked(target, placement)
        asked = intent.rebalances or 0
        since = seconds_since(intent.last_rebalance, site.now)
        wanted = f"{units_text(target)} on {slots} workers"
        ran = f"{units_text(storm.executors)} on {storm.workers} workers"
        if asked and since < REBALANCE_WAIT_SECS + REBALANCE_GRACE_S:
            return _progressing(
                Reason.REBALANCE_REQUESTED, f"Rebalance to {wanted} requested {since:.0f}s ago", intent
            )
        if asked >= MAX_REBALANCES:
            said = f" (the scheduler says: {storm.sched_status})" if storm.sched_status else ""
            message = f"Storm accepted {asked} rebalances to {wanted} and runs {ran}{said}: none was applied"
            return self._refused(site, message, replicas_now, Reason.REBALANCE_NOT_APPLIED)
        again = intent.model_copy(update={"rebalances": asked + 1, "last_rebalance": timestamp(site.now)})
        if asked:
            try:  # intent first: a crash from here on counts this request
                record(again)
            except (UnavailableError, RefusedError) as err:
                message = f"status not saved, so nothing applied: {err}"
                return _degraded(Reason.KUBERNETES_UNAVAILABLE, message, again)
        counts = None if placement is None else placement.counts()
        # UnavailableError: not accepted (Nimbus is down), the intent as it was; tried later
        self.nimbus.rebalance(site.topology, target, slots, REBALANCE_WAIT_SECS, counts)
        events: tuple[tuple[str, Reason, str], ...] = ()
        if asked:
            reissued = (
                f"Storm runs {ran} {since:.0f}s after the rebalance to {wanted}: asked again "
                f"({asked + 1} of {MAX_REBALANCES})"
            )
            events = (("Warning", Reason.REBALANCE_REISSUED, reissued),)
        times = f" again ({asked + 1} of {MAX_REBALANCES})" if asked else ""
        where = "" if placement is None else f" ({choices_text(placement)})"
        message = f"Rebalance to {units_text(target)} requested{times}{where}"
        return Realized(Progress.PROGRESSING, Reason.REBALANCE_REQUESTED, message, again, events)

    def _refused(
        self, site: Site, message: str, replicas_now: int, reason: Reason = Reason.APPLY_REFUSED
    ) -> Realized:
        """Storm or Kubernetes refused the apply (or Storm ran none of the rebalances it accepted):
        forget the plan and scale the Deployment back.

        Back to the pods the units Storm runs need, rather than keeping the new ones for a retry: a
        refusal is not mended by retrying (the decision holds it until the spec changes), and idle
        worker pods would hold quota and offer Storm free slots that other topologies' workers could
        take, only to lose them at the next scale-in. A failed scale back is retried on the next pass.
        """
        storm, before = site.storm, site.applied
        if site.placement is not None and before is not None and dict(storm.executors) == site.units:
            running = before.pods
        else:
            running = replicas_for(storm.executors, site.slots_per_pod)
        if replicas_now == running:
            return _degraded(reason, message, None)
        try:
            self.deployments.scale(site.namespace, site.deployment, running)
        except (RefusedError, UnavailableError) as err:
            where = f"{site.namespace}/{site.deployment}"
            LOG.warning("[%s] scaling back to %d replicas failed: %s", where, running, err)
            retry = RETRY_AFTER[Reason.APPLY_UNAVAILABLE]
            return Realized(Progress.DEGRADED, reason, message, None, retry_after=retry)
        return _degraded(reason, message, None)
