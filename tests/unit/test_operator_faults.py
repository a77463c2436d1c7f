"""Where a killed apply was, told from the state it left; the fault table (pure parts of
tests/harness/tools/operator_faults.py)."""

from __future__ import annotations

import pytest

from tests.harness.tools.operator_faults import PHASES, KillRun, Observed, fault_table, phase_of


def observed(**changes: object) -> Observed:
    base: dict[str, object] = {
        "pending": False,
        "applied_budget": 0,
        "ready": True,
        "replicas": 4,
        "storm_units": {"a": 1, "b": 1, "c": 1, "d": 1},
        "status_units": {"a": 1, "b": 1, "c": 1, "d": 1},
        "rebalanced_since_apply": 0,
        "events": 0,
    }
    return Observed(**{**base, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "phase"),
    [
        (observed(), PHASES[0]),
        (observed(pending=True), PHASES[1]),
        (observed(pending=True, replicas=6), PHASES[2]),
        (observed(pending=True, replicas=6, rebalanced_since_apply=1), PHASES[3]),
        (observed(pending=False, applied_budget=2, replicas=6, rebalanced_since_apply=1), PHASES[4]),
    ],
)
def test_the_phase_follows_the_order_of_the_writes(state: Observed, phase: str) -> None:
    assert phase_of(state, budget=2, target_replicas=6) == phase


def run(**changes: object) -> KillRun:
    after = observed(
        applied_budget=2,
        replicas=6,
        storm_units={"a": 2, "b": 2, "c": 1, "d": 1},
        status_units={"a": 2, "b": 2, "c": 1, "d": 1},
        rebalanced_since_apply=1,
    )
    base: dict[str, object] = {
        "index": 0,
        "budget": 2,
        "killed_after_s": 3.0,
        "phase": PHASES[2],
        "converged_s": 8.0,
        "after": after,
        "baseline_units": 4,
        "new_events": 1,
    }
    return KillRun(**{**base, **changes})  # type: ignore[arg-type]


def test_a_clean_run_has_no_problems_and_each_fault_is_named() -> None:
    assert run().problems == []
    assert run(converged_s=None).problems == ["not applied and Ready within 90 s"]
    assert run(new_events=2).problems == ["2 ScalingApplied events for one budget"]
    twice = run(after=observed(applied_budget=2, replicas=8, rebalanced_since_apply=2))
    assert "8 replicas, not 6" in twice.problems
    assert "Storm runs 4 units, not 6" in twice.problems


def test_the_table_has_a_row_per_phase_hit() -> None:
    table = fault_table([run(), run(index=1, phase=PHASES[0], converged_s=None)])
    assert "| replicas set, no rebalance | 1 | 1 | 0 | 8.0 | 1 |" in table
    assert "| before the intent | 1 | 0 | 1 | – | 1 |" in table
    assert "after the apply" not in table
