"""P-Deployer: Eqs. (1)–(4) against worked examples (tolerance 1e-9)."""

from __future__ import annotations

import pytest

from stormscale.planner.sizing.pdeployer import (
    TaskProfile,
    cpu_consumption,
    cpu_max,
    cpu_min,
    memory_consumption,
    task_demands,
)

from .vectors import CHAIN_PARALLELISM, chain_graph, fig3_graph, pipeline_graph

TOL = 1e-9


def test_eq1_and_eq2() -> None:
    profile = TaskProfile(c_p=0.05, c_t=0.01, m_pt=0.1)
    assert cpu_min(profile, 500.0) == pytest.approx(25.0, abs=TOL)
    assert cpu_max(profile, 500.0, 1500.0) == pytest.approx(45.0, abs=TOL)
    assert cpu_consumption(profile, 500.0, remote_in=500.0, remote_out=0.0) == pytest.approx(30.0, abs=TOL)
    assert memory_consumption(profile, 500.0, 1500.0) == pytest.approx(200.0, abs=TOL)


def test_eq3_inter_node_ratio() -> None:
    demands = {d.op: d for d in task_demands(fig3_graph(), {"J": 2, "S": 1, "W": 2})}
    s = demands["S"]
    remote_in = 500 / (2 * 1) * (2 - 1)
    remote_out = 2500 / (2 * 1) * (2 - 1)
    ratio = (remote_in + remote_out) / (500 + 2500)
    assert (remote_in, remote_out, ratio) == (250.0, 1250.0, 0.5)
    assert s.cpu_min == pytest.approx(50.0, abs=TOL)
    assert s.cpu_max == pytest.approx(80.0, abs=TOL)
    collocated = s.cpu({"J": 1, "W": 1})
    assert collocated == pytest.approx(65.0, abs=TOL)
    # C is linear in the inter-node ratio, from C_min to C_max (Obs. 1)
    assert collocated == pytest.approx(s.cpu_min + ratio * (s.cpu_max - s.cpu_min), abs=TOL)
    # Eq. (3) is Eq. (1) with Θ given by Adj
    assert collocated == pytest.approx(cpu_consumption(s.profile, 500.0, remote_in, remote_out), abs=TOL)


@pytest.mark.parametrize("adj", [{}, {"J": 1}, {"W": 2}, {"J": 2, "W": 1}, {"J": 2, "W": 2}])
def test_eq3_is_linear_in_each_adj(adj: dict[str, int]) -> None:
    s = {d.op: d for d in task_demands(fig3_graph(), {"J": 2, "S": 1, "W": 2})}["S"]
    w_j, w_w = 500 / 2, 2500 / 2
    expected = 50.0 + 0.01 * (w_j * (2 - adj.get("J", 0)) + w_w * (2 - adj.get("W", 0)))
    assert s.cpu(adj) == pytest.approx(expected, abs=TOL)


def test_chain_demands_with_ingress_always_remote() -> None:
    demands = {d.op: d for d in task_demands(chain_graph(), CHAIN_PARALLELISM)}
    got = {op: (d.cpu_max, d.cpu_min, d.memory) for op, d in demands.items()}
    assert got == {
        "S": pytest.approx((80.0, 50.0, 200.0), abs=TOL),
        "B": pytest.approx((80.0, 50.0, 200.0), abs=TOL),
        "C": pytest.approx((55.0, 40.0, 150.0), abs=TOL),
    }


def test_pipeline_demands() -> None:
    demands = task_demands(pipeline_graph(), {"K": 1, "J": 2, "S": 2, "W": 3})
    assert [d.op for d in demands] == ["K", "J", "S", "W"]
    got = {d.op: (d.cpu_max, d.cpu_min, d.memory) for d in demands}
    assert got == {
        "K": pytest.approx((26.0, 18.0, 40.0), abs=TOL),
        "J": pytest.approx((32.0, 20.0, 20.0), abs=TOL),
        "S": pytest.approx((102.0, 90.0, 120.0), abs=TOL),
        "W": pytest.approx((20.0, 40.0 / 3.0, 400.0), abs=TOL),
    }


def test_processing_term_is_the_operator_share_not_one_upstream_task_share() -> None:
    # Eq. (3) as printed divides S_k by P_op_k·P_op; we use S_k/P_op (identical when P_op_k = 1).
    c = {d.op: d for d in task_demands(chain_graph(), CHAIN_PARALLELISM)}["C"]
    assert c.s_in * c.profile.c_p == pytest.approx(1000 / 2 * 0.08, abs=TOL)


def test_ingress_is_always_remote() -> None:
    s = {d.op: d for d in task_demands(chain_graph(), CHAIN_PARALLELISM)}["S"]
    assert s.cpu({"B": 2}) == pytest.approx(1000 * 0.02 + 1000 * 0.03, abs=TOL)
