"""The data of ``stormscale graph``: a layered left-to-right layout of the topology, each bolt's
utilization under a flow model, and its bottlenecks.

The layout is a small layered (Sugiyama-style) drawing of our own, no Graphviz:

1. Layers by longest path from the sources: ``layer(v) = 0`` without parents, else
   ``1 + max_{p → v} layer(p)``.
2. An edge that spans several layers gets a bend in each layer it passes, so that every edge joins
   adjacent layers and is drawn around the boxes in between.
3. Within a layer, entries start in natural id order. Sweeps down, then up, sort each layer by the
   barycentre of its neighbours' positions in the layer above (below), ``b(v) = mean_{u ~ v} pos(u)``,
   ties keeping the current order; an entry without such neighbours keeps its own position as its key.
   The order with the fewest edge crossings seen is kept (the first order included).
4. Coordinates: ``x = layer`` and ``y = (k − 1)/2 − i`` for the ``i``-th of a layer's ``k`` entries.

Utilization of a bolt under a flow model::

    u_v = demand_v / capacity_v(n_v)
    demand_v = I_v   drop: what arrives, after the drops upstream
    demand_v = D_v   backpressure: what arrives with every source at its offered rate

A bottleneck is a bolt with ``u_v ≥ 1`` (saturated or congested); when there is none, the most
utilized bolt(s).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stormscale.planner.flow import FlowModel, backpressure_rates, drop_rates, evaluate
from stormscale.planner.model import Kind, Topology, Units, add_allocation
from stormscale.planner.plots.inputs import PlotInputError

#: The most components a graph draws: beyond, boxes and labels are too small to read.
MAX_GRAPH_COMPONENTS = 200
#: Sweeps of the barycentre ordering (each: down, then up).
SWEEPS = 4
#: ``u ≥ 1 − SATURATION_TOLERANCE`` counts as saturated (float noise of ``I = P``).
SATURATION_TOLERANCE = 1e-9

#: A layer's entry: a component's index, or a bend ``(source, target, layer)`` of a long edge.
Entry = int | tuple[int, int, int]
Point = tuple[float, float]


@dataclass(frozen=True)
class Layout:
    """Where components and edges go: ``x`` is the layer, ``y`` the place in it (top is largest).

    ``layers`` holds component ids per layer, top to bottom; ``routes`` every edge's points from the
    source's centre through its bends to the target's centre.
    """

    layers: tuple[tuple[str, ...], ...]
    positions: Mapping[str, Point]
    routes: Mapping[tuple[str, str], tuple[Point, ...]]
    crossings: int


def longest_path_layers(topology: Topology) -> tuple[int, ...]:
    """``layer[v] = 0`` for a component without parents, else ``1 + max_{p → v} layer[p]``."""
    layer = [0] * len(topology.components)
    for v in topology.order:
        for c, _ in topology.children[v]:
            layer[c] = max(layer[c], layer[v] + 1)
    return tuple(layer)


def _chains(topology: Topology, layer: Sequence[int]) -> dict[tuple[int, int], list[Entry]]:
    """Every edge ``u → c`` as the entries it passes: ``u``, its bends, ``c``."""
    chains: dict[tuple[int, int], list[Entry]] = {}
    for u in sorted(range(len(layer)), key=lambda i: topology.rank[i]):
        for c, _ in topology.children[u]:
            chains[(u, c)] = [u, *((u, c, k) for k in range(layer[u] + 1, layer[c])), c]
    return chains


def _rows(
    topology: Topology, layer: Sequence[int], chains: Mapping[tuple[int, int], list[Entry]]
) -> list[list[Entry]]:
    """The first order: components in natural id order, then the bends in their edges' order."""
    rows: list[list[Entry]] = [[] for _ in range(max(layer) + 1)]
    for v in sorted(range(len(layer)), key=lambda i: topology.rank[i]):
        rows[layer[v]].append(v)
    for chain in chains.values():
        for bend in chain[1:-1]:
            assert isinstance(bend, tuple)
            rows[bend[2]].append(bend)
    return rows


def _adjacency(
    chains: Mapping[tuple[int, int], list[Entry]],
) -> tuple[dict[Entry, list[Entry]], dict[Entry, list[Entry]]]:
    """Neighbours in the layer above (``up``) and below (``down``) of every entry."""
    up: dict[Entry, list[Entry]] = {}
    down: dict[Entry, list[Entry]] = {}
    for chain in chains.values():
        for a, b in itertools.pairwise(chain):
            down.setdefault(a, []).append(b)
            up.setdefault(b, []).append(a)
    return up, down


def _by_barycentre(
    row: list[Entry], neighbours: Mapping[Entry, list[Entry]], other: list[Entry]
) -> list[Entry]:
    """``row`` sorted by ``mean pos(u)`` over its neighbours ``u`` in ``other`` (own position if none)."""
    pos = {e: i for i, e in enumerate(other)}

    def key(item: tuple[int, Entry]) -> tuple[float, int]:
        i, entry = item
        found = neighbours.get(entry, [])
        return (sum(pos[u] for u in found) / len(found) if found else float(i), i)

    return [e for _, e in sorted(enumerate(row), key=key)]


def count_crossings(rows: Sequence[Sequence[Entry]], down: Mapping[Entry, list[Entry]]) -> int:
    """Pairs of edges between adjacent layers whose ends are in opposite orders (they cross)."""
    total = 0
    for upper, lower in itertools.pairwise(rows):
        pos = {e: i for i, e in enumerate(lower)}
        edges = [(i, pos[b]) for i, a in enumerate(upper) for b in down.get(a, [])]
        total += sum((a1 - a2) * (b1 - b2) < 0 for (a1, b1), (a2, b2) in itertools.combinations(edges, 2))
    return total


