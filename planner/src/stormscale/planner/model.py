"""The topology model: components, the DAG between them, and the indexes the planner needs.

A topology is immutable. Units (resource units per component) are kept apart from it as a
tuple indexed like ``Topology.components``, so that a plan is a cheap vector, not a new graph.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

Units = tuple[int, ...]


class Kind(StrEnum):
    """A component is a spout (a source) or a bolt (a processing step)."""

    SPOUT = "spout"
    BOLT = "bolt"


@dataclass(frozen=True, slots=True)
class Component:
    """One Storm component as the profile describes it.

    ``capacity_per_unit`` is meaningful for bolts, ``output_per_unit`` for spouts (the other is 0).
    ``max_units`` is ``None`` for unbounded. ``min_units`` is the floor for scale-in: a running
    component keeps one unit, and a spout whose profile gives no ``maxUnits`` is fixed.
    ``memory_per_unit`` is the memory one saturated unit holds, as a fraction of a slot's (0 when the
    profile does not say; a Stormscale extension of the format used by sizing and placement).
    ``tasks`` is Storm's task count, ``None`` when the profile does not say: it caps the units (one
    executor runs at least one task) and makes a bolt's capacity a step function (:meth:`capacity`).
    """

    id: str
    kind: Kind
    units: int
    capacity_per_unit: float = 0.0
    selectivity: float = 1.0
    output_per_unit: float = 0.0
    external_input: float = 0.0
    max_units: int | None = None
    children: tuple[tuple[str, float], ...] = ()
    min_units: int = 0
    memory_per_unit: float = 0.0
    tasks: int | None = None

    @property
    def is_spout(self) -> bool:
        return self.kind is Kind.SPOUT

    def capacity(self, units: int) -> float:
        """Tuples/s a bolt of ``units`` executors takes in before its busiest executor saturates.

        Without a task count the executors share the input evenly: ``P·u``. Storm gives ``u``
        executors contiguous runs of ``⌊T/u⌋`` or ``⌈T/u⌉`` of the ``T`` tasks, and a shuffle picks a
        *task*, so the busiest executor receives ``⌈T/u⌉/T`` of the input and saturates first::

            capacity(u) = P · T / ⌈T/u⌉      (P·u when u divides T; P·T once u ≥ T)

        Measured on the test bed (docs/planner.md, Model): 4 tasks on 3 executors ran at 2 units' pace.
        """
        if self.tasks is None or units <= 0:
            return units * self.capacity_per_unit
        busiest = -(-self.tasks // units)
        return self.capacity_per_unit * self.tasks / busiest

    def units_for(self, rate: float) -> int:
        """The fewest units whose :meth:`capacity` takes ``rate``; equality counts as enough
        despite float noise: ``capacity(u) ≥ rate − s`` with ``s = 10⁻⁹·max(P, rate)``.

        Without a task count that is ``⌈q − 10⁻⁹·max(1, q)⌉`` with ``q = rate/P``. With ``T`` tasks the
        busiest executor may hold at most ``M = ⌊P·T / (rate − s)⌋`` tasks, and ``⌈T/u⌉ ≤ M`` first holds
        at ``u = ⌈T/M⌉`` (constant time, whatever ``T``); past ``T`` (``M = 0``) it is ``⌈q⌉``, more
        units than the tasks allow, which the caller's bound refuses.
        """
        q = rate / self.capacity_per_unit
        linear = max(0, math.ceil(q - 1e-9 * max(1.0, q)))
        needed = rate - 1e-9 * max(self.capacity_per_unit, rate)
        if self.tasks is None or linear >= self.tasks or needed <= 0:
            return linear
        most = math.floor(self.capacity_per_unit * self.tasks / needed)
        return max(linear, -(-self.tasks // most))


_DIGITS = re.compile(r"(\d+)")


def natural_key(component_id: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ids as people do: ``"2" < "10"``, ``"a2" < "a10"``.

    The thesis breaks ties by "lowest id" on numeric ids; natural order keeps that meaning for
    Storm's textual component names too.

    Examples
    --------
    >>> sorted(["10", "9", "b", "a"], key=natural_key)
    ['9', '10', 'a', 'b']
    """
    parts = _DIGITS.split(component_id)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts if p != "")


