"""Another field manager that sets the workers' replicas: the decision steps aside (pure), the adapter
reads the owners from ``managedFields``, and a pass warns once and resumes when the field is released."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from stormscale.operator.adapters.kube import FIELD_MANAGER, replicas_owners
from stormscale.operator.decision import Act, Observation, decide
from stormscale.operator.policy import Policy, parse_spec
from stormscale.operator.reconcile import Resource, reconcile
from stormscale.operator.status import PendingApply, Reason, StormTopologyStatus
from stormscale.planner import load_profile
from tests.harness.fakes.ports import FakeCluster, FakeNimbus, FakeProfiler, World

from .test_decision import BASELINE, NOW
from .test_decision import seen as decision_seen

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"
LINEAR = load_profile(PROFILES / "thesis-linear.json")  # 1 → 2 → 3 → 4, one unit each
APPLIED = {"1": 1, "2": 2, "3": 2, "4": 1}  # budget 2: 6 units, 6 pods of one slot
GITOPS = ("argocd-like",)


def policy(mode: str = "Manual") -> Policy:
    return parse_spec(
        {
            "topologyName": "linear",
            "nimbus": {"host": "nimbus"},
            "workers": {"deployment": "linear-workers", "slotsPerPod": 1},
            "metrics": {"prometheus": "http://prometheus:9090"},
            "scaling": {"mode": mode, "budget": 2, "flowModel": "Drop", "maxUnits": 6},
        }
    )


def seen(replicas: int, owners: tuple[str, ...] = (), executors: dict[str, int] | None = None) -> Observation:
    return decision_seen(executors or APPLIED, replicas, owners)


APPLIED_STATUS = StormTopologyStatus(units=APPLIED, applied_budget=2, baseline=BASELINE)


def test_another_manager_that_set_other_replicas_stops_every_mode_that_writes_before_measuring() -> None:
    for mode in ("Manual", "Auto"):
        decision = decide(seen(3, GITOPS), policy(mode), APPLIED_STATUS)
        assert (decision.act, decision.reason, decision.need) == (
            Act.DEGRADED,
            Reason.REPLICAS_CONFLICT,
            None,
        )
        assert decision.message.startswith('field manager "argocd-like" owns spec.replicas of Deployment')
        assert "now 3 (Stormscale set 6)" in decision.message
        assert decision.intent is None


def test_recommend_mode_writes_no_replicas_so_it_has_no_conflict() -> None:
    decision = decide(seen(3, GITOPS), policy("Recommend"), APPLIED_STATUS)
    assert decision.act is Act.MEASURE


def test_without_another_owner_the_operator_sets_its_count_again() -> None:
    """A manager that let go of the field (or never had it): a count the operator did not set is
    set again (planned on a profile, then applied)."""
    assert decide(seen(1), policy(), APPLIED_STATUS).act is Act.MEASURE


def test_another_owner_of_the_count_the_operator_set_is_no_conflict() -> None:
    """Shared ownership of the same value, or the creator's manager where the operator never had to
    scale: nobody has written over the operator."""
    assert decide(seen(6, GITOPS), policy(), APPLIED_STATUS).act is Act.STABLE


def test_the_creators_ownership_before_the_first_apply_is_no_conflict() -> None:
    fresh = StormTopologyStatus(baseline=BASELINE)
    decision = decide(seen(4, ("kubectl-client-side-apply",), executors=BASELINE), policy(), fresh)
    assert decision.act is Act.MEASURE


def test_a_pending_intent_is_kept_while_another_manager_holds_other_replicas() -> None:
    intent = PendingApply(budget=2, units=APPLIED, replicas=6, since="2026-11-22T11:59:00Z")
    pending = StormTopologyStatus(baseline=BASELINE, pending=intent)
    resumed = decide(seen(6, GITOPS), policy(), pending)
    assert resumed.act is Act.RESUME
    held = decide(seen(2, GITOPS), policy(), pending)
    assert (held.act, held.reason) == (Act.DEGRADED, Reason.REPLICAS_CONFLICT)
    assert held.status.pending == intent


def test_a_pending_scale_down_is_no_conflict_until_the_replicas_are_lowered() -> None:
    """The realizer lowers the replicas last, once Storm runs the target: until then the Deployment
    holds the count from before the intent, whoever owns it."""
    intent = PendingApply(budget=0, units=BASELINE, replicas=4, since="2026-11-22T11:59:00Z")
    pending = StormTopologyStatus(baseline=BASELINE, pending=intent)
    before = decide(seen(6, ("kubectl-client-side-apply",)), policy(), pending)
    assert before.act is not Act.DEGRADED
    lowered_by_another = decide(seen(3, GITOPS), policy(), pending)  # below the intent: written over
    assert (lowered_by_another.act, lowered_by_another.reason) == (Act.DEGRADED, Reason.REPLICAS_CONFLICT)


def test_the_owners_are_read_from_managed_fields_by_apply_update_and_the_scale_subresource() -> None:
    def entry(
        manager: str, operation: str, spec: dict[str, Any], subresource: str | None = None
    ) -> dict[str, Any]:
        found = {"manager": manager, "operation": operation, "fieldsV1": {"f:spec": spec}}
        return found if subresource is None else {**found, "subresource": subresource}

    deployment = {
        "metadata": {
            "name": "linear-workers",
            "managedFields": [
                entry(FIELD_MANAGER, "Apply", {"f:replicas": {}}, "scale"),
                entry("kubectl", "Update", {"f:replicas": {}}, "scale"),  # kubectl scale
                entry("argocd-like", "Apply", {"f:replicas": {}, "f:template": {}}),
                entry("kubectl-client-side-apply", "Update", {"f:template": {}}),
                {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status"},
            ],
        }
    }
    assert replicas_owners(deployment) == ("argocd-like", "kubectl")
    assert replicas_owners({"metadata": {"name": "linear-workers"}}) == ()


def test_a_pass_warns_once_writes_nothing_and_resumes_when_the_field_is_released() -> None:
    w = World(
        FakeCluster(replicas=4), FakeNimbus(dict(BASELINE), dict.fromkeys(BASELINE, 8)), FakeProfiler(LINEAR)
    )
    resource = Resource("streaming", "linear", generation=1)

    def run(status: StormTopologyStatus, minutes: float) -> StormTopologyStatus:
        return reconcile(resource, policy(), status, w.ports, NOW + timedelta(minutes=minutes)).status

    status = run(run(StormTopologyStatus(), 0), 1)  # applied: 6 pods
    assert status.applied_budget == 2
    assert w.cluster.replicas == 6
    w.cluster.replicas, w.cluster.replicas_owners = 3, GITOPS  # a GitOps self-heal sets its own count
    writes = len(w.journal)
    for minute in (2, 3, 4):
        status = run(status, minute)
    degraded = status.condition("Degraded")
    assert degraded is not None
    assert (degraded.status, degraded.reason) == ("True", "ReplicasConflict")
    assert '"argocd-like"' in degraded.message
    assert [j for j in w.journal[writes:] if j[0] in {"scale", "rebalance"}] == []
    assert w.cluster.replicas == 3
    assert [e[:2] for e in w.events.posted if e[0] == "Warning"] == [("Warning", "ReplicasConflict")]
    w.cluster.replicas, w.cluster.replicas_owners = 1, ()  # released: the field went back to its default
    status = run(run(status, 5), 6)
    assert w.cluster.replicas == 6
    assert status.holds("Ready", "Applied")
    assert not status.holds("Degraded")