def layered_layout(topology: Topology) -> Layout:
    """Longest-path layers, bends on long edges, barycentre sweeps (module docstring)."""
    if len(topology.components) > MAX_GRAPH_COMPONENTS:
        raise PlotInputError(
            f"graph: at most {MAX_GRAPH_COMPONENTS} components can be drawn readably, "
            f"the profile has {len(topology.components):,}"
        )
    layer = longest_path_layers(topology)
    chains = _chains(topology, layer)
    up, down = _adjacency(chains)
    rows = _rows(topology, layer, chains)
    best, fewest = [list(r) for r in rows], count_crossings(rows, down)
    for _ in range(SWEEPS):
        for k in range(1, len(rows)):
            rows[k] = _by_barycentre(rows[k], up, rows[k - 1])
        for k in range(len(rows) - 2, -1, -1):
            rows[k] = _by_barycentre(rows[k], down, rows[k + 1])
        crossings = count_crossings(rows, down)
        if crossings < fewest:
            best, fewest = [list(r) for r in rows], crossings
    point = {e: (float(k), (len(row) - 1) / 2 - i) for k, row in enumerate(best) for i, e in enumerate(row)}
    ids = [c.id for c in topology.components]
    return Layout(
        layers=tuple(tuple(ids[e] for e in row if isinstance(e, int)) for row in best),
        positions={ids[v]: point[v] for v in range(len(ids))},
        routes={(ids[u], ids[c]): tuple(point[e] for e in chain) for (u, c), chain in chains.items()},
        crossings=fewest,
    )


def utilization(topology: Topology, units: Units, model: FlowModel) -> tuple[float | None, ...]:
    """``u_v = demand_v / capacity_v(n_v)`` per bolt (``None`` for spouts; ∞ for demand on no capacity)."""
    if model is FlowModel.DROP:
        demands = drop_rates(topology, units).inputs
    else:
        demands = backpressure_rates(topology, units).demands
    out: list[float | None] = []
    for v, c in enumerate(topology.components):
        if c.is_spout:
            out.append(None)
            continue
        capacity = c.capacity(units[v])
        out.append(demands[v] / capacity if capacity > 0 else (float("inf") if demands[v] > 0 else 0.0))
    return tuple(out)


def bottlenecks(utilizations: Sequence[float | None]) -> frozenset[int]:
    """Bolts with ``u ≥ 1``; when there is none, the most utilized bolt(s) (none if nothing flows)."""
    bolts = {v: u for v, u in enumerate(utilizations) if u is not None}
    saturated = frozenset(v for v, u in bolts.items() if u >= 1 - SATURATION_TOLERANCE)
    if saturated or not bolts:
        return saturated
    top = max(bolts.values())
    if top <= 0:
        return frozenset()
    return frozenset(v for v, u in bolts.items() if u >= top * (1 - SATURATION_TOLERANCE))


@dataclass(frozen=True)
class NodeView:
    """One box of the graph: before and after the plan (equal without one).

    ``utilization`` is ``None`` for spouts; ``emitted`` is what the component sends on (tuples/s) and
    ``offered`` what a spout would emit unthrottled.
    """

    id: str
    kind: Kind
    units_before: int
    units_after: int
    utilization_before: float | None
    utilization_after: float | None
    emitted: float
    offered: float
    bottleneck: bool
    position: Point


@dataclass(frozen=True)
class EdgeView:
    """One arrow: ``fraction`` of the source's output goes to the target, along ``route``."""

    source: str
    target: str
    fraction: float
    route: tuple[Point, ...]


@dataclass(frozen=True)
class GraphView:
    """Everything ``stormscale graph`` draws; bottlenecks and rates are after the plan, if any."""

    topology: str
    model: FlowModel
    nodes: tuple[NodeView, ...]
    edges: tuple[EdgeView, ...]
    layers: tuple[tuple[str, ...], ...]
    throughput_before: float
    throughput_after: float
    allocation: Mapping[str, int] | None


def graph_view(
    topology: Topology, model: FlowModel, allocation: Mapping[str, int] | None = None
) -> GraphView:
    """Layout, units, utilization and bottlenecks of ``topology`` under ``model``, after ``allocation``."""
    layout = layered_layout(topology)
    before_units = topology.units
    after_units = add_allocation(topology, before_units, allocation or {})
    before_u = utilization(topology, before_units, model)
    after_u = utilization(topology, after_units, model)
    marked = bottlenecks(after_u)
    before, after = evaluate(topology, before_units, model), evaluate(topology, after_units, model)
    nodes = tuple(
        NodeView(
            id=c.id,
            kind=c.kind,
            units_before=before_units[v],
            units_after=after_units[v],
            utilization_before=before_u[v],
            utilization_after=after_u[v],
            emitted=after.components[v].output,
            offered=after_units[v] * c.output_per_unit if c.is_spout else after.components[v].output,
            bottleneck=v in marked,
            position=layout.positions[c.id],
        )
        for v, c in enumerate(topology.components)
    )
    edges = tuple(
        EdgeView(c.id, child, f, layout.routes[(c.id, child)])
        for c in topology.components
        for child, f in c.children
    )
    return GraphView(
        topology=topology.name,
        model=model,
        nodes=nodes,
        edges=edges,
        layers=layout.layers,
        throughput_before=before.throughput,
        throughput_after=after.throughput,
        allocation=None if allocation is None else dict(allocation),
    )
