"""Auto mode survives a crash at any point of an apply: the intent save carries what a restarted
operator needs (baseline, Auto's stabilization state), so no unit is lost, added twice, or taken back
before the cooldown and the scale-in delay."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import kopf
import pytest

from stormscale.operator.handlers import reconcile_and_save
from stormscale.operator.policy import Policy
from stormscale.operator.reconcile import reconcile
from stormscale.operator.status import StormTopologyStatus
from stormscale.planner import Topology
from tests.harness.fakes.ports import FakeStatus, UnavailableError, World

from .test_reconcile import LINEAR, MANUAL_INTENT, RESOURCE, T0, policy, world


class Crash(BaseException):
    """The process dies here (not an error any port raises: nothing catches it)."""


#: Everything a restarted operator needs to finish the plan and keep Auto's timing.
INTENT = sorted([*MANUAL_INTENT, "autoscaler"])


def quiet() -> Topology:
    """The linear topology with its spout offering a tenth: no component congested at the baseline."""
    spout = [dataclasses.replace(c, output_per_unit=c.output_per_unit / 10) for c in LINEAR.components[:1]]
    return dataclasses.replace(LINEAR, components=(*spout, *LINEAR.components[1:]))


def auto() -> Policy:
    return policy(mode="Auto", budget=0, minUnits=0, maxUnits=5, cooldown="5m", scaleInDelay="15m")


def restart(w: World, p: Policy, minutes: float) -> dict[str, Any]:
    """A restarted operator: it knows only what the API server stores."""
    stored = StormTopologyStatus.from_json(w.status.stored)
    outcome = reconcile(RESOURCE, p, stored, w.ports, T0 + timedelta(minutes=minutes))
    w.status.save(RESOURCE.namespace, RESOURCE.name, outcome.status)
    return outcome.status.to_json()


@dataclass
class CrashingStatus(FakeStatus):
    """The API server's status store; the process dies on its ``crash_at``-th save (1-based)."""

    crash_at: int | None = None
    count: int = 0

    def save(self, namespace: str, name: str, status: StormTopologyStatus) -> None:
        self.count += 1
        if self.count == self.crash_at:
            raise Crash()
        super().save(namespace, name, status)


def crashing_world(where: str) -> tuple[World, CrashingStatus]:
    w = world()
    store = w.status = CrashingStatus(journal=w.journal)
    if where == "scale":  # after the intent, before the first write
        w.cluster.fail_scale = Crash()
    elif where == "rebalance":  # replicas set, executors not
        w.nimbus.fail_rebalance = Crash()
    elif where == "end-of-pass save":  # both written; the end-of-pass save never happens
        store.crash_at = 2
    return w, store


@pytest.mark.parametrize("where", ["scale", "rebalance", "end-of-pass save"])
def test_a_crash_after_the_intent_keeps_the_baseline_and_the_cooldown(where: str) -> None:
    w, store = crashing_world(where)
    with pytest.raises(Crash):
        reconcile_and_save(RESOURCE, auto(), StormTopologyStatus(), w.ports, T0)
    assert w.journal[0] == ("save", INTENT)
    w.cluster.fail_scale = w.nimbus.fail_rebalance = None
    store.crash_at = None
    status = restart(w, auto(), minutes=1)
    status = restart(w, auto(), minutes=2)
    assert status["units"] == {"1": 1, "2": 2, "3": 2, "4": 1}  # the plan of the first pass
    assert status["baseline"] == {"1": 1, "2": 1, "3": 1, "4": 1}  # not the scaled executors
    assert status["autoscaler"]["lastScaleTime"] == "2026-11-22T12:00:00Z"
    assert [j[1] for j in w.journal if j[0] == "rebalance"].count({"1": 1, "2": 2, "3": 2, "4": 1}) <= 2
    # The load falls: the topology needs no extra unit any more. Scale-in must wait 15 minutes.
    w.profiler.topology = quiet()
    for minute in range(3, 10):
        status = restart(w, auto(), minutes=minute)
        assert status["units"] == {"1": 1, "2": 2, "3": 2, "4": 1}, f"scaled in at minute {minute}"
    assert status["autoscaler"]["scaleInSince"] == "2026-11-22T12:03:00Z"
    status = restart(w, auto(), minutes=18)  # wanted for 15 minutes, cooled down: now it goes
    status = restart(w, auto(), minutes=19)
    assert status["units"] == {"1": 1, "2": 1, "3": 1, "4": 1}


def test_a_verification_whose_save_fails_announces_the_budget_once() -> None:
    """The pass that sees Storm run the plan posts ScalingApplied; if its status is not saved, the
    next pass verifies again: the event waits for the save, or it is posted twice."""
    w, store = crashing_world("none")
    reconcile_and_save(RESOURCE, auto(), StormTopologyStatus(), w.ports, T0)  # intent, replicas, rebalance
    store.fail = UnavailableError("apiserver: 503")
    stored = StormTopologyStatus.from_json(store.stored)
    with pytest.raises(kopf.TemporaryError):
        reconcile_and_save(RESOURCE, auto(), stored, w.ports, T0 + timedelta(minutes=1))
    assert [e[1] for e in w.events.posted] == []
    store.fail = None
    stored = StormTopologyStatus.from_json(store.stored)
    done = reconcile_and_save(RESOURCE, auto(), stored, w.ports, T0 + timedelta(minutes=2))
    assert done.status.applied_budget == 2
    assert [e[1] for e in w.events.posted] == ["ScalingApplied"]
