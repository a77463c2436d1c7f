"""Rules a mutant once broke without a failing test: the spec's capacity override, the ScalingLimited
condition, and the per-resource lock that keeps Kopf's timer and spec handlers from running one
resource's passes at once."""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from typing import Any

import kopf
import pytest

from stormscale.operator import handlers
from stormscale.operator.policy import Policy, parse_spec
from stormscale.operator.ports import Workers
from tests.harness.fakes.ports import FakeCluster, FakeEvents, FakeStatus

from .test_crash_resume import quiet
from .test_reconcile import policy, run, world


def with_components(*components: dict[str, Any], **scaling: Any) -> Policy:
    spec = policy(**scaling).spec.model_dump(by_alias=True)
    return parse_spec({**spec, "components": list(components)})


def test_a_capacity_override_replaces_the_measured_capacity() -> None:
    """Linear at one unit each: 3 (250/s) is the bottleneck. Declared at 1000/s, 2 (400/s) is."""
    measured = run(world(), policy()).status["lastPlan"]
    assert measured["predicted"]["before"] == 250.0
    declared = run(world(), with_components({"name": "3", "capacityPerUnit": 1000})).status["lastPlan"]
    assert declared["predicted"]["before"] == 400.0
    assert declared["allocation"].get("3", 0) == 0  # 3 needs no unit any more
    assert declared["allocation"]["2"] == 1


def test_a_max_units_override_bounds_the_component() -> None:
    status = run(world(), with_components({"name": "3", "maxUnits": 1})).status
    assert status["lastPlan"]["allocation"].get("3", 0) == 0


def limited(status: dict[str, Any]) -> tuple[str, str, str]:
    found = next(c for c in status["conditions"] if c["type"] == "ScalingLimited")
    return found["status"], found["reason"], found["message"]


def test_every_unit_used_is_within_limits() -> None:
    assert limited(run(world(), policy()).status)[:2] == ("False", "WithinLimits")


def test_units_the_plan_cannot_use_are_scaling_limited() -> None:
    w = world(tasks={"1": 1, "2": 1, "3": 1, "4": 8})  # 2 and 3 cannot take a second executor
    assert limited(run(w, policy(budget=2)).status) == (
        "True",
        "UnitsUnallocated",
        "2 of 2 units could not be used (maxUnits or no gain)",
    )


def test_auto_mode_at_max_units_still_congested_is_scaling_limited() -> None:
    """Linear needs 2 units; Auto may use 1. The plan uses that unit, so the pass's later 'every unit
    is used' must not hide that the range is too small."""
    status = run(world(), policy(mode="Auto", budget=0, minUnits=0, maxUnits=1)).status
    assert status["pending"]["budget"] == 1
    assert limited(status)[:2] == ("True", "MaxUnitsReached")


def test_auto_mode_within_its_range_is_not_scaling_limited() -> None:
    w = world()
    status = run(w, policy(mode="Auto", budget=0, minUnits=0, maxUnits=1)).status
    assert limited(status)[:2] == ("True", "MaxUnitsReached")
    applied = run(w, policy(mode="Auto", budget=0, minUnits=0, maxUnits=1), status, minutes=1).status
    assert applied["appliedBudget"] == 1
    w.profiler.topology = quiet()  # the load falls: 1 unit is more than enough (scale-in waits)
    calm = run(w, policy(mode="Auto", budget=0, minUnits=0, maxUnits=1), applied, minutes=2)
    assert calm.status["appliedBudget"] == 1
    assert limited(calm.status)[:2] == ("False", "WithinLimits")  # not left behind once the range suffices


class SlowCluster(FakeCluster):
    """A Deployment read that takes a while and counts the passes inside it at once."""

    inside: int = 0
    most: int = 0
    guard = threading.Lock()

    def read(self, namespace: str, name: str) -> Workers:
        with self.guard:
            self.inside += 1
            self.most = max(self.most, self.inside)
        time.sleep(0.2)
        with self.guard:
            self.inside -= 1
        return super().read(namespace, name)


