"""Which components may receive the next unit (the thesis's congestion test, with a fallback chain)."""

from __future__ import annotations

from stormscale.planner.flow import DropRates
from stormscale.planner.model import Topology, Units


def candidate_heads(topology: Topology, units: Units, rates: DropRates) -> list[int]:
    """Components that should get units next, by a fallback chain.

    1. bolts strictly congested (``I > P + ε``);
    2. else bolts saturated (``I ≥ P − ε``, with some input);
    3. else the scalable spouts.

    Only components with headroom below ``maxUnits`` count. The list is in natural id order.
    """
    bolts = [
        v for v, c in enumerate(topology.components) if not c.is_spout and topology.headroom(units, v) >= 1
    ]
    congested = [v for v in bolts if rates.congested(v)]
    if not congested:
        congested = [v for v in bolts if rates.inputs[v] > 0 and rates.saturated(v)]
    if not congested:
        congested = scalable_spouts(topology, units)
    return sorted(congested, key=topology.rank.__getitem__)


def scalable_spouts(topology: Topology, units: Units) -> list[int]:
    """Spouts that may take one more unit (``maxUnits`` allows it), in natural id order."""
    spouts = [v for v, c in enumerate(topology.components) if c.is_spout and topology.headroom(units, v) >= 1]
    return sorted(spouts, key=topology.rank.__getitem__)


def strictly_congested(topology: Topology, rates: DropRates) -> set[int]:
    """All bolts with ``I > P + ε``, whatever their headroom (ETP prunes these)."""
    return {v for v, c in enumerate(topology.components) if not c.is_spout and rates.congested(v)}
