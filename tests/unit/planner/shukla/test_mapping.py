"""Shukla & Simmhan: acquisition and the mappings DSM, RSM, SAM, on the paper's examples."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from stormscale.planner.placement.model import Placement
from stormscale.planner.placement.shukla import (
    Acquisition,
    MappingError,
    RsmDemand,
    SamBundles,
    acquire_pods,
    map_dsm,
    map_rsm,
    map_sam,
    map_until_fits,
    round_robin,
)
from stormscale.planner.sizing.lsa import allocate_lsa
from stormscale.planner.sizing.mba import allocate_mba, mba_task
from stormscale.planner.sizing.performance import Allocation, Allocator, Bundle, TaskAllocation, TaskGraph

from .fixture import MODELS, SOURCE_SINK, linear, star


def _task(task: str, threads: int, tau_hat: int, full: int, residual: Bundle | None) -> TaskAllocation:
    cpu = full + (residual.cpu if residual else 0.0)
    memory = full + (residual.memory if residual else 0.0)
    return TaskAllocation(task, 0.0, threads, cpu, memory, full, tau_hat, residual)


def _fig4() -> Allocation:
    """Fig. 4's DAG in BFS order B, O, Y, G: 5, 4, 3, 5 threads, τ̂ = 2, 3, 3, 4."""
    return Allocation(
        Allocator.MBA,
        0.0,
        (
            _task("B", 5, 2, 2, Bundle(1, 0.30, 0.20)),
            _task("O", 4, 3, 1, Bundle(1, 0.30, 0.20)),
            _task("Y", 3, 3, 1, None),
            _task("G", 5, 4, 1, Bundle(1, 0.30, 0.20)),
        ),
    )


def _slots(placement: Placement) -> list[dict[str, int]]:
    return [dict(s.executors) for pod in placement.pods for s in pod.slots]


def test_dsm_fig4() -> None:
    """Fig. 4: s11 B1 O2 G1 · s12 B2 O3 G2 · s21 B3 O4 G3 · s22 B4 Y1 G4 · s31 B5 Y2 G5 · s32 O1 Y3."""
    expected = [
        {"B": 1, "O": 1, "G": 1},
        {"B": 1, "O": 1, "G": 1},
        {"B": 1, "O": 1, "G": 1},
        {"B": 1, "Y": 1, "G": 1},
        {"B": 1, "Y": 1, "G": 1},
        {"O": 1, "Y": 1},
    ]
    layout = round_robin([("B", 5), ("O", 4), ("Y", 3), ("G", 5)], [2, 2, 2])
    assert [slot for pod in layout for slot in pod] == expected
    placement = map_dsm(_fig4(), [2, 2, 2])
    assert _slots(placement) == expected
    assert placement.strategy == "dsm"


def test_sam_fig4() -> None:
    """Fig. 4: full bundles on s11, s12, s21, s22, s31; O4, G5, B5 share s32, left with (0.10, 0.40)."""
    allocation = _fig4()
    assert allocation.slots == 6  # ⌈5.9⌉
    placement = map_sam(allocation, [2, 2, 2])
    assert _slots(placement) == [{"B": 2}, {"O": 3}, {"Y": 3}, {"G": 4}, {"B": 2}, {"O": 1, "G": 1, "B": 1}]
    free = [(1 - s.cpu, 1 - s.memory) for pod in placement.pods for s in pod.slots]
    assert free == [(0, 0)] * 5 + [(pytest.approx(0.10), pytest.approx(0.40))]


def test_rsm_fig4_first_sweeps() -> None:
    """Fig. 4 (qualitative): B1, O1, Y1 → s11; G1 → s12 (s11 full, same VM closest); then s12 and s21."""
    allocation = Allocation(
        Allocator.MBA,
        0.0,
        tuple(
            TaskAllocation(t, 0.0, n, 0.3 * n, 0.3 * n) for t, n in (("B", 5), ("O", 4), ("Y", 3), ("G", 5))
        ),
    )
    slots = _slots(map_rsm(allocation, [2, 2, 2]))
    assert slots[0] == {"B": 1, "O": 1, "Y": 1}
    assert slots[1] == {"G": 1, "B": 1, "O": 1}
    assert slots[2]["Y"] == 1
    assert sum(sum(s.values()) for s in slots) == 17


def test_rsm_checks_cpu_per_vm_and_memory_per_slot() -> None:
    """A slot may hold more than 1.00 CPU (the VM's CPU is shared), never more than 1.00 memory."""
    allocation = Allocation(Allocator.MBA, 0.0, (TaskAllocation("cpu-heavy", 0.0, 4, 3.2, 0.4),))
    placement = map_rsm(allocation, [4])
    assert _slots(placement)[0] == {"cpu-heavy": 4}
    assert placement.pods[0].slots[0].cpu == pytest.approx(3.2)
    with pytest.raises(MappingError, match="rsm: insufficient resources for task 'cpu-heavy'"):
        map_rsm(allocation, [2])


