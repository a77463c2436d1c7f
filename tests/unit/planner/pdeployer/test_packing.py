"""P-Deployer: Algorithm 1 against worked examples (assignments and n_m exact; the trace's
printed six decimals at 1e-6; demands and weights at 1e-9) and the Placement it returns."""

from __future__ import annotations

import pytest

from stormscale.planner.placement.model import Placement
from stormscale.planner.placement.pdeployer import (
    InfeasibleTask,
    InfeasibleTaskError,
    MachineCapacity,
    Packing,
    pack,
    plan_deployment,
    priority,
)
from stormscale.planner.sizing.pdeployer import task_demands

from .vectors import CHAIN_PARALLELISM, chain_graph, isolated_tasks, pipeline_graph

TOL = 1e-9
PRINTED = 1e-6  # the worked examples print p to six decimals


def names(packing: Packing) -> list[list[str]]:
    return [[str(t) for t in m.tasks] for m in packing.machines]


def expected(machine: int, task: str, s: float, c_hat: float, p: float) -> tuple[object, ...]:
    """One row of the worked example's trace: s and Ĉ exact (1e-9), p as printed (six decimals)."""
    return (
        machine,
        task,
        pytest.approx(s, abs=TOL),
        pytest.approx(c_hat, abs=TOL),
        pytest.approx(p, abs=PRINTED),
    )


def pack_chain(w_c: float) -> Packing:
    return pack(task_demands(chain_graph(), CHAIN_PARALLELISM), MachineCapacity(w_c, 4096.0))


def test_chain_full_trace() -> None:
    packing = pack_chain(200.0)
    assert (packing.a_c, packing.a_m) == pytest.approx((0.35, 0.0439453125), abs=TOL)
    trace = [(s.machine, str(s.task), s.saving, s.c_hat, s.priority) for s in packing.steps]
    assert trace == [
        expected(1, "S1", 0.0, 0.4, -0.165759),
        expected(1, "B1", 0.15, 0.325, 0.08775),
        expected(1, "B2", 0.15, 0.325, 0.117768),
        expected(2, "C1", 0.0, 0.275, -0.224754),
        expected(2, "C2", 0.0, 0.275, -0.108619),
    ]
    assert names(packing) == [["S1", "B1", "B2"], ["C1", "C2"]]
    assert packing.machine_count == 2
    assert [m.cpu for m in packing.machines] == pytest.approx([180.0, 110.0], abs=TOL)
    assert [m.memory for m in packing.machines] == pytest.approx([600.0, 300.0], abs=TOL)


def test_chain_step1_tie_between_s1_and_b1_goes_to_order() -> None:
    # S1 and B1 have the same demands on an empty machine: the same p; the first in order wins.
    packing = pack_chain(200.0)
    assert packing.steps[0].priority == pytest.approx(
        priority(0.0, 0.4, 200 / 4096, 1.0, 1.0, a_r=1.0, a_c=packing.a_c, a_m=packing.a_m), abs=1e-15
    )
    assert str(packing.steps[0].task) == "S1"


def test_chain_c1_does_not_fit_the_first_machine() -> None:
    # 0.9 − 0.075 + 0.2 = 1.025 > 1: the first machine closes after B2.
    packing = pack_chain(200.0)
    assert sum(s.c_hat for s in packing.steps[:3]) - 0.15 == pytest.approx(0.9, abs=TOL)
    assert packing.steps[3].machine == 2


def test_chain_bigger_machine() -> None:
    packing = pack_chain(300.0)
    assert names(packing) == [["S1", "B1", "B2", "C1", "C2"]]
    assert packing.machines[0].cpu == pytest.approx(230.0, abs=TOL)
    assert [s.saving for s in packing.steps] == pytest.approx([0.0, 0.1, 0.1, 0.1, 0.1], abs=TOL)


def test_chain_smaller_machine_is_infeasible() -> None:
    with pytest.raises(InfeasibleTask) as raised:
        pack_chain(60.0)
    assert raised.value.op == "S"
    assert raised.value.c_hat == pytest.approx(80 / 60, abs=TOL)
    assert InfeasibleTask is InfeasibleTaskError


def test_infeasible_on_memory() -> None:
    with pytest.raises(InfeasibleTaskError, match="'S'"):
        pack(task_demands(chain_graph(), CHAIN_PARALLELISM), MachineCapacity(200.0, 199.0))