@dataclass(frozen=True)
class Topology:
    """A validated DAG of components with precomputed indexes.

    Build it with :func:`stormscale.planner.profile.parse_profile`, which checks every rule of the
    profile format; the constructor trusts its input.
    """

    name: str
    components: tuple[Component, ...]
    index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    _subtrees: dict[int, tuple[int, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {c.id: i for i, c in enumerate(self.components)})
        object.__setattr__(self, "_subtrees", {})

    @cached_property
    def children(self) -> tuple[tuple[tuple[int, float], ...], ...]:
        """``children[i]`` = ((child index, fraction), ...) in profile order."""
        return tuple(tuple((self.index[cid], f) for cid, f in c.children) for c in self.components)

    @cached_property
    def parents(self) -> tuple[tuple[tuple[int, float], ...], ...]:
        """``parents[i]`` = ((parent index, fraction of the parent's output), ...)."""
        acc: list[list[tuple[int, float]]] = [[] for _ in self.components]
        for p, kids in enumerate(self.children):
            for c, f in kids:
                acc[c].append((p, f))
        return tuple(tuple(x) for x in acc)

    @cached_property
    def order(self) -> tuple[int, ...]:
        """A topological order (Kahn's algorithm, ties by position in the profile)."""
        indegree = [len(p) for p in self.parents]
        ready = [i for i, d in enumerate(indegree) if d == 0]  # ascending: already a heap
        out: list[int] = []
        while ready:
            v = heapq.heappop(ready)  # a heap, not a sort per pop: O(n log n) for 10^5 children
            out.append(v)
            for c, _ in self.children[v]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    heapq.heappush(ready, c)
        return tuple(out)

    @cached_property
    def spout_flags(self) -> tuple[bool, ...]:
        """``spout_flags[i]``: component i is a spout (a plain tuple for the hot loops)."""
        return tuple(c.is_spout for c in self.components)

    @cached_property
    def children_ids(self) -> tuple[tuple[int, ...], ...]:
        """``children_ids[i]``: child indexes of component i, without fractions."""
        return tuple(tuple(c for c, _ in kids) for kids in self.children)

    @cached_property
    def sinks(self) -> tuple[int, ...]:
        """Components without children; Θ is the sum of their outputs."""
        return tuple(i for i, kids in enumerate(self.children) if not kids)

    @cached_property
    def descendants(self) -> tuple[int, ...]:
        """``descendants[i]`` as a bitset (bit j set ⇔ j reachable from i, i excluded)."""
        reach = [0] * len(self.components)
        for v in reversed(self.order):
            bits = 0
            for c, _ in self.children[v]:
                bits |= (1 << c) | reach[c]
            reach[v] = bits
        return tuple(reach)

    @cached_property
    def rank(self) -> tuple[int, ...]:
        """``rank[i]``: position of component i in natural id order (the thesis's "lowest id")."""
        ranked = sorted(range(len(self.components)), key=lambda i: natural_key(self.components[i].id))
        out = [0] * len(ranked)
        for r, i in enumerate(ranked):
            out[i] = r
        return tuple(out)

    @property
    def units(self) -> Units:
        """The units each component holds now."""
        return tuple(c.units for c in self.components)

    @cached_property
    def max_units(self) -> tuple[float, ...]:
        """Effective upper bound per component (``inf`` for unbounded).

        Absent ``maxUnits`` in the profile was already resolved by the loader: bolts unbounded,
        spouts fixed at their current units. A task count caps it too (one task per executor at least).
        """
        return tuple(min(_bound(c.max_units), _bound(c.tasks)) for c in self.components)

    def removable(self, units: Units, i: int) -> int:
        """How many units component ``i`` may give up from ``units`` (scale-in)."""
        return max(0, units[i] - self.components[i].min_units)

    def headroom(self, units: Units, i: int) -> float:
        """How many more units component ``i`` may take on top of ``units``."""
        return self.max_units[i] - units[i]

    def is_descendant(self, v: int, of: int) -> bool:
        """True when ``v`` is reachable from ``of`` (and is not ``of`` itself)."""
        return bool(self.descendants[of] >> v & 1)

    def subtree(self, head: int) -> tuple[int, ...]:
        """``sub(head)`` = head and its descendants, in topological order (memoised per head)."""
        found = self._subtrees.get(head)
        if found is None:
            bits = self.descendants[head] | (1 << head)
            found = self._subtrees[head] = tuple(v for v in self.order if bits >> v & 1)
        return found

    def ids(self, indexes: Sequence[int]) -> list[str]:
        return [self.components[i].id for i in indexes]


def _bound(limit: int | None) -> float:
    return float("inf") if limit is None else float(limit)


def add_allocation(
    topology: Topology, units: Units, allocation: Mapping[str, int] | Mapping[int, int]
) -> Units:
    """Units after adding ``allocation``: ``n'_v = n_v + a_v`` (negative ``a_v`` removes).

    ``allocation`` is keyed by component id (a plan's allocation) or by index into
    ``topology.components`` (the allocators' working form); components it leaves out keep their units.
    """
    out = list(units)
    for key, extra in allocation.items():
        out[key if isinstance(key, int) else topology.index[key]] += extra
    return tuple(out)


def allocation_between(topology: Topology, before: Units, after: Units) -> dict[str, int]:
    """The allocation that turns ``before`` into ``after``, zero entries left out, in natural id order."""
    diff = {topology.components[i].id: a - b for i, (b, a) in enumerate(zip(before, after, strict=True))}
    return {k: v for k, v in sorted(diff.items(), key=lambda kv: natural_key(kv[0])) if v != 0}