def passes_at_once(monkeypatch: pytest.MonkeyPatch, uids: list[str], causes: list[str] | None = None) -> int:
    """Run one pass per uid (each with its cause, ``spec`` by default), all at once (as Kopf's timer
    and spec handlers may); the most that were inside a pass together."""
    w = world()
    w.cluster = cluster = SlowCluster(replicas=4)
    stores: dict[str, Any] = {}

    class Store(FakeStatus):
        def load(self, namespace: str, name: str) -> dict[str, Any]:
            return {"metadata": {"generation": 1}, "spec": policy().spec.model_dump(by_alias=True)}

    monkeypatch.setattr(handlers, "status_store", lambda: stores.setdefault("s", Store()))
    monkeypatch.setattr(handlers, "PORTS_FACTORY", lambda *_: w.ports)
    monkeypatch.setattr(handlers, "KopfEvents", lambda _: FakeEvents())

    def one(uid: str, cause: str) -> None:
        body = kopf.Body({"metadata": {"name": "linear", "namespace": "streaming", "uid": uid}})
        with contextlib.suppress(kopf.TemporaryError):
            handlers.run_pass(body, cause)

    threads = [
        threading.Thread(target=one, args=(uid, cause))
        for uid, cause in zip(uids, causes or ["spec"] * len(uids), strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    return cluster.most


def test_one_resource_s_passes_never_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    assert passes_at_once(monkeypatch, ["u-1", "u-1", "u-1"]) == 1


def test_different_resources_are_not_serialized(monkeypatch: pytest.MonkeyPatch) -> None:
    assert passes_at_once(monkeypatch, ["u-1", "u-2"]) == 2


def test_each_pass_logs_its_duration_and_how_it_ended(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """One line per pass, in the form bench/fleet.py reads (the Deployment read alone takes 0.2 s)."""
    caplog.set_level(logging.INFO, logger="stormscale.operator")
    passes_at_once(monkeypatch, ["u-1", "u-1"])
    lines = [r.getMessage() for r in caplog.records if "pass took" in r.getMessage()]
    assert len(lines) == 2
    for line in lines:
        match = re.fullmatch(
            r"\[streaming/linear\] spec pass took (\d+\.\d{3}) s: Ready (True|False) \w+", line
        )
        assert match is not None, line
        assert float(match.group(1)) >= 0.2
    took = sorted(float(re.findall(r"took (\S+) s", line)[0]) for line in lines)
    assert took[1] >= 0.4  # the second waited for the first's lock: its line counts the wait


def test_a_timer_pass_skips_a_resource_whose_pass_runs_and_a_spec_pass_waits(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A timer pass does not hold one of Kopf's threads waiting for a slow pass of its resource
    (bench/fleet.py); a spec pass must see the new spec, so it waits."""
    caplog.set_level(logging.INFO, logger="stormscale.operator")
    lock = handlers._lock_for("u-busy")
    body = kopf.Body({"metadata": {"name": "linear", "namespace": "streaming", "uid": "u-busy"}})
    ran: list[str] = []
    monkeypatch.setattr(handlers, "_run_pass", lambda *_: ran.append("pass"))
    with lock:  # a pass of the resource runs
        started = time.monotonic()
        handlers.run_pass(body, "timer")
        assert time.monotonic() - started < 0.1
        spec = threading.Thread(target=handlers.run_pass, args=(body, "spec"))
        spec.start()
        spec.join(timeout=0.3)
        assert spec.is_alive()  # waiting for the lock
    spec.join(timeout=5)
    assert ran == ["pass"]  # the spec pass, once the lock was free; never the timer's
    messages = [r.getMessage() for r in caplog.records]
    assert "[streaming/linear] timer pass skipped: a pass of this resource is running" in messages


def test_kopf_runs_passes_on_the_configured_threads() -> None:
    settings = kopf.OperatorSettings()
    handlers.configure(settings=settings)  # type: ignore[call-arg]  # kopf types it as its callback protocol
    assert settings.execution.max_workers == handlers.WORKER_THREADS == 16
