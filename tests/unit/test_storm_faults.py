"""What a run of a real part's fault checks, where the fault hit, the table, and how the benchmark
selects the real faults (pure parts of bench/storm_faults.py and bench/faults.py)."""

from __future__ import annotations

import pytest

from bench.operator_faults import Fault
from bench.storm_faults import (
    CONVERGE_S,
    PHASES,
    RealFault,
    RealObserved,
    RealRun,
    fault_table,
    is_converged,
    is_worker_jvm,
    missing_keys,
    new_reasons,
    next_budget,
    phase_of,
    pods_for,
    repeats,
    with_records,
)

PLAN = {"1": 1, "2": 2, "3": 2, "4": 1}


def observed(**changes: object) -> RealObserved:
    base: dict[str, object] = {
        "pending": False,
        "applied_budget": 2,
        "ready": True,
        "replicas": 6,
        "storm_units": dict(PLAN),
        "status_units": dict(PLAN),
    }
    return RealObserved(**{**base, **changes})  # type: ignore[arg-type]


def run(**changes: object) -> RealRun:
    base: dict[str, object] = {
        "fault": RealFault.WORKER_KILL,
        "index": 0,
        "budget": 2,
        "injected_after_s": 3.0,
        "phase": PHASES[1],
        "outage_s": 4.0,
        "converged_s": 50.0,
        "after": observed(),
        "slots_per_pod": 1,
        "applied_events": 1,
        "first_key": 100,
        "end_key": 400,
        "reasons": {"ScalingApplied": 1},
    }
    return RealRun(**{**base, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "phase"),
    [
        (observed(applied_budget=1), PHASES[0]),
        (observed(applied_budget=1, pending=True), PHASES[1]),
        (observed(applied_budget=2, pending=True), PHASES[1]),
        (observed(applied_budget=2), PHASES[2]),
    ],
)
def test_the_phase_says_whether_the_intent_was_saved_or_the_budget_applied(
    state: RealObserved, phase: str
) -> None:
    assert phase_of(state, budget=2) == phase


def test_a_run_applied_once_as_planned_with_every_record_seen_has_no_problem() -> None:
    assert run().problems == []


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"converged_s": None}, f"not applied and Ready within {CONVERGE_S:.0f} s"),
        (
            {"after": observed(storm_units={**PLAN, "3": 3})},
            "Nimbus runs {'1': 1, '2': 2, '3': 3, '4': 1}, the plan says {'1': 1, '2': 2, '3': 2, '4': 1}",
        ),
        ({"after": observed(storm_units={})}, "Nimbus runs {}, the plan says"),
        ({"after": observed(replicas=7)}, "7 replicas, the plan needs 6"),
        ({"applied_events": 2}, "2 ScalingApplied events for one budget"),
        ({"applied_events": 0}, "0 ScalingApplied events for one budget"),
        ({"missing": (150, 151)}, "2 of 300 records never reached the sink"),
        ({"found": ("Nimbus exited (1) and was started again",)}, "Nimbus exited (1)"),
    ],
)
def test_a_run_reports_what_a_user_would_find_wrong(changes: dict[str, object], problem: str) -> None:
    problems = run(**changes).problems
    assert len(problems) == 1, problems
    assert problems[0].startswith(problem)


def test_repeated_records_are_counted_not_failed() -> None:
    """At-least-once: a key replayed after a worker died is seen twice, which is no loss."""
    assert run(duplicates=12).problems == []


def test_a_run_that_never_converged_still_reports_its_lost_records() -> None:
    problems = run(converged_s=None, missing=(120,)).problems
    assert problems == [
        f"not applied and Ready within {CONVERGE_S:.0f} s",
        "1 of 300 records never reached the sink",
    ]


def test_pods_for_a_plan_are_its_slots_rounded_up() -> None:
    assert pods_for(PLAN, 1) == 6
    assert pods_for(PLAN, 4) == 2
    assert pods_for({"1": 1}, 2) == 1


