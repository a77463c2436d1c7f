"""Each resource's last in-process profile, kept between passes so that a spec change plans at once.

A profile is a few hundred milliseconds of Prometheus range queries over the metrics window. A pass
triggered by a spec change (a new budget, say) whose profiling inputs are unchanged plans on the
profile the last pass measured, when it is younger than the freshness bound
(``STORMSCALE_PROFILE_FRESHNESS_SECONDS``, by default the timer interval) and still describes what
runs. Passes that find the topology running its budget refresh it (the timer's every interval), so
the kept profile is at most one interval old. What it depends on:

* the resource (its uid: a resource deleted and created again under the same name starts afresh);
* the spec fields that shape profiling (:func:`profiling_inputs`: ``metrics``, ``workers``, ``nimbus``,
  ``topologyName`` and the spouts' demand sources);
* the executors Storm ran (as Nimbus reported them) when it was measured: Storm must run exactly
  those now.

Anything else invalidates it: a pass that applies, resumes or holds a rebalance forgets it (the
topology is about to change), as does a profiling failure, a Degraded pass or an unexpected error.
Memory is bounded: one entry per resource, dropped when the resource is deleted or unused for
:data:`IDLE_S`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from stormscale.operator.policy import Policy
from stormscale.operator.ports import MeasuredProfile

FRESHNESS_ENV = "STORMSCALE_PROFILE_FRESHNESS_SECONDS"
"""Seconds a kept profile may serve a spec pass (unset: the timer interval; 0: never kept)."""
IDLE_S = 6 * 3600.0
"""An entry unused for this long is dropped (its resource was deleted while the operator was away)."""


def profiling_inputs(policy: Policy) -> str:
    """A digest of the spec fields that shape a profile: where and how it is measured, and of what."""
    spec = policy.spec
    shaping = {
        "topology": spec.topology_name,
        "nimbus": spec.nimbus.model_dump(mode="json"),
        "metrics": spec.metrics.model_dump(mode="json"),
        "workers": spec.workers.model_dump(mode="json"),
        "demand": sorted((spout, source.describe()) for spout, source in spec.demand().items()),
    }
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    """A kept profile: what it depends on, when it was measured, and when it was last used."""

    inputs: str
    #: The executors Storm ran when it was measured, by component.
    running: Mapping[str, int]
    profile: MeasuredProfile
    measured_at: datetime
    used_at: datetime


def unusable(
    entry: Entry, inputs: str, running: Mapping[str, int], now: datetime, fresh_s: float
) -> str | None:
    """Why ``entry`` cannot serve a pass at ``now`` on ``inputs`` with ``running`` executors (None: it can).

    Usable ⇔ same inputs ∧ same running executors ∧ 0 ≤ now − measured_at ≤ fresh_s.
    """
    if entry.inputs != inputs:
        return "the spec's profiling inputs changed"
    if dict(entry.running) != dict(running):
        return "Storm runs other executors than when it was measured"
    age = (now - entry.measured_at).total_seconds()
    if age < 0 or age > fresh_s:
        return f"{age:.1f} s old, over the {fresh_s:g} s bound"
    return None


def recalled(entry: Entry, now: datetime) -> MeasuredProfile:
    """The kept profile as a pass at ``now`` sees it: its newest sample older by the time since, and
    the time it was measured (``status.lastPlan.profileMeasured`` says so)."""
    elapsed = max(0.0, (now - entry.measured_at).total_seconds())
    profile = entry.profile
    return dataclasses.replace(profile, age_s=profile.age_s + elapsed, measured_at=entry.measured_at)


class ProfileMemory:
    """The process's kept profiles, one per resource uid; safe across Kopf's threads."""

    def __init__(self, fresh_s: float, idle_s: float = IDLE_S) -> None:
        self.fresh_s = fresh_s
        self.idle_s = idle_s
        self._entries: dict[str, Entry] = {}
        self._guard = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def recall(
        self, uid: str, inputs: str, running: Mapping[str, int], now: datetime
    ) -> MeasuredProfile | None:
        """The kept profile of ``uid`` if it can serve a pass at ``now`` (else it is dropped)."""
        with self._guard:
            self._sweep(now)
            entry = self._entries.get(uid)
            if entry is None:
                return None
            if unusable(entry, inputs, running, now, self.fresh_s) is not None:
                del self._entries[uid]
                return None
            self._entries[uid] = dataclasses.replace(entry, used_at=now)
            return recalled(entry, now)

    def why_not(self, uid: str, inputs: str, running: Mapping[str, int], now: datetime) -> str | None:
        """Why ``uid``'s kept profile cannot serve a pass at ``now`` (None: it can); for logs and tests."""
        with self._guard:
            entry = self._entries.get(uid)
        if entry is None:
            return "none kept"
        return unusable(entry, inputs, running, now, self.fresh_s)

    def age(self, uid: str, now: datetime) -> float | None:
        """Seconds since ``uid``'s kept profile was measured (None: none is kept)."""
        with self._guard:
            entry = self._entries.get(uid)
        return None if entry is None else (now - entry.measured_at).total_seconds()

    def keep(
        self, uid: str, inputs: str, running: Mapping[str, int], profile: MeasuredProfile, now: datetime
    ) -> bool:
        """Keep ``profile``, measured at ``now`` while Storm ran ``running``, when keeping is on (else
        forget ``uid``'s). Whether it was kept."""
        with self._guard:
            self._sweep(now)
            if self.fresh_s <= 0:
                self._entries.pop(uid, None)
                return False
            self._entries[uid] = Entry(inputs, dict(running), profile, now, now)
            return True

    def forget(self, uid: str) -> None:
        with self._guard:
            self._entries.pop(uid, None)

    def _sweep(self, now: datetime) -> None:
        idle = [u for u, e in self._entries.items() if (now - e.used_at).total_seconds() > self.idle_s]
        for uid in idle:
            del self._entries[uid]


@dataclass(frozen=True)
class PassProfiles:
    """What one pass of one resource may do with the kept profiles (``ports.KeptProfiles``): a spec
    pass (``reuse``) may plan on the kept profile; every pass keeps what it measures and forgets on
    an invalidation; a pass that finds the topology running its budget refreshes a profile that is
    missing or older than half the bound (``refresh``)."""

    memory: ProfileMemory
    uid: str
    reuse: bool

    def recall(self, inputs: str, running: Mapping[str, int], now: datetime) -> MeasuredProfile | None:
        return self.memory.recall(self.uid, inputs, running, now) if self.reuse else None

    def keep(self, inputs: str, running: Mapping[str, int], profile: MeasuredProfile, now: datetime) -> None:
        self.memory.keep(self.uid, inputs, running, profile, now)

    def forget(self) -> None:
        self.memory.forget(self.uid)

    def stale(self, inputs: str, running: Mapping[str, int], now: datetime) -> bool:
        """Whether a pass at ``now`` should measure to keep a profile at hand: caching is on and the
        kept one is missing, unusable, or older than half the bound (so the next spec pass finds one)."""
        memory = self.memory
        if memory.fresh_s <= 0:
            return False
        if memory.why_not(self.uid, inputs, running, now) is not None:
            return True
        age = memory.age(self.uid, now)
        return age is None or age > memory.fresh_s / 2
