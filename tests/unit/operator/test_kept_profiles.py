"""The profile kept between passes: a spec change plans on it while it is fresh and still describes
what runs, and measures afresh after every invalidation."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from stormscale.operator import handlers
from stormscale.operator.handlers import profile_freshness, reconcile_and_save
from stormscale.operator.kept_profiles import (
    Entry,
    PassProfiles,
    ProfileMemory,
    profiling_inputs,
    unusable,
)
from stormscale.operator.policy import Policy, parse_spec
from stormscale.operator.ports import MeasuredProfile, UnavailableError
from stormscale.operator.status import StormTopologyStatus
from stormscale.planner import Topology
from tests.harness.fakes.ports import World

from .test_reconcile import LINEAR, RESOURCE, T0, policy, world

UID = "uid-1"
FRESH_S = 30.0
BASELINE = {"1": 1, "2": 1, "3": 1, "4": 1}  # what Storm runs and LINEAR was measured with


def with_units(topology: Topology, units: tuple[int, ...]) -> Topology:
    """``topology`` measured while its components ran ``units`` executors."""
    return Topology(
        topology.name,
        tuple(dataclasses.replace(c, units=u) for c, u in zip(topology.components, units, strict=True)),
    )


def windowed(budget: int, window: str) -> Policy:
    """:func:`policy` with ``metrics.window`` set: a spec change that shapes the profile."""
    spec = policy(budget=budget).spec.model_dump(by_alias=True, exclude_none=True)
    return parse_spec({**spec, "metrics": {**spec["metrics"], "window": window}})


class Operator:
    """The passes of one resource through ``reconcile_and_save``, as the handlers run them: the spec
    handler's may plan on the kept profile, the timer's never."""

    def __init__(self, w: World, memory: ProfileMemory) -> None:
        self.w, self.memory = w, memory
        self.status: dict[str, Any] = {}

    def run(self, p: Policy, seconds: float, *, cause: str = "spec", uid: str = UID) -> dict[str, Any]:
        kept = PassProfiles(self.memory, uid, reuse=cause == "spec")
        ports = dataclasses.replace(self.w.ports, kept=kept)
        stored = StormTopologyStatus.from_json(self.status)
        outcome = reconcile_and_save(RESOURCE, p, stored, ports, T0 + timedelta(seconds=seconds))
        self.status = outcome.status.to_json()
        return self.status


def settled(memory: ProfileMemory | None = None) -> Operator:
    """Budget 0 applied (Storm runs the baseline), then a timer pass 20 s later: it keeps a profile."""
    op = Operator(world(), ProfileMemory(FRESH_S) if memory is None else memory)
    op.run(policy(budget=0), 0)
    op.run(policy(budget=0), 20, cause="timer")
    return op


def test_a_budget_change_plans_at_once_on_the_profile_the_timer_pass_kept() -> None:
    op = settled()
    measured = op.w.profiler.calls
    assert len(op.memory) == 1
    status = op.run(policy(budget=2), 25)
    assert op.w.profiler.calls == measured  # no query: planned on the kept profile
    assert ("rebalance", {"1": 1, "2": 2, "3": 2, "4": 1}) in op.w.journal
    said = status["lastPlan"]["profileMeasured"]
    assert said == "profile of 2026-11-22T12:00:20Z, 5.0 s old, kept from an earlier pass"
    assert status["observed"]["at"] == "2026-11-22T12:00:20Z"  # when the throughput was measured


def test_a_profile_measured_in_the_pass_says_so() -> None:
    op = Operator(world(), ProfileMemory(FRESH_S))
    status = op.run(policy(budget=2), 0)
    assert op.w.profiler.calls == 1
    assert status["lastPlan"]["profileMeasured"] == "profile of 2026-11-22T12:00:00Z, measured in this pass"


def test_a_timer_pass_that_finds_the_budget_applied_refreshes_the_ageing_profile() -> None:
    op = settled()
    calls = op.w.profiler.calls
    op.run(policy(budget=0), 30, cause="timer")  # kept at 20 s: 10 s old, under half the bound
    assert op.w.profiler.calls == calls
    op.run(policy(budget=0), 50, cause="timer")  # 30 s old: measured again
    assert op.w.profiler.calls == calls + 1
    assert op.memory.age(UID, T0 + timedelta(seconds=50)) == 0.0


def test_the_pass_that_verifies_a_rebalance_keeps_a_profile_for_the_next_budget() -> None:
    op = settled()
    op.run(policy(budget=2), 25)  # rebalance requested: forgotten
    calls = op.w.profiler.calls
    verified = op.run(policy(budget=2), 45)  # the handler's retry: Storm runs the new executors
    assert verified["appliedBudget"] == 2
    assert op.w.profiler.calls == calls + 1  # measured after the status was saved
    at = T0 + timedelta(seconds=46)
    assert op.memory.why_not(UID, profiling_inputs(policy(budget=1)), op.w.nimbus.executors, at) is None
    op.run(policy(budget=1), 47)
    assert op.w.profiler.calls == calls + 1
    assert "2.0 s old" in op.status["lastPlan"]["profileMeasured"]


def test_a_timer_pass_never_plans_on_the_kept_profile() -> None:
    op = settled()
    calls = op.w.profiler.calls
    op.run(policy(budget=2), 25, cause="timer")
    assert op.w.profiler.calls == calls + 1
    assert "measured in this pass" in op.status["lastPlan"]["profileMeasured"]


def test_an_applied_rebalance_forgets_the_profile() -> None:
    op = settled()
    op.run(policy(budget=2), 25)  # planned on the kept profile, rebalance requested
    assert len(op.memory) == 0
    calls = op.w.profiler.calls
    op.run(policy(budget=1), 26)
    assert op.w.profiler.calls == calls + 1


def _rebalanced_elsewhere(op: Operator) -> dict[str, Any]:
    """Someone rebalanced the topology since: Storm runs 2 executors of component 4."""
    op.w.nimbus.executors = {**BASELINE, "4": 2}
    op.w.profiler.topology = with_units(LINEAR, (1, 1, 1, 2))
    return op.run(policy(budget=2), 25)


@pytest.mark.parametrize(
    ("change", "then"),
    [
        ("older than the bound", lambda op: op.run(policy(budget=2), 20 + FRESH_S + 1)),
        ("another resource of the same name", lambda op: op.run(policy(budget=2), 25, uid="uid-2")),
        ("the metrics window changed", lambda op: op.run(windowed(2, "10m"), 25)),
        ("Storm runs other executors", _rebalanced_elsewhere),
    ],
    ids=["older-than-the-bound", "another-uid", "metrics-window-changed", "other-executors"],
)
def test_each_invalidation_measures_afresh(change: str, then: Any) -> None:
    op = settled()
    calls = op.w.profiler.calls
    status = then(op)
    assert op.w.profiler.calls == calls + 1, change
    assert "measured in this pass" in status["lastPlan"]["profileMeasured"]


def test_a_failed_refresh_forgets_the_profile_and_the_spec_pass_measures() -> None:
    op = settled()
    op.w.profiler.fail = UnavailableError("prometheus: connection refused")
    op.run(policy(budget=0), 50, cause="timer")
    assert len(op.memory) == 0
    op.w.profiler.fail = None
    calls = op.w.profiler.calls
    op.run(policy(budget=2), 55)
    assert op.w.profiler.calls == calls + 1


def test_a_degraded_pass_forgets_the_profile() -> None:
    op = settled()
    op.w.nimbus.status = "INACTIVE"
    op.run(policy(budget=2), 25)
    assert op.status["conditions"][0]["reason"] == "TopologyNotActive"
    assert len(op.memory) == 0


def test_a_published_profile_spec_is_never_refreshed_in_process() -> None:
    op = Operator(world(), ProfileMemory(FRESH_S))
    published = parse_spec(
        {**policy(budget=0).spec.model_dump(by_alias=True, exclude_none=True)}
        | {"metrics": {"prometheus": "http://prometheus:9090", "profile": "Published"}}
    )
    op.run(published, 0)
    calls = op.w.profiler.calls
    op.run(published, 40, cause="timer")
    assert op.w.profiler.calls == calls
    assert len(op.memory) == 0


def test_freshness_zero_keeps_nothing() -> None:
    op = settled(ProfileMemory(0.0))
    assert len(op.memory) == 0
    calls = op.w.profiler.calls
    op.run(policy(budget=2), 21)
    assert op.w.profiler.calls == calls + 1


def test_a_spec_change_that_shapes_no_profile_keeps_the_inputs() -> None:
    assert profiling_inputs(policy(budget=1)) == profiling_inputs(policy(budget=2, strategy="Stela"))
    assert profiling_inputs(policy(budget=1)) != profiling_inputs(windowed(1, "10m"))


def _profile(units: tuple[int, ...] = (1, 1, 1, 1)) -> MeasuredProfile:
    return MeasuredProfile(with_units(LINEAR, units), 250.0, 5.0)


def test_a_kept_profile_is_usable_only_while_everything_it_depends_on_holds() -> None:
    entry = Entry("inputs", BASELINE, _profile(), T0, T0)
    later = T0 + timedelta(seconds=10)
    assert unusable(entry, "inputs", BASELINE, later, FRESH_S) is None
    assert unusable(entry, "other", BASELINE, later, FRESH_S) == "the spec's profiling inputs changed"
    assert "other executors" in str(unusable(entry, "inputs", {**BASELINE, "2": 2}, later, FRESH_S))
    assert "over the 30 s bound" in str(
        unusable(entry, "inputs", BASELINE, T0 + timedelta(seconds=31), FRESH_S)
    )
    assert "over" in str(unusable(entry, "inputs", BASELINE, T0 - timedelta(seconds=1), FRESH_S))


def test_a_recalled_profile_is_as_old_as_its_newest_sample_is_now() -> None:
    memory = ProfileMemory(FRESH_S)
    memory.keep(UID, "inputs", BASELINE, _profile(), T0)
    recalled = memory.recall(UID, "inputs", BASELINE, T0 + timedelta(seconds=12))
    assert recalled is not None
    assert (recalled.age_s, recalled.measured_at) == (5.0 + 12.0, T0)


def test_a_profile_is_kept_with_what_storm_ran_and_only_while_keeping_is_on() -> None:
    memory = ProfileMemory(FRESH_S)
    assert memory.keep(UID, "inputs", {**BASELINE, "3": 2}, _profile(), T0)
    assert memory.recall(UID, "inputs", BASELINE, T0) is None  # Storm runs other executors now
    assert len(memory) == 0  # and the unusable entry is gone
    off = ProfileMemory(0.0)
    assert not off.keep(UID, "inputs", BASELINE, _profile(), T0)
    assert len(off) == 0


def test_memory_is_one_entry_per_resource_and_drops_the_idle() -> None:
    memory = ProfileMemory(FRESH_S, idle_s=3600.0)
    for i in range(3):
        memory.keep(UID, "inputs", BASELINE, _profile(), T0 + timedelta(seconds=i))
    memory.keep("uid-2", "inputs", BASELINE, _profile(), T0)
    assert len(memory) == 2
    memory.keep("uid-3", "inputs", BASELINE, _profile(), T0 + timedelta(hours=2))
    assert len(memory) == 1  # the two unused for over an hour are gone
    memory.forget("uid-3")
    assert len(memory) == 0


def test_the_freshness_bound_defaults_to_the_timer_interval_and_parses_strictly() -> None:
    assert handlers.PROFILES.fresh_s == handlers.INTERVAL_S
    assert profile_freshness("12.5") == 12.5
    assert profile_freshness("0") == 0.0
    for bad in ("soon", "-1", "7200"):
        with pytest.raises(ValueError, match="STORMSCALE_PROFILE_FRESHNESS_SECONDS"):
            profile_freshness(bad)
