"""SHUKLA_FIXTURE_V1 and the paper's micro-DAGs, for the Shukla & Simmhan tests.

The fixture is an inferred reference model: per task, τ → ℐ (t/s), 𝒞 (%), ℳ (%). Paper-stated
or derived cells match the paper; the rest are fillers. Percent is divided by 100 here
(fractions of a slot, the planner's unit).
"""

from __future__ import annotations

import itertools

from stormscale.planner.sizing.performance import ModelPoint, PerformanceModel, TaskGraph

# τ: (ℐ, 𝒞 %, ℳ %)
_TABLE: dict[str, dict[int, tuple[float, float, float]]] = {
    "X": {
        1: (310, 85, 22.98),
        2: (300.83, 86, 25),
        3: (291.67, 87, 28),
        4: (282.5, 88, 30),
        5: (273.33, 89, 32),
        6: (264.17, 90, 34),
        7: (255, 90, 35),
    },
    "P": {
        1: (105, 90, 2),
        2: (110, 95, 3),
        3: (100, 95, 4),
        4: (100, 95, 6),
        5: (100, 95, 8),
        6: (100, 95, 10),
    },
    "F": {
        1: (60000, 40, 5),
        2: (52500, 38, 5),
        3: (45000, 30, 6),
        4: (50000, 35, 6),
        5: (50000, 40, 7),
        6: (50000, 45, 7),
    },
    "B": {
        1: (2, 6.74, 23.92),
        10: (5, 10, 25),
        20: (10, 15, 26),
        28: (20, 30.0, 28),
        40: (26, 38, 30),
        50: (30, 45, 33),
        60: (28, 45, 35),
    },
    "T": {
        1: (3, 1.02, 1.22),
        2: (5, 3, 1.5),
        4: (7, 8, 2),
        9: (10, 36.4, 5),
        20: (14, 45, 10),
        40: (20, 55, 15),
        60: (40, 65, 20),
        80: (35, 65, 22),
    },
}


def fixture_model(task: str) -> PerformanceModel:
    """One task's model from SHUKLA_FIXTURE_V1 (CPU and memory as fractions of a slot)."""
    return PerformanceModel(
        tuple(ModelPoint(t, rate, cpu / 100, mem / 100) for t, (rate, cpu, mem) in _TABLE[task].items())
    )


MODELS: dict[str, PerformanceModel] = {task: fixture_model(task) for task in _TABLE}

SOURCE_SINK: dict[str, tuple[float, float]] = {"src": (0.10, 0.15), "sink": (0.10, 0.20)}
"""The paper's fixed source and sink demands (§8.3): 10 % CPU / 15 % memory, 10 % / 20 %."""


def linear() -> TaskGraph:
    """Linear: src → X → P → T → B → F → sink, σ = 1 (the task order is ours)."""
    chain = ("src", "X", "P", "T", "B", "F", "sink")
    return TaskGraph(chain, tuple((a, b, 1.0) for a, b in itertools.pairwise(chain)))


def star() -> TaskGraph:
    """Star: src → {B, T} → X (hub, 2Ω) → {P, F} → sink (reconstructed from the paper)."""
    edges = [("src", "B"), ("src", "T"), ("B", "X"), ("T", "X"), ("X", "P"), ("X", "F"), ("P", "sink")]
    edges.append(("F", "sink"))
    return TaskGraph(("src", "B", "T", "X", "P", "F", "sink"), tuple((a, b, 1.0) for a, b in edges))


def diamond(fan_in: str = "P") -> TaskGraph:
    """Diamond: src → {four tasks} → fan-in task (4Ω) → sink; the fan-in task defaults to P (ours)."""
    others = [t for t in ("X", "P", "F", "B", "T") if t != fan_in]
    edges = [("src", t) for t in others] + [(t, fan_in) for t in others] + [(fan_in, "sink")]
    return TaskGraph(("src", *others, fan_in, "sink"), tuple((a, b, 1.0) for a, b in edges))
