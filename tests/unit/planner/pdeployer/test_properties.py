"""P-Deployer invariants on random operator graphs (hypothesis): bounds, Eq. 5 in closed form, the ingress.

The oracles here work at task level, pair by pair (every task pair of an edge carries
``S/(P_u·P_v)``), not through :class:`TaskDemand`, so that a shared mistake is unlikely.
"""

from __future__ import annotations

import math
import time
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner.placement.pdeployer import (
    FIT_EPS,
    MachineCapacity,
    Packing,
    TaskRef,
    pack,
    plan_deployment,
    saving,
)
from stormscale.planner.sizing.pdeployer import (
    LoadBasis,
    Operator,
    OperatorGraph,
    ParallelizationParams,
    Stream,
    TaskProfile,
    parallelize,
    scale_to_target,
    task_demands,
)

from .vectors import isolated_tasks

rates = st.floats(min_value=0.0, max_value=3000.0, allow_nan=False)


@st.composite
def profiles(draw: st.DrawFn, *, c_t: bool = True) -> TaskProfile:
    return TaskProfile(
        c_p=draw(st.floats(0.0, 0.2)),
        c_t=draw(st.floats(0.0, 0.05)) if c_t else 0.0,
        m_pt=draw(st.floats(0.0, 0.5)),
        t_soj=draw(st.floats(0.0, 0.02)),
    )


@st.composite
def graphs(draw: st.DrawFn, *, max_ops: int = 7, c_t: bool = True) -> OperatorGraph:
    """A random DAG: edges only from lower to higher index; sources get an ingress."""
    n = draw(st.integers(1, max_ops))
    ids = [f"op{i}" for i in draw(st.permutations(range(n)))]
    streams = [
        Stream(ids[u], ids[v], draw(rates))
        for u in range(n)
        for v in range(u + 1, n)
        if draw(st.booleans()) and draw(st.booleans())
    ]
    fed = {s.target for s in streams}
    operators = tuple(
        Operator(op, draw(profiles(c_t=c_t)), ingress=0.0 if op in fed else draw(rates)) for op in ids
    )
    return OperatorGraph(operators, tuple(streams))


params = st.builds(
    ParallelizationParams,
    alpha=st.sampled_from([0.05, 0.1, 0.5]),
    beta=st.sampled_from([128.0, 512.0]),
    io_load=st.sampled_from(list(LoadBasis)),
    cpu_bound_includes_ct=st.booleans(),
)


def task_usage(
    graph: OperatorGraph, parallelism: dict[str, int], machine_of: dict[TaskRef, int]
) -> tuple[dict[int, float], dict[int, float]]:
    """CPU and memory per machine from Eqs. (1)–(2), pair by pair."""
    cpu: dict[int, float] = dict.fromkeys(set(machine_of.values()), 0.0)
    memory: dict[int, float] = dict.fromkeys(set(machine_of.values()), 0.0)
    for task, m in machine_of.items():
        op = graph.operator(task.op)
        p_op = parallelism[task.op]
        s_in = (op.ingress + sum(s.rate for s in graph.inputs(task.op))) / p_op
        s_out = sum(s.rate for s in graph.outputs(task.op)) / p_op
        remote = op.ingress / p_op
        for s in graph.streams:
            if task.op not in (s.source, s.target):
                continue
            peer = s.target if s.source == task.op else s.source
            w = s.rate / (parallelism[s.source] * parallelism[s.target])
            remote += sum(w for i in range(1, parallelism[peer] + 1) if machine_of[TaskRef(peer, i)] != m)
        cpu[m] += s_in * op.profile.c_p + remote * op.profile.c_t
        memory[m] += (s_in + s_out) * op.profile.m_pt
    return cpu, memory


def capacity_for(graph: OperatorGraph, parallelism: dict[str, int], scale: float) -> MachineCapacity:
    """A machine at least as large as the largest task (so that packing is feasible), times ``scale``."""
    demands = task_demands(graph, parallelism)
    w_c = max([100.0, *(d.cpu_max for d in demands)]) * scale
    w_m = max([512.0, *(d.memory for d in demands)]) * scale
    return MachineCapacity(w_c, w_m)


def placed_once(packing: Packing, parallelism: dict[str, int]) -> dict[TaskRef, int]:
    machine_of: dict[TaskRef, int] = {}
    for k, machine in enumerate(packing.machines):
        for task in machine.tasks:
            assert task not in machine_of, f"{task} placed twice"
            machine_of[task] = k
    expected = {TaskRef(op, i) for op, p in parallelism.items() for i in range(1, p + 1)}
    assert set(machine_of) == expected
    return machine_of


