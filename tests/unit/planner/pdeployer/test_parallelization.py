"""P-Deployer: parallelization (bounds: exact integers), scaling to the
target, the loop's decisions and the profile update."""

from __future__ import annotations

import pytest

from stormscale.planner.sizing.pdeployer import (
    LoadBasis,
    Measurement,
    OpClass,
    Operator,
    OperatorGraph,
    ParallelismBounds,
    ParallelizationParams,
    Stream,
    Target,
    TaskProfile,
    Verdict,
    ceil_eps,
    inflate_bottleneck,
    measurement_verdict,
    parallelism_bounds,
    parallelism_degree,
    parallelize,
    plan_verdict,
    scale_to_target,
    target_met,
    update_profile,
)

from .vectors import chain_graph, pipeline_graph


@pytest.mark.parametrize(
    ("profile", "s_op", "expected"),
    [
        (TaskProfile(c_p=0.12, c_t=0.0, m_pt=0.0), 2000.0, 3),  # CPU: ⌈2.4⌉
        (TaskProfile(c_p=0.0, c_t=0.006, m_pt=0.0), 2000.0, 2),  # I/O: ⌈2000·0.006/10⌉ = ⌈1.2⌉
        (TaskProfile(c_p=0.0, c_t=0.0, m_pt=0.0, t_soj=0.010), 2000.0, 20),  # sojourn
        (TaskProfile(c_p=0.0, c_t=0.0, m_pt=0.0, t_soj=0.07), 300.0, 21),  # sojourn; raw ceil gives 22
        (TaskProfile(c_p=0.0, c_t=0.0, m_pt=0.6), 2000.0, 3),  # memory: ⌈2.34375⌉
        (TaskProfile(c_p=0.0, c_t=0.0, m_pt=0.12), 10000.0, 3),  # memory
        (TaskProfile(c_p=0.12, c_t=0.006, m_pt=0.6, t_soj=0.07), 0.0, 1),  # S = 0
    ],
)
def test_parallelism_of_one_operator(profile: TaskProfile, s_op: float, expected: int) -> None:
    assert parallelism_degree(profile, s_op) == expected


def test_ceil_eps_against_a_raw_ceiling() -> None:
    import math

    assert math.ceil(300 * 0.07) == 22
    assert ceil_eps(300 * 0.07) == 21


def test_pipeline_bounds_and_parallelism() -> None:
    graph = pipeline_graph()
    bounds = {
        op: parallelism_bounds(graph.operator(op).profile, graph.stream_load(op), graph.output_load(op))
        for op in graph.order
    }
    assert bounds == {
        "K": ParallelismBounds(1, 1, 1, 1),
        "J": ParallelismBounds(1, 2, 1, 1),
        "S": ParallelismBounds(2, 1, 2, 1),
        "W": ParallelismBounds(1, 2, 1, 3),
    }
    assert parallelize(graph) == {"K": 1, "J": 2, "S": 2, "W": 3}


def test_op_class_restricts_to_one_formula() -> None:
    profile = TaskProfile(0.09, 0.002, 0.02, 0.001)  # the pipeline's S: bounds (2, 1, 2, 1)
    assert parallelism_degree(profile, 2000.0, op_class=OpClass.IO) == 1
    assert parallelism_degree(profile, 2000.0, op_class=OpClass.CPU) == 2
    graph = OperatorGraph((Operator("S", profile, ingress=2000.0, op_class=OpClass.MEMORY),))
    assert parallelize(graph) == {"S": 1}


def test_io_and_memory_load_with_output() -> None:
    profile = TaskProfile(0.0, 0.006, 0.0)  # the pipeline's J: in 2000, out 2000
    assert parallelism_degree(profile, 2000.0, 2000.0) == 2
    both = ParallelizationParams(io_load=LoadBasis.INPUT_AND_OUTPUT)
    assert parallelism_degree(profile, 2000.0, 2000.0, both) == 3  # ⌈4000·0.006/10⌉ = ⌈2.4⌉
    memory = TaskProfile(0.0, 0.0, 0.12)  # the pipeline's W: in 10000, out 0
    assert parallelism_degree(memory, 10000.0, 0.0, both) == 3


def test_cpu_bound_with_transmission() -> None:
    profile = TaskProfile(0.09, 0.002, 0.0)  # the pipeline's S: C_max per task 102 > 100 at P = 2
    assert parallelism_bounds(profile, 2000.0, 10000.0).cpu == 2
    with_ct = ParallelizationParams(cpu_bound_includes_ct=True)
    assert parallelism_bounds(profile, 2000.0, 10000.0, with_ct).cpu == 3  # ⌈(180 + 24)/100⌉


def test_alpha_and_beta_are_the_caps() -> None:
    profile = TaskProfile(0.0, 0.006, 0.6)
    params = ParallelizationParams(alpha=0.2, beta=256.0)
    assert parallelism_bounds(profile, 2000.0, params=params) == ParallelismBounds(0, 1, 0, 5)


