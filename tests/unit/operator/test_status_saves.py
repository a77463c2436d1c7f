"""The handler's status writes: intent saved mid-pass, then one patch that leaves nothing stale behind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormscale.operator.adapters.kube import WrittenStatus, status_patch
from stormscale.operator.handlers import reconcile_and_save

from .fakes import FakeStatus
from .test_reconcile import RESOURCE, T0, policy, world


def stored_after(saves: list[dict[str, Any]], start: Mapping[str, Any]) -> dict[str, Any]:
    """The status the API server stores after these merge patches (top level: None deletes)."""
    stored = dict(start)
    for patch in saves:
        for key, value in patch.items():
            if value is None:
                stored.pop(key, None)
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