def test_pipeline_full_plan() -> None:
    plan = plan_deployment(pipeline_graph(), MachineCapacity(200.0, 4096.0))
    assert plan.parallelism == {"K": 1, "J": 2, "S": 2, "W": 3}
    packing = plan.packing
    assert (packing.a_c, packing.a_m) == pytest.approx((0.22125, 0.04638671875), abs=TOL)
    assert [str(s.task) for s in packing.steps] == ["S1", "W1", "W2", "W3", "J1", "K1", "S2", "J2"]
    assert names(packing) == [["S1", "W1", "W2", "W3", "J1", "K1"], ["S2", "J2"]]
    assert plan.machine_count == 2 == -(-278 // 200)  # = the lower bound ⌈Σ C_min / W_c⌉
    assert [m.cpu for m in packing.machines] == pytest.approx([186.0, 130.0], abs=TOL)
    assert [m.memory for m in packing.machines] == pytest.approx([1380.0, 140.0], abs=TOL)


TWO_DIMENSIONAL = {
    "a": (0.6, 0.25),
    "b": (0.3, 0.7),
    "c": (0.4, 0.1),
    "d": (0.2, 0.5),
    "e": (0.5, 0.4),
    "f": (0.1, 0.2),
}


def test_two_dimensional_packing_without_communication() -> None:
    graph = isolated_tasks(TWO_DIMENSIONAL)
    packing = pack(task_demands(graph, dict.fromkeys(TWO_DIMENSIONAL, 1)), MachineCapacity(1.0, 1.0))
    assert (packing.a_c, packing.a_m) == pytest.approx((0.35, 2.15 / 6), abs=TOL)
    assert names(packing) == [["b1", "a1"], ["e1", "d1"], ["c1", "f1"]]
    picks = [s.priority for s in packing.steps[:4]]
    assert picks == pytest.approx([-0.20375, -0.004396, -0.2165, -0.035083], abs=PRINTED)
    assert all(s.saving == 0.0 for s in packing.steps)


@pytest.mark.parametrize(("n", "machines"), [(1, 1), (2, 1), (3, 1), (4, 2), (7, 3), (9, 3), (10, 4)])
def test_identical_tasks(n: int, machines: int) -> None:
    graph = isolated_tasks({"t": (0.3 * n, 0.001 * n)})  # one operator of n tasks: Ĉ 0.3, M̂ 0.001 each
    packing = pack(task_demands(graph, {"t": n}), MachineCapacity(1.0, 1.0))
    assert packing.machine_count == machines == -(-n // 3)


def test_pipeline_as_a_placement() -> None:
    placement = plan_deployment(pipeline_graph(), MachineCapacity(200.0, 4096.0)).placement
    assert isinstance(placement, Placement)
    assert placement.strategy == "pdeployer"
    assert placement.pod_count == 2
    assert placement.used_slots == 2
    assert all(len(pod.slots) == 1 for pod in placement.pods)
    assert placement.executors() == {"K": 1, "J": 2, "S": 2, "W": 3}
    first, second = (pod.slots[0] for pod in placement.pods)
    assert dict(first.executors) == {"S": 1, "W": 3, "J": 1, "K": 1}
    assert dict(second.executors) == {"S": 1, "J": 1}
    assert (first.cpu, first.memory) == pytest.approx((186 / 200, 1380 / 4096), abs=TOL)
    assert (second.cpu, second.memory) == pytest.approx((130 / 200, 140 / 4096), abs=TOL)


def test_machine_from_pod() -> None:
    assert MachineCapacity.from_pod(2.0, 4096.0) == MachineCapacity(200.0, 4096.0)
    pod = MachineCapacity.from_pod(2.0, 4096.0, cpu_headroom=0.1, jvm_base_mb=512.0)
    assert (pod.w_c, pod.w_m) == pytest.approx((180.0, 3584.0), abs=TOL)
    with pytest.raises(ValueError, match="W_c"):
        MachineCapacity(0.0, 1.0)


def test_empty_task_set() -> None:
    packing = pack((), MachineCapacity(1.0, 1.0))
    assert packing.machine_count == 0
    assert packing.placement.pods == ()
