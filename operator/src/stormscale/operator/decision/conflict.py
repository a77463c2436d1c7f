"""Another writer of the workers' replica count: the operator steps aside instead of reverting it.

The operator sets ``spec.replicas`` with a forced server-side apply, which takes the field from any
other field manager. A GitOps controller that owns the field too (Argo CD's or Flux's self-heal with
``replicas`` in its manifests) sets it back, and the two would revert each other on every pass. The
Kubernetes adapter reads which other field managers own the field (``TopologyView.replicas_owners``);
the decision here says whether that is a conflict. Pure.

A conflict is another owner *and* a count the operator did not set. The Deployment's creator keeps
the field until the operator's first write takes it; while the count is still one the operator set
(its applied plan's pods, its pending intent's, the scale back of a given-up plan), nobody has written
over it. Once another manager has, the operator holds off until that manager lets go of the field
(or sets the operator's count). A pending intent with fewer pods is not written yet (the realizer lowers
the replicas only once Storm runs the target), so the count above it is the one before it.
"""

from __future__ import annotations

from stormscale.operator.decision.observation import TopologyView
from stormscale.operator.decision.placement import replicas, replicas_for
from stormscale.operator.policy import Mode, Policy
from stormscale.operator.status import DEGRADED, Reason, StormTopologyStatus

#: Degraded reasons after which the realizer scaled the workers back to what Storm runs.
_SCALED_BACK = (Reason.APPLY_REFUSED, Reason.REBALANCE_NOT_APPLIED)


def counts_written(status: StormTopologyStatus, view: TopologyView, slots_per_pod: int) -> set[int]:
    """Replica counts the operator may have written, by its status: the applied plan's pods, the
    pending intent's, and after a given-up apply the pods for what Storm runs. Empty: it has written
    none yet (the Deployment's count is still its creator's)."""
    written: set[int] = set()
    if status.units is not None:
        written.add(replicas(status.units, status.placement, slots_per_pod))
    if status.pending is not None:
        written.add(status.pending.replicas)
    degraded = status.condition(DEGRADED)
    if degraded is not None and degraded.status == "True" and degraded.reason in _SCALED_BACK:
        written.add(replicas_for(view.executors, slots_per_pod))
    return written


def replicas_conflict(view: TopologyView, status: StormTopologyStatus, policy: Policy) -> str | None:
    """Why the operator must not set the workers' replicas now (``Degraded/ReplicasConflict``, naming
    the other field managers), or ``None``. Recommend mode writes nothing, so it has no conflict."""
    owners = view.replicas_owners
    if not owners or policy.mode is Mode.RECOMMEND:
        return None
    pending = status.pending
    if pending is not None and view.replicas > pending.replicas:
        return None  # a scale-down lowers the replicas last: until then the count is the one before it
    written = counts_written(status, view, policy.spec.workers.slots_per_pod)
    if not written or view.replicas in written:
        return None
    named = ", ".join(f'"{owner}"' for owner in owners)
    ours = " or ".join(str(n) for n in sorted(written))
    return (
        f"field manager{'s' if len(owners) > 1 else ''} {named} own{'' if len(owners) > 1 else 's'} "
        f"spec.replicas of Deployment {policy.spec.workers.deployment}, now {view.replicas} (Stormscale "
        f"set {ours}); Stormscale does not fight another writer: leave replicas out of that manager's "
        "manifests (or have Argo CD ignore /spec/replicas); it resumes once the field is released"
    )
