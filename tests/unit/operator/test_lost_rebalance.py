"""Storm accepts a rebalance and does not run it (a Nimbus restart between the request and its delayed
execution lost it: STORM-3516): the operator asks again, a bounded number of times, and says so.

The recording FakeNimbus with ``applies_rebalance=False`` is a Nimbus that accepts every rebalance and
keeps running what it ran. Passes are placed in time by hand: the rebalance's wait is 5 s and a
request is judged 5 + 10 s after it was made (reconcile's ``REBALANCE_GRACE_S``).
"""

from __future__ import annotations

from typing import Any

import pytest

from stormscale.operator.realizer import MAX_REBALANCES
from stormscale.operator.status import StormTopologyStatus
from tests.harness.fakes.ports import UnavailableError, World

from .test_reconcile import RESOURCE, Pass, conditions, policy, run, world
from .test_sizing_placement import LINEAR_UNITS, multilevel_world, placements
from .test_sizing_placement import spec as placement_spec

TARGET = {"1": 1, "2": 2, "3": 2, "4": 1}  # budget 2 on the linear topology (6 workers)


class Crash(BaseException):
    """The process dies here (nothing catches it)."""


def at(w: World, status: dict[str, Any] | None, seconds: float) -> Pass:
    return run(w, policy(), status, minutes=seconds / 60)


def rebalances(w: World) -> list[Any]:
    return [args for call, args in w.nimbus.calls if call == "rebalance"]


def reasons(w: World) -> list[tuple[str, str]]:
    return [(kind, reason) for kind, reason, _ in w.events.posted]


def message(outcome: Pass, kind: str) -> str:
    return str(next(c["message"] for c in outcome.status["conditions"] if c["type"] == kind))


def test_a_rebalance_storm_forgot_is_asked_again_once_its_wait_is_over_then_verified() -> None:
    w = world(applies_rebalance=False)
    first = at(w, None, 0)
    assert first.status["pending"]["rebalances"] == 1
    soon = at(w, first.status, 10)  # a pass before the wait and the grace are over: Storm may be busy
    assert len(rebalances(w)) == 1
    assert conditions(soon)["Progressing"] == ("True", "RebalanceRequested")
    w.nimbus.applies_rebalance = True  # the Nimbus that lost it runs what it is asked now
    journal_before = len(w.journal)
    again = at(w, soon.status, 20)
    assert rebalances(w) == [(TARGET, 6), (TARGET, 6)]  # the same numbers set again, nothing added
    assert [j[0] for j in w.journal[journal_before:]] == ["save", "rebalance"]  # the request saved first
    assert w.status.stored["pending"]["rebalances"] == 2
    assert reasons(w) == [("Warning", "RebalanceReissued")]
    assert "asked again (2 of 3)" in w.events.posted[0][2]
    assert "1=1, 2=1, 3=1, 4=1 on 4 workers" in w.events.posted[0][2]  # what Storm ran
    assert "requested again (2 of 3)" in message(again, "Progressing")  # the condition says it too
    done = at(w, again.status, 40)
    assert conditions(done)["Ready"] == ("True", "Applied")
    assert done.status["units"] == TARGET
    assert "pending" not in done.status
    assert reasons(w) == [("Warning", "RebalanceReissued"), ("Normal", "ScalingApplied")]
    assert w.cluster.replicas == 6