def test_scaling_to_target() -> None:
    graph = OperatorGraph(
        (
            Operator("K", TaskProfile(0.01, 0.0, 0.0), ingress=1237.0),
            Operator("B", TaskProfile(0.01, 0.0, 0.0)),
        ),
        (Stream("K", "B", 500.0),),
    )
    scaled = scale_to_target(graph, measured_throughput=1237.0, target=2000.0)
    factor = 2000.0 / 1237.0
    assert factor == pytest.approx(1.616814874697, abs=1e-12)
    assert scaled.streams[0].rate == pytest.approx(808.407437, abs=1e-6)
    assert scaled.operator("K").ingress == pytest.approx(2000.0, abs=1e-9)


def test_scaling_splits_ingress_over_spouts() -> None:
    spout = TaskProfile(0.01, 0.0, 0.0)
    graph = OperatorGraph(
        (Operator("a", spout, ingress=300.0), Operator("b", spout, ingress=100.0), Operator("c", spout)),
        (Stream("a", "c", 300.0), Stream("b", "c", 100.0)),
    )
    scaled = scale_to_target(graph, 400.0, 800.0)
    assert [scaled.operator(o).ingress for o in "abc"] == pytest.approx([600.0, 200.0, 0.0])
    no_ingress = OperatorGraph((Operator("a", spout), Operator("b", spout)))
    assert [scale_to_target(no_ingress, 1.0, 10.0).operator(o).ingress for o in "ab"] == [5.0, 5.0]
    with pytest.raises(ValueError, match="measured throughput"):
        scale_to_target(graph, 0.0, 800.0)


def test_termination() -> None:
    target = Target(throughput=2000.0, latency_s=0.5)
    verdicts = [
        measurement_verdict(Measurement(thr, 0.2), target, iteration)
        for iteration, thr in enumerate([1560.0, 1800.0, 2050.0], start=1)
    ]
    assert verdicts == [Verdict.CONTINUE, Verdict.CONTINUE, Verdict.SUCCESS]
    assert plan_verdict(machines=17, budget=16) is Verdict.BUDGET_EXCEEDED
    assert plan_verdict(machines=16, budget=16) is Verdict.CONTINUE
    assert not target_met(Measurement(2100.0, 0.520), target)
    assert target_met(Measurement(2000.0, 0.5), target)  # ≥, tol 0
    assert target_met(Measurement(1990.0, 0.1), Target(2000.0, 0.5, tolerance=0.01))
    assert measurement_verdict(Measurement(1000.0, 0.1), target, 10) is Verdict.MAX_ITER_REACHED


def test_profiles_only_grow_and_the_bottleneck_inflates() -> None:
    old = TaskProfile(0.1, 0.02, 0.3, 0.001)
    measured = TaskProfile(0.08, 0.03, 0.3, 0.002)
    assert update_profile(old, measured) == TaskProfile(0.1, 0.03, 0.3, 0.002)
    assert update_profile(old, measured, headroom=0.5).c_p == pytest.approx(0.15)
    inflated = inflate_bottleneck(old)
    assert (inflated.c_p, inflated.c_t, inflated.m_pt) == pytest.approx((0.12, 0.024, 0.3))


def test_order_is_topological_ties_by_natural_id() -> None:
    p = TaskProfile(0.01, 0.0, 0.0)
    graph = OperatorGraph(
        (Operator("b10", p), Operator("b2", p), Operator("a", p)),
        (Stream("b10", "a", 1.0),),
    )
    assert graph.order == ("b2", "b10", "a")
    assert chain_graph().order == ("S", "B", "C")


@pytest.mark.parametrize(
    ("operators", "streams", "message"),
    [
        (("a", "a"), (), "unique"),
        (("a",), (("a", "b"),), "unknown"),
        (("a",), (("a", "a"),), "self-loop"),
        (("a", "b"), (("a", "b"), ("a", "b")), "repeated"),
        (("a", "b"), (("a", "b"), ("b", "a")), "cycle"),
    ],
)
def test_graph_validation(
    operators: tuple[str, ...], streams: tuple[tuple[str, str], ...], message: str
) -> None:
    p = TaskProfile(0.01, 0.0, 0.0)
    with pytest.raises(ValueError, match=message):
        OperatorGraph(tuple(Operator(o, p) for o in operators), tuple(Stream(u, v, 1.0) for u, v in streams))


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_rates_and_profiles_are_checked(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        TaskProfile(bad, 0.0, 0.0)
    with pytest.raises(ValueError, match="finite"):
        Stream("a", "b", bad)
    with pytest.raises(ValueError, match="finite"):
        Operator("a", TaskProfile(0.0, 0.0, 0.0), ingress=bad)
