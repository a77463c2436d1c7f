"""Faults of real parts while the operator applies a budget, on the real API server
with the operator as a real ``kopf run`` process: the operator SIGKILLed, the API server restarted,
Nimbus restarted losing the rebalance in its wait, Prometheus stopped, the metrics stale. Every run
converges to its budget, adds nothing twice and posts one ``ScalingApplied``; a few runs of each here,
``make bench-faults`` runs 20 of each and prints the fault table (bench/operator_faults.py
and metrics_faults.py say what a run does and checks). The sixth fault, a Nimbus that runs no
rebalance at all (asked 3 times, then given up and held), takes 77 s a run on the bed: it runs in
``make bench-faults`` only, its rules in tests/unit/operator/test_lost_rebalance.py; so does Prometheus
stopped (74 s with its bed; its rule, no action without metrics, is the stale metrics' and is
unit-tested in tests/unit/operator/test_reconcile.py and test_error_contract.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kubernetes import client

from bench import metrics_faults
from bench import operator_faults as faults
from bench.operator_faults import Fault
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.process import new_run_dir

pytestmark = [pytest.mark.integration]

RUNS = int(os.environ.get("STORMSCALE_FAULT_RUNS", "2"))


@pytest.fixture(scope="module")
def bed(control_plane: ControlPlane, kube_api: client.ApiClient) -> Iterator[faults.Bed]:
    with faults.fault_bed(control_plane, kube_api, new_run_dir("faults-")) as shared:
        yield shared


def check(runs: list[faults.FaultRun], count: int) -> None:
    print("\n" + faults.fault_table(runs))
    assert len(runs) == count
    for run in runs:
        assert not run.problems, faults.line(run)


def test_a_killed_operator_converges_on_restart_and_adds_nothing_twice(bed: faults.Bed) -> None:
    """Killed at a random moment, then right after its intent is saved (inside the apply's writes);
    the two runs scale out and in."""
    runs = faults.run_faults(bed, Fault.OPERATOR_KILL, runs=RUNS - 1, seed=17, progress=print)
    (at_intent,) = faults.run_faults(bed, Fault.OPERATOR_KILL_AT_INTENT, runs=1, seed=17, progress=print)
    check([*runs, at_intent], RUNS)
    assert at_intent.phase in faults.PHASES[1:4]  # between the intent and the verification
    assert {r.budget for r in [*runs, at_intent]} == set(faults.BUDGETS)  # out and in


def test_an_api_server_restart_mid_apply_is_lived_through_and_converges(bed: faults.Bed) -> None:
    """The same operator process throughout (a run whose operator exits fails), its watch delivers a
    spec change after the restart, and the apply converges once the API server is back."""
    (run,) = faults.run_faults(bed, Fault.APISERVER_RESTART, runs=1, seed=18, progress=print)
    check([run], 1)
    assert run.outage_s > faults.APISERVER_DOWN_S[0]
    assert run.watch_s is not None  # the spec pass came (within WATCH_S, else it is a problem)


def test_a_nimbus_restart_that_loses_the_rebalance_in_its_wait_gets_it_asked_again(bed: faults.Bed) -> None:
    """Storm's own STORM-3516: the rebalance accepted, Nimbus restarts in its wait and forgets it; the
    operator finds Storm running the old executors and asks again, once."""
    (run,) = faults.run_faults(bed, Fault.NIMBUS_RESTART, runs=1, seed=19, at_request=True, progress=print)
    check([run], 1)
    assert run.phase == faults.NIMBUS_PHASES[1]  # the fault did hit the rebalance's wait
    assert run.after.rebalanced_since_apply == 2
    assert run.reasons.get("RebalanceReissued") == 1


@pytest.fixture(scope="module")
def mbed(control_plane: ControlPlane, kube_api: client.ApiClient) -> Iterator[metrics_faults.MetricsBed]:
    with metrics_faults.metrics_bed(control_plane, kube_api, new_run_dir("faults-metrics-")) as shared:
        yield shared


@pytest.mark.parametrize("fault", [Fault.METRICS_STALE])  # PROMETHEUS_STOP: make bench-faults
def test_without_fresh_metrics_nothing_is_done_the_reason_is_named_and_it_recovers(
    mbed: metrics_faults.MetricsBed, fault: Fault
) -> None:
    runs = metrics_faults.run_metrics_faults(mbed, fault, runs=1, progress=print)
    check(runs, 1)
    assert runs[0].during == metrics_faults.EXPECTED[fault]
