"""A pass acts only on the resource it read: deleted, re-created or re-specified between two steps of
an apply, or its status stored by another writer (a 409 on the pass's conditional save), the rest of
the apply is not done and nothing is saved. Kopf's own writes (annotations) stop nothing.

The recording fakes: :class:`FakeStatus` raises ``SupersededError`` on every save and every check
(the re-read before each act) once ``superseded`` is set; here a step of the fake Deployment or Nimbus
sets it, as a ``kubectl delete`` between two steps would.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import kopf
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from stormscale.operator import handlers
from stormscale.operator.adapters.kube import Held, KubeStatus, superseded
from stormscale.operator.ports import RefusedError, SupersededError, UnavailableError
from stormscale.operator.reconcile import reconcile
from stormscale.operator.status import StormTopologyStatus
from tests.harness.fakes.ports import FakeCluster, FakeEvents, FakeStatus

from .test_reconcile import RESOURCE, T0, policy, run, world
from .test_scale_in import scale_in, wide_world, writes


class DeletedAfter(FakeCluster):
    """The StormTopology is deleted right after the Deployment's first ``step`` (scale, remove_first)."""

    def __init__(self, step: str, status: FakeStatus, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.step, self.status = step, status

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        super().scale(namespace, name, replicas)
        if self.step == "scale":
            self.status.superseded = "deleted"

    def remove_first(self, namespace: str, pods: Sequence[str]) -> None:
        super().remove_first(namespace, pods)
        if self.step == "remove_first":
            self.status.superseded = "deleted"


def test_a_deletion_after_the_scale_up_stops_the_pass_before_the_rebalance() -> None:
    w = world()
    w.cluster = DeletedAfter("scale", w.status, replicas=4)
    w.cluster.journal = w.journal
    with pytest.raises(SupersededError, match="deleted"):
        run(w, policy())
    assert writes(w) == [("scale", 6)]  # no rebalance
    assert not [c for c in w.nimbus.calls if c[0] == "rebalance"]
    assert [j[0] for j in w.journal] == ["save", "scale"]  # the intent only: no end-of-pass save


def test_a_deletion_after_the_pods_are_marked_stops_the_pass_before_the_replicas_are_lowered() -> None:
    w = wide_world()
    first = run(w, policy(budget=0), {"baseline": dict.fromkeys("1234", 1), "appliedBudget": 4})
    w.cluster = DeletedAfter("remove_first", w.status, replicas=8, pod_names=list(w.cluster.pod_names or []))
    w.cluster.journal = w.journal
    with pytest.raises(SupersededError):
        run(w, policy(budget=0), first.status, minutes=1)
    assert writes(w) == [
        ("rebalance", {"1": 1, "2": 1, "3": 1, "4": 1}),
        ("remove_first", ["h4", "h5", "h6", "h7"]),
    ]
    assert w.cluster.replicas == 8  # not lowered


def test_a_conflict_on_the_intent_save_acts_on_nothing() -> None:
    """Another operator wrote the resource since this pass read it: the intent save gets a 409."""
    w = world()
    w.status.superseded = "409 Conflict"
    with pytest.raises(SupersededError):
        run(w, policy())
    assert w.journal == []
    assert w.nimbus.calls == [("describe", "linear")]


def test_each_act_of_an_apply_is_checked_first() -> None:
    """Scale up and rebalance: two acts, two re-reads; scale in: rebalance, mark, scale."""
    w = world()
    run(w, policy())
    assert w.status.checks == 2
    wide = wide_world()
    scale_in(wide)
    assert wide.status.checks == 3


def test_a_refused_apply_s_scale_back_is_checked_too() -> None:
    w = world()
    w.nimbus.fail_rebalance = RefusedError("no such topology")
    w.cluster = DeletedAfter("scale", w.status, replicas=4)
    w.cluster.journal = w.journal
    with pytest.raises(SupersededError):
        run(w, policy())
    assert [j for j in writes(w) if j[0] == "scale"] == [("scale", 6)]  # not scaled back


def test_a_check_that_cannot_read_the_resource_holds_the_act_as_unavailable() -> None:
    class Unreadable(FakeStatus):
        def check(self, namespace: str, name: str) -> None:
            raise UnavailableError("cannot re-read StormTopology streaming/linear before acting: 503")

    w = world()
    w.status = Unreadable(journal=w.journal)
    outcome = reconcile(RESOURCE, policy(), StormTopologyStatus(), w.ports, T0)
    assert writes(w) == []
    degraded = outcome.status.condition("Degraded")
    assert degraded is not None
    assert degraded.reason == "ApplyUnavailable"
    assert outcome.status.pending is not None  # the plan stays, for the next pass


def test_a_stopped_pass_logs_one_line_and_sets_no_condition(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    w = world()

    class Store(FakeStatus):
        def load(self, namespace: str, name: str) -> dict[str, Any]:
            return {"metadata": {"generation": 1}, "spec": policy().spec.model_dump(by_alias=True)}

    store = Store(journal=w.journal, superseded="409 Conflict")
    w.status = store
    monkeypatch.setattr(handlers, "status_store", lambda: store)
    monkeypatch.setattr(handlers, "PORTS_FACTORY", lambda *_: w.ports)
    monkeypatch.setattr(handlers, "KopfEvents", lambda _: FakeEvents())
    body = kopf.Body({"metadata": {"name": "linear", "namespace": "streaming", "uid": "u-1"}})
    with caplog.at_level(logging.INFO, logger="stormscale.operator"):
        handlers.run_pass(body, "timer")  # no TemporaryError: the next timer pass reads it afresh
    assert store.saved == []
    assert w.journal == []
    lines = [r.getMessage() for r in caplog.records]
    assert any("timer pass stopped, nothing more done" in line and "409 Conflict" in line for line in lines)
    assert any(line.endswith(": stopped") for line in lines)


HELD = Held("u-1", 3, "100")


def found(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"uid": "u-1", "generation": 3, "resourceVersion": "100", **meta}}


@pytest.mark.parametrize(
    ("meta", "why"),
    [
        ({}, None),
        ({"deletionTimestamp": "2026-11-28T09:00:00Z"}, "being deleted"),
        ({"uid": "u-2"}, "deleted and created again"),
        ({"generation": 4}, "spec changed (generation 3 -> 4)"),
        ({"generation": 4, "resourceVersion": "101"}, "spec changed (generation 3 -> 4)"),
    ],
)
def test_the_resource_is_superseded_when_deleted_recreated_or_respecified(
    meta: dict[str, Any], why: str | None
) -> None:
    said = superseded(HELD, found(**meta))
    assert said == why if why is None else why in (said or "")


KOPF_WRITES = [
    {"annotations": {"stormscale.io/touch-dummy": "2026-11-28T12:38:24.782603+00:00"}},
    {"annotations": {"stormscale.io/on_spec": '{"retries": 1, "success": false}'}},
    {"finalizers": ["kopf.zalando.org/KopfFinalizerMarker"]},
]


@pytest.mark.parametrize("meta", KOPF_WRITES, ids=["touch", "progress", "finalizer"])
def test_kopf_s_own_writes_leave_the_resource_the_one_held(meta: dict[str, Any]) -> None:
    """Kopf's bookkeeping moves the resourceVersion, not the object, its spec or its deletion: the
    re-read before an act lets the act go (a rival status write is the save's 409 instead)."""
    assert superseded(HELD, found(resourceVersion="101", **meta)) is None


class FakeCustomObjects:
    """The CustomObjectsApi calls of the status writer: a stored object, and its version bumped per write."""

    def __init__(self) -> None:
        self.object = found()
        self.patches: list[dict[str, Any]] = []
        self.conflict = False

    def get_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(self.object)

    def patch_namespaced_custom_object_status(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        patch = args[5]
        self.patches.append(patch)
        if patch.get("metadata", {}).get("resourceVersion") != self.object["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        meta = {
            **self.object["metadata"],
            "resourceVersion": str(int(self.object["metadata"]["resourceVersion"]) + 1),
        }
        self.object = {**self.object, "metadata": meta, "status": patch["status"]}
        return dict(self.object)


def writer(api: FakeCustomObjects) -> KubeStatus:
    store = KubeStatus(client.ApiClient())
    store._custom = api  # type: ignore[assignment]
    return store


def test_status_patches_carry_the_version_held_and_follow_their_own_writes() -> None:
    api = FakeCustomObjects()
    store = writer(api)
    store.load("streaming", "linear")
    store.save("streaming", "linear", StormTopologyStatus(applied_budget=1))
    store.check("streaming", "linear")  # our own write: still the resource the pass holds
    store.save("streaming", "linear", StormTopologyStatus(applied_budget=2))
    assert [p["metadata"] for p in api.patches] == [{"resourceVersion": "100"}, {"resourceVersion": "101"}]


def test_two_passes_on_the_same_version_write_once_and_the_second_gets_a_conflict() -> None:
    api = FakeCustomObjects()
    first, second = writer(api), writer(api)
    first.load("streaming", "linear")
    second.load("streaming", "linear")
    first.save("streaming", "linear", StormTopologyStatus(applied_budget=1))
    with pytest.raises(SupersededError, match="409"):
        second.save("streaming", "linear", StormTopologyStatus(applied_budget=2))
    assert api.object["status"]["appliedBudget"] == 1
    assert len(api.patches) == 2  # sent twice, stored once


def test_a_kopf_annotation_between_the_read_and_an_act_does_not_stop_the_act() -> None:
    api = FakeCustomObjects()
    store = writer(api)
    store.load("streaming", "linear")
    store.save("streaming", "linear", StormTopologyStatus(applied_budget=1))
    api.object = found(resourceVersion="150", annotations={"stormscale.io/touch-dummy": "now"})
    store.check("streaming", "linear")  # no SupersededError: the act goes ahead


@pytest.mark.parametrize(
    ("meta", "said"),
    [
        ({"generation": 4}, "spec changed"),
        ({"uid": "u-2"}, "created again"),
        ({"deletionTimestamp": "2026-11-28T09:00:00Z"}, "being deleted"),
    ],
    ids=["new spec", "re-created", "being deleted"],
)
def test_the_re_read_before_an_act_stops_on_another_resource_or_intent(
    meta: dict[str, Any], said: str
) -> None:
    api = FakeCustomObjects()
    store = writer(api)
    store.load("streaming", "linear")
    api.object = found(resourceVersion="150", **meta)
    with pytest.raises(SupersededError, match=said):
        store.check("streaming", "linear")


def test_a_deleted_resource_is_superseded_on_the_re_read() -> None:
    api = FakeCustomObjects()
    store = writer(api)
    store.load("streaming", "linear")

    def gone(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise ApiException(status=404, reason="Not Found")

    api.get_namespaced_custom_object = gone  # type: ignore[method-assign]
    with pytest.raises(SupersededError, match="deleted"):
        store.check("streaming", "linear")


def test_a_resource_that_cannot_be_read_is_saved_on_the_condition_of_the_watch_s_version() -> None:
    """A 403 on the fresh read: the Degraded status is saved against the watch's copy, not a version
    remembered from an earlier pass."""
    api = FakeCustomObjects()
    store = writer(api)
    store.load("streaming", "linear")
    api.object["metadata"]["resourceVersion"] = "105"  # written by others since
    store.hold("streaming", "linear", found(resourceVersion="105"))  # as the watch delivered it
    store.save("streaming", "linear", StormTopologyStatus(applied_budget=1))
    assert api.patches[-1]["metadata"] == {"resourceVersion": "105"}
