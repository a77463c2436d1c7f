"""What a pass reads: the worker Deployment and the topology from Nimbus (then the decision's
:class:`~stormscale.operator.decision.TopologyView` of them), and, only when a decision needs one, the
published profile and the in-process one. Read failures become Degraded outcomes or observed values.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from stormscale.aggregation import PublishedError, configmap_name
from stormscale.operator import packing
from stormscale.operator.book import Book, Outcome, Resource, units_text
from stormscale.operator.decision import Need, Observation, ProfileFailure, PublishedRead, TopologyView
from stormscale.operator.decision.placement import Running
from stormscale.operator.kept_profiles import profiling_inputs
from stormscale.operator.policy import PlacementKind, Policy, ProfileSource
from stormscale.operator.ports import (
    MeasuredProfile,
    Ports,
    RefusedError,
    SettlingError,
    Site,
    StaleMetricsError,
    StormTopologyState,
    TooLargeError,
    UnavailableError,
    UnknownDemandError,
    UnsteadyWindowError,
    Workers,
)
from stormscale.operator.status import PlacementStatus, Reason
from stormscale.storm.placement import PlacementError


@dataclass(frozen=True)
class Seen:
    """The worker Deployment and the topology as read, and the decision's view of them."""

    workers: Workers
    storm: StormTopologyState
    observation: Observation


def topology(resource: Resource, policy: Policy, st: Book, ports: Ports) -> Seen | Outcome:
    """Read the worker Deployment and the topology; Degraded when either cannot be used. Records the
    unit's CPU and the baseline (refreshed when Storm runs other components) in the status."""
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
    view = TopologyView(
        state=storm.status,
        active=storm.active,
        executors=dict(storm.executors),
        tasks=dict(storm.tasks),
        system_executors=storm.system_executors,
        replicas=workers.replicas,
        running=_running(st.status.placement, storm, policy),
        drift=placement_drift(st.status.placement, storm, policy),
        replicas_owners=workers.replicas_owners,
        conf=storm.conf,
        groupings=storm.groupings,
    )
    return Seen(workers, storm, Observation(st.now, resource.generation, view, baseline=baseline))


def _running(
    placement: PlacementStatus | None, storm: StormTopologyState, policy: Policy
) -> Running | str | None:
    """``MultiLevel``: the layout that runs (:func:`packing.running`), or why it cannot be read."""
    if policy.placement is not PlacementKind.MULTI_LEVEL:
        return None
    try:
        return packing.running(placement, storm, policy.spec.topology_name)
    except ValueError as err:  # PlacementError: a stored placement that no longer reads
        return str(err)


def _refresh_baseline(st: Book, storm: StormTopologyState) -> None:
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
        f"Storm runs other components than the baseline's ({old}): baseline {units_text(storm.executors)}"
    )
    st.events.append(("Normal", Reason.BASELINE_REFRESHED, message))


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
        f"Nimbus no longer runs status.placement: {packing.first_problems([*said, *problems])} "
        "(its scheduler assigns it again once a Supervisor is free)"
    )


def measure(
    need: Need, observation: Observation, resource: Resource, policy: Policy, ports: Ports
) -> Observation:
    """``observation`` with what the decision needs: the published profile as read, or the in-process
    one (or why it could not be measured)."""
    if need is Need.PUBLISHED:
        return dataclasses.replace(observation, published=_published(resource, ports))
    kept, inputs, running = ports.kept, profiling_inputs(policy), observation.topology.executors
    if kept is not None:
        recalled = kept.recall(inputs, running, observation.now)
        if recalled is not None:
            return dataclasses.replace(observation, measured=recalled)
    measured = _profile(policy, ports)
    if kept is not None:
        if isinstance(measured, MeasuredProfile):
            kept.keep(inputs, running, measured, observation.now)
        else:
            kept.forget()
    return dataclasses.replace(observation, measured=measured)


def refresh_kept(observation: Observation, policy: Policy, ports: Ports) -> bool:
    """Measure to keep a profile at hand for the next spec change, when the kept one is missing or
    ageing (:meth:`~stormscale.operator.ports.KeptProfiles.stale`); the status is left alone. Never
    with ``metrics.profile: Published`` (its point is not to query Prometheus every interval). Whether
    a profile was measured (a failure forgets the kept one)."""
    kept, inputs, running = ports.kept, profiling_inputs(policy), observation.topology.executors
    if kept is None or policy.spec.metrics.profile is not ProfileSource.IN_PROCESS:
        return False
    if not kept.stale(inputs, running, observation.now):
        return False
    measured = _profile(policy, ports)
    if isinstance(measured, MeasuredProfile):
        kept.keep(inputs, running, measured, observation.now)
    else:
        kept.forget()
    return True


def _published(resource: Resource, ports: Ports) -> PublishedRead:
    """The fleet job's ConfigMap for ``resource``, or why it could not be read."""
    fallback = "; planning on the in-process profile"
    where = ""
    try:
        name = configmap_name(resource.name)
        where = f"{resource.namespace}/{name}"
        data = ports.published.read(resource.namespace, name)
    except PublishedError as err:
        return PublishedRead(where, failure=(Reason.PUBLISHED_PROFILE_INVALID, f"{err}{fallback}"))
    except (UnavailableError, RefusedError) as err:
        return PublishedRead(where, failure=(Reason.PUBLISHED_PROFILE_UNAVAILABLE, f"{err}{fallback}"))
    return PublishedRead(where, data)


def _profile(policy: Policy, ports: Ports) -> MeasuredProfile | ProfileFailure:
    """A fresh profile from the profiler, or why there is none."""
    try:
        return ports.profiler.profile(policy.spec.topology_name, policy.window_s)
    except UnknownDemandError as err:
        return ProfileFailure(Reason.DEMAND_UNKNOWN, str(err))
    except SettlingError as err:
        return ProfileFailure(Reason.STALE_METRICS, str(err), err.newest_age_s)
    except UnsteadyWindowError as err:
        return ProfileFailure(Reason.STALE_METRICS, str(err), unsteady=True)
    except StaleMetricsError as err:
        return ProfileFailure(Reason.STALE_METRICS, str(err))
    except UnavailableError as err:
        return ProfileFailure(Reason.METRICS_UNAVAILABLE, str(err))
    except TooLargeError as err:
        return ProfileFailure(Reason.METRICS_TOO_LARGE, str(err))
    except RefusedError as err:
        return ProfileFailure(Reason.METRICS_REFUSED, str(err))


def site(resource: Resource, policy: Policy, st: Book, seen: Seen) -> Site:
    """Where the realizer works: the Deployment, the topology as read, and what was applied last."""
    return Site(
        namespace=resource.namespace,
        deployment=policy.spec.workers.deployment,
        topology=policy.spec.topology_name,
        slots_per_pod=policy.spec.workers.slots_per_pod,
        placement=policy.placement,
        storm=seen.storm,
        replicas=seen.workers.replicas,
        units=st.status.units,
        applied=st.status.placement,
        now=st.now,
    )