@settings(max_examples=150, deadline=None)
@given(graphs(), params, st.floats(1.0, 4.0))
def test_placement_never_exceeds_a_pod_and_places_every_task_once(
    graph: OperatorGraph, p: ParallelizationParams, scale: float
) -> None:
    parallelism = parallelize(graph, p)
    capacity = capacity_for(graph, parallelism, scale)
    plan = plan_deployment(graph, capacity, p)
    machine_of = placed_once(plan.packing, parallelism)
    cpu, memory = task_usage(graph, parallelism, machine_of)
    for k, machine in enumerate(plan.packing.machines):
        assert machine.tasks
        assert math.isclose(machine.cpu, cpu[k], rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(machine.memory, memory[k], rel_tol=1e-9, abs_tol=1e-9)
        assert cpu[k] <= capacity.w_c * (1 + 1e-9)
        assert memory[k] <= capacity.w_m * (1 + 1e-9)
    placement = plan.placement
    assert placement.executors() == parallelism
    assert placement.pod_count == plan.machine_count
    for pod in placement.pods:
        assert len(pod.slots) == 1
        assert pod.slots[0].cpu <= 1 + 1e-9
        assert pod.slots[0].memory <= 1 + 1e-9


@settings(max_examples=150, deadline=None)
@given(graphs(), st.floats(1.0, 4.0))
def test_lower_bounds_closed_form_saving_and_determinism(graph: OperatorGraph, scale: float) -> None:
    parallelism = parallelize(graph)
    capacity = capacity_for(graph, parallelism, scale)
    demands = task_demands(graph, parallelism)
    packing = pack(demands, capacity)
    # n_m ≥ ⌈Σ C_min / W_c⌉ and ⌈Σ M / W_m⌉
    total_min = sum(d.parallelism * d.cpu_min for d in demands)
    total_mem = sum(d.parallelism * d.memory for d in demands)
    assert packing.machine_count >= math.ceil(total_min / capacity.w_c - 1e-9)
    assert packing.machine_count >= math.ceil(total_mem / capacity.w_m - 1e-9)
    # Eq. (5) equals Σ_{τk∈φ(m), adjacent} w(τ,τk)·(c_t^op(τ) + c_t^op(τk)) / W_c
    c_t = {op.id: op.profile.c_t for op in graph.operators}
    by_op = {d.op: d for d in demands}
    on_machine: Counter[str] = Counter()
    current = 0
    for step in packing.steps:
        if step.machine != current:
            on_machine, current = Counter(), step.machine
        closed = 0.0
        for s in graph.streams:
            if step.task.op in (s.source, s.target):
                peer = s.target if s.source == step.task.op else s.source
                w = s.rate / (parallelism[s.source] * parallelism[s.target])
                closed += on_machine[peer] * w * (c_t[s.source] + c_t[s.target]) / capacity.w_c
        assert math.isclose(step.saving, closed, rel_tol=1e-12, abs_tol=1e-12)
        # Eq. (5) as printed (differences of Eq. 3) gives the same s(τ,m) and Ĉ_τ as the incremental form
        own, others = saving(by_op, step.task.op, on_machine, capacity.w_c)
        assert math.isclose(step.saving, own + others, rel_tol=1e-12, abs_tol=1e-12)
        assert math.isclose(step.c_hat, by_op[step.task.op].cpu(on_machine) / capacity.w_c, abs_tol=1e-12)
        on_machine[step.task.op] += 1
    # deterministic
    assert pack(demands, capacity) == packing


@settings(max_examples=100, deadline=None)
@given(graphs(c_t=False))
def test_no_transmission_cost_means_no_saving(graph: OperatorGraph) -> None:
    parallelism = parallelize(graph)
    packing = pack(task_demands(graph, parallelism), capacity_for(graph, parallelism, 1.5))
    assert all(step.saving == 0.0 for step in packing.steps)


def next_fit_best_fill(sizes: list[float]) -> list[list[int]]:
    """1-D next fit with best-fill choice: fill the open bin with the largest item that fits (first
    in order among equals), open a new bin when none fits."""
    remaining = list(range(len(sizes)))
    bins: list[list[int]] = []
    while remaining:
        used, current = 0.0, []
        while True:
            fitting = [i for i in remaining if used + sizes[i] <= 1 + FIT_EPS]
            if not fitting:
                break
            i = max(fitting, key=lambda j: (sizes[j], -j))
            current.append(i)
            remaining.remove(i)
            used += sizes[i]
        bins.append(current)
    return bins


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=14))
def test_one_dimension_without_edges_is_next_fit_best_fill(twentieths: list[int]) -> None:
    sizes = [k / 20 for k in twentieths]
    graph = isolated_tasks({f"t{i}": (c, 0.0) for i, c in enumerate(sizes)})
    packing = pack(task_demands(graph, {f"t{i}": 1 for i in range(len(sizes))}), MachineCapacity(1.0, 1.0))
    got = [[int(t.op[1:]) for t in m.tasks] for m in packing.machines]
    assert got == next_fit_best_fill(sizes)


@settings(max_examples=150, deadline=None)
@given(
    graphs(),
    params,
    st.floats(1.0, 5000.0),
    st.floats(1.0, 10000.0),
    st.floats(0.0, 10000.0),
)
def test_more_target_never_needs_fewer_instances(
    graph: OperatorGraph, p: ParallelizationParams, measured: float, low: float, more: float
) -> None:
    at_low = parallelize(scale_to_target(graph, measured, low), p)
    at_high = parallelize(scale_to_target(graph, measured, low + more), p)
    assert all(at_high[op] >= at_low[op] for op in graph.order)
    assert sum(at_high.values()) >= sum(at_low.values())


@pytest.mark.parametrize(("operators", "tasks_each"), [(20, 25), (500, 1)])
def test_five_hundred_tasks_in_well_under_a_second(operators: int, tasks_each: int) -> None:
    # Target (inferred): ≤ 1 s at 500 tasks. A chain of operators, 500 tasks in all.
    profile = TaskProfile(c_p=0.02, c_t=0.01, m_pt=0.05)
    rate = 100.0 * tasks_each
    ops = tuple(Operator(f"op{i}", profile, ingress=rate if i == 0 else 0.0) for i in range(operators))
    streams = tuple(Stream(f"op{i}", f"op{i + 1}", rate) for i in range(operators - 1))
    graph = OperatorGraph(ops, streams)
    parallelism = dict.fromkeys(graph.order, tasks_each)
    demands = task_demands(graph, parallelism)
    start = time.perf_counter()
    packing = pack(demands, MachineCapacity(200.0, 4096.0))
    elapsed = time.perf_counter() - start
    assert sum(len(m.tasks) for m in packing.machines) == 500
    assert elapsed < 5.0  # the 1 s target, with slack for a loaded test machine