def test_rsm_demand_defaults_follow_the_allocator() -> None:
    """LSA packs with 𝒞(1), ℳ(1); MBA with c_i/τ_i, m_i/τ_i."""
    lsa = allocate_lsa(linear(), 50, MODELS, SOURCE_SINK)
    assert "demand: single-thread" in map_until_fits(lsa, map_rsm).placement.notes
    mba = allocate_mba(linear(), 50, MODELS, SOURCE_SINK)
    assert "demand: allocation-average" in map_until_fits(mba, map_rsm).placement.notes
    single = partial(map_rsm, demand=RsmDemand.SINGLE_THREAD)
    with pytest.raises(MappingError):  # m̄_B = 23.92 %: 470 Blob threads never fit 20 slots
        single(allocate_mba(linear(), 280, MODELS, SOURCE_SINK), [4] * 5)


def test_sam_literal_full_bundle_test_gives_residual_threads_whole_slots() -> None:
    """With τ̂_X = 1 the literal ``τ_i ≥ τ̂_i`` puts the 46.6 % residual thread alone on a slot."""
    allocation = Allocation(
        Allocator.MBA, 480.0, (mba_task("X", MODELS["X"], 480), mba_task("P", MODELS["P"], 20))
    )
    default = _slots(map_sam(allocation, [4]))
    assert default == [{"X": 1}, {"X": 1, "P": 1}, {}, {}]
    literal = _slots(map_sam(allocation, [4], bundles=SamBundles.LITERAL))
    assert literal == [{"X": 1}, {"P": 1}, {"X": 1}, {}]  # sweep 1: X full, P partial; sweep 2: X full


@pytest.mark.parametrize(("omega", "extra", "literal"), [(50, 0, 3), (100, 0, 4), (200, 1, 4)])
def test_sam_extra_slots_on_linear(omega: float, extra: int, literal: int) -> None:
    """Bundle-count SAM needs +0/+0/+1 slots over ρ; the literal test +3 to +4."""
    allocation = allocate_mba(linear(), omega, MODELS, SOURCE_SINK)
    assert map_until_fits(allocation, map_sam).extra_slots == extra
    literal_sam = partial(map_sam, bundles=SamBundles.LITERAL)
    assert map_until_fits(allocation, literal_sam).extra_slots == literal


@pytest.mark.parametrize("omega", [50, 100, 200])
def test_rsm_with_lsa_needs_at_least_the_extras_of_sam_with_mba_on_linear(omega: float) -> None:
    """SAM extras ∈ {0, 1}; RSM (with LSA) extras ≥ SAM extras."""
    sam = map_until_fits(allocate_mba(linear(), omega, MODELS, SOURCE_SINK), map_sam).extra_slots
    rsm = map_until_fits(allocate_lsa(linear(), omega, MODELS, SOURCE_SINK), map_rsm).extra_slots
    assert sam in {0, 1}
    assert rsm >= sam


@pytest.mark.parametrize("omega", [50, 100, 200])
@pytest.mark.parametrize("dag", [linear, star])
def test_sam_shares_at_most_one_slot_per_task(omega: float, dag: Callable[[], TaskGraph]) -> None:
    """Slots holding more than one task ≤ |𝕋| (the paper's "|𝕍|" is a typo)."""
    allocation = allocate_mba(dag(), omega, MODELS, SOURCE_SINK)
    placement = map_until_fits(allocation, map_sam).placement
    mixed = sum(1 for s in _slots(placement) if len(s) > 1)
    assert mixed <= len(allocation.tasks)


@pytest.mark.parametrize(
    ("slots", "cover", "exact"),
    [
        (20, (4, 4, 4, 4, 4), (4, 4, 4, 4, 4)),
        (15, (4, 4, 4, 4), (4, 4, 4, 2, 1)),
        (13, (4, 4, 4, 1), (4, 4, 4, 1)),
        (7, (4, 4), (4, 2, 1)),
        (4, (4,), (4,)),
        (0, (), ()),
    ],
)
def test_acquisition(slots: int, cover: tuple[int, ...], exact: tuple[int, ...]) -> None:
    """Acquisition: D3 first; the remainder by §7.1 (smallest cover) or §8.2 (exact fit)."""
    assert acquire_pods(slots) == cover
    assert acquire_pods(slots, rule=Acquisition.EXACT_FIT) == exact


def test_a_task_at_rate_zero_is_still_placed_once() -> None:
    allocation = allocate_mba(linear(), 0, MODELS, SOURCE_SINK)
    assert allocation.slots == 0  # nothing to process; source and sink are not counted
    for mapper in (map_dsm, map_rsm, map_sam):
        mapped = map_until_fits(allocation, mapper)
        assert mapped.extra_slots == 1
        placed = mapped.placement
        assert placed.executors() == dict.fromkeys(("src", "X", "P", "T", "B", "F", "sink"), 1)
