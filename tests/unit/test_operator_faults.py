"""Where a fault hit an apply, told from the state it left; what a run checks; the fault table (pure
parts of bench/operator_faults.py)."""

from __future__ import annotations

import pytest

from bench.operator_faults import (
    NIMBUS_PHASES,
    PHASES,
    Fault,
    FaultRun,
    Observed,
    _rebalance_problems,
    fault_table,
    next_budget,
    phase_of,
)


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


def run(**changes: object) -> FaultRun:
    after = observed(
        applied_budget=2,
        replicas=6,
        storm_units={"a": 2, "b": 2, "c": 1, "d": 1},
        status_units={"a": 2, "b": 2, "c": 1, "d": 1},
        rebalanced_since_apply=1,
    )
    base: dict[str, object] = {
        "fault": Fault.OPERATOR_KILL,
        "index": 0,
        "budget": 2,
        "injected_after_s": 3.0,
        "phase": PHASES[2],
        "converged_s": 8.0,
        "after": after,
        "baseline_units": 4,
        "new_events": 1,
    }
    return FaultRun(**{**base, **changes})  # type: ignore[arg-type]


def test_a_clean_run_has_no_problems_and_each_fault_is_named() -> None:
    assert run().problems == []
    assert run(converged_s=None).problems == ["not applied and Ready within 90 s"]
    assert run(new_events=2).problems == ["2 ScalingApplied events for one budget"]
    twice = run(after=observed(applied_budget=2, replicas=8, rebalanced_since_apply=2))
    assert "8 replicas, not 6" in twice.problems
    assert "Storm runs 4 units, not 6" in twice.problems


def test_what_the_runner_found_is_a_problem_too() -> None:
    assert run(found=("the operator exited (-9)",)).problems == ["the operator exited (-9)"]
    assert run(converged_s=None, found=("x",)).problems == ["not applied and Ready within 90 s", "x"]


def test_a_lost_rebalance_must_be_asked_again_and_requests_are_bounded() -> None:
    lost = NIMBUS_PHASES[1]
    assert _rebalance_problems(Fault.NIMBUS_RESTART, lost, 2, {"RebalanceReissued": 1}) == []
    assert _rebalance_problems(Fault.NIMBUS_RESTART, lost, 1, {}) == [
        "the lost rebalance was not asked for again (no RebalanceReissued)"
    ]
    assert _rebalance_problems(Fault.OPERATOR_KILL, PHASES[3], 4, {}) == ["4 rebalances for one budget"]
    gave_up = {"RebalanceReissued": 2, "RebalanceNotApplied": 1}
    assert _rebalance_problems(Fault.NIMBUS_LOSES, "every rebalance lost", 4, gave_up) == []
    assert _rebalance_problems(Fault.NIMBUS_LOSES, "every rebalance lost", 5, {"RebalanceReissued": 3}) == [
        "5 rebalances, not 4",
        "events {'RebalanceReissued': 3, 'RebalanceNotApplied': 0}, not "
        "{'RebalanceReissued': 2, 'RebalanceNotApplied': 1}",
    ]


def test_every_run_applies_another_budget() -> None:
    assert [next_budget(b) for b in (None, 0, 1, 2)] == [1, 1, 2, 1]


def test_the_table_has_a_row_per_fault_and_phase_hit() -> None:
    table = fault_table(
        [
            run(),
            run(index=1, phase=PHASES[0], converged_s=None),
            run(
                fault=Fault.PROMETHEUS_STOP,
                phase="before the apply",
                during="MetricsUnavailable",
                reasons={"MetricsUnavailable": 1, "ScalingApplied": 1},
            ),
        ]
    )
    assert "| operator-kill | replicas set, no rebalance | 1 | 1 | 0 | 8.0 | – | 1 | – |" in table
    assert "| operator-kill | before the intent | 1 | 0 | 1 | – | – | 1 | – |" in table
    assert (
        "| prometheus-stop | before the apply | 1 | 1 | 0 | 8.0 | MetricsUnavailable | 1 "
        "| MetricsUnavailable 1 |" in table
    )
    assert "after the apply" not in table


def test_the_benchmark_takes_a_selection_of_faults_and_refuses_unknown_ones_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench import faults as bench

    assert bench.parse_faults("all") == list(Fault)
    assert bench.parse_faults("nimbus-restart, operator-kill,nimbus-restart") == [
        Fault.NIMBUS_RESTART,
        Fault.OPERATOR_KILL,
    ]
    with pytest.raises(SystemExit) as stopped:
        bench.main(["--faults", "operator-kill,disk-full"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "unknown fault disk-full; known: operator-kill, operator-kill-at-intent, apiserver-restart" in err
