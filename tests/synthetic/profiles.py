"""Random topology profiles for property tests and benchmarks (seeded, reproducible)."""

from __future__ import annotations

import random
from typing import Any

CAPACITIES = (100.0, 150.0, 300.0, 400.0, 700.0)
SPOUT_OUTPUTS = (200.0, 500.0, 1000.0)
SELECTIVITIES = (0.5, 1.0, 1.0, 2.0)


def random_profile(
    rng: random.Random,
    size: int,
    *,
    spouts: int = 1,
    scalable_spout: bool = True,
    min_units: int = 0,
    bounded_share: float = 0.3,
    load: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """A random DAG profile in the format of ``docs/formats/profile.md``.

    Spouts come first; every bolt picks one or two parents among the components before it (so the
    graph is acyclic and connected to a source), and each component splits its output over its
    children with random weights. About ``bounded_share`` of the bolts get a ``maxUnits``.

    ``load=(low, high)`` recalibrates every bolt's capacity so that its demand (the spouts' offered
    rate propagated without caps) divided by its capacity is uniform in [low, high]: a topology where
    that share of bolts is congested, as in the thesis's tables, however large it is.
    """
    components = [_spout(rng, i, scalable_spout) for i in range(spouts)]
    components += [_bolt(rng, i, min_units, bounded_share) for i in range(spouts, size)]
    for i in range(spouts, size):
        for p in rng.sample(range(i), k=min(i, rng.choice([1, 1, 2]))):
            components[p].setdefault("children", {})[f"c{i}"] = 1.0
    for comp in components:
        kids = comp.get("children", {})
        if kids:
            weights = [rng.choice([1, 2, 3]) for _ in kids]
            comp["children"] = {k: w / sum(weights) for k, w in zip(kids, weights, strict=True)}
    if load is not None:
        _calibrate(rng, components, load)
    return {"topology": f"random-{size}", "components": components}


def _calibrate(rng: random.Random, components: list[dict[str, Any]], load: tuple[float, float]) -> None:
    """Set ``capacityPerUnit = demand / (units · U(low, high))`` (components are in topological order)."""
    emitted: dict[str, float] = {}
    arriving: dict[str, float] = {c["id"]: 0.0 for c in components}
    for comp in components:
        if comp["kind"] == "spout":
            out = comp["units"] * comp["outputPerUnit"]
        else:
            units = max(1, comp["units"])
            ratio = rng.uniform(*load)
            comp["capacityPerUnit"] = round(max(1.0, arriving[comp["id"]] / (units * ratio)), 3)
            out = arriving[comp["id"]] * comp["selectivity"]
        emitted[comp["id"]] = out
        for child, fraction in comp.get("children", {}).items():
            arriving[child] += out * fraction


def _spout(rng: random.Random, i: int, scalable: bool) -> dict[str, Any]:
    comp: dict[str, Any] = {
        "id": f"c{i}",
        "kind": "spout",
        "units": rng.randint(1, 2),
        "outputPerUnit": rng.choice(SPOUT_OUTPUTS),
    }
    if scalable:
        comp["maxUnits"] = None
    return comp


def _bolt(rng: random.Random, i: int, min_units: int, bounded_share: float) -> dict[str, Any]:
    comp: dict[str, Any] = {
        "id": f"c{i}",
        "kind": "bolt",
        "units": rng.randint(min_units, max(min_units, 2)),
        "capacityPerUnit": rng.choice(CAPACITIES),
        "selectivity": rng.choice(SELECTIVITIES),
    }
    if rng.random() < bounded_share:
        comp["maxUnits"] = comp["units"] + rng.randint(0, 2)
    return comp
