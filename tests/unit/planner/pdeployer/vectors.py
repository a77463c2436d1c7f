"""P-Deployer's worked examples (from the paper's figures and tables) as operator graphs."""

from __future__ import annotations

from stormscale.planner.sizing.pdeployer import Operator, OperatorGraph, Stream, TaskProfile


def fig3_graph() -> OperatorGraph:
    """Fig. 3: J (P=2) → S (P=1) → W (P=2); J→S 500, S→W 2500; S: c_p 0.1, c_t 0.01."""
    return OperatorGraph(
        (
            Operator("J", TaskProfile(0.02, 0.01, 0.0)),
            Operator("S", TaskProfile(0.1, 0.01, 0.0)),
            Operator("W", TaskProfile(0.02, 0.01, 0.0)),
        ),
        (Stream("J", "S", 500.0), Stream("S", "W", 2500.0)),
    )


CHAIN_PARALLELISM = {"S": 1, "B": 2, "C": 2}


def chain_graph() -> OperatorGraph:
    """A chain S (P=1) → B (P=2) → C (P=2), ingress 1000 (remote), S→B 1000, B→C 1000."""
    return OperatorGraph(
        (
            Operator("S", TaskProfile(0.02, 0.03, 0.1), ingress=1000.0),
            Operator("B", TaskProfile(0.1, 0.03, 0.2)),
            Operator("C", TaskProfile(0.08, 0.03, 0.3)),
        ),
        (Stream("S", "B", 1000.0), Stream("B", "C", 1000.0)),
    )


def pipeline_graph() -> OperatorGraph:
    """A pipeline: K (spout, ingress 2000) → J → S → W; K→J 2000, J→S 2000, S→W 10000."""
    return OperatorGraph(
        (
            Operator("K", TaskProfile(0.005, 0.004, 0.01, 0.0001), ingress=2000.0),
            Operator("J", TaskProfile(0.02, 0.006, 0.01, 0.0003)),
            Operator("S", TaskProfile(0.09, 0.002, 0.02, 0.001)),
            Operator("W", TaskProfile(0.004, 0.002, 0.12, 0.0001)),
        ),
        (Stream("K", "J", 2000.0), Stream("J", "S", 2000.0), Stream("S", "W", 10000.0)),
    )


def isolated_tasks(vectors: dict[str, tuple[float, float]]) -> OperatorGraph:
    """Operators of one task each and no streams, with normalized demands ``(Ĉ, M̂)`` on a machine of
    ``W_c = W_m = 1``: ingress 1 tuple/s, ``c_p = Ĉ``, ``c_t = 0``, ``m_pt = M̂``."""
    return OperatorGraph(
        tuple(Operator(name, TaskProfile(c, 0.0, m), ingress=1.0) for name, (c, m) in vectors.items())
    )
