"""Shukla & Simmhan: LSA (Algorithm 2) and MBA (Algorithm 3), the paper's numbers as test vectors.

Single-task vectors use the fixture's models, whose bold cells are the paper's numbers; the DAG
vectors use SHUKLA_FIXTURE_V1 and the paper's micro-DAGs, source and sink excluded.
Tolerances: exact thread counts, ±0.5 % on the paper's resource numbers,
±1 % on the "47 %", ±2 % abs on DAG totals, ±0.1 slot on the Star sums.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stormscale.planner.sizing.lsa import allocate_lsa, lsa_task
from stormscale.planner.sizing.mba import allocate_mba, mba_task
from stormscale.planner.sizing.performance import Bundle, TaskGraph

from .fixture import MODELS, SOURCE_SINK, diamond, linear, star

B, T, X, P = MODELS["B"], MODELS["T"], MODELS["X"], MODELS["P"]
HALF_PERCENT = 0.005


def test_lsa_blob_at_100() -> None:
    a = lsa_task("B", B, 100)
    assert a.threads == 50
    assert a.cpu == pytest.approx(3.37, rel=HALF_PERCENT)  # "337% CPU"
    assert a.memory == pytest.approx(11.96, rel=HALF_PERCENT)  # "1196% memory"


def test_lsa_blob_at_50_and_200() -> None:
    assert lsa_task("B", B, 50).threads == 25
    assert lsa_task("B", B, 50).memory == pytest.approx(5.98, rel=HALF_PERCENT)  # "598% memory"
    assert lsa_task("B", B, 200).threads == 100  # "100 Blob Download threads"


def test_lsa_table() -> None:
    assert lsa_task("T", T, 160).threads == 54
    assert lsa_task("T", T, 50).threads == 17  # the paper's "18" is a typo: ⌈50/3⌉ = 17 = 4·2 + 9


def test_lsa_closed_form() -> None:
    """τ = ⌈ω/ω̄⌉, c = 𝒞(1)·ω/ω̄, m = ℳ(1)·ω/ω̄."""
    a = lsa_task("T", T, 50)
    assert (a.cpu, a.memory) == (
        pytest.approx(0.0102 * 50 / 3, abs=1e-9),
        pytest.approx(0.0122 * 50 / 3, abs=1e-9),
    )
    exact = lsa_task("T", T, 30)
    assert exact.threads == 10  # an exact multiple adds no trailing thread


def test_mba_blob_at_100() -> None:
    a = mba_task("B", B, 100)
    assert (a.threads, a.full_bundles, a.bundle_threads) == (170, 3, 50)  # 3×50 + 20
    assert a.cpu == pytest.approx(3.15, rel=HALF_PERCENT)  # "315% of CPU"
    assert a.memory == pytest.approx(3.26, rel=HALF_PERCENT)  # "326% of memory"


def test_mba_blob_at_50() -> None:
    a = mba_task("B", B, 50)
    assert a.threads == 50 + 28  # 50 + 𝒯_B(20), the fixture's 28
    assert a.memory == pytest.approx(1.28, rel=HALF_PERCENT)  # "128% memory"


def test_mba_blob_at_280() -> None:
    assert mba_task("B", B, 280).threads == 470  # 9×50 + 20


def test_mba_table_at_100() -> None:
    a = mba_task("T", T, 100)
    assert (a.threads, a.full_bundles) == (160, 2)  # 2×60 + 40
    assert a.residual is not None
    assert a.residual.threads == 40  # 20 t/s on 40 threads


def test_mba_table_at_280() -> None:
    a = mba_task("T", T, 280)
    assert (a.threads, a.full_bundles, a.residual) == (420, 7, None)  # 7×60, no residual


def test_mba_parse_at_480() -> None:
    a = mba_task("X", X, 480)
    assert a.threads == 2
    assert a.cpu == pytest.approx(1.00 + 0.85 * 170 / 310, abs=1e-9)
    assert a.memory == pytest.approx(1.00 + 0.2298 * 170 / 310, abs=1e-9)
    assert a.residual is not None
    assert a.residual.cpu == pytest.approx(0.47, abs=0.01)  # the paper's "47%"


def test_mba_pi() -> None:
    full = mba_task("P", P, 110)
    assert (full.threads, full.cpu, full.memory, full.residual) == (2, 1.0, 1.0, None)
    a = mba_task("P", P, 200)
    assert a.threads == 3
    assert a.cpu == pytest.approx(1.00 + 0.90 * 90 / 105, abs=1e-9)


def test_mba_charges_a_whole_slot_per_bundle_and_the_model_value_for_a_residual() -> None:
    """1.00 per full bundle whatever 𝒞(τ̂); τ' > 1 unscaled, τ' = 1 scaled by ω/ℐ(1)."""
    a = mba_task("T", T, 100)
    assert a.cpu == pytest.approx(2 * 1.00 + T.cpu(40))  # 𝒞_T(40) = 55 %, not scaled to 20/20
    assert a.residual == Bundle(40, T.cpu(40), T.memory(40))


def test_lsa_linear_at_50_totals() -> None:
    a = allocate_lsa(linear(), 50, MODELS, SOURCE_SINK)
    assert a.total_cpu == pytest.approx(2.42, abs=0.02)  # "242%"
    assert a.total_memory == pytest.approx(6.23, abs=0.02)  # "623%"
    assert a.slots == 7


@pytest.mark.parametrize(("omega", "slots"), [(50, 7), (100, 13), (200, 25)])
def test_lsa_linear_slots(omega: float, slots: int) -> None:
    assert allocate_lsa(linear(), omega, MODELS, SOURCE_SINK).slots == slots


@pytest.mark.parametrize(("omega", "slots"), [(50, 4), (100, 7)])
def test_mba_linear_slots(omega: float, slots: int) -> None:
    assert allocate_mba(linear(), omega, MODELS, SOURCE_SINK).slots == slots


def test_mba_linear_at_200_within_one_slot_of_the_paper() -> None:
    """The fixture gives 14, the paper 15 (±1 slot)."""
    slots = allocate_mba(linear(), 200, MODELS, SOURCE_SINK).slots
    assert slots == 14
    assert abs(slots - 15) <= 1


def test_mba_linear_at_50_cpu_total() -> None:
    """The paper's "323%"."""
    assert allocate_mba(linear(), 50, MODELS, SOURCE_SINK).total_cpu == pytest.approx(3.23, abs=0.02)