def test_rebalances_storm_never_runs_are_bounded_then_given_up_and_held_until_the_spec_changes() -> None:
    w = world(applies_rebalance=False)
    status = None
    for seconds in (0, 20, 40):
        status = at(w, status, seconds).status
    assert len(rebalances(w)) == MAX_REBALANCES == 3
    given_up = at(w, status, 60)
    assert len(rebalances(w)) == 3
    assert conditions(given_up)["Degraded"] == ("True", "RebalanceNotApplied")
    assert conditions(given_up)["Ready"] == ("False", "RebalanceNotApplied")
    assert "pending" not in given_up.status
    assert "appliedBudget" not in given_up.status
    assert given_up.retry_after is None
    assert w.cluster.replicas == 4  # back to the pods the executors Storm runs need
    said = message(given_up, "Degraded")
    assert "accepted 3 rebalances to 1=1, 2=2, 3=2, 4=1 on 6 workers and runs 1=1, 2=1, 3=1, 4=1" in said
    assert reasons(w) == [("Warning", "RebalanceReissued")] * 2 + [("Warning", "RebalanceNotApplied")]
    status = given_up.status
    for minute in (2, 3, 4):  # held: no plan, no request, no scale, no second Warning
        status = run(w, policy(), status, minutes=minute).status
    assert len(rebalances(w)) == 3
    assert w.profiler.calls == 1
    assert [j for j in w.journal if j[0] == "scale"] == [("scale", 6), ("scale", 4)]
    assert len(w.events.posted) == 3
    w.nimbus.applies_rebalance = True  # Nimbus mended; the user changes the spec (a new generation)
    changed = run(w, policy(), status, minutes=5, generation=2)
    assert changed.status.get("pending") is not None
    assert w.nimbus.executors == TARGET


def test_a_rebalance_storm_ran_on_fewer_workers_than_asked_is_asked_again() -> None:
    """Executors right, workers short (a Supervisor gone between the slot check and the schedule: two
    executors share a worker and stay together): not what was asked for."""
    w = world(workers_short=1)
    first = at(w, None, 0)
    assert w.nimbus.executors == TARGET
    soon = at(w, first.status, 10)
    assert conditions(soon)["Progressing"] == ("True", "RebalanceRequested")  # not judged yet
    w.nimbus.workers_short = 0
    again = at(w, soon.status, 20)
    assert len(rebalances(w)) == 2
    assert "1=1, 2=2, 3=2, 4=1 on 5 workers" in w.events.posted[0][2]  # what Storm ran
    done = at(w, again.status, 40)
    assert conditions(done)["Ready"] == ("True", "Applied")
    assert reasons(w) == [("Warning", "RebalanceReissued"), ("Normal", "ScalingApplied")]


def test_requests_nimbus_could_not_take_are_retried_and_not_counted() -> None:
    """Nimbus down (the restart itself): the request fails as unavailable, is retried after that
    reason's delay for as long as it takes, and none of them counts towards the bound."""
    w = world()
    w.nimbus.fail_rebalance = UnavailableError("nimbus: connection refused")
    status = None
    for seconds in range(0, 300, 30):
        outcome = at(w, status, seconds)
        status = outcome.status
        assert conditions(outcome)["Degraded"] == ("True", "ApplyUnavailable")
        assert "rebalances" not in status["pending"]
    w.nimbus.fail_rebalance = None
    status = at(w, status, 300).status
    assert status["pending"]["rebalances"] == 1
    done = at(w, status, 320)
    assert conditions(done)["Ready"] == ("True", "Applied")
    assert reasons(w) == [("Warning", "ApplyUnavailable"), ("Normal", "ScalingApplied")]


def test_a_crash_right_after_a_request_again_still_counts_it() -> None:
    w = world(applies_rebalance=False)
    first = at(w, None, 0)
    w.status.save(RESOURCE.namespace, RESOURCE.name, StormTopologyStatus.from_json(first.status))
    w.nimbus.fail_rebalance = Crash()
    with pytest.raises(Crash):
        at(w, first.status, 20)
    assert w.status.stored["pending"]["rebalances"] == 2  # what a restarted operator starts from


