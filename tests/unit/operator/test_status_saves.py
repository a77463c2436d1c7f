"""The handler's status writes: intent saved mid-pass, then one patch that leaves nothing stale behind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormscale.operator.adapters.kube import WrittenStatus, merge_patched, status_patch
from stormscale.operator.handlers import reconcile_and_save

from .fakes import FakeStatus
from .test_reconcile import RESOURCE, T0, policy, world


def stored_after(saves: list[dict[str, Any]], start: Mapping[str, Any]) -> dict[str, Any]:
    """The status the API server stores after these merge patches (None deletes, objects merge)."""
    stored: dict[str, Any] = dict(start)
    for patch in saves:
        for key, value in patch.items():
            if value is None:
                stored.pop(key, None)
            elif isinstance(value, dict) and isinstance(stored.get(key), dict):
                stored[key] = stored_after([value], stored[key])
            else:
                stored[key] = value
    return stored


def test_an_apply_finished_within_its_planning_pass_leaves_no_pending_intent_behind() -> None:
    w = world()  # Storm already runs the baseline, so budget 0 needs no change
    reconcile_and_save(RESOURCE, policy(budget=0), {}, w.ports, T0)
    stored = stored_after(w.status.saved, {})
    assert stored["appliedBudget"] == 0
    assert "pending" not in stored  # was written mid-pass as intent, then done in the same pass
    reconcile_and_save(RESOURCE, policy(budget=0), stored, w.ports, T0)
    assert [e[1] for e in w.events.posted] == ["ScalingApplied"]  # once, not once per pass


def test_written_status_tracks_saved_keys_and_deletions() -> None:
    inner = FakeStatus()
    written = WrittenStatus(inner, {"a": 1, "b": 2})
    written.save("ns", "n", {"pending": {"budget": 1}, "b": None})
    assert written.stored == {"a": 1, "pending": {"budget": 1}}
    assert status_patch(written.stored, {"a": 1}) == {"pending": None, "a": 1}
    assert inner.saved == [{"pending": {"budget": 1}, "b": None}]


def test_a_nested_key_gone_from_the_new_status_is_deleted_not_merged_back() -> None:
    old = {"lastPlan": {"allocation": {"3": 1}, "budget": 1}, "units": {"3": 2}}
    new = {"lastPlan": {"allocation": {"2": 1}, "budget": 2}, "units": {"3": 2}}
    patch = status_patch(old, new)
    assert patch["lastPlan"]["allocation"] == {"3": None, "2": 1}
    assert stored_after([patch], old) == new


def test_merge_patched_follows_rfc_7386() -> None:
    target = {"a": {"b": 1, "c": 2}, "d": 3}
    assert merge_patched(target, {"a": {"b": None, "e": 4}, "d": None}) == {"a": {"c": 2, "e": 4}}
    assert merge_patched(target, {"a": 5}) == {"a": 5, "d": 3}
    assert target == {"a": {"b": 1, "c": 2}, "d": 3}  # untouched
