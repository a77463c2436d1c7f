"""Plans that learn: each bolt's capacity per unit as read while it was saturated, kept from earlier
steady windows and preferred to a partly idle reading. Pure.

A window reads a bolt's capacity per unit as its executed rate over its busy fraction (the pods'
CPU, or Storm's busy time). That is exact for a saturated bolt; for one with room it rests on the
assumption that a tuple costs the same CPU at any load, which the test bed contradicts both ways
(docs/evaluation.md, *What still errs*: partly idle bolts read 10–16 % fast on one bed state and 20–26 %
slow on another). The thesis of Puttaswamy profiles each component at its maximum processing rate in
one unit; Stormscale measures that rate where a running topology shows it, when a bolt saturates, and
keeps it:

* **Remembered.** Every trusted profile adds, per bolt it reads saturated (utilization
  ``u = executed / capacity(units) ≥`` :data:`SATURATED_UTILIZATION`), a
  :class:`~stormscale.operator.status.CapacityReading` (units, tasks, capacity per unit, ``u``) to
  ``status.capacityHistory``: one reading per (units, tasks), the newest replacing the older, at most
  :data:`READINGS_PER_COMPONENT` per bolt (the oldest go). Partly idle readings are not kept: no plan
  uses them, and a 500-bolt topology's status stays small (at most 2,000 readings, ~300 kB, written only
  when a bolt is saturated). A profile of another unit CPU (``status.unitCPU``) starts the history
  afresh: a unit's capacity is its CPU's; a component the topology no longer has loses its readings.
* **Used.** A bolt the window reads saturated is planned on that reading. A bolt the window reads with
  room, whose history holds saturated readings at its task count, is planned on the curve of those
  readings at its units ``n``: the reading at ``n``; between two unit counts ``a < n < b`` the linear
  interpolation ``c(n) = c(a) + (c(b) − c(a))·(n − a)/(b − a)``; outside them the nearest. It never goes
  below ``c·u``, the capacity per unit at which its units take what it executes now (they
  demonstrably do). ``status.capacityHistory.inUse`` names each bolt so planned and the reading it came from.

Where this differs from ContTune (VLDB 2023), whose per-operator history also spares
reconfigurations: ContTune averages every observation of an operator's processing ability (DS2's
useful-time rate) at each parallelism, fits a Gaussian process to them and picks the next parallelism
by a conservative Bayesian optimization with DS2 as the safe step; here only saturated readings count
as capacity (a partly idle reading is a lower bound on it), the newest at a unit count replaces the
older, the curve is piecewise linear over the unit counts seen, and the plan itself stays the
thesis's and Stela's over the whole topology, not a per-operator search.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence

from stormscale.operator.ports import MeasuredProfile
from stormscale.operator.status import CapacityHistory, CapacityReading
from stormscale.planner import Component, Topology

#: A bolt is read saturated when its busiest executor is at least this busy over the window.
SATURATED_UTILIZATION = 0.9
#: Readings kept per bolt (one per units and tasks): a topology's bolts rarely run more counts.
READINGS_PER_COMPONENT = 4


def readings(measured: MeasuredProfile, at: str) -> dict[str, CapacityReading]:
    """Each bolt's reading in ``measured`` (bolts without a capacity or an executed rate: none)::

    u = executed / capacity(units)       saturated ⇔ u ≥ SATURATED_UTILIZATION
    """
    found: dict[str, CapacityReading] = {}
    for c in measured.topology.components:
        confidence = measured.confidence.components.get(c.id)
        executed = confidence.executed_rate if confidence is not None else None
        if c.is_spout or c.units <= 0 or c.capacity_per_unit <= 0 or executed is None:
            continue
        utilization = executed / c.capacity(c.units)
        found[c.id] = CapacityReading(
            units=c.units,
            tasks=c.tasks,
            capacity_per_unit=round(c.capacity_per_unit, 4),
            utilization=round(utilization, 4),
            saturated=utilization >= SATURATED_UTILIZATION,
            at=at,
        )
    return found


def remember(
    history: CapacityHistory | None,
    found: Mapping[str, CapacityReading],
    unit_cpu: str | None,
    present: Collection[str],
) -> CapacityHistory:
    """``history`` with the saturated readings of ``found`` added (module docstring: one per units and
    tasks, newest last, at most :data:`READINGS_PER_COMPONENT`; a new unit CPU starts afresh); the
    readings of components no longer ``present`` in the topology go."""
    kept = {} if history is None or history.unit_cpu != unit_cpu else dict(history.components)
    kept = {component: r for component, r in kept.items() if component in present}
    for component, reading in found.items():
        if not reading.saturated:
            continue
        key = (reading.units, reading.tasks)
        others = [r for r in kept.get(component, []) if (r.units, r.tasks) != key]
        kept[component] = [*others, reading][-READINGS_PER_COMPONENT:]
    fresh = CapacityHistory(components=kept)  # inUse is the next plan's to say (:func:`learned`)
    fresh.unit_cpu = unit_cpu  # by name: the constructor takes the alias (unitCPU)
    return fresh


def curve(saturated: Sequence[CapacityReading], units: int) -> tuple[float, str]:
    """The capacity per unit the saturated readings give at ``units`` (module docstring), and where
    it came from. ``saturated`` is not empty."""
    by_units = {r.units: r for r in sorted(saturated, key=lambda r: r.at)}
    if units in by_units:
        r = by_units[units]
        return r.capacity_per_unit, f"saturated at {units} unit(s), {r.at}"
    below = [n for n in by_units if n < units]
    above = [n for n in by_units if n > units]
    if below and above:
        a, b = max(below), min(above)
        ca, cb = by_units[a].capacity_per_unit, by_units[b].capacity_per_unit
        value = ca + (cb - ca) * (units - a) / (b - a)
        return value, f"between saturated readings at {a} and {b} units"
    nearest = max(below) if below else min(above)
    r = by_units[nearest]
    return r.capacity_per_unit, f"saturated at {nearest} unit(s), {r.at}"


def learned(
    history: CapacityHistory | None, measured: MeasuredProfile
) -> tuple[MeasuredProfile, dict[str, str]]:
    """``measured`` with each bolt that has room planned on its saturated readings (module docstring),
    and, per bolt so planned, where its capacity came from."""
    if history is None or not history.components:
        return measured, {}
    now = readings(measured, at="")
    used: dict[str, str] = {}
    components: list[Component] = []
    for c in measured.topology.components:
        reading = now.get(c.id)
        saturated = [r for r in history.components.get(c.id, []) if r.saturated and r.tasks == c.tasks]
        if reading is None or reading.saturated or not saturated:
            components.append(c)
            continue
        value, source = curve(saturated, c.units)
        capacity = max(value, c.capacity_per_unit * reading.utilization)
        components.append(dataclasses.replace(c, capacity_per_unit=capacity))
        read = f"{c.capacity_per_unit:.4g} read at {reading.utilization:.0%} busy"
        used[c.id] = f"{capacity:.4g}/s per unit: {source} ({read})"
    if not used:
        return measured, used
    topology = Topology(measured.topology.name, tuple(components))
    return dataclasses.replace(measured, topology=topology), used
