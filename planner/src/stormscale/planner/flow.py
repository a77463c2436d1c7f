"""The two flow models of the profile format: what a topology does with a given number of units.

Throughput Θ is the sum of the sinks' outputs.

``drop`` (the thesis's assumption: backpressure off, a congested component drops)::

    spout:  O_s = n_s · s_s
    bolt:   I_v = ext_v + Σ_p O_p · f_{p→v};   P_v = n_v · c_v;   p_v = min(I_v, P_v);   O_v = p_v · ρ_v

``backpressure`` (Storm 2.x: nothing is dropped, a bottleneck throttles the sources upstream of it).
Sources are the spouts and the external inputs of bolts. With every source at its offered rate, the
demand is ``D_v = ext_v + Σ_p D_p · ρ_p · f_{p→v}`` (no caps). Each source i is throttled by the
tightest bottleneck it reaches::

    α_i = min(1, min_{v reachable from i} P_v / D_v)

and flows are the offered rates times α propagated without caps. Every component then receives at
most its capacity (Σ_i α_i D_{i,v} ≤ Σ_i (P_v/D_v) D_{i,v} = P_v). With one spout this is exactly the
format's ``λ = min(offered, min_v P_v / d_v)``. With several sources it is our rule (the format asks the
planner to state one): it slows each source by the bottleneck it feeds, as Storm's backpressure does,
rather than by a global optimum that Storm does not compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from stormscale.planner.model import Topology, Units

INF = float("inf")


class FlowModel(StrEnum):
    """How a congested component behaves: drops tuples, or throttles its sources."""

    DROP = "drop"
    BACKPRESSURE = "backpressure"


def congestion_tolerance(input_rate: float) -> float:
    """ε of the strict congestion test ``I > P + ε``: ``1e-9 · max(I, 1)``."""
    return 1e-9 * max(input_rate, 1.0)


@dataclass(frozen=True, slots=True)
class DropRates:
    """Per-component rates under the drop model, indexed like ``Topology.components``.

    ``inputs`` are the arrivals ``I_v`` (0 for spouts); ``capacities`` are ``P_v`` (``inf`` for spouts).
    The papers' heuristics detect congestion on these rates in both flow models.
    """

    inputs: tuple[float, ...]
    capacities: tuple[float, ...]
    outputs: tuple[float, ...]

    def congested(self, v: int) -> bool:
        """Strictly congested: ``I_v > P_v + ε``."""
        return self.inputs[v] > self.capacities[v] + congestion_tolerance(self.inputs[v])

    def saturated(self, v: int) -> bool:
        """At or above capacity: ``I_v ≥ P_v − ε`` (the congestion fallback)."""
        return self.inputs[v] >= self.capacities[v] - congestion_tolerance(self.inputs[v])


def drop_rates(topology: Topology, units: Units) -> DropRates:
    """Forward evaluation of the drop model in topological order (the thesis's rate propagation)."""
    return DropRates(*_forward(topology, units, capped=True))


def _forward(
    topology: Topology, units: Units, *, capped: bool
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """(I, P, O) of one forward pass in topological order (spouts: I = 0, P = ∞, O_s = n_s·s_s)::

        I_v = ext_v + Σ_p O_p · f_{p→v};   P_v = n_v · c_v if capped else ∞;   O_v = min(I_v, P_v) · ρ_v

    Capped, it is the drop model; uncapped, its inputs are the backpressure model's demands ``D_v``.
    """
    n = len(topology.components)
    inputs = [0.0] * n
    capacities = [INF] * n
    outputs = [0.0] * n
    comps = topology.components
    parents = topology.parents
    spout = topology.spout_flags
    for v in topology.order:
        c = comps[v]
        if spout[v]:
            outputs[v] = units[v] * c.output_per_unit
            continue
        arriving = c.external_input
        for p, f in parents[v]:
            arriving += outputs[p] * f
        capacity = (
            (units[v] * c.capacity_per_unit if c.tasks is None else c.capacity(units[v])) if capped else INF
        )
        inputs[v] = arriving
        capacities[v] = capacity
        outputs[v] = (arriving if arriving < capacity else capacity) * c.selectivity
    return tuple(inputs), tuple(capacities), tuple(outputs)


@dataclass(frozen=True, slots=True)
class BackpressureRates:
    """Per-component rates under the backpressure model.

    ``demands`` are the arrivals at every source's offered rate; ``throttles`` are α per component:
    for a spout its own, for a bolt the α of its external input (1 where it has none).
    """

    demands: tuple[float, ...]
    throttles: tuple[float, ...]
    inputs: tuple[float, ...]
    outputs: tuple[float, ...]


def backpressure_rates(topology: Topology, units: Units) -> BackpressureRates:
    """Evaluate the backpressure model: demand pass, bottleneck pass (reverse), flow pass."""
    n = len(topology.components)
    comps = topology.components
    spout = topology.spout_flags
    parents = topology.parents
    demands, _, _ = _forward(topology, units, capped=False)
    # tightest[v] = min over v and everything below it of P/D (how far a source feeding v must slow)
    tightest = [INF] * n
    below = [INF] * n  # the same, over v's descendants only
    for v in reversed(topology.order):
        low = INF
        for k in topology.children_ids[v]:
            low = min(low, tightest[k])
        below[v] = low
        if not spout[v] and demands[v] > 0:
            c = comps[v]
            own = (units[v] * c.capacity_per_unit if c.tasks is None else c.capacity(units[v])) / demands[v]
            low = min(low, own)
        tightest[v] = low
    throttles = [1.0] * n
    inputs = [0.0] * n
    outputs = [0.0] * n
    for v in topology.order:
        c = comps[v]
        if spout[v]:
            alpha = below[v] if below[v] < 1.0 else 1.0
            throttles[v] = alpha
            outputs[v] = alpha * units[v] * c.output_per_unit
            continue
        alpha = 1.0
        if c.external_input > 0 and tightest[v] < 1.0:
            alpha = tightest[v]
        throttles[v] = alpha
        arriving = alpha * c.external_input
        for p, f in parents[v]:
            arriving += outputs[p] * f
        inputs[v] = arriving
        outputs[v] = arriving * c.selectivity
    return BackpressureRates(demands, tuple(throttles), tuple(inputs), tuple(outputs))


def component_outputs(topology: Topology, units: Units, model: FlowModel) -> tuple[float, ...]:
    """``O_v`` of every component under ``model``."""
    if model is FlowModel.DROP:
        return drop_rates(topology, units).outputs
    return backpressure_rates(topology, units).outputs


def throughput(topology: Topology, units: Units, model: FlowModel) -> float:
    """Θ = Σ_{sinks s} O_s under ``model``."""
    outputs = component_outputs(topology, units, model)
    return sum(outputs[s] for s in topology.sinks)


@dataclass(frozen=True, slots=True)
class ComponentFlow:
    """Predicted state of one component.

    ``lost`` is what the component drops (drop model) or the offered demand it is throttled below
    (backpressure). ``congested``: its demand exceeds its capacity.
    """

    id: str
    units: int
    input: float
    capacity: float
    processed: float
    output: float
    lost: float
    congested: bool


@dataclass(frozen=True, slots=True)
class FlowState:
    """Predicted state of a whole topology under one flow model."""

    model: FlowModel
    components: tuple[ComponentFlow, ...]
    throughput: float


def evaluate(topology: Topology, units: Units, model: FlowModel) -> FlowState:
    """Full predicted state (per component and Θ) of ``topology`` holding ``units``."""
    rows = _drop_state(topology, units) if model is FlowModel.DROP else _backpressure_state(topology, units)
    total = sum(rows[s].output for s in topology.sinks)
    return FlowState(model=model, components=tuple(rows), throughput=total)


def _drop_state(topology: Topology, units: Units) -> list[ComponentFlow]:
    rates = drop_rates(topology, units)
    rows = []
    for v, c in enumerate(topology.components):
        arriving, capacity = rates.inputs[v], rates.capacities[v]
        processed = rates.outputs[v] if c.is_spout else min(arriving, capacity)
        rows.append(
            ComponentFlow(
                id=c.id,
                units=units[v],
                input=arriving,
                capacity=capacity,
                processed=processed,
                output=rates.outputs[v],
                lost=0.0 if c.is_spout else arriving - processed,
                congested=not c.is_spout and rates.congested(v),
            )
        )
    return rows


def _backpressure_state(topology: Topology, units: Units) -> list[ComponentFlow]:
    rates = backpressure_rates(topology, units)
    rows = []
    for v, c in enumerate(topology.components):
        if c.is_spout:
            offered = units[v] * c.output_per_unit
            rows.append(
                ComponentFlow(
                    id=c.id,
                    units=units[v],
                    input=0.0,
                    capacity=INF,
                    processed=rates.outputs[v],
                    output=rates.outputs[v],
                    lost=offered - rates.outputs[v],
                    congested=False,
                )
            )
            continue
        capacity = c.capacity(units[v])
        demand = rates.demands[v]
        rows.append(
            ComponentFlow(
                id=c.id,
                units=units[v],
                input=rates.inputs[v],
                capacity=capacity,
                processed=rates.inputs[v],
                output=rates.outputs[v],
                lost=max(0.0, demand - rates.inputs[v]),
                congested=demand > capacity + congestion_tolerance(demand),
            )
        )
    return rows