@pytest.mark.parametrize(("omega", "memory", "slots"), [(50, 6.28, 7), (100, 12.55, 13)])
def test_lsa_star_memory(omega: float, memory: float, slots: int) -> None:
    a = allocate_lsa(star(), omega, MODELS, SOURCE_SINK)
    assert a.total_memory == pytest.approx(memory, abs=0.1)  # ±0.1 slot
    assert a.slots == slots


def test_thread_totals_linear_at_100() -> None:
    lsa = allocate_lsa(linear(), 100, MODELS, SOURCE_SINK).total_threads
    mba = allocate_mba(linear(), 100, MODELS, SOURCE_SINK).total_threads
    assert (lsa, mba) == (87, 333)
    assert 2.5 <= mba / lsa <= 4.5  # the paper's "≈3×"


@pytest.mark.parametrize("omega", [50, 100, 200])
@pytest.mark.parametrize("dag", [linear, star, diamond])
def test_mba_needs_fewer_slots_than_lsa_on_the_micro_dags(omega: float, dag: Callable[[], TaskGraph]) -> None:
    """MBA allocates fewer slots than LSA for every micro-DAG and rate, as the paper claims."""
    graph = dag()
    lsa = allocate_lsa(graph, omega, MODELS, SOURCE_SINK).slots
    mba = allocate_mba(graph, omega, MODELS, SOURCE_SINK).slots
    assert mba < lsa


@pytest.mark.parametrize("omega", [50, 100, 200])
def test_lsa_over_mba_slot_ratio_on_linear(omega: float) -> None:
    """LSA/MBA ∈ [1.5, 2.2] (Linear: 7/4, 13/7, 25/14; the paper: "nearly twice").

    Only Linear is asserted: it is the DAG the fixture is checked on (Star@100 gives 13/9).
    """
    lsa = allocate_lsa(linear(), omega, MODELS, SOURCE_SINK).slots
    mba = allocate_mba(linear(), omega, MODELS, SOURCE_SINK).slots
    assert 1.5 <= lsa / mba <= 2.2


def test_source_and_sink_are_mapped_but_not_counted() -> None:
    a = allocate_mba(linear(), 50, MODELS, SOURCE_SINK)
    assert [t.task for t in a.tasks] == ["src", "X", "P", "T", "B", "F", "sink"]
    assert [t.counted for t in a.tasks] == [False, True, True, True, True, True, False]
    assert a.task("src").cpu == 0.10


def test_a_task_without_a_model_is_an_error() -> None:
    with pytest.raises(ValueError, match="no performance model for task 'src'"):
        allocate_lsa(linear(), 50, MODELS)


def test_a_task_at_rate_zero_gets_no_thread_but_one_executor() -> None:
    a = mba_task("T", T, 0)
    assert (a.threads, a.cpu, a.memory, a.executors) == (0, 0.0, 0.0, 1)