def test_a_topology_rebalancing_long_past_the_wait_is_reported_stalled_with_the_plan_kept() -> None:
    """Nimbus lost the delayed rebalance but not the REBALANCING status (STORM-3516): it refuses any
    new rebalance until it ends, so the operator only says so, and verifies once Storm is done."""
    w = world(applies_rebalance=False)
    first = at(w, None, 0)
    w.nimbus.status = "REBALANCING"
    waiting = at(w, first.status, 60)
    assert conditions(waiting)["Progressing"] == ("True", "Rebalancing")
    stalled = at(w, waiting.status, 130)
    assert conditions(stalled)["Degraded"] == ("True", "RebalanceStalled")
    assert "rebalancing topology linear for 130s since the request (wait 5s)" in message(stalled, "Degraded")
    assert stalled.status["pending"]["units"] == TARGET
    assert stalled.retry_after == 30.0
    again = at(w, stalled.status, 160)
    assert len(rebalances(w)) == 1  # Nimbus refuses a rebalance while one is pending: none asked
    assert reasons(w) == [("Warning", "RebalanceStalled")]  # once per change of reason
    w.nimbus.status, w.nimbus.executors = "ACTIVE", dict(TARGET)  # Storm finishes after all
    done = at(w, again.status, 190)
    assert conditions(done)["Ready"] == ("True", "Applied")
    assert reasons(w) == [("Warning", "RebalanceStalled"), ("Normal", "ScalingApplied")]


def test_a_topology_already_running_the_target_keeps_the_workers_it_was_submitted_with() -> None:
    """Workers are checked against a rebalance the operator asked for, not imposed at budget 0: a
    topology of four executors submitted on one worker is verified as it runs."""
    w = world(workers=1)
    done = run(w, policy(budget=0))
    assert conditions(done)["Ready"] == ("True", "Applied")
    assert rebalances(w) == []


# --- with workers.placement: the rebalance carries the layout, again when asked again ---------------


def test_a_lost_placement_rebalance_is_asked_again_with_the_same_layout_and_its_worker_count() -> None:
    """MultiLevel puts a new executor in an existing worker: the request asks for the placement's
    workers, not one per unit, and a request again carries the very same layout."""
    w = multilevel_world()
    w.nimbus.applies_rebalance = False
    multilevel = placement_spec({"placement": "MultiLevel", "slotsPerPod": 2})
    first = run(w, multilevel)
    laid = first.status["pending"]["placement"]
    assert laid["workers"] < sum(LINEAR_UNITS.values())
    w.nimbus.applies_rebalance = True
    again = run(w, multilevel, first.status, minutes=20 / 60)
    assert rebalances(w) == [(LINEAR_UNITS, laid["workers"])] * 2
    assert placements(w) == [[pod["workers"] for pod in laid["layout"]]] * 2
    assert again.status["pending"]["rebalances"] == 2
    assert reasons(w) == [("Warning", "RebalanceReissued")]
    assert f"on {laid['workers']} workers: asked again (2 of 3)" in w.events.posted[0][2]
    assert "MultiLevel:" in message(again, "Progressing")
    done = run(w, multilevel, again.status, minutes=40 / 60)
    assert conditions(done)["Ready"] == ("True", "Applied")
    assert done.status["placement"]["layout"] == laid["layout"]
    assert len(rebalances(w)) == 2


def test_a_placement_nimbus_does_not_lay_out_is_waited_for_never_asked_again_nor_given_up() -> None:
    """Storm runs the executors on the placement's workers but its own layout (no Stormscale
    scheduler): not a lost rebalance. One request, however many passes; PlacementNotApplied with the
    plan kept pending, never RebalanceNotApplied."""
    w = world(system={"__acker": 1}, honours_placement=False)
    sam = placement_spec({"placement": "SAM", "slotsPerPod": 2})
    status = run(w, sam).status
    for seconds in range(20, 400, 20):
        outcome = run(w, sam, status, minutes=seconds / 60)
        status = outcome.status
    assert len(rebalances(w)) == 1
    assert status["pending"]["rebalances"] == 1
    assert conditions(outcome)["Degraded"] == ("True", "PlacementNotApplied")
    assert "RebalanceReissued" not in {reason for _, reason in reasons(w)}
