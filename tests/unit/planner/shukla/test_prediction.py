"""Shukla & Simmhan: the model-based prediction of a mapping (§8.5 of the paper)."""

from __future__ import annotations

import pytest

from stormscale.planner.placement.model import Placement, Pod, Slot
from stormscale.planner.placement.shukla import map_sam, map_until_fits
from stormscale.planner.sizing.mba import allocate_mba
from stormscale.planner.sizing.performance import TaskGraph
from stormscale.planner.sizing.prediction import (
    Routing,
    predict,
    shuffle_limit,
    slot_arrivals,
    slot_usage,
    task_capacity,
)

from .fixture import MODELS, SOURCE_SINK, star

T, X = MODELS["T"], MODELS["X"]


def _table_slots(*threads: int) -> Placement:
    return Placement("test", (Pod(tuple(Slot({"T": n}) for n in threads)),))


def test_lsa_rsm_table_layout() -> None:
    """{2, 2, 2, 2, 9} Table threads → 4·ℐ_T(2) + ℐ_T(9) = 30 t/s (observed 35)."""
    assert task_capacity(_table_slots(2, 2, 2, 2, 9), "T", T) == 30


def test_sam_table_bundles_under_shuffle() -> None:
    """{60, 60, 40} at 100 t/s → 37.5 / 37.5 / 25 (paper "37/37/26", ±1.5); Ω_max,T = 80."""
    placement = _table_slots(60, 60, 40)
    assert slot_arrivals(placement, "T", T, 100, Routing.SHUFFLE) == pytest.approx([37.5, 37.5, 25.0])
    assert slot_arrivals(placement, "T", T, 100, Routing.SHUFFLE) == pytest.approx([37, 37, 26], abs=1.5)
    assert slot_arrivals(placement, "T", T, 100, Routing.MODEL) == pytest.approx([40, 40, 20])
    assert shuffle_limit(placement, "T", T, gain=1.0) == pytest.approx(80)
    assert task_capacity(placement, "T", T) == 100  # the paper's (planned) model sum; observed 90
    graph = TaskGraph(("T",))
    assert predict(placement, {"T": T}, graph).rate == pytest.approx(100)
    assert predict(placement, {"T": T}, graph, routing=Routing.SHUFFLE).rate == pytest.approx(80)


def test_interpolated_table_rate() -> None:
    """ℐ_T(3) = 6 (observed ≈ 9)."""
    assert T.rate(3) == pytest.approx(6.0)


def test_under_loaded_parse_thread() -> None:
    """One X thread receiving 170 t/s → 85 % · 170/310 = 46.6 % ("47%"; observed 32 %)."""
    cpu, memory = slot_usage(X, 1, 170)
    assert cpu == pytest.approx(0.85 * 170 / 310, abs=1e-9)
    assert cpu == pytest.approx(0.47, abs=0.01)
    assert memory == pytest.approx(0.2298 * 170 / 310, abs=1e-9)
    assert slot_usage(X, 1, 400) == (pytest.approx(0.85), pytest.approx(0.2298))  # saturated: the model value


def test_mba_sam_star_predicts_the_parse_partial_at_47_percent() -> None:
    """Star at Ω = 240: X receives 480, a full slot takes 310 and the partial thread 170 (§8.5.2)."""
    graph = star()
    mapped = map_until_fits(allocate_mba(graph, 240, MODELS, SOURCE_SINK), map_sam)
    prediction = predict(mapped.placement, MODELS, graph, omega=240)
    x_alone = [s.cpu for p in prediction.usage.pods for s in p.slots if dict(s.executors) == {"X": 1}]
    x_shared = [
        s for p in mapped.placement.pods for s in p.slots if "X" in s.executors and len(s.executors) > 1
    ]
    assert x_alone == [pytest.approx(0.85)]
    assert len(x_shared) == 1
    assert prediction.rate >= 240


def test_pod_usage_sums_slots() -> None:
    placement = _table_slots(60, 40)
    prediction = predict(placement, {"T": T}, TaskGraph(("T",)), omega=60)
    assert prediction.pod_usage() == [(pytest.approx(0.65 + 0.55), pytest.approx(0.20 + 0.15))]
