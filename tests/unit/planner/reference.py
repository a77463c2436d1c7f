"""Independent re-implementations used as oracles by the planner tests.

They are written differently from the planner on purpose (recursion over parents, per-source
superposition, brute-force enumeration) so that a shared mistake is unlikely.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from functools import cache
from typing import Any

from hypothesis import strategies as st

from stormscale.planner import FlowModel, Topology
from stormscale.planner.model import Component
from tests.synthetic.profiles import random_profile


def reference_throughput(topology: Topology, units: tuple[int, ...], model: FlowModel) -> float:
    """Θ by recursion over parents (drop) or by superposing each source alone (backpressure)."""
    if model is FlowModel.DROP:
        return _drop(topology, units)
    return _backpressure(topology, units)


def _drop(topology: Topology, units: tuple[int, ...]) -> float:
    comps = topology.components
    parents: dict[str, list[tuple[str, float]]] = {c.id: [] for c in comps}
    for c in comps:
        for child, f in c.children:
            parents[child].append((c.id, f))
    by_id = {c.id: (i, c) for i, c in enumerate(comps)}

    @cache
    def out(cid: str) -> float:
        i, c = by_id[cid]
        if c.is_spout:
            return units[i] * c.output_per_unit
        arriving = c.external_input + sum(out(p) * f for p, f in parents[cid])
        return min(arriving, _capacity(c, units[i])) * c.selectivity

    return sum(out(c.id) for c in comps if not c.children)


def _backpressure(topology: Topology, units: tuple[int, ...]) -> float:
    comps = topology.components
    by_id = {c.id: (i, c) for i, c in enumerate(comps)}

    def spread(source: str, rate: float) -> dict[str, float]:
        """Input each component receives from one source emitting ``rate`` (nothing throttled)."""
        arrivals: dict[str, float] = {}
        stack = [(source, rate, True)]
        while stack:  # path enumeration: fine for the small DAGs of the tests
            cid, r, is_source = stack.pop()
            _, c = by_id[cid]
            if not is_source or not c.is_spout:
                arrivals[cid] = arrivals.get(cid, 0.0) + r
            emitted = r if (is_source and c.is_spout) else r * c.selectivity
            stack.extend((child, emitted * f, False) for child, f in c.children)
        return arrivals

    sources = {}
    for i, c in enumerate(comps):
        if c.is_spout:
            sources[c.id] = spread(c.id, units[i] * c.output_per_unit)
        elif c.external_input > 0:
            sources[c.id] = spread(c.id, c.external_input)
    demand: dict[str, float] = {}
    for arrivals in sources.values():
        for cid, r in arrivals.items():
            demand[cid] = demand.get(cid, 0.0) + r
    throttle = {}
    for src in sources:
        ratios = [
            _capacity(by_id[cid][1], units[by_id[cid][0]]) / demand[cid]
            for cid in _reachable(topology, src)
            if demand.get(cid, 0.0) > 0
        ]
        throttle[src] = min([1.0, *ratios])
    total = 0.0
    for src, arrivals in sources.items():
        for cid, r in arrivals.items():
            c = by_id[cid][1]
            if not c.children:
                total += throttle[src] * r * c.selectivity
        if by_id[src][1].is_spout and not by_id[src][1].children:
            total += throttle[src] * units[by_id[src][0]] * by_id[src][1].output_per_unit
    return total


def _capacity(c: Component, units: int) -> float:
    """What a bolt takes in: its tasks dealt round robin to its executors, the input split by task, so
    the executor dealt the most tasks saturates first (all of them alike without a task count)."""
    if c.tasks is None or units == 0:
        return units * c.capacity_per_unit
    dealt = [0] * units
    for task in range(c.tasks):
        dealt[task % units] += 1
    return c.capacity_per_unit * c.tasks / max(dealt)


def _reachable(topology: Topology, source: str) -> set[str]:
    by_id = {c.id: c for c in topology.components}
    seen: set[str] = set()
    stack = [source] if not by_id[source].is_spout else [c for c, _ in by_id[source].children]
    while stack:
        cid = stack.pop()
        if cid not in seen:
            seen.add(cid)
            stack.extend(c for c, _ in by_id[cid].children)
    return seen


def allocations(topology: Topology, budget: int) -> Iterator[tuple[int, ...]]:
    """Every vector of extra units (≥ 0, within maxUnits) that spends at most ``budget``."""
    units = topology.units
    ranges = [range(int(min(topology.headroom(units, v), budget)) + 1) for v in range(len(units))]
    for extra in itertools.product(*ranges):
        if sum(extra) <= budget:
            yield extra


def removals(topology: Topology, remove: int) -> Iterator[tuple[int, ...]]:
    """Every vector of removed units (≤ 0, above each floor) that removes exactly ``remove``."""
    units = topology.units
    ranges = [range(-min(topology.removable(units, v), remove), 1) for v in range(len(units))]
    for extra in itertools.product(*ranges):
        if -sum(extra) == remove:
            yield extra


@st.composite
def profiles(draw: st.DrawFn, max_size: int = 12, spouts: int = 1, tasks: bool = False) -> dict[str, Any]:
    """Hypothesis strategy: a random profile of 2..max_size components (shrinks by seed and size);
    with ``tasks``, some bolts get a task count of ``units`` to ``units + 5`` (capacity a step function)."""
    size = draw(st.integers(min_value=spouts + 1, max_value=max_size))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    scalable = draw(st.booleans())
    document = random_profile(random.Random(seed), size, spouts=spouts, scalable_spout=scalable)
    if tasks:
        for component in document["components"]:
            if component["kind"] == "bolt" and draw(st.booleans()):
                component["tasks"] = max(1, component["units"]) + draw(st.integers(min_value=0, max_value=5))
    return document