def test_missing_keys_are_those_of_the_run_the_sink_did_not_see() -> None:
    assert missing_keys({1, 2, 4, 7}, 2, 6) == [3, 5]
    assert missing_keys(set(range(10)), 0, 10) == []
    assert missing_keys(set(), 5, 5) == []


def test_new_reasons_are_the_counts_posted_between_two_looks() -> None:
    before = {"ScalingApplied": 3, "RebalanceRequested": 2}
    after = {"ScalingApplied": 4, "RebalanceRequested": 2, "RebalanceReissued": 1}
    assert new_reasons(before, after) == {"RebalanceReissued": 1, "ScalingApplied": 1}


def test_a_worker_jvm_is_told_from_the_log_writer_that_launched_it() -> None:
    worker = ["java", "-cp", "x", "org.apache.storm.daemon.worker.Worker", "topo-1", "sup", "6700"]
    writer = [
        "java",
        "-cp",
        "x",
        "org.apache.storm.LogWriter",
        "java",
        "org.apache.storm.daemon.worker.Worker",
    ]
    assert is_worker_jvm(worker)
    assert not is_worker_jvm(writer)
    assert not is_worker_jvm(["java", "org.apache.storm.daemon.supervisor.Supervisor"])


def test_the_table_has_a_row_per_fault_and_phase_with_lost_records_and_other_events() -> None:
    runs = [
        run(),
        run(index=1, budget=1, converged_s=80.0, outage_s=6.5, duplicates=3),
        run(
            fault=RealFault.KAFKA_RESTART,
            phase=PHASES[2],
            converged_s=None,
            missing=(101,),
            reasons={"RebalanceReissued": 1},
        ),
    ]
    table = fault_table(runs)
    assert "| storm-worker-kill | intent saved | 2 | 2 | 0 | 80.0 | 6.5 | 600 | 0 | 3 | – |" in table
    assert (
        "| kafka-restart | applied already | 1 | 0 | 1 | – | 4.0 | 300 | 1 | 0 | RebalanceReissued 1 |"
        in table
    )
    assert "storm-nimbus-restart" not in table


def test_the_benchmark_selects_the_real_faults_by_name_or_all_five_as_real() -> None:
    from bench import faults as bench

    assert bench.parse_faults("real") == list(RealFault)
    assert bench.parse_faults("kafka-restart,storm-worker-kill") == [
        RealFault.KAFKA_RESTART,
        RealFault.WORKER_KILL,
    ]
    assert bench.parse_faults("operator-kill,real,kafka-restart") == [Fault.OPERATOR_KILL, *RealFault]
    assert bench.parse_faults("all") == list(Fault)  # all: the fake-Nimbus and metrics faults, as before


def test_converged_is_the_budget_applied_ready_and_nothing_pending() -> None:
    ready = [{"type": "Ready", "status": "True"}]
    assert is_converged({"appliedBudget": 2, "conditions": ready}, 2)
    assert not is_converged({"appliedBudget": 1, "conditions": ready}, 2)
    assert not is_converged({"appliedBudget": 2, "conditions": ready, "pending": {"units": {}}}, 2)
    assert not is_converged({"appliedBudget": 2, "conditions": [{"type": "Ready", "status": "False"}]}, 2)
    assert not is_converged({}, 2)  # the API server did not answer


def test_repeats_count_the_extra_lines_of_the_runs_keys_only() -> None:
    counts = {1: 2, 2: 1, 3: 3, 9: 5}
    assert repeats(counts, 0, 5) == 3
    assert repeats(counts, 2, 3) == 0


def test_the_budgets_alternate_between_one_and_zero_so_that_every_run_changes_the_plan() -> None:
    assert next_budget(0) == 1
    assert next_budget(1) == 0
    assert next_budget(None) == 1


def test_a_runs_records_are_checked_against_what_the_sink_saw_once_the_runs_are_over() -> None:
    counts = {k: 1 for k in range(100, 400) if k not in (150, 151)} | {200: 3}
    checked = with_records(run(), counts)
    assert checked.missing == (150, 151)
    assert checked.duplicates == 2
    assert checked.problems == ["2 of 300 records never reached the sink"]
